"""R@k, mR@k and no-graph-constraint R@k with OpenPSG's semantics (``openpsg/evaluation/sgg_metrics.py``).

Kept apart from :mod:`haystack_dataset.evaluation` (the predicate-wise Haystack metrics) because it is
image-wise and box-matching. The rules, in OpenPSG's words:

- Ground truth: only the test split when the annotation file lists ``test_image_ids`` (OpenPSG's test dataset;
  predictions for the file's other images are skipped and counted in a warning); images without relations are
  dropped; exact duplicate triplets of an image are removed (several predicates per pair stay).
- An image is evaluated only if it has ground-truth relations *and* a prediction with at least one pair; other
  images are skipped, not counted as 0 (an entry with ``"pairs": []`` is such a skip, not an error). A prediction
  for an image the annotations do not have is ignored (OpenPSG scores only its dataset's images) and counted in a
  warning (``"warnings"`` of the result, and an ``InputWarning``).
- **Graph constraint** (R@k, mR@k): each predicted pair, in the given order (never re-sorted), gets one triplet
  with predicate = argmax of its scores over the non-background columns (the first on ties).
- A predicted triplet matches a ground-truth triplet when subject label, predicate and object label agree and both
  boxes reach IoU >= 0.5. IoU is mmdet's ``bbox_overlaps`` on float32 boxes (OpenPSG converts both sides with
  ``torch.Tensor``; the PSG loader already holds GT boxes as float32), so an IoU that is 0.5 only in float32 is a
  match. In PredCls the predicted boxes are the ground-truth boxes, so a pair can also match the relation of
  another pair whose same-class boxes overlap that much (as in OpenPSG).
- R@k of an image = |GT relations matched by the first k triplets| / |GT relations|; **R@k = mean over images**.
- mR@k: per image and predicate c in its GT, hits_c / count_c; per predicate, the mean over the images that have
  it; **mR@k = sum over the n predicates / n**, a predicate never seen counting 0 (so 0.0 when no image is
  evaluated, while R@k and ngR@k are then undefined).
- **No graph constraint** (ngR@k): scores ``object_score_s · object_score_o · predicate_score`` for every (pair,
  predicate), object scores being ones in PredCls (OpenPSG replaces them, so scores an entry carries without
  boxes have no effect); the top 100 in OpenPSG's order, then the same matching. That order comes from numpy's
  unstable default sort (each pair's scores by ``np.argsort(row)[::-1]``, then all candidates by
  ``np.argsort(-scores.ravel())``): when equal scores straddle a cut-off k, this module makes exactly those calls
  on the image's scores; otherwise the top k is a set that any order gives, and a partial sort finds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from haystack_dataset.formats import SceneGraphAnnotation, image_key
from haystack_dataset.predictions import RecallPrediction
from hoi_bench.errors import PredictionError
from hoi_bench.input_warnings import collected_notes, warn_input

RECALL_KS = (20, 50, 100)
IOU_THRESHOLD = 0.5
NGC_TOP = 100
"""OpenPSG keeps the first 100 no-graph-constraint triplets (``pred_to_gt[:100]``) before cutting at k."""
_UNION_EPS = np.float32(1e-6)
"""mmdet's ``bbox_overlaps`` floor for the union area."""


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


def _test_split(annotation: SceneGraphAnnotation) -> set[str] | None:
    """Keys of the images OpenPSG's test dataset holds (``test_image_ids``), or None when the file lists none."""
    if not annotation.has_test_image_ids or not annotation.test_image_ids:
        return None
    return {image_key(i) for i in annotation.test_image_ids}


