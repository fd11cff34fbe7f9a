"""HOI detection mAP (HICO-DET / V-COCO and their SG splits) as vectorized functions on numpy arrays.

Three protocols, each reproducing an upstream evaluator:

* ``hoi_map(..., protocol="qpic")`` — QPIC ``datasets/hico_eval.py`` on GT boxes rounded to float32 as QPIC's
  data loader holds them (predictions as given): per image, predictions in descending
  score order (ties: file order, as Python's stable sort), top-100 cut; a prediction matches the GT HOI of the
  same verb whose subject and object boxes both have IoU >= 0.5 (+1-pixel IoU, no overlap when ``x1 >= x2``,
  IoU 0 across categories), the best being the largest min(subject IoU, object IoU) (first GT in file order on
  ties); it is a TP if that GT was not matched before, else an FP — there is no fallback to a second GT (so of
  two identical GT HOIs only the first can ever be matched, yet both count as GT, as upstream). Predictions
  whose predicted-label triplet (subject category, object category, verb) never occurs in the GT are ignored,
  and so are all predictions on an image without GT boxes (upstream tests a list against a list of tuples
  there, which is always "absent"). 11-point AP per GT triplet with ``np.arange(0., 1.1, 0.1)`` thresholds
  after ``np.argsort(-score)`` (the same call, so ties resolve as upstream does on the same numpy build),
  means with ``np.mean`` in first-appearance order of the triplets.
* ``hoi_map(..., protocol="ho-rcnn")`` — the official HICO-DET MATLAB code (``eval_one.m``): the fixed 600 HOI
  classes, no per-image cap, IoU without categories (``iw = min(x2) - max(x1) + 1 > 0``; in single
  precision for detections of a single-precision ``.mat`` cache, as MATLAB computes with them), every GT pair its
  own instance, stable sort of all detections of a class, thresholds ``0:0.1:1`` as MATLAB's colon operator
  builds them, optional known-object mode; a class with detections but no GT has recall 0/0 = NaN, so the mean
  recall is NaN, as ``eval_one.m`` prints it.
* ``vcoco_map`` — QPIC ``datasets/vcoco_eval.py`` (GT boxes in float32, as for "qpic"): GT without object
  (``object == -1``) is matched on the subject alone, no triplet filter, predictions on an image without GT
  boxes are FPs, AP per verb, ``mAP_all`` over verbs with GT and ``mAP_thesis`` over the 24 fixed verbs with
  absent ones counted as 0.

Inputs are :class:`HoiSet` objects: the boxes and HOIs of every image of a test set, concatenated with
offsets. The matching is done for all images at once (a join of predictions and GT HOIs on (image, verb)),
which is what makes it fast; ``tests/hoi_sg_dataset/reference_hoi_map.py`` is the loop version it is tested
against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

import numpy as np

from hoi_bench.ap import ELEVEN_POINTS
from hoi_bench.errors import ConfigError, PredictionError
from hoi_bench.input_warnings import collected_notes, warn_input
from hoi_sg_dataset.formats import FLOAT32_MAX, within_float32

PROTOCOLS = ("qpic", "ho-rcnn")
IOU_THRESHOLD = 0.5
QPIC_TOP_K = 100
RARE_THRESHOLD = 10
PERSON = 1
# QPIC vcoco_eval.py ``thesis_map_indices``: the 24 verb roles reported in papers
# (no stand, walk, run, smile, point).
VCOCO_THESIS_VERBS = (0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 27, 28)


def _matlab_colon(start: float, step: float, stop: float) -> np.ndarray:
    """``start:step:stop`` as MATLAB builds it: from the start for the first half, from the stop for the
    second.

    >>> [round(float(t), 17) for t in _matlab_colon(0.0, 0.1, 1.0)][5:8]
    [0.5, 0.6, 0.7]
    """
    n = int(round((stop - start) / step))
    values = [
        start + k * step if k < n / 2 else (start + stop) / 2 if k == n / 2 else stop - (n - k) * step
        for k in range(n + 1)
    ]
    return np.array(values, dtype=np.float64)


# MATLAB's ``0:0.1:1`` (0.6 and 0.7 exact, unlike np.arange's 0.6000000000000001 and 0.7000000000000001).
MATLAB_ELEVEN_POINTS = _matlab_colon(0.0, 0.1, 1.0)


@dataclass(frozen=True)
class HoiSet:
    """Boxes and HOIs of every image of a test set (GT or predictions), concatenated over images.

    ``boxes`` (N×4 float64, xyxy pixels) and ``box_labels`` (N, raw COCO category ids) hold the boxes of image
    ``i`` at rows ``box_offsets[i]:box_offsets[i+1]``; ``hois`` (M×3 int64: subject index, object index or -1
    for "no object", verb id) indexes the boxes *of its own image* and lies at rows
    ``hoi_offsets[i]:hoi_offsets[i+1]``; ``scores`` (M float64) is set for predictions and ``None`` for GT.
    ``single_precision`` (M bool, or ``None``: none) marks predicted HOIs the official MATLAB tool holds in single
    precision (detections of a single-precision ``.mat`` cache): the ho-rcnn protocol computes their IoU in float32.
    Build it with :meth:`from_images`.

    >>> gt = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 47]],
    ...                         hois=[[[0, 1, 37]]])
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
    single_precision: np.ndarray | None = None

    def __post_init__(self) -> None:
        _check_hoi_set(self)

    @property
    def num_images(self) -> int:
        return len(self.box_offsets) - 1

    @classmethod
    def from_feature_rows(cls, images: Sequence[dict], what: str, *, with_scores: bool) -> HoiSet:
        """A set from the metric modules' per-image rows ``{"boxes", "box_labels", "hois"[, "scores"]}``."""
        return cls.from_images(
            boxes=[image["boxes"] for image in images],
            box_labels=[image["box_labels"] for image in images],
            hois=[image["hois"] for image in images],
            scores=[image["scores"] for image in images] if with_scores else None,
            what=what,
        )

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
        lengths_differ = not len(boxes) == len(box_labels) == len(hois)
        if lengths_differ or (scores is not None and len(scores) != len(hois)):
            raise PredictionError(
                f"{what or 'HOI set'}: per-image lists differ in length (boxes {len(boxes)}, box_labels "
                f"{len(box_labels)}, hois {len(hois)}{'' if scores is None else f', scores {len(scores)}'})"
            )
        box_arrays = [np.asarray(b, dtype=np.float64).reshape(-1, 4) for b in boxes]
        label_arrays = [np.asarray(lab, dtype=np.int64).reshape(-1) for lab in box_labels]
        hoi_arrays = [np.asarray(h, dtype=np.int64).reshape(-1, 3) for h in hois]
        for i, (b, lab) in enumerate(zip(box_arrays, label_arrays, strict=True)):
            if len(b) != len(lab):
                raise PredictionError(
                    f"{what or 'HOI set'}: image {i}: {len(b)} boxes but {len(lab)} box labels"
                )
        box_offsets = np.concatenate([[0], np.cumsum([len(b) for b in box_arrays])]).astype(np.int64)
        hoi_offsets = np.concatenate([[0], np.cumsum([len(h) for h in hoi_arrays])]).astype(np.int64)
        score_array = None
        if scores is not None:
            score_arrays = [np.asarray(s, dtype=np.float64).reshape(-1) for s in scores]
            for i, (s, h) in enumerate(zip(score_arrays, hoi_arrays, strict=True)):
                if len(s) != len(h):
                    raise PredictionError(
                        f"{what or 'predictions'}: image {i}: {len(h)} HOIs but {len(s)} scores"
                    )
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

    @cached_property
    def _hoi_images(self) -> np.ndarray:
        images = np.repeat(np.arange(self.num_images), np.diff(self.hoi_offsets))
        images.flags.writeable = False
        return images

    def hoi_images(self) -> np.ndarray:
        """Image index of every HOI row (read-only, computed once)."""
        return self._hoi_images

    def hoi_box_rows(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Global box rows of the subject and object of HOI ``rows`` (default all; object -1 if none)."""
        images, hois = _take(self.hoi_images(), rows), _take(self.hois, rows)
        start = self.box_offsets[images]
        return start + hois[:, 0], np.where(hois[:, 1] >= 0, start + hois[:, 1], -1)


def _take(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``values[rows]``, without a copy when ``rows`` is None or every row in order (what ``kept_rows``
    gives when nothing is cut)."""
    if rows is None:
        return values
    if len(rows) == len(values) and (len(rows) == 0 or (rows[0] == 0 and np.all(np.diff(rows) == 1))):
        return values
    return values[rows]


def _image_of(offsets: np.ndarray, row: int) -> tuple[int, int]:
    image = int(np.searchsorted(offsets, row, side="right") - 1)
    return image, int(row - offsets[image])


def _check_hoi_set(hoi_set: HoiSet) -> None:
    """Raise ``PredictionError`` naming image, HOI, field, expectation and value of the first bad entry."""
    what = hoi_set.what
    for name in ("box_offsets", "hoi_offsets"):
        offsets = np.asarray(getattr(hoi_set, name))
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
            raise PredictionError(
                f"{what}: {name} must start at 0 and never decrease (found {offsets[:10].tolist()})"
            )
    if len(hoi_set.box_offsets) != len(hoi_set.hoi_offsets):
        raise PredictionError(f"{what}: box_offsets and hoi_offsets describe different numbers of images")
    boxes, labels, hois = hoi_set.boxes, hoi_set.box_labels, hoi_set.hois
    if boxes.shape != (hoi_set.box_offsets[-1], 4) or labels.shape != (hoi_set.box_offsets[-1],):
        raise PredictionError(
            f"{what}: boxes {boxes.shape} and box_labels {labels.shape} do not match the offsets"
        )
    if hois.shape != (hoi_set.hoi_offsets[-1], 3):
        raise PredictionError(f"{what}: hois {hois.shape} do not match hoi_offsets (expected M×3)")
    single = hoi_set.single_precision
    if single is not None and (single.dtype != bool or single.shape != (len(hois),)):
        raise PredictionError(
            f"{what}: single_precision must be one bool per HOI (found {single.dtype} {single.shape})"
        )
    if not within_float32(boxes):
        _report_bad_boxes(hoi_set)
    _check_labels_and_hois(hoi_set)


def _report_bad_boxes(hoi_set: HoiSet) -> None:
    what, boxes = hoi_set.what, hoi_set.boxes
    bad_box = np.flatnonzero(~np.isfinite(boxes).all(axis=1))
    if bad_box.size:
        image, local = _image_of(hoi_set.box_offsets, bad_box[0])
        raise PredictionError(
            f"{what}: image {image}: field 'boxes[{local}]': coordinates must be finite "
            f"(expected 4 finite numbers, found {boxes[bad_box[0]].tolist()})"
        )
    far_box = np.flatnonzero((np.abs(boxes) > FLOAT32_MAX).any(axis=1))
    if far_box.size:
        image, local = _image_of(hoi_set.box_offsets, far_box[0])
        raise PredictionError(
            f"{what}: image {image}: field 'boxes[{local}]': coordinate out of range "
            f"(expected coordinates within +-{FLOAT32_MAX:.4g}, float32, found {boxes[far_box[0]].tolist()})"
        )


def _check_labels_and_hois(hoi_set: HoiSet) -> None:
    what, labels, hois = hoi_set.what, hoi_set.box_labels, hoi_set.hois
    bad_label = np.flatnonzero(labels < 0)
    if bad_label.size:
        image, local = _image_of(hoi_set.box_offsets, bad_label[0])
        raise PredictionError(
            f"{what}: image {image}: field 'box_labels[{local}]': unknown category "
            f"(expected a raw category id >= 0, found {int(labels[bad_label[0]])})"
        )
    n_boxes = np.diff(hoi_set.box_offsets)[hoi_set.hoi_images()]
    for column, name, low in ((0, "subject", 0), (1, "object", -1)):
        bad = np.flatnonzero((hois[:, column] < low) | (hois[:, column] >= n_boxes))
        if bad.size:
            image, local = _image_of(hoi_set.hoi_offsets, bad[0])
            raise PredictionError(
                f"{what}: image {image}: field 'hois[{local}].{name}': index outside the image's box list "
                f"(expected {low}..{int(n_boxes[bad[0]]) - 1}, found {int(hois[bad[0], column])})"
            )
    bad_verb = np.flatnonzero(hois[:, 2] < 0)
    if bad_verb.size:
        image, local = _image_of(hoi_set.hoi_offsets, bad_verb[0])
        raise PredictionError(
            f"{what}: image {image}: field 'hois[{local}].verb': unknown verb "
            f"(expected a verb id >= 0, found {int(hois[bad_verb[0], 2])})"
        )
    if hoi_set.scores is not None:
        scores = hoi_set.scores
        if scores.shape != (len(hois),):
            raise PredictionError(f"{what}: scores {scores.shape} do not match {len(hois)} HOIs")
        if within_float32(scores):
            return
        bad_score = np.flatnonzero(~np.isfinite(scores))
        if bad_score.size:
            image, local = _image_of(hoi_set.hoi_offsets, bad_score[0])
            raise PredictionError(
                f"{what}: image {image}: field 'scores[{local}]': score must be finite "
                f"(expected a finite number, found {float(scores[bad_score[0]])})"
            )
        far_score = np.flatnonzero(np.abs(scores) > FLOAT32_MAX)
        if far_score.size:
            image, local = _image_of(hoi_set.hoi_offsets, far_score[0])
            raise PredictionError(
                f"{what}: image {image}: field 'scores[{local}]': score out of range "
                f"(expected a number within +-{FLOAT32_MAX:.4g}, float32, "
                f"found {float(scores[far_score[0]])})"
            )


def pair_iou(gt: np.ndarray, pred: np.ndarray, *, rule: Literal["qpic", "matlab"] = "qpic") -> np.ndarray:
    """Elementwise IoU of ``gt[i]`` and ``pred[i]`` (both n×4 xyxy) with the +1-pixel convention.

    ``rule="qpic"``: no overlap when ``min(x2) - max(x1) <= 0`` (QPIC ``compute_IOU``, so a one-pixel touch is
    0); ``rule="matlab"``: no overlap unless ``iw = min(x2) - max(x1) + 1 > 0`` (ho-rcnn
    ``VOCevaldet_bboxpair.m``). The arithmetic follows the upstream order of operations, so values are
    bit-identical.

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


def matlab_single_iou(gt: np.ndarray, det: np.ndarray) -> np.ndarray:
    """``pair_iou(gt, det, rule="matlab")`` as MATLAB computes it for single-precision detections and double GT
    (``VOCevaldet_bboxpair.m`` on a single-precision ``.mat`` cache): an operation on a single and a double gives
    a single, so the intersection and the detection's area are single arithmetic, while the GT's own area is
    double, rounded to single where it joins the union. Returned as float64 (the single values, exactly).

    >>> gt = np.array([[1., 1, 6, 10]]); det = np.array([[4 + 2 ** -22, 1, 6, 10]])  # 4 in single
    >>> float(pair_iou(gt, det, rule="matlab")[0]) < 0.5, float(matlab_single_iou(gt, det)[0])
    (True, 0.5)
    """
    one = np.float32(1)
    g, d = gt.astype(np.float32), det.astype(np.float32)
    iw = (np.minimum(d[:, 2], g[:, 2]) - np.maximum(d[:, 0], g[:, 0])) + one
    ih = (np.minimum(d[:, 3], g[:, 3]) - np.maximum(d[:, 1], g[:, 1])) + one
    area_det = (d[:, 2] - d[:, 0] + one) * (d[:, 3] - d[:, 1] + one)
    area_gt = ((gt[:, 2] - gt[:, 0] + 1) * (gt[:, 3] - gt[:, 1] + 1)).astype(np.float32)
    inter = iw * ih
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iou = inter / (area_det + area_gt - inter)
    return np.where((iw > 0) & (ih > 0), iou, np.float32(0)).astype(np.float64)


def rank_predictions(predictions: HoiSet, top_k: int | None) -> np.ndarray:
    """Rows of the predicted HOIs in QPIC's processing order: image by image, descending score, top ``top_k``.

    Ties keep the file order (Python's stable ``sort(reverse=True)``, as QPIC and MATLAB's stable ``sort``);
    ``top_k=None`` keeps all. The metrics use :func:`kept_rows` instead, which avoids sorting everything.

    >>> p = HoiSet.from_images(boxes=[[[0, 0, 1, 1]]], box_labels=[[1]], hois=[[[0, 0, 1]] * 3],
    ...                        scores=[[0.2, 0.9, 0.2]])
    >>> rank_predictions(p, None).tolist(), rank_predictions(p, 2).tolist()
    ([1, 0, 2], [1, 0])
    """
    _require_scores(predictions)
    images = predictions.hoi_images()
    order = np.lexsort((-predictions.scores, images))
    if top_k is None:
        return order
    rank = np.arange(len(order)) - predictions.hoi_offsets[images[order]]
    return order[rank < top_k]


def _require_scores(predictions: HoiSet) -> None:
    if predictions.scores is None:
        raise PredictionError(f"{predictions.what}: predicted HOIs need scores (found none)")


def kept_rows(predictions: HoiSet, top_k: int | None) -> np.ndarray:
    """Rows, in file order, of the predicted HOIs that survive the per-image cut to the ``top_k`` best scores.

    Same set as :func:`rank_predictions` (ties broken by file order), but only images with more than ``top_k``
    HOIs are sorted.

    >>> p = HoiSet.from_images(boxes=[[[0, 0, 1, 1]]], box_labels=[[1]], hois=[[[0, 0, 1]] * 3],
    ...                        scores=[[0.2, 0.9, 0.2]])
    >>> kept_rows(p, 2).tolist()
    [0, 1]
    """
    _require_scores(predictions)
    counts = np.diff(predictions.hoi_offsets)
    total = int(predictions.hoi_offsets[-1])
    if top_k is None or counts.max(initial=0) <= top_k:
        return np.arange(total)
    crowded = np.flatnonzero(counts > top_k)
    sizes = counts[crowded]
    first_rows = predictions.hoi_offsets[crowded] - np.cumsum(sizes) + sizes
    rows = np.repeat(first_rows, sizes) + np.arange(sizes.sum())
    images = np.repeat(crowded, sizes)
    order = rows[np.lexsort((rows, -predictions.scores[rows], images))]
    rank = np.arange(len(order)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    keep = np.ones(total, dtype=bool)
    keep[order[rank >= top_k]] = False
    return np.flatnonzero(keep)


def _small_code_table(values: np.ndarray, universe: np.ndarray) -> np.ndarray:
    """Code of each value in ``universe`` (its rank among the distinct universe values), -1 if absent."""
    distinct = np.unique(universe)
    if len(values) == 0 or len(distinct) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    top = int(max(values.max(), distinct.max())) + 1
    if top <= 1 << 22:
        table = np.full(top, -1, dtype=np.int64)
        table[distinct] = np.arange(len(distinct))
        return table[values]
    position = np.clip(np.searchsorted(distinct, values), 0, len(distinct) - 1)
    return np.where(distinct[position] == values, position, -1)


def _join(gt_keys: np.ndarray, pred_keys: np.ndarray, num_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """All (prediction position, GT row) pairs with equal keys (< ``num_keys``; prediction key -1: none)."""
    gt_order = np.argsort(gt_keys, kind="stable")
    valid = pred_keys >= 0
    if num_keys <= max(1 << 24, 4 * len(pred_keys)):
        counts_of_key = np.bincount(gt_keys, minlength=num_keys)
        start_of_key = np.cumsum(counts_of_key) - counts_of_key
        safe = np.where(valid, pred_keys, 0)
        counts = np.where(valid, counts_of_key[safe], 0)
        low = start_of_key[safe]
    else:
        sorted_keys = gt_keys[gt_order]
        low = np.searchsorted(sorted_keys, pred_keys, side="left")
        counts = np.where(valid, np.searchsorted(sorted_keys, pred_keys, side="right") - low, 0)
    pair_pred = np.repeat(np.arange(len(pred_keys)), counts)
    within = np.arange(len(pair_pred)) - np.repeat(np.cumsum(counts) - counts, counts)
    return pair_pred, gt_order[np.repeat(low, counts) + within]


def match_predictions(
    references: HoiSet,
    predictions: HoiSet,
    rows: np.ndarray,
    *,
    iou_rule: Literal["qpic", "matlab"] = "qpic",
    labels: Literal["boxes", "hoi_class"] = "boxes",
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy matching of the predicted HOIs ``rows`` to GT HOIs: ``(is_tp, best_gt_row)`` per ``rows`` entry.

    Each image's predictions are processed in descending score order, ties in file order, whatever the order
    of ``rows``. A prediction's best GT is the same-verb GT HOI of its image with the largest min(subject IoU,
    object IoU) among those with both IoUs >= 0.5 (subject IoU alone for a GT without object); first GT row
    wins ties. It is a TP when no earlier prediction of the image took that GT (the best GT does not depend on
    which GT are taken, so the first claimant of each GT is its TP). ``labels="boxes"`` scores IoU 0 between
    boxes of different categories (QPIC); ``labels="hoi_class"`` ignores box categories but lets a prediction
    match only GT of its own HOI class, i.e. the same object category (MATLAB, which evaluates class by
    class). Identical GT HOIs have identical overlaps, so the first always wins: QPIC's
    ``vis_tag[gt_hois.index(best)]`` needs no special case. ``best_gt_row`` is -1 for predictions without any
    GT candidate.
    """
    _require_same_images(references, predictions)
    n = len(rows)
    gt_images = references.hoi_images()
    pred_images = _take(predictions.hoi_images(), rows)
    gt_verbs = references.hois[:, 2]
    verb_codes = _small_code_table(np.concatenate([gt_verbs, _take(predictions.hois, rows)[:, 2]]), gt_verbs)
    num_codes = max(int(verb_codes.max(initial=-1)) + 1, 1)
    gt_keys = gt_images * num_codes + verb_codes[: len(gt_verbs)]
    pred_codes = verb_codes[len(gt_verbs) :]
    pred_keys = np.where(pred_codes >= 0, pred_images * num_codes + pred_codes, -1)
    pair_pred, pair_gt = _join(gt_keys, pred_keys, references.num_images * num_codes)

    gt_sub, gt_obj = references.hoi_box_rows()
    pred_sub, pred_obj = predictions.hoi_box_rows(rows[pair_pred])
    gs, go = gt_sub[pair_gt], gt_obj[pair_gt]
    single = None if predictions.single_precision is None else predictions.single_precision[rows[pair_pred]]
    sub_iou = _iou(references.boxes[gs], predictions.boxes[pred_sub], iou_rule, single)
    if labels == "boxes":
        sub_iou = np.where(references.box_labels[gs] == predictions.box_labels[pred_sub], sub_iou, 0.0)
    has_obj = (pred_obj >= 0) & (go >= 0)
    obj_iou = np.zeros(len(pair_pred))
    if has_obj.any():
        rows_gt, rows_pred = go[has_obj], pred_obj[has_obj]
        iou = _iou(references.boxes[rows_gt], predictions.boxes[rows_pred], iou_rule,
                   None if single is None else single[has_obj])
        same_category = references.box_labels[rows_gt] == predictions.box_labels[rows_pred]
        obj_iou[has_obj] = np.where(same_category, iou, 0.0 if labels == "boxes" else -1.0)
    no_gt_object = go < 0
    candidate = (sub_iou >= IOU_THRESHOLD) & (no_gt_object | (has_obj & (obj_iou >= IOU_THRESHOLD)))
    overlap = np.where(no_gt_object, sub_iou, np.minimum(sub_iou, obj_iou))

    pair_pred, pair_gt, overlap = pair_pred[candidate], pair_gt[candidate], overlap[candidate]
    order = np.lexsort((pair_gt, -overlap, pair_pred))
    pair_pred, pair_gt = pair_pred[order], pair_gt[order]
    first = np.ones(len(pair_pred), dtype=bool)
    first[1:] = pair_pred[1:] != pair_pred[:-1]
    matched, best_gt = pair_pred[first], pair_gt[first]

    best_gt_row = np.full(n, -1, dtype=np.int64)
    best_gt_row[matched] = best_gt
    claim_order = np.lexsort((rows[matched], -predictions.scores[rows[matched]], best_gt))
    claimed = best_gt[claim_order]
    first_claim = np.ones(len(claimed), dtype=bool)
    first_claim[1:] = claimed[1:] != claimed[:-1]
    is_tp = np.zeros(n, dtype=bool)
    is_tp[matched[claim_order[first_claim]]] = True
    return is_tp, best_gt_row


def _iou(gt: np.ndarray, pred: np.ndarray, rule: Literal["qpic", "matlab"], single: np.ndarray | None) -> np.ndarray:
    """:func:`pair_iou`, in MATLAB's single precision for the pairs ``single`` marks (ho-rcnn only)."""
    iou = pair_iou(gt, pred, rule=rule)
    if single is not None and single.any():
        iou[single] = matlab_single_iou(gt[single], pred[single])
    return iou


def _require_same_images(references: HoiSet, predictions: HoiSet) -> None:
    if references.num_images != predictions.num_images:
        raise PredictionError(
            f"predictions cover {predictions.num_images} images but references "
            f"{references.num_images}; give one entry (possibly empty) per reference image"
        )


def _eleven_point_ap(
    is_tp: np.ndarray, scores: np.ndarray, num_gt: int, thresholds: np.ndarray, stable: bool
) -> tuple[float, float]:
    """(11-point AP, max recall) of one class from its counted predictions, given in the upstream code's order.

    No predictions: (0, 0). Predictions but no GT (only the ho-rcnn protocol has such classes): AP 0 and
    recall ``tp / npos`` = 0/0 = NaN, as ``VOCevaldet_bboxpair.m`` computes it.

    ``stable``: MATLAB's stable sort of the detections, given in file order (ties keep it). Otherwise QPIC's
    ``np.argsort(-score)`` on the scores in the order QPIC appends them (image, descending score, file order):
    the same call on the same array, so even the order numpy's quicksort gives tied scores is QPIC's.
    """
    if len(is_tp) == 0:
        return 0.0, 0.0
    if num_gt == 0:
        return 0.0, math.nan
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


@dataclass(frozen=True)
class _Scored:
    """The counted predictions of a protocol by class: per class, positions into ``is_tp`` and ``scores`` in
    the order the upstream code collects them (file order for MATLAB, QPIC's append order otherwise)."""

    is_tp: np.ndarray
    scores: np.ndarray
    segments: list[np.ndarray]
    stable: bool

    def ap(self, c: int, num_gt: int, thresholds: np.ndarray) -> tuple[float, float]:
        s = self.segments[c]
        return _eleven_point_ap(self.is_tp[s], self.scores[s], num_gt, thresholds, self.stable)


def _append_order(scores: np.ndarray, images: np.ndarray) -> np.ndarray:
    """Positions of predictions given in file order, sorted as QPIC appends them: by image, then descending
    score, ties in file order (Python's stable ``sorted(..., reverse=True)``)."""
    if len(scores) == 0:
        return np.zeros(0, dtype=np.int64)
    by_score = np.argsort(-scores)
    ranked = -scores[by_score]
    rank = np.empty(len(scores), dtype=np.int64)
    rank[by_score] = np.cumsum(np.concatenate([[True], ranked[1:] != ranked[:-1]])) - 1
    key = images.astype(np.int64) * (int(rank[by_score[-1]]) + 1) + rank
    return np.argsort(key, kind="stable")


def _score_by_class(
    references: HoiSet,
    predictions: HoiSet,
    rows: np.ndarray,
    class_ids: np.ndarray,
    num_classes: int,
    *,
    stable: bool = False,
    **matching,
) -> _Scored:
    """Match the predictions ``rows`` that belong to a class (``class_ids >= 0``) and group them by class.

    Only those need matching: a prediction that matches a GT HOI always belongs to the GT's class (same verb,
    same categories), so the ignored ones can neither be TPs nor take a GT from a counted one. ``stable``
    (MATLAB): each class in file order; otherwise in QPIC's append order.
    """
    counted = class_ids >= 0
    rows, class_ids = rows[counted], class_ids[counted]
    is_tp, _ = match_predictions(references, predictions, rows, **matching)
    scores = predictions.scores[rows]
    collected = np.arange(len(rows)) if stable else _append_order(scores, predictions.hoi_images()[rows])
    sortable = class_ids.astype(np.int16) if num_classes < 1 << 15 else class_ids
    order = collected[np.argsort(sortable[collected], kind="stable")]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(class_ids, minlength=num_classes))])
    return _Scored(is_tp, scores, [order[bounds[c] : bounds[c + 1]] for c in range(num_classes)], stable)


