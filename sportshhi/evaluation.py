"""SportsHHI metric: HHI mAP (VOC all-point AP per class) and Recall@K, vectorised with numpy.

A prediction is a scored (subject box, object box, class) triple on a keyframe. Matching follows the official
``hhi_eval``: per keyframe and class, detections in descending score order each take the not-yet-matched GT
interaction with the highest ``min(IoU_subject, IoU_object)``, provided both IoUs reach the threshold (ordered
matching: subject to subject, object to object; a taken GT is skipped, not a reason to stop). Only keyframes
with GT (of a whitelisted class) are evaluated: predictions elsewhere are ignored, not counted as false
positives. Recall@K keeps the K best-scored predictions of each keyframe, across classes.

Two modes:

* default (the paper): IoU >= 0.5; AP 0 for a class that has GT but no prediction; every class with GT enters
  mAP and the recall denominators; GT is never truncated; IoU in float64; equal scores and equal IoUs keep
  input order (the earlier row first).
* ``official=True`` (the released code): IoU >= 0.9; for Recall@K the GT of each keyframe is truncated to its
  first K rows too; classes without any prediction are dropped from mAP and from the recall sums; classes
  without GT are reported as ``None``. Predicted boxes are rounded to float32 before any IoU, as the released
  code stores them, and its arithmetic is followed operation by operation, so an IoU that is exactly the
  threshold in real numbers is decided as the released code decides it. Where the released code orders with
  numpy's (unstable) ``argsort``, the same call runs on the same data: the ranking of a class's detections
  (``np.argsort`` of its float32 scores, reversed, over the keyframes in GT order) and the order in which a
  detection tries GT of equal ``min(IoU)`` (``np.argsort`` of its IoU row, reversed). With numpy's sort that
  is usually the later row first among equals; it is not a rule this module assumes.

An explicit ``iou_threshold`` overrides the threshold of either mode. HHIDet and HHICls differ only in the
proposals a model uses; the metric is the same. Each GT row is one GT instance, also when a keyframe lists the
same ordered pair with several labels (one row per label, as the release does), and also when two rows are
identical (the released code counts both; a warning counts such rows). In official mode, boxes outside the
normalised image [0, 1] are scored as the released code scores them, counted in a warning.

Warnings are issued as :class:`~hoi_bench.input_warnings.InputWarning` and listed in the result's ``"warnings"``.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from itertools import repeat

import numpy as np

from hoi_bench.ap import ap_all_point, precision_recall
from hoi_bench.errors import PredictionError
from hoi_bench.input_warnings import collected_notes, warn_input

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
    ``{"settings", "mAP", "ap_per_class": {"<label id>": AP or None}, "recall@K"..., "warnings"}``; values are
    fractions in [0, 1], ``None`` where undefined; ``warnings`` counts inputs scored as the released code scores
    them though they look wrong (identical GT rows; in official mode, boxes outside [0, 1]).

    >>> box_a, box_b = [0.1, 0.1, 0.3, 0.8], [0.5, 0.1, 0.7, 0.8]
    >>> result = hhi_metrics(["v,0001"], [box_a], [box_b], [2],
    ...                      ["v,0001", "v,0001"], [box_a, box_b], [box_b, box_a], [2, 2], [0.9, 0.8],
    ...                      class_whitelist=[2], ks=[1])
    >>> result["mAP"], result["recall@1"], result["settings"]["iou_threshold"]
    (1.0, 1.0, 0.5)
    """
    settings = HHISettings.resolve(iou_threshold, official, class_whitelist, ks)
    gt_frames, pred_frames = keyframe_codes(gt_keys, pred_keys)
    with collected_notes() as notes:
        gt = _GroundTruth.build(gt_frames, gt_subject_boxes, gt_object_boxes, gt_labels, settings.class_whitelist)
        pred = _Detections.build(pred_frames, pred_subject_boxes, pred_object_boxes, pred_labels, pred_scores,
                                 settings.class_whitelist, gt.renumber)
        if official:
            _note_outside_image("GT", (gt_subject_boxes, gt_object_boxes))
            _note_outside_image("prediction", (pred_subject_boxes, pred_object_boxes))
        _note_identical_gt_rows(gt)
        if len(gt.labels) and not len(pred):
            logger.warning("no prediction falls on an evaluated keyframe (check that predictions are keyed by "
                           "keyframe index = frame_id // 5, with the same video ids as the GT)")
        pairs = _candidate_pairs(gt, pred, settings)
        result: dict = {"settings": settings.as_dict()}
        result.update(_average_precision(gt, pred, pairs, settings))
        for k in settings.ks:
            result[f"recall@{k}"] = _recall_at(gt, pred, pairs, settings, k)
    result["warnings"] = notes
    return result