def recall_ground_truth(annotation: SceneGraphAnnotation) -> dict[str, RecallGroundTruth]:
    """OpenPSG's GT preparation: the test split (the images of ``test_image_ids``, when the file lists any),
    images without relations dropped, duplicate triplets removed (first kept).

    >>> from haystack_dataset.formats import SceneGraphAnnotation, SceneGraphImage
    >>> image = SceneGraphImage(7, "a.jpg", 9, 9, "a.png", [], np.zeros((2, 4)), np.zeros(2, dtype=int),
    ...                         np.array([[0, 1, 0], [0, 1, 0], [1, 0, 2]]), np.zeros((0, 3), dtype=int))
    >>> empty = SceneGraphImage(8, "b.jpg", 9, 9, "b.png", [], np.zeros((0, 4)), np.zeros(0, dtype=int),
    ...                         np.zeros((0, 3), dtype=int), np.zeros((0, 3), dtype=int))
    >>> gt = recall_ground_truth(SceneGraphAnnotation(["a"], [], ["on", "by", "at"], [image, empty]))
    >>> list(gt), gt["7"].relations.tolist()
    (['7'], [[0, 1, 0], [1, 0, 2]])
    """
    out = {}
    test = _test_split(annotation)
    for image in annotation.images:
        if len(image.relations) == 0 or (test is not None and image.key not in test):
            continue
        out[image.key] = RecallGroundTruth.from_relations(image.key, image.boxes, image.categories, image.relations)
    return out


def sg_recall(ground_truth: Mapping[str, RecallGroundTruth], predictions: Iterable[RecallPrediction],
              num_predicates: int, *, annotated: Iterable[str] = (), ks: tuple[int, ...] = RECALL_KS,
              iou_threshold: float = IOU_THRESHOLD) -> dict:
    """``{"R@k", "mR@k", "ngR@k" for k in ks, "images": evaluated count, "warnings": [...]}`` of ``predictions``.

    ``annotated`` lists every image key of the annotation file: predictions for those images without relations (or
    outside the evaluated split) are skipped (OpenPSG), and so are predictions without pairs; predictions for any
    other image id are ignored too, and counted in one line of ``warnings`` (also issued as an ``InputWarning``).

    >>> gt = {"7": RecallGroundTruth.from_relations(7, [[0, 0, 10, 10], [20, 0, 30, 10], [0, 0, 99, 99]],
    ...                                             [0, 0, 1], [[0, 2, 0], [1, 2, 0], [0, 1, 1]])}
    >>> scores = np.eye(4)[[1, 2]] * 0.9 + 0.01   # pair (0, 2) says predicate 0, pair (0, 1) says predicate 1
    >>> result = sg_recall(gt, [RecallPrediction(7, np.array([[0, 2], [0, 1]]), scores)], 3, ks=(1, 2))
    >>> result["R@1"], result["R@2"], result["mR@2"], result["images"]
    (0.3333333333333333, 0.6666666666666666, 0.5, 1)
    """
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 1 or max(ks) > NGC_TOP:
        raise PredictionError(f"recall cut-offs must lie in 1..{NGC_TOP} (OpenPSG keeps the top {NGC_TOP} "
                              f"no-graph-constraint triplets); found {ks}")
    known = set(ground_truth)
    annotated = {image_key(key) for key in annotated}
    graph_hits, free_hits, predicates_of_gt, unknown = [], [], [], []
    with collected_notes() as notes:
        for prediction in predictions:
            key = prediction.key
            if key not in known:
                if key not in annotated:
                    unknown.append(prediction.image_id)
                continue
            if len(prediction.pairs) == 0:
                continue
            gt = ground_truth[key]
            graph, free = _image_hits(gt, prediction, num_predicates, iou_threshold, ks)
            graph_hits.append(graph)
            free_hits.append(free)
            predicates_of_gt.append(gt.relations[:, 2])
        if unknown:
            warn_input(f"{len(unknown)} prediction entries are for images the annotations do not have (first: "
                       f"{unknown[0]!r}; annotated ids look like {sorted(known or annotated)[:3]}); ignored, as "
                       "OpenPSG scores only its dataset's images")
    result: dict = _aggregate(graph_hits, free_hits, predicates_of_gt, num_predicates, ks)
    result["warnings"] = notes
    return result


