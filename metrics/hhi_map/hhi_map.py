"""HHI mAP and Recall@K of SportsHHI (human-human interaction detection), as an ``evaluate`` metric module.

Thin wrapper: the math is ``sportshhi.evaluation.hhi_metrics`` (install hoi-bench). Absolute imports only,
because ``evaluate`` copies this file elsewhere before importing it.
"""

import datasets
import evaluate
import numpy as np

from sportshhi.evaluation import RECALL_KS, hhi_metrics

_CITATION = """\
@inproceedings{wu2024sportshhi,
  title     = {SportsHHI: A Dataset for Human-Human Interaction Detection in Sports Videos},
  author    = {Wu, Tao and He, Runyu and Wu, Gangshan and Wang, Limin},
  booktitle = {Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2024}
}
"""

_DESCRIPTION = """\
SportsHHI interaction detection metric: VOC all-point AP per interaction class (mAP over the 28
evaluated classes) and Recall@K (K = 20, 50, 100, 150 best predictions per keyframe). A prediction is a
true positive when its subject box and its object box both overlap those of an unmatched GT interaction of
the same class on the same keyframe with IoU >= the threshold (0.5 by default, as in the paper;
official=True reproduces the released code, which uses 0.9, truncates GT to the top K rows per keyframe for
Recall@K and drops classes without predictions). Only keyframes with GT are evaluated.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions: one dict per keyframe: {"keyframe": "video_id,TTTT",
        "subject_boxes": [[x1, y1, x2, y2], ...], "object_boxes": [...], "labels": [1-based label id, ...],
        "scores": [float, ...]}.
    references: one dict per keyframe: {"keyframe": ..., "subject_boxes": ..., "object_boxes": ...,
        "labels": ...}. Each side is matched by its own "keyframe" field; both lists must have the same
        length (evaluate's rule), so pad with empty keyframes where needed.
    iou_threshold: float, default 0.5 (0.9 with official=True); an explicit value wins in either mode.
    official: bool, default False; reproduce the released hhi_eval counting.
    class_whitelist: label ids to evaluate, default the 28 official ones.
    ks: Recall@K values, default (20, 50, 100, 150).
Returns:
    {"settings": {...}, "mAP": float or None, "ap_per_class": {"<label id>": float or None},
     "recall@20": ..., "recall@50": ..., "recall@100": ..., "recall@150": ...}
Examples:
    >>> metric = evaluate.load("hhi_map")  # doctest: +SKIP
    >>> row = {"keyframe": "v_a_c001,0003", "subject_boxes": [[0.1, 0.1, 0.3, 0.8]],
    ...        "object_boxes": [[0.5, 0.1, 0.7, 0.8]], "labels": [2]}
    >>> metric.compute(predictions=[dict(row, scores=[0.9])], references=[row])["mAP"]  # doctest: +SKIP
    1.0
"""

_BOXES = datasets.List(datasets.List(datasets.Value("float64"), length=4))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class HhiMap(evaluate.Metric):
    """SportsHHI mAP and Recall@K."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": {"keyframe": datasets.Value("string"), "subject_boxes": _BOXES,
                                "object_boxes": _BOXES, "labels": datasets.List(datasets.Value("int32")),
                                "scores": datasets.List(datasets.Value("float64"))},
                "references": {"keyframe": datasets.Value("string"), "subject_boxes": _BOXES,
                               "object_boxes": _BOXES, "labels": datasets.List(datasets.Value("int32"))},
            }),
            reference_urls=["https://github.com/MCG-NJU/SportsHHI", "https://arxiv.org/abs/2404.04565"],
        )

    def _compute(self, predictions, references, iou_threshold=None, official=False, class_whitelist=None,
                 ks=RECALL_KS):
        gt = _flatten(references, scored=False)
        pred = _flatten(predictions, scored=True)
        return hhi_metrics(*gt, *pred, iou_threshold=iou_threshold, official=official,
                           class_whitelist=class_whitelist, ks=ks)


def _flatten(rows, scored):
    keys, subjects, objects, labels, scores = [], [], [], [], []
    for row in rows:
        n = len(row["labels"])
        keys += [row["keyframe"]] * n
        subjects += row["subject_boxes"]
        objects += row["object_boxes"]
        labels += row["labels"]
        if scored:
            scores += row["scores"]
    flat = [keys, _box_array(subjects), _box_array(objects), labels]
    return flat + [scores] if scored else flat


def _box_array(boxes):
    return np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