def _note_outside_image(what: str, box_sets: tuple) -> None:
    """Count the rows with a box coordinate outside the normalised image [0, 1] (official mode scores them)."""
    outside = np.zeros(0, dtype=bool)
    for boxes in box_sets:
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        rows = ((boxes < 0.0) | (boxes > 1.0)).any(axis=1)
        outside = rows if not len(outside) else outside | rows
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        found = [np.asarray(b, dtype=np.float64).reshape(-1, 4)[first].tolist() for b in box_sets]
        warn_input(f"{int(outside.sum())} {what} rows have a box coordinate outside the normalised image [0, 1] "
                   f"(first: row {first}, subject and object boxes {found}); scored as given, as the released "
                   "hhi_eval scores them")


def _note_identical_gt_rows(gt: _GroundTruth) -> None:
    """Count evaluated GT rows identical to an earlier one (keyframe, boxes, label): each is one more GT instance,
    as the released code counts it."""
    rows = np.column_stack([gt.frames, gt.labels, gt.subject_boxes, gt.object_boxes])
    if len(rows) < 2:
        return
    _, first = np.unique(rows, axis=0, return_index=True)
    repeats = len(rows) - len(first)
    if repeats:
        warn_input(f"{repeats} evaluated GT rows repeat an earlier row exactly (same keyframe, boxes and label); "
                   "each counts as one more GT instance, as the released hhi_eval counts it")