def _image_hits(gt: RecallGroundTruth, prediction: RecallPrediction, num_predicates: int, iou_threshold: float,
                ks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(graph constraint, no graph constraint) hits: (len(ks), G) booleans, GT relation j matched within the top k."""
    where = f"prediction for image {prediction.image_id!r}"
    scores = prediction.predicate_scores
    if scores.ndim != 2 or scores.shape[1] != num_predicates + 1:
        raise PredictionError(f"{where}: score row of the wrong width: expected {num_predicates + 1} columns "
                              f"(no-relation + {num_predicates} predicates), found {scores.shape[-1]}")
    predcls = prediction.boxes is None
    boxes, labels = (gt.boxes, gt.labels) if predcls else (prediction.boxes, prediction.labels)
    pairs = prediction.pairs
    if pairs.min(initial=0) < 0 or pairs.max(initial=0) >= len(boxes):
        bad = int(np.flatnonzero((pairs < 0).any(axis=1) | (pairs >= len(boxes)).any(axis=1))[0])
        raise PredictionError(f"{where}: pair {bad} {pairs[bad].tolist()} indexes past the {len(boxes)} objects "
                              f"({'ground-truth segments' if predcls else 'predicted boxes'})")
    object_scores = None if predcls else prediction.object_scores
    if object_scores is not None and len(object_scores) != len(boxes):
        raise PredictionError(f"{where}: {len(object_scores)} object_scores for {len(boxes)} objects")
    # predicted object i "is" GT object j: same class and float32 IoU >= threshold
    same_object = (labels[:, None] == gt.labels[None, :]) & (float32_iou(boxes, gt.boxes) >= iou_threshold)
    gt_s, gt_o, gt_p = gt.relations[:, 0], gt.relations[:, 1], gt.relations[:, 2]

    cutoffs = np.asarray(ks)

    def hits(pair_rows: np.ndarray, predicates: np.ndarray) -> np.ndarray:
        s, o = pairs[pair_rows, 0], pairs[pair_rows, 1]
        match = same_object[s][:, gt_s] & same_object[o][:, gt_o] & (predicates[:, None] == gt_p[None, :])
        if not len(match):
            return np.zeros((len(ks), len(gt_p)), dtype=bool)
        seen = np.logical_or.accumulate(match, axis=0)  # row r: matched by one of the first r + 1 triplets
        return seen[np.minimum(cutoffs, len(match)) - 1]

    top = max(ks)
    rows = np.arange(min(len(pairs), top))
    graph = hits(rows, np.argmax(scores[rows, 1:], axis=1))
    relation_scores = scores[:, 1:]
    if object_scores is not None:  # OpenPSG: obj_scores[pairs].prod(1)[:, None] * rel_scores[:, 1:]
        relation_scores = object_scores[pairs].prod(axis=1)[:, None] * relation_scores
    pair_rows, predicates = free_ranking(relation_scores, ks)
    return graph, hits(pair_rows, predicates)


def free_ranking(scores: np.ndarray, ks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(pair row, predicate) of the first ``max(ks)`` no-graph-constraint candidates, best first.

    Exactly OpenPSG's first k for every k in ``ks``: when no two equal scores straddle a cut-off, the top k is the
    set of scores >= the k-th largest, found by a partial sort; otherwise OpenPSG's own numpy calls are made.

    >>> s = np.array([[0.1, 0.7, 0.2], [0.3, 0.3, 0.05]])   # two equal scores straddle k = 2
    >>> [r.tolist() for r in free_ranking(s, (1, 2, 3))]     # OpenPSG: of a pair's tied predicates the higher first
    [[0, 1, 1], [1, 1, 0]]
    """
    flat = np.ascontiguousarray(scores).ravel()
    top = min(max(ks), flat.size)
    wanted = min(top + 1, flat.size)  # one more, to see whether a cut-off splits equal scores
    best = np.argpartition(flat, flat.size - wanted)[flat.size - wanted:] if wanted < flat.size else \
        np.arange(flat.size)
    best = best[np.argsort(-flat[best], kind="stable")]
    values = flat[best]
    if any(k < len(values) and values[k - 1] == values[k] for k in ks):
        return _openpsg_order(scores, top)
    pair_rows, predicates = np.divmod(best[:top], scores.shape[1])
    return pair_rows, predicates


def _openpsg_order(scores: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenPSG's no-graph-constraint order, by its own numpy calls (``sgg_metrics.py`` and ``argsort_desc``)."""
    sorted_inds = np.argsort(scores, axis=-1)[:, ::-1]
    sorted_scores = np.sort(scores, axis=-1)[:, ::-1]
    order = np.argsort(-sorted_scores.ravel())[:top]
    pair_rows, columns = np.unravel_index(order, sorted_scores.shape)
    return pair_rows, sorted_inds[pair_rows, columns]


def float32_iou(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """(A, B) IoU as mmdet's ``bbox_overlaps`` computes it on float32 tensors (continuous xyxy, no +1).

    >>> float(float32_iou(np.array([[0, 0, 10, 20.000001]]), np.array([[0, 0, 10, 10]]))[0, 0])
    0.5
    """
    a = np.asarray(boxes_a, dtype=np.float32).reshape(-1, 4)
    b = np.asarray(boxes_b, dtype=np.float32).reshape(-1, 4)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    low = np.maximum(a[:, None, :2], b[None, :, :2])
    high = np.minimum(a[:, None, 2:], b[None, :, 2:])
    size = np.maximum(high - low, np.float32(0))
    overlap = size[..., 0] * size[..., 1]
    union = np.maximum(area_a[:, None] + area_b[None, :] - overlap, _UNION_EPS)
    return overlap / union


def _aggregate(graph_hits: list[np.ndarray], free_hits: list[np.ndarray], predicates_of_gt: list[np.ndarray],
               num_predicates: int, ks: tuple[int, ...]) -> dict[str, float | int]:
    evaluated = len(graph_hits)
    out: dict[str, float | int] = {}
    if evaluated:
        counts = [np.bincount(p, minlength=num_predicates) for p in predicates_of_gt]
    for position, k in enumerate(ks):
        out[f"R@{k}"] = float(np.mean([h[position].mean() for h in graph_hits])) if evaluated else float("nan")
    for position, k in enumerate(ks):
        per_class: list[list[float]] = [[] for _ in range(num_predicates)]
        for hits, predicates, count in zip(graph_hits, predicates_of_gt, counts if evaluated else []):
            class_hits = np.bincount(predicates[hits[position]], minlength=num_predicates)
            for c in np.flatnonzero(count).tolist():
                per_class[c].append(class_hits[c] / count[c])
        total = 0.0  # summed one class after the other, as OpenPSG's loop does (np.sum's pairwise sum and
        for recalls in per_class:  # Python 3.12's compensated sum() can differ in the last bit)
            total += float(np.mean(recalls)) if recalls else 0.0
        out[f"mR@{k}"] = total / num_predicates
    for position, k in enumerate(ks):
        out[f"ngR@{k}"] = float(np.mean([h[position].mean() for h in free_hits])) if evaluated else float("nan")
    out["images"] = evaluated
    return out


def psg_recall(annotation: SceneGraphAnnotation, predictions: Iterable[RecallPrediction], *,
               ks: tuple[int, ...] = RECALL_KS, iou_threshold: float = IOU_THRESHOLD) -> dict:
    """:func:`sg_recall` of ``predictions`` against a PSG (or Haystack) annotation file's positive relations, on
    its test split when the file lists ``test_image_ids`` (OpenPSG evaluates that split only); predictions for
    the file's other images are skipped and counted in ``warnings``."""
    ground_truth = recall_ground_truth(annotation)
    test = _test_split(annotation)
    if test is None:
        return sg_recall(ground_truth, predictions, len(annotation.predicate_classes),
                         annotated=[image.key for image in annotation.images], ks=ks, iou_threshold=iou_threshold)
    outside = [image.key for image in annotation.images if image.key not in test]
    skipped: list[str] = []

    def in_split(entries: Iterable[RecallPrediction]) -> Iterable[RecallPrediction]:
        outside_keys = set(outside)
        for entry in entries:
            if entry.key in outside_keys:
                skipped.append(entry.key)
            else:
                yield entry

    with collected_notes() as notes:
        result = sg_recall(ground_truth, in_split(predictions), len(annotation.predicate_classes),
                           annotated=[image.key for image in annotation.images], ks=ks, iou_threshold=iou_threshold)
        if skipped:
            warn_input(f"{len(skipped)} prediction entries are for annotated images outside test_image_ids "
                       f"(first: {skipped[0]!r}); not evaluated, as OpenPSG evaluates its test split only")
    result["warnings"] = notes
    return result
