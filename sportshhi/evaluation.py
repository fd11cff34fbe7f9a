"""SportsHHI metric: HHI mAP (VOC all-point AP per class) and Recall@K, vectorised with numpy.

A prediction is a scored (subject box, object box, class) triple on a keyframe. Matching follows the official
``hhi_eval``: per keyframe and class, detections in descending score order each take the not-yet-matched GT
interaction with the highest ``min(IoU_subject, IoU_object)``, provided both IoUs reach the threshold (ordered
matching: subject to subject, object to object; a taken GT is skipped, not a reason to stop). Only keyframes
with GT (of a whitelisted class) are evaluated: predictions elsewhere are ignored, not counted as false
positives. Recall@K keeps the K best-scored predictions of each keyframe, across classes.

Two modes:

* default (the paper): IoU >= 0.5; AP 0 for a class that has GT but no prediction; every class with GT enters
  mAP and the recall denominators; GT is never truncated.
* ``official=True`` (the released code): IoU >= 0.9; for Recall@K the GT of each keyframe is truncated to its
  first K rows too; classes without any prediction are dropped from mAP and from the recall sums; classes
  without GT are reported as ``None``.

An explicit ``iou_threshold`` overrides the threshold of either mode. HHIDet and HHICls differ only in the
proposals a model uses; the metric is the same. Ties between equal scores are broken by input order (the
tie order of the released code was not verified).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from itertools import repeat

import numpy as np

from hoi_bench.ap import ap_all_point, precision_recall
from hoi_bench.errors import PredictionError

logger = logging.getLogger(__name__)

EXCLUDED_LABEL_IDS = (1, 4, 7, 12, 20, 30)
EVALUATED_LABEL_IDS = tuple(i for i in range(1, 35) if i not in EXCLUDED_LABEL_IDS)
"""The 28 label ids the official configs evaluate (``custom_classes``): 1..34 minus 1, 4, 7, 12, 20, 30."""
RECALL_KS = (20, 50, 100, 150)
PAPER_IOU_THRESHOLD = 0.5
OFFICIAL_IOU_THRESHOLD = 0.9


@dataclass(frozen=True)
class HHISettings:
    """The settings a score was computed with; reported next to the numbers."""

    iou_threshold: float
    official: bool
    class_whitelist: tuple[int, ...]
    ks: tuple[int, ...]

    @classmethod
    def resolve(cls, iou_threshold: float | None = None, official: bool = False,
                class_whitelist: Sequence[int] | None = None, ks: Sequence[int] = RECALL_KS) -> HHISettings:
        """Fill in the mode's defaults and check the values."""
        if iou_threshold is None:
            iou_threshold = OFFICIAL_IOU_THRESHOLD if official else PAPER_IOU_THRESHOLD
        if not 0.0 < float(iou_threshold) <= 1.0:
            raise PredictionError(f"iou_threshold must be in (0, 1], found {iou_threshold}")
        whitelist = tuple(sorted({int(c) for c in (EVALUATED_LABEL_IDS if class_whitelist is None
                                                   else class_whitelist)}))
        if not whitelist:
            raise PredictionError("class_whitelist is empty; expected at least one label id")
        ks = tuple(int(k) for k in ks)
        if any(k < 1 for k in ks):
            raise PredictionError(f"recall K values must be >= 1, found {list(ks)}")
        return cls(float(iou_threshold), bool(official), whitelist, ks)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["class_whitelist"] = list(self.class_whitelist)
        data["ks"] = list(self.ks)
        return data