def keyframe_codes(gt_keys: Sequence[Hashable],
                   pred_keys: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Number the keyframes of the GT; a prediction on a keyframe without GT gets -1.

    Integer keys (numpy arrays) are numbered without a Python object per row; any other hashable keys go
    through a dict. (The official keyframe order, first appearance in the GT, is set afterwards from the
    whitelisted GT rows.)

    >>> keyframe_codes(["b", "a", "b"], ["a", "c", "b"])
    (array([0, 1, 0]), array([ 1, -1,  0]))
    """
    if isinstance(gt_keys, np.ndarray) and isinstance(pred_keys, np.ndarray) \
            and gt_keys.dtype.kind in "iu" and pred_keys.dtype.kind in "iu":
        unique, inverse = np.unique(gt_keys, return_inverse=True)
        if not len(unique):
            return inverse.reshape(-1).astype(np.int64), np.full(len(pred_keys), -1, dtype=np.int64)
        if unique[0] >= 0 and unique[-1] < 8 * (len(gt_keys) + len(pred_keys)):
            table = np.full(int(unique[-1]) + 2, -1, dtype=np.int64)  # small keys: one lookup per prediction
            table[unique] = np.arange(len(unique))
            inside = (pred_keys >= 0) & (pred_keys <= unique[-1])
            return inverse.reshape(-1), table[np.where(inside, pred_keys, -1)]
        at = np.minimum(np.searchsorted(unique, pred_keys), len(unique) - 1)
        return inverse.reshape(-1), np.where(unique[at] == pred_keys, at, -1)
    codes: dict = {}
    gt_frames = np.fromiter((codes.setdefault(key, len(codes)) for key in gt_keys), dtype=np.int64)
    pred_frames = np.fromiter(map(codes.get, pred_keys, repeat(-1)), dtype=np.int64)
    return gt_frames, pred_frames


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
    renumber: np.ndarray  # keyframe code -> evaluated keyframe number (-1: no whitelisted GT there)
    frames: np.ndarray  # (G,) evaluated keyframe number (first-appearance order); whitelisted, input order
    classes: np.ndarray  # (G,) index into the whitelist
    labels: np.ndarray  # (G,) label ids
    subject_boxes: np.ndarray
    object_boxes: np.ndarray
    rank_in_frame: np.ndarray  # (G,) position of the row among its keyframe's rows (file order)

    @classmethod
    def build(cls, frames, subject_boxes, object_boxes, labels, whitelist) -> _GroundTruth:
        n = len(frames)
        labels = _vector(labels, "gt_labels", n, np.int64)
        subject_boxes = _boxes(subject_boxes, "gt_subject_boxes", n)
        object_boxes = _boxes(object_boxes, "gt_object_boxes", n)
        class_of_row = _class_index(labels, whitelist)
        keep = class_of_row >= 0
        unique, first = np.unique(frames[keep], return_index=True)
        renumber = np.full(int(frames.max(initial=-1)) + 2, -1, dtype=np.int64)  # last entry: key -1 stays -1
        renumber[unique[np.argsort(first, kind="stable")]] = np.arange(len(unique))
        frames = renumber[frames[keep]]
        ranks = _rank_within(frames, _stable_argsort(frames))
        return cls(renumber, frames, class_of_row[keep], labels[keep],
                   subject_boxes[keep], object_boxes[keep], ranks)


@dataclass
class _Detections:
    frames: np.ndarray  # (P,) keyframe number, only predictions on evaluated keyframes, input order
    classes: np.ndarray
    scores: np.ndarray
    subject_boxes: np.ndarray
    object_boxes: np.ndarray
    rank_in_frame: np.ndarray  # (P,) 0 = best-scored prediction of its keyframe (ties: input order)
    by_score: np.ndarray  # (P,) indices by descending score, ties in input order
    by_frame: np.ndarray  # (P,) indices by keyframe, then rank in the keyframe

    @classmethod
    def build(cls, frames, subject_boxes, object_boxes, labels, scores, whitelist, renumber) -> _Detections:
        n = len(frames)
        labels = _vector(labels, "pred_labels", n, np.int64)
        scores = _vector(scores, "pred_scores", n, np.float64)
        if not np.isfinite(scores).all():
            raise PredictionError(f"pred_scores: row {np.flatnonzero(~np.isfinite(scores))[0]} is not finite")
        subject_boxes = _boxes(subject_boxes, "pred_subject_boxes", n)
        object_boxes = _boxes(object_boxes, "pred_object_boxes", n)
        frames = renumber[frames]
        class_of_row = _class_index(labels, whitelist)
        keep = (frames >= 0) & (class_of_row >= 0)
        frames, scores = frames[keep], scores[keep]
        classes = class_of_row[keep]
        by_score = _stable_descending(scores)
        by_frame = by_score[_stable_argsort(frames[by_score])]
        return cls(frames, classes, scores, subject_boxes[keep], object_boxes[keep],
                   _rank_within(frames, by_frame), by_score, by_frame)

    def __len__(self) -> int:
        return len(self.frames)


def _class_index(labels: np.ndarray, whitelist: tuple[int, ...]) -> np.ndarray:
    """Position of each label in the (sorted) whitelist, -1 outside it; one table lookup per row."""
    table = np.full(max(whitelist) + 2, -1, dtype=np.int64)  # the last entry answers every out-of-range label
    table[list(whitelist)] = np.arange(len(whitelist))
    inside = (labels >= 0) & (labels <= max(whitelist))
    return table[np.where(inside, labels, -1)]


def _stable_descending(scores: np.ndarray) -> np.ndarray:
    """Indices by descending score, equal scores in input order: ``np.argsort(-scores, kind="stable")``.

    Computed as numpy's fast (unstable) argsort followed by one integer sort of (tie group, index) keys,
    several times faster than a stable float sort on half a million scores.
    """
    n = len(scores)
    order = np.argsort(-scores)
    descending = scores[order]
    tie_group = np.cumsum(np.r_[False, descending[1:] != descending[:-1]])
    return np.sort(tie_group * n + order) % n


def _stable_argsort(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of small non-negative integers, as uint16 when they fit (numpy
    sorts 16-bit integers with a linear-time radix sort)."""
    if len(values) and values.min() >= 0 and values.max() < 2**16:
        values = values.astype(np.uint16)
    return np.argsort(values, kind="stable")


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


def released_paired_iou(detected_boxes: np.ndarray, gt_boxes: np.ndarray) -> np.ndarray:
    """:func:`paired_iou` computed as the released ``hhi_eval`` computes it, bit for bit.

    The detected boxes are rounded to float32 first and their areas are float32 products; the intersection
    and union are float64 (numpy's promotion when float32 detections meet float64 GT); the union is
    ``(area_det + area_gt) - intersection`` and is not guarded, so two empty boxes give NaN (never a match).
    An IoU that is exactly 0.5 in real numbers can come out just below or just above it.

    >>> float(released_paired_iou(np.array([[0.1, 0.1, 0.17, 0.51]]), np.array([[0.1, 0.1, 0.24, 0.51]]))[0])
    0.49999998585168487
    """
    det = np.asarray(detected_boxes, dtype=np.float64).astype(np.float32)
    gt = np.asarray(gt_boxes, dtype=np.float64)
    det_area = (det[:, 2] - det[:, 0]) * (det[:, 3] - det[:, 1])
    det = det.astype(np.float64)
    height = np.maximum(0.0, np.minimum(det[:, 3], gt[:, 3]) - np.maximum(det[:, 1], gt[:, 1]))
    width = np.maximum(0.0, np.minimum(det[:, 2], gt[:, 2]) - np.maximum(det[:, 0], gt[:, 0]))
    inter = height * width
    union = (det_area.astype(np.float64) + (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1])) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / union


