"""Per-image training targets of the detector: one per distinct (subject, object) pair of the image's
interaction annotations, as QPIC's ``datasets/hico.py`` / ``vcoco.py`` build them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from hoi_bench.detection.boxes import xyxy_to_normalized_cxcywh


def pair_targets(boxes: np.ndarray, box_labels: Sequence[int], triplets: Sequence[tuple[int, int, int]],
                 alive: np.ndarray, *, width: int, height: int, num_verbs: int,
                 no_object_label: int | None = None) -> dict[str, torch.Tensor]:
    """QPIC's target dict (``obj_labels``, ``verb_labels``, ``sub_boxes``, ``obj_boxes``) of one image.

    ``boxes`` are pixel corners of the (transformed) ``width`` × ``height`` image, clamped to it here;
    ``triplets`` are (subject box, object box or −1, verb index). Pairs appear in the order of their first
    triplet; all verbs of a pair form one multi-hot row. A pair whose subject or object box is not ``alive``
    (cropped away) or has no area is dropped. ``object = −1`` (V-COCO: no object) needs ``no_object_label``;
    its object box is ``[0, 0, 0, 0]``.

    >>> t = pair_targets(np.array([[0, 0, 10, 20], [5, 5, 15, 15.]]), [0, 3], [(0, 1, 2), (0, 1, 0), (0, -1, 1)],
    ...                  np.array([True, True]), width=20, height=20, num_verbs=3, no_object_label=80)
    >>> t["obj_labels"].tolist(), t["verb_labels"].tolist(), t["obj_boxes"][1].tolist()
    ([3, 80], [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], [0.0, 0.0, 0.0, 0.0])
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4).copy()
    boxes[:, 0::2] = boxes[:, 0::2].clip(0, width)
    boxes[:, 1::2] = boxes[:, 1::2].clip(0, height)
    usable = np.asarray(alive, dtype=bool) & (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    pairs: dict[tuple[int, int], int] = {}
    labels: list[int] = []
    verbs: list[np.ndarray] = []
    sub_rows: list[np.ndarray] = []
    obj_rows: list[np.ndarray] = []
    for subject, obj, verb in triplets:
        if not usable[subject] or (obj >= 0 and not usable[obj]) or (obj < 0 and no_object_label is None):
            continue
        key = (subject, obj)
        if key not in pairs:
            pairs[key] = len(labels)
            labels.append(int(box_labels[obj]) if obj >= 0 else no_object_label)
            verbs.append(np.zeros(num_verbs, dtype=np.float32))
            sub_rows.append(boxes[subject])
            obj_rows.append(boxes[obj] if obj >= 0 else None)
        verbs[pairs[key]][verb] = 1.0
    sub = torch.as_tensor(np.array(sub_rows, dtype=np.float32).reshape(-1, 4))
    obj = torch.as_tensor(np.array([np.zeros(4, np.float32) if row is None else row for row in obj_rows],
                                   dtype=np.float32).reshape(-1, 4))
    has_object = torch.as_tensor([row is not None for row in obj_rows], dtype=torch.bool)
    obj_boxes = xyxy_to_normalized_cxcywh(obj, width, height) * has_object.unsqueeze(1)
    return {"obj_labels": torch.as_tensor(labels, dtype=torch.int64),
            "verb_labels": torch.as_tensor(np.array(verbs, dtype=np.float32).reshape(-1, num_verbs)),
            "sub_boxes": xyxy_to_normalized_cxcywh(sub, width, height),
            "obj_boxes": obj_boxes}