def hhi_metrics(
    gt_keys: Sequence[Hashable],
    gt_subject_boxes: np.ndarray,
    gt_object_boxes: np.ndarray,
    gt_labels: np.ndarray,
    pred_keys: Sequence[Hashable],
    pred_subject_boxes: np.ndarray,
    pred_object_boxes: np.ndarray,
    pred_labels: np.ndarray,
    pred_scores: np.ndarray,
    *,
    iou_threshold: float | None = None,
    official: bool = False,
    class_whitelist: Sequence[int] | None = None,
    ks: Sequence[int] = RECALL_KS,
) -> dict:
    """mAP, per-class AP and Recall@K of scored interaction predictions against GT interactions.

    ``*_keys`` identify the keyframe of each row (any hashable, e.g. ``"video,TTTT"``), boxes are N×4 xyxy in
    one coordinate system (normalised in the release), labels are 1-based label ids. Returns
    ``{"settings", "mAP", "ap_per_class": {"<label id>": AP or None}, "recall@K"...}``; values are fractions
    in [0, 1], ``None`` where undefined.

    >>> box_a, box_b = [0.1, 0.1, 0.3, 0.8], [0.5, 0.1, 0.7, 0.8]
    >>> result = hhi_metrics(["v,0001"], [box_a], [box_b], [2],
    ...                      ["v,0001", "v,0001"], [box_a, box_b], [box_b, box_a], [2, 2], [0.9, 0.8],
    ...                      class_whitelist=[2], ks=[1])
    >>> result["mAP"], result["recall@1"], result["settings"]["iou_threshold"]
    (1.0, 1.0, 0.5)
    """
    settings = HHISettings.resolve(iou_threshold, official, class_whitelist, ks)
    gt = _GroundTruth.build(gt_keys, gt_subject_boxes, gt_object_boxes, gt_labels, settings.class_whitelist)
    pred = _Detections.build(pred_keys, pred_subject_boxes, pred_object_boxes, pred_labels, pred_scores,
                             settings.class_whitelist, gt.frame_codes)
    if len(gt.labels) and not len(pred):
        logger.warning("no prediction falls on an evaluated keyframe (check that predictions are keyed by "
                       "keyframe index = frame_id // 5, with the same video ids as the GT)")
    pairs = _candidate_pairs(gt, pred, settings.iou_threshold)
    result: dict = {"settings": settings.as_dict()}
    result.update(_average_precision(gt, pred, pairs, settings))
    for k in settings.ks:
        result[f"recall@{k}"] = _recall_at(gt, pred, pairs, settings, k)
    return result


# --------------------------------------------------------------------------------------------- inputs


def _boxes(values: np.ndarray, name: str, n: int) -> np.ndarray:
    boxes = np.asarray(values, dtype=np.float64)
    if boxes.size == 0 and n == 0:
        return boxes.reshape(0, 4)
    if boxes.shape != (n, 4):
        raise PredictionError(f"{name}: expected an array of shape ({n}, 4), found {boxes.shape}")
    inverted = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
    bad = np.flatnonzero(~np.isfinite(boxes).all(axis=1) | inverted)
    if bad.size:
        raise PredictionError(f"{name}: row {bad[0]} is not an xyxy box with x1 <= x2, y1 <= y2 "
                              f"(found {boxes[bad[0]].tolist()}; {bad.size} bad rows)")
    return boxes


def _vector(values, name: str, n: int, dtype) -> np.ndarray:
    array = np.asarray(values, dtype=dtype).reshape(-1)
    if array.shape != (n,):
        raise PredictionError(f"{name}: expected {n} values (one per row), found {array.shape[0]}")
    return array


@dataclass
class _GroundTruth:
    frame_codes: dict  # keyframe key -> frame number (evaluated keyframes only)
    frames: np.ndarray  # (G,) frame number per GT row, whitelisted rows in input order
    classes: np.ndarray  # (G,) index into the whitelist
    labels: np.ndarray  # (G,) label ids
    subject_boxes: np.ndarray
    object_boxes: np.ndarray
    rank_in_frame: np.ndarray  # (G,) position of the row among its keyframe's rows (file order)

    @classmethod
    def build(cls, keys, subject_boxes, object_boxes, labels, whitelist) -> _GroundTruth:
        keys = list(keys)
        n = len(keys)
        labels = _vector(labels, "gt_labels", n, np.int64)
        subject_boxes = _boxes(subject_boxes, "gt_subject_boxes", n)
        object_boxes = _boxes(object_boxes, "gt_object_boxes", n)
        keep = np.isin(labels, whitelist)
        codes: dict = {}
        frames = np.array([codes.setdefault(key, len(codes)) for key, ok in zip(keys, keep) if ok],
                          dtype=np.int64)
        return cls(codes, frames, np.searchsorted(whitelist, labels[keep]), labels[keep], subject_boxes[keep],
                   object_boxes[keep], _rank_within(frames, np.argsort(frames, kind="stable")))