def _class_table(columns: tuple[np.ndarray, ...], table: np.ndarray) -> np.ndarray:
    """Index in ``table`` (T×k distinct rows of non-negative ints) of each row given as k columns, or -1."""
    n = len(columns[0])
    if len(table) == 0 or n == 0:
        return np.full(n, -1, dtype=np.int64)
    extent = [int(max(column.max(), table[:, k].max())) + 1 for k, column in enumerate(columns)]
    if np.prod(np.array(extent, dtype=np.float64)) <= 1 << 24:
        lookup = np.full(int(np.prod(extent)), -1, dtype=np.int64)
        lookup[np.ravel_multi_index(tuple(table.T), extent)] = np.arange(len(table))
        flat = columns[0].astype(np.int64)
        for column, size in zip(columns[1:], extent[1:], strict=True):
            flat = flat * size + column
        return lookup[flat]
    keys = np.column_stack(columns).astype(np.int64)
    width = max(extent)
    weights = width ** np.arange(keys.shape[1] - 1, -1, -1, dtype=np.int64)
    table_keys, row_keys = table @ weights, keys @ weights
    order = np.argsort(table_keys, kind="stable")
    position = np.clip(np.searchsorted(table_keys[order], row_keys), 0, len(table) - 1)
    return np.where(table_keys[order][position] == row_keys, order[position], -1)


