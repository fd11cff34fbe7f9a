"""HOI detection mAP (HICO-DET / V-COCO and their SG splits) as vectorized functions on numpy arrays.

Three protocols, each reproducing an upstream evaluator:

* ``hoi_map(..., protocol="qpic")`` — QPIC ``datasets/hico_eval.py``: per image, predictions in descending score
  order (ties: file order, as Python's stable sort), top-100 cut; a prediction matches the GT HOI of the same verb
  whose subject and object boxes both have IoU >= 0.5 (+1-pixel IoU, no overlap when ``x1 >= x2``, IoU 0 across
  categories), the best being the largest min(subject IoU, object IoU) (first GT in file order on ties); it is a TP
  if that GT was not matched before, else an FP — there is no fallback to a second GT (so of two identical GT HOIs
  only the first can ever be matched, yet both count as GT, as upstream). Predictions whose predicted-label triplet
  (subject category, object category, verb) never occurs in the GT are ignored. 11-point AP per GT triplet with
  ``np.arange(0., 1.1, 0.1)`` thresholds after ``np.argsort(-score)`` (the same call, so ties resolve as upstream
  does on the same numpy build), means with ``np.mean`` in first-appearance order of the triplets.
* ``hoi_map(..., protocol="ho-rcnn")`` — the official HICO-DET MATLAB code (``eval_one.m``): the fixed 600 HOI
  classes, no per-image cap, IoU without categories (``iw = min(x2) - max(x1) + 1 > 0``), every GT pair its own
  instance, stable sort of all detections of a class, thresholds ``0:0.1:1`` as MATLAB's colon operator builds
  them, optional known-object mode.
* ``vcoco_map`` — QPIC ``datasets/vcoco_eval.py``: GT without object (``object == -1``) is matched on the subject
  alone, no triplet filter, AP per verb, ``mAP_all`` over verbs with GT and ``mAP_thesis`` over the 24 fixed verbs
  with absent ones counted as 0.

Inputs are :class:`HoiSet` objects: the boxes and HOIs of every image of a test set, concatenated with offsets.
The matching is done for all images at once (a join of predictions and GT HOIs on (image, verb)), which is what
makes it fast; ``tests/hoi_sg_dataset/reference_hoi_map.py`` is the loop version it is tested against.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from hoi_bench.ap import ELEVEN_POINTS
from hoi_bench.errors import ConfigError, PredictionError

logger = logging.getLogger(__name__)

PROTOCOLS = ("qpic", "ho-rcnn")
IOU_THRESHOLD = 0.5
QPIC_TOP_K = 100
RARE_THRESHOLD = 10
PERSON = 1
# QPIC vcoco_eval.py ``thesis_map_indices``: the 24 verb roles reported in papers (no stand, walk, run, smile, point).
VCOCO_THESIS_VERBS = (0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 27, 28)


def _matlab_colon(start: float, step: float, stop: float) -> np.ndarray:
    """``start:step:stop`` as MATLAB builds it: from the start for the first half, from the stop for the second.

    >>> [round(float(t), 17) for t in _matlab_colon(0.0, 0.1, 1.0)][5:8]
    [0.5, 0.6, 0.7]
    """
    n = int(round((stop - start) / step))
    values = [start + k * step if k < n / 2 else (start + stop) / 2 if k == n / 2 else stop - (n - k) * step
              for k in range(n + 1)]
    return np.array(values, dtype=np.float64)


# MATLAB's ``0:0.1:1`` (0.6 and 0.7 exact, unlike np.arange's 0.6000000000000001 and 0.7000000000000001).
MATLAB_ELEVEN_POINTS = _matlab_colon(0.0, 0.1, 1.0)


@dataclass(frozen=True)
class HoiSet:
    """Boxes and HOIs of every image of a test set (GT or predictions), concatenated over images.

    ``boxes`` (N×4 float64, xyxy pixels) and ``box_labels`` (N, raw COCO category ids) hold the boxes of image
    ``i`` at rows ``box_offsets[i]:box_offsets[i+1]``; ``hois`` (M×3 int64: subject index, object index or -1 for
    "no object", verb id) indexes the boxes *of its own image* and lies at rows ``hoi_offsets[i]:hoi_offsets[i+1]``;
    ``scores`` (M float64) is set for predictions and ``None`` for GT. Build it with :meth:`from_images`.

    >>> gt = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 47]], hois=[[[0, 1, 37]]])
    >>> gt.num_images, gt.hois.tolist(), gt.scores is None
    (1, [[0, 1, 37]], True)
    """

    boxes: np.ndarray
    box_labels: np.ndarray
    box_offsets: np.ndarray
    hois: np.ndarray
    hoi_offsets: np.ndarray
    scores: np.ndarray | None = None
    what: str = "references"

    def __post_init__(self) -> None:
        _check_hoi_set(self)

    @property
    def num_images(self) -> int:
        return len(self.box_offsets) - 1

    @classmethod
    def from_images(
        cls,
        boxes: Sequence,
        box_labels: Sequence,
        hois: Sequence,
        scores: Sequence | None = None,
        what: str | None = None,
    ) -> HoiSet:
        """Concatenate per-image lists (boxes, box labels, HOI index triples, and scores for predictions)."""
        if not len(boxes) == len(box_labels) == len(hois) or (scores is not None and len(scores) != len(hois)):
            raise PredictionError(
                f"{what or 'HOI set'}: per-image lists differ in length (boxes {len(boxes)}, box_labels "
                f"{len(box_labels)}, hois {len(hois)}{'' if scores is None else f', scores {len(scores)}'})")
        box_arrays = [np.asarray(b, dtype=np.float64).reshape(-1, 4) for b in boxes]
        label_arrays = [np.asarray(lab, dtype=np.int64).reshape(-1) for lab in box_labels]
        hoi_arrays = [np.asarray(h, dtype=np.int64).reshape(-1, 3) for h in hois]
        for i, (b, lab) in enumerate(zip(box_arrays, label_arrays)):
            if len(b) != len(lab):
                raise PredictionError(f"{what or 'HOI set'}: image {i}: {len(b)} boxes but {len(lab)} box labels")
        box_offsets = np.concatenate([[0], np.cumsum([len(b) for b in box_arrays])]).astype(np.int64)
        hoi_offsets = np.concatenate([[0], np.cumsum([len(h) for h in hoi_arrays])]).astype(np.int64)
        score_array = None
        if scores is not None:
            score_arrays = [np.asarray(s, dtype=np.float64).reshape(-1) for s in scores]
            for i, (s, h) in enumerate(zip(score_arrays, hoi_arrays)):
                if len(s) != len(h):
                    raise PredictionError(f"{what or 'predictions'}: image {i}: {len(h)} HOIs but {len(s)} scores")
            score_array = np.concatenate(score_arrays) if score_arrays else np.zeros(0)
        return cls(
            boxes=np.concatenate(box_arrays) if box_arrays else np.zeros((0, 4)),
            box_labels=np.concatenate(label_arrays) if label_arrays else np.zeros(0, dtype=np.int64),
            box_offsets=box_offsets,
            hois=np.concatenate(hoi_arrays) if hoi_arrays else np.zeros((0, 3), dtype=np.int64),
            hoi_offsets=hoi_offsets,
            scores=score_array,
            what=what or ("references" if scores is None else "predictions"),
        )

    def hoi_images(self) -> np.ndarray:
        """Image index of every HOI row."""
        return np.repeat(np.arange(self.num_images), np.diff(self.hoi_offsets))

    def hoi_box_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Global box rows of every HOI's subject and object (object row -1 when the HOI has no object)."""
        start = self.box_offsets[self.hoi_images()]
        subject = start + self.hois[:, 0]
        obj = np.where(self.hois[:, 1] >= 0, start + self.hois[:, 1], -1)
        return subject, obj