@dataclass
class _Pairs:
    """(prediction, GT) pairs of the same keyframe and class whose subject and object IoUs both pass."""

    pred: np.ndarray
    gt: np.ndarray
    quality: np.ndarray  # min(IoU_subject, IoU_object)


def _same_group(gt: _GroundTruth, pred: _Detections) -> tuple[np.ndarray, np.ndarray]:
    """Every (prediction, GT) pair of one keyframe and class; GT of a prediction in ascending (file) order."""
    num_classes = int(max(gt.classes.max(initial=-1), pred.classes.max(initial=-1))) + 1
    gt_group = gt.frames * num_classes + gt.classes
    pred_group = pred.frames * num_classes + pred.classes
    gt_order = np.argsort(gt_group, kind="stable")
    per_group = np.bincount(gt_group, minlength=int(pred_group.max(initial=-1)) + 1)
    count = per_group[pred_group]
    start = (np.cumsum(per_group) - per_group)[pred_group]
    pair_pred = np.repeat(np.arange(len(pred)), count)
    offset = np.arange(len(pair_pred)) - np.repeat(np.cumsum(count) - count, count)
    return pair_pred, gt_order[np.repeat(start, count) + offset]


def _candidate_pairs(gt: _GroundTruth, pred: _Detections, settings: HHISettings) -> _Pairs:
    pair_pred, pair_gt = _same_group(gt, pred)
    iou = released_paired_iou if settings.official else paired_iou
    quality = np.minimum(iou(pred.subject_boxes[pair_pred], gt.subject_boxes[pair_gt]),
                      iou(pred.object_boxes[pair_pred], gt.object_boxes[pair_gt]))
    passing = quality >= settings.iou_threshold
    return _Pairs(pair_pred[passing], pair_gt[passing], quality[passing])


def _released_try_order(gt: _GroundTruth, pred: _Detections, p: np.ndarray, g: np.ndarray, q: np.ndarray,
                        gt_kept: np.ndarray) -> np.ndarray:
    """Position of each candidate GT in the order the released code tries them (``np.argsort(iou)[::-1]``).

    Only detections with two passing GT of exactly equal ``min(IoU)`` can be affected, so only their IoU rows
    (the detection against every kept GT of its keyframe and class, in file order, as the released code
    builds them) are sorted, with the same numpy call; every other pair gets position 0.
    """
    position = np.zeros(len(p), dtype=np.int64)
    by_detection = np.lexsort((q, p))
    sorted_p, sorted_q = p[by_detection], q[by_detection]
    tied = sorted_p[1:][(sorted_p[1:] == sorted_p[:-1]) & (sorted_q[1:] == sorted_q[:-1])]  # ascending
    tied = tied[np.r_[True, tied[1:] != tied[:-1]]] if len(tied) else tied  # (np.unique would load numpy.ma)
    if not len(tied):
        return position
    num_classes = int(max(gt.classes.max(initial=-1), pred.classes.max(initial=-1))) + 1
    gt_group = np.where(gt_kept, gt.frames * num_classes + gt.classes, -1)
    gt_order = np.argsort(gt_group, kind="stable")
    bounds = np.searchsorted(gt_group[gt_order], pred.frames[tied] * num_classes + pred.classes[tied])
    ends = np.searchsorted(gt_group[gt_order], pred.frames[tied] * num_classes + pred.classes[tied], "right")
    first_pair = np.searchsorted(sorted_p, tied)
    last_pair = np.searchsorted(sorted_p, tied, "right")
    for detection, start, end, first, last in zip(tied, bounds, ends, first_pair, last_pair):
        row_gt = gt_order[start:end]  # ascending: file order
        subject = np.repeat(pred.subject_boxes[detection][None], len(row_gt), axis=0)
        obj = np.repeat(pred.object_boxes[detection][None], len(row_gt), axis=0)
        row = np.minimum(released_paired_iou(subject, gt.subject_boxes[row_gt]),
                         released_paired_iou(obj, gt.object_boxes[row_gt]))
        tried = np.empty(len(row_gt), dtype=np.int64)
        tried[np.argsort(row)[::-1]] = np.arange(len(row_gt))
        mine = by_detection[first:last]
        position[mine] = tried[np.searchsorted(row_gt, g[mine])]
    return position


