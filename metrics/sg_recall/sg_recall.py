"""Scene-graph R@k / mR@k / ngR@k with OpenPSG's semantics, as an ``evaluate`` metric.

Thin wrapper over ``haystack_dataset.recall``; see README.md (the metric card) for inputs and semantics.
"""

import datasets
import evaluate
import numpy as np

from haystack_dataset.builder import PSG_CITATION as _CITATION
from haystack_dataset.predictions import RecallPrediction
from haystack_dataset.recall import IOU_THRESHOLD, RECALL_KS, RecallGroundTruth, sg_recall

_DESCRIPTION = """\
Triplet recall of scene-graph predictions as OpenPSG computes it: R@k (graph constraint: one predicate per pair,
the argmax over non-background scores, pairs in the model's order), mR@k (recall per predicate averaged over the
n predicates, absent ones counting 0) and ngR@k (no graph constraint: every (pair, predicate) ranked by
object_score_s * object_score_o * predicate score, top 100 in OpenPSG's order; object scores are ones in PredCls).
A predicted triplet hits a ground-truth triplet when both labels and the predicate agree and both boxes reach
IoU >= 0.5 (float32, as OpenPSG). Images are macro-averaged; images without ground-truth relations or without
predicted pairs are skipped (mR@k is 0.0 when none is evaluated).
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions: one entry per image: {"image_id": str, "pairs": [[s, o], ...] ranked best first,
        "predicate_scores": [[no_relation, p_0, ..., p_{n-1}], ...], "boxes": [[x1, y1, x2, y2], ...] or [],
        "labels": [c, ...] or [], "object_scores": [...] or []}. Empty boxes/labels = PredCls: pairs index the
        ground-truth objects of the matching reference, and object_scores are ignored (ones, as OpenPSG).
    references: one entry per image: {"image_id": str, "boxes": [[x1, y1, x2, y2], ...], "labels": [c, ...],
        "relations": [[s, o, p], ...]} (0-based predicates). Matched to predictions by image_id, not by position.
    num_predicates: n (default 56, PSG).
    ks: recall cut-offs (default (20, 50, 100)).
Returns:
    R@k, mR@k, ngR@k for each k, images (the number evaluated) and warnings (counted lines about ignored input:
    predictions for images no reference has, which OpenPSG never scores).
Examples:
    >>> from hoi_bench.metric_modules import metric_path
    >>> metric = evaluate.load(metric_path("sg_recall"))   # or evaluate.load("sg_recall") after install-metrics
    >>> reference = {"image_id": "1", "boxes": [[0, 0, 10, 10], [20, 0, 30, 10]], "labels": [0, 5],
    ...              "relations": [[0, 1, 2]]}
    >>> prediction = {"image_id": "1", "pairs": [[0, 1], [1, 0]], "predicate_scores": [[0.1, 0.0, 0.2, 0.7],
    ...               [0.5, 0.3, 0.1, 0.1]], "boxes": [], "labels": [], "object_scores": []}
    >>> metric.compute(predictions=[prediction], references=[reference], num_predicates=3, ks=(1,))
    {'R@1': 1.0, 'mR@1': 0.3333333333333333, 'ngR@1': 1.0, 'images': 1, 'warnings': []}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SgRecall(evaluate.Metric):
    """R@k, mR@k and no-graph-constraint R@k of scene-graph predictions."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": {
                    "image_id": datasets.Value("string"),
                    "pairs": datasets.List(datasets.List(datasets.Value("int64"))),
                    "predicate_scores": datasets.List(datasets.List(datasets.Value("float64"))),
                    "boxes": datasets.List(datasets.List(datasets.Value("float64"))),
                    "labels": datasets.List(datasets.Value("int64")),
                    "object_scores": datasets.List(datasets.Value("float64")),
                },
                "references": {
                    "image_id": datasets.Value("string"),
                    "boxes": datasets.List(datasets.List(datasets.Value("float64"))),
                    "labels": datasets.List(datasets.Value("int64")),
                    "relations": datasets.List(datasets.List(datasets.Value("int64"))),
                },
            }),
            homepage="https://github.com/Jingkang50/OpenPSG",
        )

    def _compute(self, predictions, references, num_predicates=56, ks=RECALL_KS, iou_threshold=IOU_THRESHOLD):
        ground_truth, annotated = {}, []
        for reference in references:
            truth = RecallGroundTruth.from_relations(reference["image_id"], reference["boxes"], reference["labels"],
                                                     reference["relations"])
            annotated.append(truth.key)
            if len(truth.relations):  # OpenPSG drops images without relations
                ground_truth[truth.key] = truth
        records = []
        for prediction in predictions:
            has_boxes = len(prediction["boxes"]) > 0
            records.append(RecallPrediction(
                prediction["image_id"],
                np.asarray(prediction["pairs"], dtype=np.int64).reshape(-1, 2),
                np.asarray(prediction["predicate_scores"], dtype=np.float64).reshape(len(prediction["pairs"]), -1),
                np.asarray(prediction["boxes"], dtype=np.float64).reshape(-1, 4) if has_boxes else None,
                np.asarray(prediction["labels"], dtype=np.int64) if has_boxes else None,
                np.asarray(prediction["object_scores"], dtype=np.float64) if prediction["object_scores"] else None))
        return sg_recall(ground_truth, records, num_predicates, annotated=annotated, ks=tuple(ks),
                         iou_threshold=iou_threshold)