def _image_of(offsets: np.ndarray, row: int) -> tuple[int, int]:
    image = int(np.searchsorted(offsets, row, side="right") - 1)
    return image, int(row - offsets[image])


def _check_hoi_set(hoi_set: HoiSet) -> None:
    """Raise ``PredictionError`` naming the image, HOI, field, expectation and value of the first bad entry."""
    what = hoi_set.what
    for name in ("box_offsets", "hoi_offsets"):
        offsets = np.asarray(getattr(hoi_set, name))
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
            raise PredictionError(f"{what}: {name} must start at 0 and never decrease (found {offsets[:10].tolist()})")
    if len(hoi_set.box_offsets) != len(hoi_set.hoi_offsets):
        raise PredictionError(f"{what}: box_offsets and hoi_offsets describe different numbers of images")
    boxes, labels, hois = hoi_set.boxes, hoi_set.box_labels, hoi_set.hois
    if boxes.shape != (hoi_set.box_offsets[-1], 4) or labels.shape != (hoi_set.box_offsets[-1],):
        raise PredictionError(f"{what}: boxes {boxes.shape} and box_labels {labels.shape} do not match the offsets")
    if hois.shape != (hoi_set.hoi_offsets[-1], 3):
        raise PredictionError(f"{what}: hois {hois.shape} do not match hoi_offsets (expected M×3)")
    bad_box = np.flatnonzero(~np.isfinite(boxes).all(axis=1))
    if bad_box.size:
        image, local = _image_of(hoi_set.box_offsets, bad_box[0])
        raise PredictionError(f"{what}: image {image}: field 'boxes[{local}]': coordinates must be finite "
                              f"(expected 4 finite numbers, found {boxes[bad_box[0]].tolist()})")
    bad_label = np.flatnonzero(labels < 0)
    if bad_label.size:
        image, local = _image_of(hoi_set.box_offsets, bad_label[0])
        raise PredictionError(f"{what}: image {image}: field 'box_labels[{local}]': unknown category "
                              f"(expected a raw category id >= 0, found {int(labels[bad_label[0]])})")
    n_boxes = np.diff(hoi_set.box_offsets)[hoi_set.hoi_images()]
    for column, name, low in ((0, "subject", 0), (1, "object", -1)):
        bad = np.flatnonzero((hois[:, column] < low) | (hois[:, column] >= n_boxes))
        if bad.size:
            image, local = _image_of(hoi_set.hoi_offsets, bad[0])
            raise PredictionError(
                f"{what}: image {image}: field 'hois[{local}].{name}': index outside the image's box list "
                f"(expected {low}..{int(n_boxes[bad[0]]) - 1}, found {int(hois[bad[0], column])})")
    bad_verb = np.flatnonzero(hois[:, 2] < 0)
    if bad_verb.size:
        image, local = _image_of(hoi_set.hoi_offsets, bad_verb[0])
        raise PredictionError(f"{what}: image {image}: field 'hois[{local}].verb': unknown verb "
                              f"(expected a verb id >= 0, found {int(hois[bad_verb[0], 2])})")
    if hoi_set.scores is not None:
        scores = hoi_set.scores
        if scores.shape != (len(hois),):
            raise PredictionError(f"{what}: scores {scores.shape} do not match {len(hois)} HOIs")
        bad_score = np.flatnonzero(~np.isfinite(scores))
        if bad_score.size:
            image, local = _image_of(hoi_set.hoi_offsets, bad_score[0])
            raise PredictionError(f"{what}: image {image}: field 'scores[{local}]': score must be finite "
                                  f"(expected a finite number, found {float(scores[bad_score[0]])})")