def _triplet_columns(
    hoi_set: HoiSet, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subject category, object category and verb of HOI ``rows`` (default all), from the box labels."""
    subject, obj = hoi_set.hoi_box_rows(rows)
    return hoi_set.box_labels[subject], hoi_set.box_labels[obj], _take(hoi_set.hois, rows)[:, 2]


def _triplets(hoi_set: HoiSet, rows: np.ndarray | None = None) -> np.ndarray:
    """(subject category, object category, verb) rows of HOI ``rows``."""
    return np.column_stack(_triplet_columns(hoi_set, rows)).astype(np.int64)


def _require_objects(hoi_set: HoiSet) -> None:
    missing = np.flatnonzero(hoi_set.hois[:, 1] < 0)
    if missing.size:
        image, local = _image_of(hoi_set.hoi_offsets, missing[0])
        raise PredictionError(
            f"{hoi_set.what}: image {image}: field 'hois[{local}].object': HICO-DET HOIs "
            "need an object (expected a box index, found -1; -1 is V-COCO's 'no object', "
            "use vcoco_map)"
        )


def triplet_counts(references: HoiSet) -> dict[tuple[int, int, int], int]:
    """Number of GT instances of every (subject category, object category, verb) triplet (rare / non-rare).

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
    return {tuple(int(v) for v in t): int(c) for t, c in zip(unique, counts, strict=True)}


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

    Returns ``{"mAP", "mAP_rare", "mAP_non_rare", "mean_max_recall", "ap_per_triplet", "protocol",
    "num_classes", "reasons", "warnings"}``; ``ap_per_triplet`` is keyed
    ``"<subject category>_<object category>_<verb>"`` in raw ids. Rare classes have fewer than 10 instances in
    ``train_references``; a mean with no class to average is ``None`` and ``reasons[key]`` says why (on an SG
    test split no held-out combination occurs in training). ``top_k`` defaults to 100 per image for "qpic" and
    no cut for "ho-rcnn"; ``known_object`` (ho-rcnn only) scores a class only on images whose GT HOIs include
    its object category. Under ho-rcnn a class with detections but no GT has recall NaN, which makes
    ``mean_max_recall`` NaN (with a reason), as the MATLAB code prints it. Under "qpic" the GT boxes are rounded
    to float32 first (:func:`as_loaded_by_qpic`).
    ``warnings`` lists, one counted line each, inputs scored as the upstream code scores them though they look
    wrong (boxes with x2 < x1; GT HOIs outside the 600 classes under ho-rcnn); each is also issued as a
    :class:`~hoi_bench.input_warnings.InputWarning`.

    >>> gt = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 47]],
    ...                         hois=[[[0, 1, 37]]])
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
    _require_same_images(references, predictions)
    with collected_notes() as notes:
        rows = kept_rows(predictions, _resolve_top_k(top_k, protocol))
        if protocol == "qpic":
            _note_inverted_boxes((references, predictions), "QPIC's hico_eval.py")
            result = _qpic_hico(as_loaded_by_qpic(references), predictions, rows, train_references)
        else:
            _note_inverted_boxes((references, predictions), "eval_one.m")
            result = _ho_rcnn(references, predictions, rows, train_references, known_object)
    result["warnings"] = notes
    return result