@dataclass
class _Detections:
    frames: np.ndarray  # (P,) frame number, only predictions on evaluated keyframes, input order
    classes: np.ndarray
    scores: np.ndarray
    subject_boxes: np.ndarray
    object_boxes: np.ndarray
    rank_in_frame: np.ndarray  # (P,) 0 = best-scored prediction of its keyframe (ties: input order)
    by_score: np.ndarray  # (P,) indices by descending score, ties in input order

    @classmethod
    def build(cls, keys, subject_boxes, object_boxes, labels, scores, whitelist, codes) -> _Detections:
        n = len(keys)
        labels = _vector(labels, "pred_labels", n, np.int64)
        scores = _vector(scores, "pred_scores", n, np.float64)
        if not np.isfinite(scores).all():
            raise PredictionError(f"pred_scores: row {np.flatnonzero(~np.isfinite(scores))[0]} is not finite")
        subject_boxes = _boxes(subject_boxes, "pred_subject_boxes", n)
        object_boxes = _boxes(object_boxes, "pred_object_boxes", n)
        frames = np.fromiter(map(codes.get, keys, repeat(-1)), dtype=np.int64, count=n)
        keep = (frames >= 0) & np.isin(labels, whitelist)
        frames, scores = frames[keep], scores[keep]
        by_score = np.argsort(-scores, kind="stable")
        by_frame = by_score[np.argsort(frames[by_score], kind="stable")]
        return cls(frames, np.searchsorted(whitelist, labels[keep]), scores, subject_boxes[keep],
                   object_boxes[keep], _rank_within(frames, by_frame), by_score)

    def __len__(self) -> int:
        return len(self.frames)


