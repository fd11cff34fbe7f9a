"""The proximity-prior rule: the simplest scored HHICls baseline, used by the demo to exercise the metric.

Every ordered pair of distinct GT human boxes of a keyframe is predicted with every class seen in training,
scored ``P_train(class) * exp(-distance / scale)`` where ``distance`` is the distance between the two box
centres (normalised coordinates). It knows nothing of the scene beyond box positions: close pairs rank
first, and the class is only a prior, so it sets a floor any learned model should beat.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sportshhi import formats

DISTANCE_SCALE = 0.15


def class_priors(annotations: formats.Annotations) -> dict[int, float]:
    """Fraction of training interactions per label id.

    >>> ann = formats.Annotations(np.array(["v"] * 4, dtype=object), np.array([5, 5, 10, 10]),
    ...                           np.zeros((4, 4)), np.zeros((4, 4)), np.array([2, 2, 2, 3]),
    ...                           np.zeros(4, int), np.zeros(4, int))
    >>> class_priors(ann)
    {2: 0.75, 3: 0.25}
    """
    labels, counts = np.unique(annotations.labels, return_counts=True)
    return {int(label): float(count) / len(annotations) for label, count in zip(labels, counts)}


def proximity_predictions(human_boxes: Mapping[str, np.ndarray], priors: Mapping[int, float],
                          scale: float = DISTANCE_SCALE) -> formats.Predictions:
    """Predictions for every keyframe of ``human_boxes`` (``{"video,TTTT": N×4 or N×5 boxes}``)."""
    rows = []
    for key, boxes in human_boxes.items():
        video_id, keyframe = formats.parse_keyframe_key(key)
        boxes = np.asarray(boxes, dtype=np.float64)[:, :4]
        centres = (boxes[:, :2] + boxes[:, 2:]) / 2
        distance = np.linalg.norm(centres[:, None] - centres[None], axis=2)
        for s in range(len(boxes)):
            for o in range(len(boxes)):
                if s == o:
                    continue
                closeness = float(np.exp(-distance[s, o] / scale))
                for label, prior in priors.items():
                    rows.append((video_id, keyframe, tuple(boxes[s]), tuple(boxes[o]), label,
                                 prior * closeness))
    return formats.Predictions.from_rows(rows)