def _greedy_match(pred: _Detections, gt: _GroundTruth, pairs: _Pairs, pred_kept: np.ndarray,
                  gt_kept: np.ndarray, official: bool) -> np.ndarray:
    """TP flag per prediction: greedy per (keyframe, class) in score order, best unmatched GT first.

    Among GT of equal ``min(IoU)`` the earlier row is tried first, or, in official mode, the order of the
    released code (:func:`_released_try_order`). Groups are independent, so the r-th matchable detection of
    every group is resolved in one vectorised round.
    """
    is_tp = np.zeros(len(pred), dtype=bool)
    use = pred_kept[pairs.pred] & gt_kept[pairs.gt]
    p, g, q = pairs.pred[use], pairs.gt[use], pairs.quality[use]
    if not len(p):
        return is_tp
    tie_break = _released_try_order(gt, pred, p, g, q, gt_kept) if official else g
    group = pred.frames[p] * (int(pred.classes.max()) + 1) + pred.classes[p]
    order = np.lexsort((tie_break, -q, p, pred.rank_in_frame[p], group))
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
    is_tp = _greedy_match(pred, gt, pairs, np.ones(len(pred), bool), np.ones(len(gt.frames), bool),
                          settings.official)
    num_gt = np.bincount(gt.classes, minlength=num_classes)
    # official: the released code's row order (class, keyframe in GT order, rank in the keyframe)
    within = pred.by_frame if settings.official else pred.by_score
    order = within[_stable_argsort(pred.classes[within])]
    bounds = np.searchsorted(pred.classes[order], np.arange(num_classes + 1))
    per_class = {}
    for c, label in enumerate(settings.class_whitelist):
        ranked = order[bounds[c]:bounds[c + 1]]
        if settings.official:  # np.argsort of the float32 scores, reversed, as the released code ranks
            ranked = ranked[np.argsort(pred.scores[ranked].astype(np.float32))[::-1]]
        flags = is_tp[ranked]
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
    is_tp = _greedy_match(pred, gt, pairs, pred_kept, gt_kept, settings.official)
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
    ``settings`` are the keyword arguments of :func:`hhi_metrics`. Keyframes are keyed by integers built from
    the readers' video codes, so no ``"video,TTTT"`` string is made per row.
    """
    gt_videos, pred_videos = annotations.videos(), predictions.videos()
    position = {name: i for i, name in enumerate(gt_videos.names)}
    gt_video_of_pred = np.array([position.get(name, -1) for name in pred_videos.names], dtype=np.int64)
    gt_keyframes, pred_keyframes = annotations.keyframes, predictions.keyframes
    span = int(max(gt_keyframes.max(initial=0), pred_keyframes.max(initial=0))) + 1
    gt_keys = gt_videos.codes * span + gt_keyframes
    pred_video = gt_video_of_pred[pred_videos.codes]
    pred_keys = np.where(pred_video >= 0, pred_video * span + pred_keyframes, -1)
    with collected_notes() as notes:
        unknown = np.flatnonzero(pred_video < 0)
        if len(unknown):
            video = pred_videos.names[pred_videos.codes[unknown[0]]]
            warn_input(f"{len(unknown)} predictions are for videos the GT does not have (first: row "
                       f"{int(unknown[0])}, video {video!r}); ignored, as the released hhi_eval evaluates only "
                       "the GT's keyframes")
        result = hhi_metrics(
            gt_keys, annotations.subject_boxes, annotations.object_boxes, annotations.labels,
            pred_keys, predictions.subject_boxes, predictions.object_boxes, predictions.labels,
            predictions.scores, **settings)
    result["warnings"] = notes
    return result