def as_loaded_by_qpic(references: HoiSet) -> HoiSet:
    """``references`` with every box coordinate rounded to float32, as QPIC's data loaders hold GT boxes
    (``datasets/hico.py`` and ``vcoco.py``: ``torch.as_tensor(boxes, dtype=torch.float32)``); its evaluators
    compute the IoU from those values. Predictions are not rounded: the evaluators take them as given.

    >>> gt = HoiSet.from_images(boxes=[[[0, 0, 2, 7.0000002]]], box_labels=[[1]], hois=[[]])
    >>> as_loaded_by_qpic(gt).boxes.tolist()
    [[0.0, 0.0, 2.0, 7.0]]
    """
    rounded = references.boxes.astype(np.float32).astype(np.float64)
    if np.array_equal(rounded, references.boxes):
        return references
    return replace(references, boxes=rounded)


def _note_inverted_boxes(hoi_sets: Sequence[HoiSet], evaluator: str) -> None:
    """Count the boxes with x2 < x1 or y2 < y1 of each set in one warning: the upstream evaluators score them as
    they are (their IoU formulas take any four numbers), and so does hoi-bench."""
    for hoi_set in hoi_sets:
        boxes = hoi_set.boxes
        inverted = np.flatnonzero((boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1]))
        if inverted.size:
            image, local = _image_of(hoi_set.box_offsets, inverted[0])
            warn_input(
                f"{hoi_set.what}: {inverted.size} boxes have x2 < x1 or y2 < y1 (first: image {image}, "
                f"boxes[{local}] = {boxes[inverted[0]].tolist()}); scored as given, as {evaluator} scores them"
            )