def pair_iou(gt: np.ndarray, pred: np.ndarray, *, rule: Literal["qpic", "matlab"] = "qpic") -> np.ndarray:
    """Elementwise IoU of ``gt[i]`` and ``pred[i]`` (both n×4 xyxy) with the +1-pixel convention.

    ``rule="qpic"``: no overlap when ``min(x2) - max(x1) <= 0`` (QPIC ``compute_IOU``, so a one-pixel touch is 0);
    ``rule="matlab"``: no overlap unless ``iw = min(x2) - max(x1) + 1 > 0`` (ho-rcnn ``VOCevaldet_bboxpair.m``).
    The arithmetic follows the upstream order of operations, so values are bit-identical.

    >>> a = np.array([[0., 0, 10, 10], [0, 0, 10, 10]]); b = np.array([[5., 0, 15, 10], [10, 0, 20, 10]])
    >>> pair_iou(a, b).round(4).tolist(), pair_iou(a, b, rule="matlab").round(4).tolist()
    ([0.375, 0.0], [0.375, 0.0476])
    """
    area_gt = (gt[:, 2] - gt[:, 0] + 1) * (gt[:, 3] - gt[:, 1] + 1)
    area_pred = (pred[:, 2] - pred[:, 0] + 1) * (pred[:, 3] - pred[:, 1] + 1)
    raw_w = np.minimum(gt[:, 2], pred[:, 2]) - np.maximum(gt[:, 0], pred[:, 0])
    raw_h = np.minimum(gt[:, 3], pred[:, 3]) - np.maximum(gt[:, 1], pred[:, 1])
    if rule == "qpic":
        overlaps = (raw_w > 0) & (raw_h > 0)
    else:
        overlaps = (raw_w + 1 > 0) & (raw_h + 1 > 0)
    inter = (raw_h + 1) * (raw_w + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area_gt + area_pred - inter)
    return np.where(overlaps, iou, 0.0)