def _rank_within(groups: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rank of each row inside its group, given ``order``: the rows sorted by group, then by rank."""
    sorted_groups = groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]]) if len(groups) else order
    first = np.repeat(starts, np.diff(np.r_[starts, len(groups)]))
    ranks = np.empty(len(groups), dtype=np.int64)
    ranks[order] = np.arange(len(groups)) - first
    return ranks


# --------------------------------------------------------------------------------------------- matching


def paired_iou(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """IoU of row i of ``boxes_a`` with row i of ``boxes_b`` (continuous coordinates, no +1).

    The diagonal of ``hoi_bench.boxes.iou_matrix(a, b)`` without building the N×N matrix.

    >>> paired_iou(np.array([[0, 0, 10, 10], [0, 0, 10, 10]]), np.array([[5, 0, 15, 10], [10, 0, 20, 10]]))
    array([0.33333333, 0.        ])
    """
    a = np.asarray(boxes_a, dtype=np.float64)
    b = np.asarray(boxes_b, dtype=np.float64)
    width = np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0])
    height = np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1])
    inter = np.where((width > 0) & (height > 0), width * height, 0.0)
    union = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


@dataclass
class _Pairs:
    """(prediction, GT) pairs of the same keyframe and class whose subject and object IoUs both pass."""

    pred: np.ndarray
    gt: np.ndarray
    quality: np.ndarray  # min(IoU_subject, IoU_object)


def _candidate_pairs(gt: _GroundTruth, pred: _Detections, threshold: float) -> _Pairs:
    num_classes = int(max(gt.classes.max(initial=-1), pred.classes.max(initial=-1))) + 1
    gt_group = gt.frames * num_classes + gt.classes
    pred_group = pred.frames * num_classes + pred.classes
    gt_order = np.argsort(gt_group, kind="stable")
    sorted_groups = gt_group[gt_order]
    start = np.searchsorted(sorted_groups, pred_group, side="left")
    count = np.searchsorted(sorted_groups, pred_group, side="right") - start
    pair_pred = np.repeat(np.arange(len(pred)), count)
    offset = np.arange(len(pair_pred)) - np.repeat(np.cumsum(count) - count, count)
    pair_gt = gt_order[np.repeat(start, count) + offset]
    quality = np.minimum(paired_iou(pred.subject_boxes[pair_pred], gt.subject_boxes[pair_gt]),
                         paired_iou(pred.object_boxes[pair_pred], gt.object_boxes[pair_gt]))
    passing = quality >= threshold
    return _Pairs(pair_pred[passing], pair_gt[passing], quality[passing])


def _greedy_match(pred: _Detections, gt: _GroundTruth, pairs: _Pairs, pred_kept: np.ndarray,
                  gt_kept: np.ndarray) -> np.ndarray:
    """TP flag per prediction: greedy per (keyframe, class) in score order, best unmatched GT first.

    Groups are independent, so the r-th matchable detection of every group is resolved in one vectorised
    round.
    """
    is_tp = np.zeros(len(pred), dtype=bool)
    use = pred_kept[pairs.pred] & gt_kept[pairs.gt]
    p, g, q = pairs.pred[use], pairs.gt[use], pairs.quality[use]
    if not len(p):
        return is_tp
    group = pred.frames[p] * (int(pred.classes.max()) + 1) + pred.classes[p]
    order = np.lexsort((g, -q, p, pred.rank_in_frame[p], group))
    p, g, group = p[order], g[order], group[order]
    new_pred = np.r_[True, p[1:] != p[:-1]]
    pred_number = np.cumsum(new_pred) - 1  # running index of distinct predictions
    new_group = np.r_[True, group[1:] != group[:-1]]
    group_first_pred = pred_number[new_group][np.cumsum(new_group) - 1]
    rounds = pred_number - group_first_pred  # r-th matchable prediction of its group
    matched = np.zeros(len(gt.frames), dtype=bool)
    by_round = np.argsort(rounds, kind="stable")
    bounds = np.searchsorted(rounds[by_round], np.arange(rounds.max() + 2))
    for r in range(rounds.max() + 1):
        rows = by_round[bounds[r]:bounds[r + 1]]
        free = rows[~matched[g[rows]]]
        if not len(free):
            continue
        first = free[np.r_[True, p[free][1:] != p[free][:-1]]]
        matched[g[first]] = True
        is_tp[p[first]] = True
    return is_tp


# --------------------------------------------------------------------------------------------- scores


def _average_precision(gt: _GroundTruth, pred: _Detections, pairs: _Pairs, settings: HHISettings) -> dict:
    num_classes = len(settings.class_whitelist)
    is_tp = _greedy_match(pred, gt, pairs, np.ones(len(pred), bool), np.ones(len(gt.frames), bool))
    num_gt = np.bincount(gt.classes, minlength=num_classes)
    order = pred.by_score[np.argsort(pred.classes[pred.by_score], kind="stable")]
    bounds = np.searchsorted(pred.classes[order], np.arange(num_classes + 1))
    per_class = {}
    for c, label in enumerate(settings.class_whitelist):
        flags = is_tp[order[bounds[c]:bounds[c + 1]]]
        if num_gt[c] == 0 or (settings.official and not len(flags)):
            per_class[str(label)] = None
        elif not len(flags):
            per_class[str(label)] = 0.0
        else:
            per_class[str(label)] = ap_all_point(*precision_recall(flags, int(num_gt[c])))
    values = [v for v in per_class.values() if v is not None]
    return {"mAP": float(np.mean(values)) if values else None, "ap_per_class": per_class}


def _recall_at(gt: _GroundTruth, pred: _Detections, pairs: _Pairs, settings: HHISettings,
               k: int) -> float | None:
    num_classes = len(settings.class_whitelist)
    pred_kept = pred.rank_in_frame < k
    gt_kept = gt.rank_in_frame < k if settings.official else np.ones(len(gt.frames), bool)
    is_tp = _greedy_match(pred, gt, pairs, pred_kept, gt_kept)
    hits = np.bincount(pred.classes[is_tp], minlength=num_classes)
    num_gt = np.bincount(gt.classes[gt_kept], minlength=num_classes)
    if settings.official:
        predicted = np.bincount(pred.classes[pred_kept], minlength=num_classes) > 0
        hits, num_gt = hits[predicted], num_gt[predicted]
    total = int(num_gt.sum())
    return float(hits.sum() / total) if total else None


def score_tables(annotations, predictions, **settings) -> dict:
    """:func:`hhi_metrics` of a read annotation CSV against a read prediction CSV.

    ``annotations`` / ``predictions`` are what ``sportshhi.formats.read_annotation_csv`` /
    ``read_prediction_csv`` return (GT rows are keyed by ``frame_id // 5``, predictions by their keyframe);
    ``settings`` are the keyword arguments of :func:`hhi_metrics`.
    """
    return hhi_metrics(
        annotations.keys, annotations.subject_boxes, annotations.object_boxes, annotations.labels,
        predictions.keys, predictions.subject_boxes, predictions.object_boxes, predictions.labels,
        predictions.scores, **settings)