def _qpic_hico(references: HoiSet, predictions: HoiSet, rows: np.ndarray, train: HoiSet | None) -> dict:
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
    class_ids = _class_table(_triplet_columns(predictions, rows), gt_triplets)
    without_gt_boxes = np.diff(references.box_offsets) == 0
    class_ids[without_gt_boxes[predictions.hoi_images()[rows]]] = -1
    scored = _score_by_class(references, predictions, rows, class_ids, len(gt_triplets))

    counts = triplet_counts(train) if train is not None else None
    aps, recalls, rare, non_rare, per_triplet = [], [], [], [], {}
    for c, triplet in enumerate(gt_triplets):
        ap, recall = scored.ap(c, int(num_gt[c]), ELEVEN_POINTS)
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
    undefined = int(np.isnan(recalls).sum()) if recalls else 0
    why_recall = (
        f"{undefined} classes have detections but no test GT: recall 0/0 = NaN, so the mean is NaN "
        "(as eval_one.m prints it)"
        if undefined
        else None
    )
    pairs = (
        ("mAP", why_map),
        ("mAP_rare", why_rare),
        ("mAP_non_rare", why_non_rare),
        ("mean_max_recall", why_recall),
    )
    reasons = {key: why for key, why in pairs if why is not None}
    return {
        "mAP": m_ap,
        "mAP_rare": m_rare,
        "mAP_non_rare": m_non_rare,
        "mean_max_recall": m_recall,
        "ap_per_triplet": per_triplet,
        "protocol": protocol,
        "num_classes": len(aps),
        "reasons": reasons,
    }