def rank_predictions(predictions: HoiSet, top_k: int | None) -> np.ndarray:
    """Rows of the predicted HOIs that are scored, image by image, each image in descending score order.

    Ties keep the file order (Python's stable ``sort(reverse=True)``, as QPIC and MATLAB's stable ``sort``);
    ``top_k`` keeps the first ``top_k`` of each image (``None``: all).

    >>> p = HoiSet.from_images(boxes=[[[0, 0, 1, 1]]], box_labels=[[1]], hois=[[[0, 0, 1]] * 3],
    ...                        scores=[[0.2, 0.9, 0.2]])
    >>> rank_predictions(p, None).tolist(), rank_predictions(p, 2).tolist()
    ([1, 0, 2], [1, 0])
    """
    if predictions.scores is None:
        raise PredictionError(f"{predictions.what}: predicted HOIs need scores (found none)")
    images = predictions.hoi_images()
    order = np.lexsort((-predictions.scores, images))
    if top_k is None:
        return order
    rank = np.arange(len(order)) - predictions.hoi_offsets[images[order]]
    return order[rank < top_k]


def _join_on_image_and_verb(gt_keys: np.ndarray, pred_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (prediction position, GT row) pairs with equal keys; GT rows of one prediction in ascending order."""
    gt_order = np.argsort(gt_keys, kind="stable")
    sorted_keys = gt_keys[gt_order]
    low = np.searchsorted(sorted_keys, pred_keys, side="left")
    counts = np.searchsorted(sorted_keys, pred_keys, side="right") - low
    pair_pred = np.repeat(np.arange(len(pred_keys)), counts)
    within = np.arange(len(pair_pred)) - np.repeat(np.cumsum(counts) - counts, counts)
    pair_gt = gt_order[np.repeat(low, counts) + within]
    return pair_pred, pair_gt


def match_predictions(
    references: HoiSet,
    predictions: HoiSet,
    ranked: np.ndarray,
    *,
    iou_rule: Literal["qpic", "matlab"] = "qpic",
    labels: Literal["boxes", "hoi_class"] = "boxes",
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy matching of the ranked predicted HOIs to GT HOIs; returns ``(is_tp, matched_gt_row)`` per position.

    A prediction's best GT is the same-verb GT HOI of its image with the largest min(subject IoU, object IoU)
    among those with both IoUs >= 0.5 (subject IoU alone for a GT without object); first GT row wins ties. It is a
    TP when no earlier prediction of the image took that GT. ``labels="boxes"`` scores IoU 0 between boxes of
    different categories (QPIC); ``labels="hoi_class"`` ignores box categories but lets a prediction match only GT
    of its own HOI class, i.e. the same object category (MATLAB, which evaluates class by class). Identical GT HOIs
    have identical overlaps, so the first always wins: QPIC's ``vis_tag[gt_hois.index(best)]`` needs no special
    case. ``matched_gt_row`` is -1 for predictions without any GT candidate.
    """
    n = len(ranked)
    if references.num_images != predictions.num_images:
        raise PredictionError(f"predictions cover {predictions.num_images} images but references "
                              f"{references.num_images}; give one entry (possibly empty) per reference image")
    gt_images = references.hoi_images()
    pred_images = predictions.hoi_images()[ranked]
    gt_sub, gt_obj = references.hoi_box_rows()
    pred_sub, pred_obj = predictions.hoi_box_rows()
    pred_sub, pred_obj = pred_sub[ranked], pred_obj[ranked]
    gt_verbs, pred_verbs = references.hois[:, 2], predictions.hois[ranked, 2]
    verbs, codes = np.unique(np.concatenate([gt_verbs, pred_verbs]), return_inverse=True)
    num_codes = max(len(verbs), 1)
    keys = np.concatenate([gt_images, pred_images]).astype(np.int64) * num_codes + codes
    pair_pred, pair_gt = _join_on_image_and_verb(keys[: len(gt_verbs)], keys[len(gt_verbs):])

    ps, gs = pred_sub[pair_pred], gt_sub[pair_gt]
    sub_iou = pair_iou(references.boxes[gs], predictions.boxes[ps], rule=iou_rule)
    if labels == "boxes":
        sub_iou = np.where(references.box_labels[gs] == predictions.box_labels[ps], sub_iou, 0.0)
    po, go = pred_obj[pair_pred], gt_obj[pair_gt]
    has_obj = (po >= 0) & (go >= 0)
    obj_iou = np.zeros(len(pair_pred))
    if has_obj.any():
        rows_gt, rows_pred = go[has_obj], po[has_obj]
        iou = pair_iou(references.boxes[rows_gt], predictions.boxes[rows_pred], rule=iou_rule)
        same_category = references.box_labels[rows_gt] == predictions.box_labels[rows_pred]
        if labels == "boxes":
            iou = np.where(same_category, iou, 0.0)
        else:
            iou = np.where(same_category, iou, -1.0)
        obj_iou[has_obj] = iou
    no_gt_object = go < 0
    candidate = (sub_iou >= IOU_THRESHOLD) & (no_gt_object | (has_obj & (obj_iou >= IOU_THRESHOLD)))
    overlap = np.where(no_gt_object, sub_iou, np.minimum(sub_iou, obj_iou))

    pair_pred, pair_gt, overlap = pair_pred[candidate], pair_gt[candidate], overlap[candidate]
    order = np.lexsort((pair_gt, -overlap, pair_pred))
    pair_pred, pair_gt = pair_pred[order], pair_gt[order]
    first = np.ones(len(pair_pred), dtype=bool)
    first[1:] = pair_pred[1:] != pair_pred[:-1]
    matched_pred, best_gt = pair_pred[first], pair_gt[first]

    matched_gt_row = np.full(n, -1, dtype=np.int64)
    matched_gt_row[matched_pred] = best_gt
    is_tp = np.zeros(n, dtype=bool)
    _, first_claim = np.unique(best_gt, return_index=True)
    is_tp[matched_pred[first_claim]] = True
    return is_tp, matched_gt_row


def _eleven_point_ap(is_tp: np.ndarray, scores: np.ndarray, num_gt: int, thresholds: np.ndarray,
                     stable: bool) -> tuple[float, float]:
    """(11-point AP, max recall) of one class; ``stable`` picks MATLAB's stable sort over ``np.argsort(-score)``."""
    if len(is_tp) == 0 or num_gt == 0:
        return 0.0, 0.0
    order = np.argsort(-scores, kind="stable") if stable else np.argsort(-scores)
    tp_sorted = is_tp[order].astype(np.int64)
    tp = np.cumsum(tp_sorted)
    fp = np.cumsum(1 - tp_sorted)
    recall = tp / num_gt
    precision = tp / (fp + tp)
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    first_at = np.searchsorted(recall, thresholds, side="left")
    ap = 0.0
    for position in first_at:
        ap = ap + (envelope[position] if position < len(envelope) else 0) / 11.0
    return float(ap), float(recall[-1])


def _class_segments(class_ids: np.ndarray, num_classes: int) -> list[np.ndarray]:
    """Positions of each class id, in ascending position order."""
    order = np.argsort(class_ids, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(class_ids, minlength=num_classes))])
    return [order[bounds[c]: bounds[c + 1]] for c in range(num_classes)]


