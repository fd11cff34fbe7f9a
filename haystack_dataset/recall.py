"""R@k, mR@k and no-graph-constraint R@k with OpenPSG's semantics (``openpsg/evaluation/sgg_metrics.py``).

Kept apart from :mod:`haystack_dataset.evaluation` (the predicate-wise Haystack metrics) because it is
image-wise and box-matching. The rules, in OpenPSG's words:

- Ground truth: images without relations are dropped; exact duplicate triplets of an image are removed (several
  predicates per pair stay).
- An image is evaluated only if it has ground-truth relations *and* a prediction with at least one pair; other
  images are skipped, not counted as 0.
- **Graph constraint** (R@k, mR@k): each predicted pair, in the given order (never re-sorted), gets one triplet
  with predicate = argmax of its scores over the non-background columns.
- A predicted triplet matches a ground-truth triplet when subject label, predicate and object label agree and both
  boxes reach IoU >= 0.5. In PredCls the predicted boxes are the ground-truth boxes, so a pair can also match the
  relation of another pair whose same-class boxes overlap that much (as in OpenPSG).
- R@k of an image = |GT relations matched by the first k triplets| / |GT relations|; **R@k = mean over images**.
- mR@k: per image and predicate c in its GT, hits_c / count_c; per predicate, the mean over the images that have
  it; **mR@k = sum over the n predicates / n**, a predicate never seen counting 0.
- **No graph constraint** (ngR@k): scores ``object_score_s · object_score_o · predicate_score`` for every (pair,
  predicate), one global descending sort (stable: earlier pair, then lower predicate first on ties), top 100,
  then the same matching.

IoU is the plain continuous xyxy IoU (no +1 pixel).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from haystack_dataset.formats import SceneGraphAnnotation, image_key
from haystack_dataset.predictions import RecallPrediction
from hoi_bench.boxes import iou_matrix
from hoi_bench.errors import PredictionError

RECALL_KS = (20, 50, 100)
IOU_THRESHOLD = 0.5


@dataclass
class RecallGroundTruth:
    """What recall needs of one image: object boxes and labels and its de-duplicated relation triplets."""

    key: str
    boxes: np.ndarray
    labels: np.ndarray
    relations: np.ndarray

    @classmethod
    def from_relations(cls, image_id, boxes, labels, relations) -> RecallGroundTruth:
        """Ground truth of one image with exact duplicate triplets removed (first occurrence kept), as OpenPSG."""
        relations = np.asarray(relations, dtype=np.int64).reshape(-1, 3)
        _, first = np.unique(relations, axis=0, return_index=True)
        return cls(image_key(image_id), np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
                   np.asarray(labels, dtype=np.int64), relations[np.sort(first)])


def recall_ground_truth(annotation: SceneGraphAnnotation) -> dict[str, RecallGroundTruth]:
    """OpenPSG's GT preparation: images without relations dropped, duplicate triplets removed (first kept).

    >>> from haystack_dataset.formats import parse_annotation
    >>> from haystack_dataset.evaluation import GOLDEN_ANNOTATION
    >>> gt = recall_ground_truth(parse_annotation(GOLDEN_ANNOTATION))
    >>> list(gt), gt["7"].relations.shape
    (['7'], (6, 3))
    """
    out = {}
    for image in annotation.images:
        if len(image.relations) == 0:
            continue
        out[image.key] = RecallGroundTruth.from_relations(image.key, image.boxes, image.categories, image.relations)
    return out


def sg_recall(ground_truth: Mapping[str, RecallGroundTruth], predictions: Iterable[RecallPrediction],
              num_predicates: int, *, annotated: Iterable[str] = (), ks: tuple[int, ...] = RECALL_KS,
              iou_threshold: float = IOU_THRESHOLD) -> dict[str, float | int]:
    """``{"R@k", "mR@k", "ngR@k" for k in ks, "images": evaluated count}`` of ``predictions``.

    ``annotated`` lists every image key of the annotation file: predictions for those images without relations are
    skipped (OpenPSG), and so are predictions without pairs; a prediction for any other image id is an error.

    >>> from haystack_dataset.formats import parse_annotation
    >>> from haystack_dataset.evaluation import GOLDEN_ANNOTATION
    >>> gt = recall_ground_truth(parse_annotation(GOLDEN_ANNOTATION))
    >>> scores = np.eye(5)[[1, 2]] * 0.9 + 0.01   # pair (0, 3) says "on", pair (0, 2) says "holding"
    >>> pred = RecallPrediction(7, np.array([[0, 3], [0, 2]]), scores)
    >>> result = sg_recall(gt, [pred], 4, ks=(1, 2))
    >>> result["R@1"], result["R@2"], result["mR@2"], result["images"]
    (0.16666666666666666, 0.3333333333333333, 0.3125, 1)
    """
    known = set(ground_truth)
    annotated = {image_key(key) for key in annotated}
    hits = {k: [] for k in ks}
    ng_hits = {k: [] for k in ks}
    class_recalls = {k: [[] for _ in range(num_predicates)] for k in ks}
    evaluated = 0
    for prediction in predictions:
        key = prediction.key
        if key not in known:
            if key in annotated:
                continue
            raise PredictionError(f"prediction for image {prediction.image_id!r} matches no annotated image "
                                  f"with relations (expected ids such as {sorted(known)[:3]})")
        if len(prediction.pairs) == 0:
            continue
        gt = ground_truth[key]
        match, ng_match = _image_matches(gt, prediction, num_predicates, iou_threshold, max(ks))
        evaluated += 1
        gt_predicates = gt.relations[:, 2]
        counts = np.bincount(gt_predicates, minlength=num_predicates)
        for k in ks:
            hit = match[:k].any(axis=0)
            hits[k].append(hit.mean())
            ng_hits[k].append(ng_match[:k].any(axis=0).mean())
            class_hits = np.bincount(gt_predicates[hit], minlength=num_predicates)
            for c in np.flatnonzero(counts):
                class_recalls[k][c].append(class_hits[c] / counts[c])
    out: dict[str, float | int] = {}
    for k in ks:
        out[f"R@{k}"] = float(np.mean(hits[k])) if evaluated else float("nan")
    for k in ks:
        per_class = [float(np.mean(r)) if r else 0.0 for r in class_recalls[k]]
        out[f"mR@{k}"] = float(np.sum(per_class) / num_predicates) if evaluated else float("nan")
    for k in ks:
        out[f"ngR@{k}"] = float(np.mean(ng_hits[k])) if evaluated else float("nan")
    out["images"] = evaluated
    return out


def _image_matches(gt: RecallGroundTruth, prediction: RecallPrediction, num_predicates: int, iou_threshold: float,
                   top: int) -> tuple[np.ndarray, np.ndarray]:
    """(graph-constraint, no-graph-constraint) boolean match matrices: predicted triplet × GT relation."""
    where = f"prediction for image {prediction.image_id!r}"
    scores = prediction.predicate_scores
    if scores.shape[1] != num_predicates + 1:
        raise PredictionError(f"{where}: score row of the wrong width: expected {num_predicates + 1} columns "
                              f"(no-relation + {num_predicates} predicates), found {scores.shape[1]}")
    if prediction.boxes is None:
        boxes, labels = gt.boxes, gt.labels
    else:
        boxes, labels = prediction.boxes, prediction.labels
    object_scores = prediction.object_scores if prediction.object_scores is not None else np.ones(len(boxes))
    if len(object_scores) != len(boxes):
        raise PredictionError(f"{where}: {len(object_scores)} object_scores for {len(boxes)} objects")
    pairs = prediction.pairs
    if pairs.min(initial=0) < 0 or pairs.max(initial=0) >= len(boxes):
        bad = int(np.flatnonzero((pairs < 0).any(axis=1) | (pairs >= len(boxes)).any(axis=1))[0])
        raise PredictionError(f"{where}: pair {bad} {pairs[bad].tolist()} indexes past the {len(boxes)} objects "
                              f"({'ground-truth segments' if prediction.boxes is None else 'predicted boxes'})")
    iou = iou_matrix(boxes, gt.boxes) >= iou_threshold        # predicted object × GT object
    gt_s, gt_o, gt_p = gt.relations[:, 0], gt.relations[:, 1], gt.relations[:, 2]
    same_object = (labels[:, None] == gt.labels[None, :]) & iou  # predicted object "is" GT object

    def matches(pair_rows: np.ndarray, predicates: np.ndarray) -> np.ndarray:
        s, o = pairs[pair_rows, 0], pairs[pair_rows, 1]
        return same_object[s][:, gt_s] & same_object[o][:, gt_o] & (predicates[:, None] == gt_p[None, :])

    rows = np.arange(min(len(pairs), top))
    graph = matches(rows, np.argmax(scores[rows, 1:], axis=1))
    overall = object_scores[pairs[:, 0], None] * object_scores[pairs[:, 1], None] * scores[:, 1:]
    order = np.argsort(-overall.ravel(), kind="stable")[:top]
    pair_rows, predicates = np.divmod(order, num_predicates)
    return graph, matches(pair_rows, predicates)


def psg_recall(annotation: SceneGraphAnnotation, predictions: Iterable[RecallPrediction], *,
               ks: tuple[int, ...] = RECALL_KS, iou_threshold: float = IOU_THRESHOLD) -> dict[str, float | int]:
    """:func:`sg_recall` of ``predictions`` against a PSG (or Haystack) annotation file's positive relations."""
    return sg_recall(recall_ground_truth(annotation), predictions, len(annotation.predicate_classes),
                     annotated=[image.key for image in annotation.images], ks=ks, iou_threshold=iou_threshold)