def _hoi_class_ids(verbs: np.ndarray, objects: np.ndarray) -> np.ndarray:
    """HICO HOI class index 0..599 of each (verb, object category), -1 for a combination outside the 600."""
    from hoi_sg_dataset.vocabulary import hico_hoi_classes

    table = np.array([(c.verb_id, c.object_id) for c in hico_hoi_classes()], dtype=np.int64)
    return _class_table((verbs, objects), table)


def _ho_rcnn(
    references: HoiSet, predictions: HoiSet, rows: np.ndarray, train: HoiSet | None, known_object: bool
) -> dict:
    from hoi_sg_dataset.vocabulary import hico_hoi_classes

    classes = hico_hoi_classes()
    gt_triplets = _triplets(references)
    gt_class = _hoi_class_ids(gt_triplets[:, 2], gt_triplets[:, 1])
    outside = int((gt_class < 0).sum())
    if outside:
        warn_input(f"{references.what}: {outside} GT HOIs are none of the 600 HICO-DET classes; the ho-rcnn "
                   "protocol ignores them, as eval_one.m knows only those classes")
    num_gt = np.bincount(gt_class[gt_class >= 0], minlength=len(classes))
    _, pred_objects, pred_verbs = _triplet_columns(predictions, rows)
    class_ids = _hoi_class_ids(pred_verbs, pred_objects)
    if known_object:
        gt_objects = np.unique(np.column_stack([references.hoi_images(), gt_triplets[:, 1]]), axis=0)
        known = _class_table((predictions.hoi_images()[rows], pred_objects), gt_objects) >= 0
        class_ids = np.where(known, class_ids, -1)
    scored = _score_by_class(
        references, predictions, rows, class_ids, len(classes), stable=True, iou_rule="matlab", labels="hoi_class"
    )
    counts = None
    if train is not None:
        _require_objects(train)
        train_triplets = _triplets(train)
        train_class = _hoi_class_ids(train_triplets[:, 2], train_triplets[:, 1])
        counts = np.bincount(train_class[train_class >= 0], minlength=len(classes))
    aps, recalls, rare, non_rare, per_triplet = [], [], [], [], {}
    for c, hoi_class in enumerate(classes):
        ap, recall = scored.ap(c, int(num_gt[c]), MATLAB_ELEVEN_POINTS)
        aps.append(ap)
        recalls.append(recall)
        per_triplet[f"{PERSON}_{hoi_class.object_id}_{hoi_class.verb_id}"] = ap
        if counts is not None:
            (rare if counts[c] < RARE_THRESHOLD else non_rare).append(ap)
    why = "no training annotations given" if counts is None else "no HOI class in this group"
    return _hoi_result("ho-rcnn", aps, recalls, rare, non_rare, per_triplet, why, why)