def _encode_rows(rows: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Index of each row of ``rows`` in ``table`` (k columns of non-negative ints), -1 where absent."""
    if len(table) == 0:
        return np.full(len(rows), -1, dtype=np.int64)
    width = int(max(rows.max(initial=0), table.max(initial=0))) + 2
    weights = width ** np.arange(rows.shape[1] - 1, -1, -1, dtype=np.int64)
    table_keys, row_keys = table @ weights, rows @ weights
    order = np.argsort(table_keys, kind="stable")
    position = np.clip(np.searchsorted(table_keys[order], row_keys), 0, len(table) - 1)
    found = table_keys[order][position] == row_keys
    return np.where(found, order[position], -1)


def _triplets(hoi_set: HoiSet, rows: np.ndarray | None = None) -> np.ndarray:
    """(subject category, object category, verb) of HOI rows, from the set's own box labels."""
    subject, obj = hoi_set.hoi_box_rows()
    if rows is not None:
        subject, obj = subject[rows], obj[rows]
    verbs = hoi_set.hois[:, 2] if rows is None else hoi_set.hois[rows, 2]
    return np.column_stack([hoi_set.box_labels[subject], hoi_set.box_labels[obj], verbs]).astype(np.int64)


def _require_objects(hoi_set: HoiSet) -> None:
    missing = np.flatnonzero(hoi_set.hois[:, 1] < 0)
    if missing.size:
        image, local = _image_of(hoi_set.hoi_offsets, missing[0])
        raise PredictionError(f"{hoi_set.what}: image {image}: field 'hois[{local}].object': HICO-DET HOIs need an "
                              "object (expected a box index, found -1; -1 is V-COCO's 'no object', use vcoco_map)")


def triplet_counts(references: HoiSet) -> dict[tuple[int, int, int], int]:
    """Number of GT instances of every (subject category, object category, verb) triplet (for rare / non-rare).

    >>> train = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 47]],
    ...                            hois=[[[0, 1, 37], [0, 1, 37]]])
    >>> triplet_counts(train)
    {(1, 47, 37): 2}
    """
    _require_objects(references)
    triplets = _triplets(references)
    if len(triplets) == 0:
        return {}
    unique, counts = np.unique(triplets, axis=0, return_counts=True)
    return {tuple(int(v) for v in t): int(c) for t, c in zip(unique, counts)}


def _mean_or_reason(values: list[float], reason: str) -> tuple[float | None, str | None]:
    return (float(np.mean(values)), None) if values else (None, reason)


def _resolve_top_k(top_k: int | None | str, protocol: str) -> int | None:
    if top_k == "default":
        return QPIC_TOP_K if protocol == "qpic" else None
    if top_k is not None and (not isinstance(top_k, (int, np.integer)) or top_k < 1):
        raise ConfigError("top_k (a positive int or None)", top_k, ["default", "None", "1, 2, ..."])
    return top_k


def hoi_map(
    references: HoiSet,
    predictions: HoiSet,
    *,
    protocol: str = "qpic",
    train_references: HoiSet | None = None,
    top_k: int | None | str = "default",
    known_object: bool = False,
) -> dict:
    """HICO-DET(-SG) HOI detection mAP.

    Returns ``{"mAP", "mAP_rare", "mAP_non_rare", "mean_max_recall", "ap_per_triplet", "protocol", "num_classes",
    "reasons"}``; ``ap_per_triplet`` is keyed ``"<subject category>_<object category>_<verb>"`` in raw ids. Rare
    classes have fewer than 10 instances in ``train_references``; a mean with no class to average is ``None`` and
    ``reasons[key]`` says why (on an SG test split no held-out combination occurs in training). ``top_k`` defaults
    to 100 per image for "qpic" and no cut for "ho-rcnn"; ``known_object`` (ho-rcnn only) scores a class only on
    images whose GT HOIs include its object category.

    >>> gt = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 47]], hois=[[[0, 1, 37]]])
    >>> pred = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 47]],
    ...                           hois=[[[0, 1, 37], [0, 1, 9]]], scores=[[0.9, 0.8]])
    >>> result = hoi_map(gt, pred)
    >>> result["mAP"], result["mAP_rare"], result["reasons"]["mAP_rare"]
    (1.0000000000000002, None, 'no training annotations given')

    (Eleven additions of 1/11 make 1.0000000000000002: upstream prints the same sum.)
    """
    if protocol not in PROTOCOLS:
        raise ConfigError("protocol", protocol, PROTOCOLS)
    if known_object and protocol != "ho-rcnn":
        raise ConfigError("option for protocol qpic", "known_object", ["top_k", "train_references"])
    _require_objects(references)
    _require_objects(predictions)
    k = _resolve_top_k(top_k, protocol)
    ranked = rank_predictions(predictions, k)
    if protocol == "qpic":
        return _qpic_hico(references, predictions, ranked, train_references)
    return _ho_rcnn(references, predictions, ranked, train_references, known_object)


def _qpic_hico(references: HoiSet, predictions: HoiSet, ranked: np.ndarray, train: HoiSet | None) -> dict:
    gt_triplets_all = _triplets(references)
    if len(gt_triplets_all):
        unique, first, inverse = np.unique(gt_triplets_all, axis=0, return_index=True, return_inverse=True)
        appearance = np.argsort(first, kind="stable")
        gt_triplets = unique[appearance]
        rank_of = np.empty(len(unique), dtype=np.int64)
        rank_of[appearance] = np.arange(len(unique))
        num_gt = np.bincount(rank_of[inverse.reshape(-1)], minlength=len(unique))
    else:
        gt_triplets, num_gt = np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64)
    is_tp, _ = match_predictions(references, predictions, ranked)
    class_ids = _encode_rows(_triplets(predictions, ranked), gt_triplets)
    scored = class_ids >= 0
    segments = _class_segments(class_ids[scored], len(gt_triplets))
    scores, is_tp = predictions.scores[ranked][scored], is_tp[scored]

    counts = triplet_counts(train) if train is not None else None
    aps, recalls, rare, non_rare, per_triplet = [], [], [], [], {}
    for c, triplet in enumerate(gt_triplets):
        ap, recall = _eleven_point_ap(is_tp[segments[c]], scores[segments[c]], int(num_gt[c]), ELEVEN_POINTS,
                                      stable=False)
        aps.append(ap)
        recalls.append(recall)
        key = tuple(int(v) for v in triplet)
        per_triplet["_".join(map(str, key))] = ap
        if counts is not None and key in counts:
            (rare if counts[key] < RARE_THRESHOLD else non_rare).append(ap)
    unseen = len(gt_triplets) - len(rare) - len(non_rare)
    if counts is None:
        why_rare = why_non_rare = "no training annotations given"
    else:
        note = f" ({unseen} of {len(gt_triplets)} test triplets never occur in training)" if unseen else ""
        why_rare = f"no test triplet has 1..{RARE_THRESHOLD - 1} training instances{note}"
        why_non_rare = f"no test triplet has >= {RARE_THRESHOLD} training instances{note}"
    return _hoi_result("qpic", aps, recalls, rare, non_rare, per_triplet, why_rare, why_non_rare)