def vcoco_map(references: HoiSet, predictions: HoiSet, *, top_k: int | None | str = "default") -> dict:
    """V-COCO(-SG) role mAP as QPIC's ``vcoco_eval.py`` computes it.

    Returns ``{"mAP_all", "mAP_thesis", "mAP_thesis_present", "ap_per_verb", "reasons", "warnings"}``: ``mAP_all``
    averages the verbs that have GT; ``mAP_thesis`` averages the 24 thesis verbs counting a verb without GT as
    0, as upstream does; ``mAP_thesis_present`` (ours, not upstream) averages only the thesis verbs that have
    GT. ``top_k`` defaults to 100 per image. GT boxes are rounded to float32 first, as QPIC loads them
    (:func:`as_loaded_by_qpic`); ``warnings`` as in :func:`hoi_map`.

    >>> gt = HoiSet.from_images(boxes=[[[0, 0, 9, 9], [5, 5, 20, 20]]], box_labels=[[1, 37]],
    ...                         hois=[[[0, 1, 0], [0, -1, 1]]])
    >>> pred = HoiSet.from_images(boxes=[[[0, 0, 9, 9]]], box_labels=[[1]], hois=[[[0, -1, 1]]],
    ...                           scores=[[0.5]])
    >>> result = vcoco_map(gt, pred)
    >>> result["ap_per_verb"], round(result["mAP_all"], 6), result["mAP_thesis"]
    ({'0': 0.0, '1': 1.0000000000000002}, 0.5, 0.0)
    """
    with collected_notes() as notes:
        _note_inverted_boxes((references, predictions), "QPIC's vcoco_eval.py")
        result = _qpic_vcoco(as_loaded_by_qpic(references), predictions, top_k)
    result["warnings"] = notes
    return result


def _qpic_vcoco(references: HoiSet, predictions: HoiSet, top_k: int | None | str) -> dict:
    rows = kept_rows(predictions, _resolve_top_k(top_k, "qpic"))
    num_gt = np.bincount(references.hois[:, 2])
    present = np.flatnonzero(num_gt)
    class_ids = _small_code_table(predictions.hois[rows, 2], present)
    scored = _score_by_class(references, predictions, rows, class_ids, len(present))
    ap_per_verb: dict[int, float] = {}
    for c, verb in enumerate(present):
        ap_per_verb[int(verb)], _ = scored.ap(c, int(num_gt[verb]), ELEVEN_POINTS)
    m_all, why_all = _mean_or_reason(list(ap_per_verb.values()), "the references hold no HOI")
    thesis = [ap_per_verb.get(v, 0) for v in VCOCO_THESIS_VERBS]
    thesis_present = [ap_per_verb[v] for v in VCOCO_THESIS_VERBS if v in ap_per_verb]
    m_present, why_present = _mean_or_reason(thesis_present, "no thesis verb has GT")
    reasons = {key: why for key, why in (("mAP_all", why_all), ("mAP_thesis_present", why_present)) if why}
    return {
        "mAP_all": m_all,
        "mAP_thesis": float(np.mean(thesis)),
        "mAP_thesis_present": m_present,
        "ap_per_verb": {str(v): ap for v, ap in ap_per_verb.items()},
        "reasons": reasons,
    }


def check_fast_route(
    predictions: Sequence, references: Sequence, prediction_set: HoiSet | None, reference_set: HoiSet | None
) -> tuple[HoiSet, HoiSet]:
    """Validate the metric modules' array route: both sets given, row ids ``0..num_images-1`` on each side.

    ``evaluate`` still needs one (id) row per image to accumulate; the sets skip its Arrow round trip.
    """
    if prediction_set is None or reference_set is None:
        raise ValueError("give both prediction_set and reference_set, or neither")
    expected = list(range(reference_set.num_images))
    if list(predictions) != expected or list(references) != expected:
        raise ValueError(
            "with prediction_set/reference_set, pass predictions = references = "
            f"list(range({reference_set.num_images})) (one row per image, in order)"
        )
    return prediction_set, reference_set