def _hoi_result(protocol, aps, recalls, rare, non_rare, per_triplet, why_rare, why_non_rare) -> dict:
    m_ap, why_map = _mean_or_reason(aps, "the references hold no HOI")
    m_rare, why_rare = _mean_or_reason(rare, why_rare)
    m_non_rare, why_non_rare = _mean_or_reason(non_rare, why_non_rare)
    m_recall, _ = _mean_or_reason(recalls, "")
    reasons = {key: why for key, why in (("mAP", why_map), ("mAP_rare", why_rare), ("mAP_non_rare", why_non_rare))
               if why is not None}
    return {"mAP": m_ap, "mAP_rare": m_rare, "mAP_non_rare": m_non_rare, "mean_max_recall": m_recall,
            "ap_per_triplet": per_triplet, "protocol": protocol, "num_classes": len(aps), "reasons": reasons}


def _hoi_class_ids(lookup: dict[tuple[int, int], int], verbs: np.ndarray, objects: np.ndarray) -> np.ndarray:
    """HICO HOI class index 0..599 of each (verb, object category), -1 for a combination outside the 600."""
    table = np.array(sorted(lookup), dtype=np.int64).reshape(-1, 2)
    ids = np.array([lookup[tuple(pair)] - 1 for pair in table.tolist()], dtype=np.int64)
    found = _encode_rows(np.column_stack([verbs, objects]).astype(np.int64), table)
    return np.where(found >= 0, ids[found], -1)


def _ho_rcnn(references: HoiSet, predictions: HoiSet, ranked: np.ndarray, train: HoiSet | None,
             known_object: bool) -> dict:
    from hoi_sg_dataset.vocabulary import hico_hoi_classes, hico_hoi_lookup

    classes, lookup = hico_hoi_classes(), hico_hoi_lookup()
    gt_class = _hoi_class_ids(lookup, references.hois[:, 2], _triplets(references)[:, 1])
    outside = int((gt_class < 0).sum())
    if outside:
        logger.warning("%d GT HOIs are none of the 600 HICO-DET classes; the ho-rcnn protocol ignores them", outside)
    num_gt = np.bincount(gt_class[gt_class >= 0], minlength=len(classes))
    is_tp, _ = match_predictions(references, predictions, ranked, iou_rule="matlab", labels="hoi_class")
    pred_triplets = _triplets(predictions, ranked)
    class_ids = _hoi_class_ids(lookup, pred_triplets[:, 2], pred_triplets[:, 1])
    if known_object:
        gt_objects = np.column_stack([references.hoi_images(), _triplets(references)[:, 1]])
        pred_objects = np.column_stack([predictions.hoi_images()[ranked], pred_triplets[:, 1]])
        class_ids = np.where(_encode_rows(pred_objects, np.unique(gt_objects, axis=0)) >= 0, class_ids, -1)
    scored = class_ids >= 0
    segments = _class_segments(class_ids[scored], len(classes))
    scores, is_tp = predictions.scores[ranked][scored], is_tp[scored]
    counts = None
    if train is not None:
        _require_objects(train)
        train_class = _hoi_class_ids(lookup, train.hois[:, 2], _triplets(train)[:, 1])
        counts = np.bincount(train_class[train_class >= 0], minlength=len(classes))
    aps, recalls, rare, non_rare, per_triplet = [], [], [], [], {}
    for c, hoi_class in enumerate(classes):
        ap, recall = _eleven_point_ap(is_tp[segments[c]], scores[segments[c]], int(num_gt[c]),
                                      MATLAB_ELEVEN_POINTS, stable=True)
        aps.append(ap)
        recalls.append(recall)
        per_triplet[f"{PERSON}_{hoi_class.object_id}_{hoi_class.verb_id}"] = ap
        if counts is not None:
            (rare if counts[c] < RARE_THRESHOLD else non_rare).append(ap)
    why = "no training annotations given" if counts is None else "no HOI class in this group"
    return _hoi_result("ho-rcnn", aps, recalls, rare, non_rare, per_triplet, why, why)


def vcoco_map(references: HoiSet, predictions: HoiSet, *, top_k: int | None | str = "default") -> dict:
    """V-COCO(-SG) role mAP as QPIC's ``vcoco_eval.py`` computes it.

    Returns ``{"mAP_all", "mAP_thesis", "mAP_thesis_present", "ap_per_verb", "reasons"}``: ``mAP_all`` averages
    the verbs that have GT; ``mAP_thesis`` averages the 24 thesis verbs counting a verb without GT as 0, as
    upstream does; ``mAP_thesis_present`` (ours, not upstream) averages only the thesis verbs that have GT.
    ``top_k`` defaults to 100 per image.

    >>> gt = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 37]],
    ...                         hois=[[[0, 1, 0], [0, -1, 1]]])
    >>> pred = HoiSet.from_images(boxes=[[[0, 0, 9, 9]]], box_labels=[[1]], hois=[[[0, -1, 1]]], scores=[[0.5]])
    >>> result = vcoco_map(gt, pred)
    >>> result["ap_per_verb"], round(result["mAP_all"], 6), result["mAP_thesis"]
    ({'0': 0.0, '1': 1.0000000000000002}, 0.5, 0.0)
    """
    ranked = rank_predictions(predictions, _resolve_top_k(top_k, "qpic"))
    is_tp, _ = match_predictions(references, predictions, ranked)
    verbs = predictions.hois[ranked, 2]
    num_gt = np.bincount(references.hois[:, 2], minlength=int(verbs.max(initial=0)) + 1)
    present = np.flatnonzero(num_gt)
    scores = predictions.scores[ranked]
    ap_per_verb: dict[int, float] = {}
    for verb in present:
        chosen = np.flatnonzero(verbs == verb)
        ap_per_verb[int(verb)], _ = _eleven_point_ap(is_tp[chosen], scores[chosen], int(num_gt[verb]),
                                                     ELEVEN_POINTS, stable=False)
    m_all, why_all = _mean_or_reason(list(ap_per_verb.values()), "the references hold no HOI")
    thesis = [ap_per_verb.get(v, 0) for v in VCOCO_THESIS_VERBS]
    thesis_present = [ap_per_verb[v] for v in VCOCO_THESIS_VERBS if v in ap_per_verb]
    m_present, why_present = _mean_or_reason(thesis_present, "no thesis verb has GT")
    reasons = {key: why for key, why in (("mAP_all", why_all), ("mAP_thesis_present", why_present)) if why}
    return {"mAP_all": m_all, "mAP_thesis": float(np.mean(thesis)), "mAP_thesis_present": m_present,
            "ap_per_verb": {str(v): ap for v, ap in ap_per_verb.items()}, "reasons": reasons}
