"""V-COCO's official role AP and agent AP (s-gupta/v-coco ``vsrl_eval.py``) as pure numpy functions.

The official evaluator matches every detection to the GT person of largest IoU (first on ties, +1 pixel
convention, float32 boxes), skips detections matched to persons V-COCO does not annotate, and scores each of
the 25 action-roles in two scenarios that differ only for a GT person without role object: scenario 1 wants no
predicted role box there (``[0, 0, 0, 0]`` or four NaNs), scenario 2 ignores the predicted box. AP is the
all-point VOC AP of all images pooled, stored as float32. Every order that upstream takes from numpy's
(unstable) ``argsort`` is taken from the same call on the same float32 data here, so tied scores rank as they
do upstream on the same platform.

Where the official script stops with an assertion (an action without positives, or an action-role without a
single counted detection) the AP here is undefined (NaN): the role means skip it as upstream's ``nanmean``
skips the roles an action lacks, and the agent mean counts it as 0, as upstream's ``nansum / 26`` would.

Files are read by ``vcoco_role_files``; this module only sees arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hoi_bench.errors import FormatError, PredictionError
from hoi_sg_dataset.formats import FLOAT32_MAX

ACTIONS: tuple[str, ...] = (
    "hold", "stand", "sit", "ride", "walk", "look", "hit", "eat", "jump", "lay", "talk_on_phone", "carry",
    "throw", "catch", "cut", "run", "work_on_computer", "ski", "surf", "skateboard", "smile", "drink", "kick",
    "point", "read", "snowboard",
)  # fmt: skip
"""The 26 V-COCO actions in the order of the VSRL files (and of upstream's result arrays)."""

ROLES: dict[str, tuple[str, ...]] = {
    "hold": ("obj",), "stand": (), "sit": ("instr",), "ride": ("instr",), "walk": (), "look": ("obj",),
    "hit": ("instr", "obj"), "eat": ("obj", "instr"), "jump": ("instr",), "lay": ("instr",),
    "talk_on_phone": ("instr",), "carry": ("obj",), "throw": ("obj",), "catch": ("obj",),
    "cut": ("instr", "obj"), "run": (), "work_on_computer": ("instr",), "ski": ("instr",), "surf": ("instr",),
    "skateboard": ("instr",), "smile": (), "drink": ("instr",), "kick": ("obj",), "point": ("instr",),
    "read": ("obj",), "snowboard": ("instr",),
}  # fmt: skip
"""The roles of each action after ``agent``, in VSRL ``role_name`` order (hit and cut: instr first)."""

ACTION_ROLES: tuple[tuple[int, int], ...] = tuple(
    (a, r) for a, action in enumerate(ACTIONS) for r in range(len(ROLES[action]))
)
"""The 25 action-roles as (action index, role slot 0 or 1), in upstream's reporting order."""

ACTION_ROLE_NAMES: tuple[str, ...] = tuple(f"{ACTIONS[a]}_{ROLES[ACTIONS[a]][r]}" for a, r in ACTION_ROLES)
"""``hold_obj`` ... ``snowboard_instr``: the detection keys and output names of the 25 action-roles."""

AGENT_NAMES: tuple[str, ...] = tuple(f"{action}_agent" for action in ACTIONS)
"""The 26 detection keys holding agent scores."""

POINT_ROLE = ACTION_ROLE_NAMES.index("point_instr")
"""The rare role papers leave out of the 24-role mean (iCAN's "omitting the action point")."""

IOU_THRESHOLD = 0.5
SCENARIOS = (1, 2)


@dataclass(frozen=True)
class VcocoGroundTruth:
    """GT persons of the evaluated images, as upstream's ``vcocodb`` holds them.

    ``image_ids`` (I,) the split's COCO image ids in evaluation order; the persons of image ``i`` are rows
    ``person_offsets[i]:person_offsets[i + 1]`` of ``person_boxes`` (P x 4 float32, clipped, x2 = x + w - 1),
    ``actions`` (P x 26: 1 / 0 per action, -1 on every action for a person V-COCO does not annotate) and
    ``role_boxes`` (P x 25 x 4 float32: the role object's box, all -1 where the person has no role object).
    """

    image_ids: np.ndarray
    person_offsets: np.ndarray
    person_boxes: np.ndarray
    actions: np.ndarray
    role_boxes: np.ndarray


@dataclass(frozen=True)
class VcocoDetections:
    """The detections of the evaluated images, in file order (entries for other images already dropped).

    ``image_index`` (D,) position of the detection's image in ``VcocoGroundTruth.image_ids``; ``records`` (D,)
    the detection's index in its file (for messages); ``person_boxes`` (D x 4), ``agent_scores`` (D x 26),
    ``role_boxes`` (D x 25 x 4), ``role_scores`` (D x 25), all float32 with NaN where the file has NaN / null.
    """

    image_index: np.ndarray
    records: np.ndarray
    person_boxes: np.ndarray
    agent_scores: np.ndarray
    role_boxes: np.ndarray
    role_scores: np.ndarray


@dataclass(frozen=True)
class RoleApResult:
    """Per-class APs (float32, NaN where undefined) and the positives each class had."""

    role_ap: dict[int, np.ndarray]
    agent_ap: np.ndarray
    npos: np.ndarray

    def to_json(self) -> dict:
        """The public result: the 25 role APs per scenario, 26 agent APs and the means; NaN becomes ``None``."""
        out: dict = {}
        for scenario in SCENARIOS:
            aps = self.role_ap[scenario]
            out[f"role_ap_scenario_{scenario}"] = {n: _value(v) for n, v in zip(ACTION_ROLE_NAMES, aps)}
        out["agent_ap"] = {a: _value(v) for a, v in zip(ACTIONS, self.agent_ap)}
        for scenario in SCENARIOS:
            out[f"mean_role_ap_scenario_{scenario}"] = _value(mean_role_ap(self.role_ap[scenario]))
        for scenario in SCENARIOS:
            excluded = mean_role_ap(self.role_ap[scenario], exclude_point=True)
            out[f"mean_role_ap_scenario_{scenario}_excl_point"] = _value(excluded)
        out["mean_agent_ap"] = _value(mean_agent_ap(self.agent_ap))
        return out


def ground_truth_from_images(image_ids, person_boxes, actions, role_boxes) -> VcocoGroundTruth:
    """A ``VcocoGroundTruth`` from one entry per image: its COCO id, its GT person boxes (P x 4), their actions
    (P x 26: 1, 0, or -1 on every action for an unannotated person) and role boxes (P x 25 x 4, all -1 where none).
    """
    boxes = [_stack(b, (None, 4), "references", i, "person_boxes") for i, b in enumerate(person_boxes)]
    counts = [len(b) for b in boxes]
    labels = [
        _stack(a, (n, len(ACTIONS)), "references", i, "actions")
        for i, (a, n) in enumerate(zip(actions, counts, strict=True))
    ]
    roles = [
        _stack(r, (n, len(ACTION_ROLES), 4), "references", i, "role_boxes")
        for i, (r, n) in enumerate(zip(role_boxes, counts, strict=True))
    ]
    return VcocoGroundTruth(
        image_ids=np.asarray(image_ids, dtype=np.int64),
        person_offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        person_boxes=np.concatenate([np.zeros((0, 4), np.float32), *boxes]),
        actions=np.concatenate([np.zeros((0, len(ACTIONS)), np.float32), *labels]).astype(np.int8),
        role_boxes=np.concatenate([np.zeros((0, len(ACTION_ROLES), 4), np.float32), *roles]),
    )


def detections_from_images(person_boxes, agent_scores, role_boxes, role_scores) -> VcocoDetections:
    """``VcocoDetections`` from one entry per image (aligned with the GT images): K x 4 person boxes, K x 26
    agent scores, K x 25 x 4 role boxes and K x 25 role scores (NaN or None: not predicted)."""
    boxes = [_stack(b, (None, 4), "predictions", i, "person_boxes") for i, b in enumerate(person_boxes)]
    counts = [len(b) for b in boxes]
    columns = {}
    for name, values, shape in (
        ("agent_scores", agent_scores, (len(ACTIONS),)),
        ("role_boxes", role_boxes, (len(ACTION_ROLES), 4)),
        ("role_scores", role_scores, (len(ACTION_ROLES),)),
    ):
        parts = [
            _stack(v, (n, *shape), "predictions", i, name)
            for i, (v, n) in enumerate(zip(values, counts, strict=True))
        ]
        columns[name] = np.concatenate([np.zeros((0, *shape), np.float32), *parts])
    return VcocoDetections(
        image_index=np.repeat(np.arange(len(counts)), counts).astype(np.int64),
        records=np.arange(sum(counts), dtype=np.int64),
        person_boxes=np.concatenate([np.zeros((0, 4), np.float32), *boxes]),
        **columns,
    )


def _stack(values, shape: tuple, what: str, image: int, field: str) -> np.ndarray:
    """``values`` as a float32 array (None becomes NaN) of ``shape`` (None: any length), else ``FormatError``;
    so is a value beyond the float32 range, which the cast (upstream's too) would silently make infinite."""
    wide = np.zeros((0, *shape[1:])) if len(values) == 0 else np.array(values, dtype=np.float64)
    far = np.abs(wide) > FLOAT32_MAX  # NaN (None) compares False
    if far.any():
        raise FormatError(
            None,
            f"{field} of image {image} in the {what}: a value beyond the float32 range (upstream casts to float32, "
            "where it would become infinite)",
            record=image,
            field=field,
            expected=f"numbers within +-{FLOAT32_MAX:.4g}, or None / NaN",
            found=float(wide[far][0]),
        )
    array = wide.astype(np.float32)
    if array.ndim != len(shape) or any(want not in (None, got) for want, got in zip(shape, array.shape)):
        expected = " x ".join("any" if n is None else str(n) for n in shape)
        raise FormatError(
            None,
            f"{field} of image {image} in the {what} has the wrong shape",
            record=image,
            field=field,
            expected=expected,
            found=" x ".join(map(str, array.shape)),
        )
    return array


def _value(v: float) -> float | None:
    return None if math.isnan(v) else float(v)


def overlaps(gt_boxes: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Upstream's ``get_overlap`` elementwise: IoU with +1 inclusive pixels, in the inputs' float32.

    >>> gt = np.array([[0, 0, 9, 9]], dtype=np.float32)
    >>> overlaps(gt, np.array([[0, 0, 9, 4]], dtype=np.float32))   # 50 of 100 pixels: exactly 0.5
    array([0.5], dtype=float32)
    """
    ixmin = np.maximum(gt_boxes[..., 0], predicted[..., 0])
    iymin = np.maximum(gt_boxes[..., 1], predicted[..., 1])
    ixmax = np.minimum(gt_boxes[..., 2], predicted[..., 2])
    iymax = np.minimum(gt_boxes[..., 3], predicted[..., 3])
    iw = np.maximum(ixmax - ixmin + 1.0, 0.0)
    ih = np.maximum(iymax - iymin + 1.0, 0.0)
    inters = iw * ih
    union = (
        (predicted[..., 2] - predicted[..., 0] + 1.0) * (predicted[..., 3] - predicted[..., 1] + 1.0)
        + (gt_boxes[..., 2] - gt_boxes[..., 0] + 1.0) * (gt_boxes[..., 3] - gt_boxes[..., 1] + 1.0)
        - inters
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return inters / union


def voc_ap(rec: np.ndarray, prec: np.ndarray) -> float:
    """All-point VOC AP exactly as upstream's ``voc_ap`` (float64 sentinels, envelope from the right).

    >>> voc_ap(np.array([0.5, 0.5, 1.0], np.float32), np.array([1.0, 0.5, 2 / 3]))
    0.8333333333333333
    """
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


def match_persons(gt: VcocoGroundTruth, detections: VcocoDetections) -> tuple[np.ndarray, np.ndarray]:
    """Each detection's GT person (global row, upstream's ``argmax``: first wins, NaN wins) and its IoU.

    Raises ``PredictionError`` for a detection with a score in an image without GT person, where upstream
    crashes on an empty ``argmax``; detections whose every score is NaN are never matched upstream and get -1.
    """
    counts = np.diff(gt.person_offsets)[detections.image_index]
    scored = _any_score(detections)
    lonely = scored & (counts == 0)
    if lonely.any():
        k = int(np.flatnonzero(lonely)[0])
        image = int(gt.image_ids[detections.image_index[k]])
        raise PredictionError(
            f"detection {int(detections.records[k])}: image {image} has no GT person to match "
            f"(the official evaluator crashes on such a detection; expected detections only for images with "
            f"persons or all scores null)"
        )
    matched = np.flatnonzero(scored)
    jmax = np.full(len(counts), -1, dtype=np.int64)
    ovmax = np.full(len(counts), np.nan, dtype=np.float32)
    if len(matched) == 0:
        return jmax, ovmax
    n = counts[matched]
    starts = np.cumsum(n) - n
    det_of_pair = np.repeat(matched, n)
    local = np.arange(int(n.sum())) - np.repeat(starts, n)
    person = gt.person_offsets[detections.image_index[det_of_pair]] + local
    iou = overlaps(gt.person_boxes[person], detections.person_boxes[det_of_pair])
    best = np.maximum.reduceat(iou, starts)
    best_of_pair = np.repeat(best, n)
    hit = (iou == best_of_pair) | (np.isnan(iou) & np.isnan(best_of_pair))
    first = np.minimum.reduceat(np.where(hit, local, np.iinfo(np.int64).max), starts)
    jmax[matched] = gt.person_offsets[detections.image_index[matched]] + first
    ovmax[matched] = best
    return jmax, ovmax


def _any_score(detections: VcocoDetections) -> np.ndarray:
    return ~(np.isnan(detections.agent_scores).all(axis=1) & np.isnan(detections.role_scores).all(axis=1))


def processing_order(image_index: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Positions of the (non-NaN) ``scores`` in upstream's order: images in turn, each by its own
    ``scores[image].argsort()[::-1]``.

    Where an image's scores are all distinct that is plain descending order (one vectorized sort); an image
    with tied scores gets upstream's exact call on its own float32 array, since numpy's unstable sort decides
    which tied detection comes first.

    >>> processing_order(np.array([1, 0, 1]), np.array([0.2, 0.5, 0.9], np.float32)).tolist()
    [1, 2, 0]
    """
    order = np.lexsort((-scores, image_index))
    same = (image_index[order][1:] == image_index[order][:-1]) & (scores[order][1:] == scores[order][:-1])
    tied_images = np.unique(image_index[order][1:][same])
    if len(tied_images) == 0:
        return order
    segments = (
        np.searchsorted(image_index[order], tied_images),
        np.searchsorted(image_index[order], tied_images, side="right"),
    )
    for start, stop in zip(*segments):
        in_file_order = np.sort(order[start:stop])
        order[start:stop] = in_file_order[scores[in_file_order].argsort()[::-1]]
    return order


def _ranked_ap(scores: np.ndarray, true_positive: np.ndarray, npos: float) -> float:
    """Upstream's pooled AP of one class: ``argsort()[::-1]`` of the float32 scores, cumulative TP / FP."""
    if npos == 0 or len(scores) == 0:
        return math.nan
    idx = scores.argsort()[::-1]
    tp = np.cumsum(true_positive.astype(np.float32)[idx])
    fp = np.cumsum((~true_positive).astype(np.float32)[idx])
    rec = tp / float(npos)
    # upstream's expression: its float64 eps makes precision float64 under numpy >= 2, float32 under numpy 1.x
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    return float(np.float32(voc_ap(rec, prec)))


@dataclass(frozen=True)
class _PersonMatches:
    """What every class shares: each detection's GT person and IoU, the ignored persons, positives per action."""

    gt: VcocoGroundTruth
    detections: VcocoDetections
    jmax: np.ndarray
    ovmax: np.ndarray
    ignored: np.ndarray
    npos: np.ndarray

    def class_ap(self, scores: np.ndarray, action: int, role: int | None = None, scenario: int = 1) -> float:
        """AP of one class (an action's agent when ``role`` is None, else action-role ``role`` in
        ``scenario``): upstream's greedy loop with ``covered`` per image, then the pooled AP."""
        valid = np.flatnonzero(~np.isnan(scores))
        ranked = valid[processing_order(self.detections.image_index[valid], scores[valid])]
        counted = ranked[~self.ignored[self.jmax[ranked]]]
        person = self.jmax[counted]
        eligible = (self.gt.actions[person, action] == 1) & (self.ovmax[counted] >= IOU_THRESHOLD)
        if role is not None:
            gt_roles = self.gt.role_boxes[person, role]
            eligible &= _role_overlap(gt_roles, self.detections.role_boxes[counted, role], scenario)
        true_positive = np.zeros(len(counted), dtype=bool)
        candidates = np.flatnonzero(eligible)
        _, first = np.unique(person[candidates], return_index=True)
        true_positive[candidates[first]] = True
        return _ranked_ap(scores[counted], true_positive, float(self.npos[action]))


def vcoco_role_ap(gt: VcocoGroundTruth, detections: VcocoDetections) -> RoleApResult:
    """Role AP (scenarios 1 and 2, 25 action-roles) and agent AP (26 actions) of ``detections``.

    A detection whose best GT person V-COCO does not annotate (``actions`` -1) is skipped: neither TP nor FP.
    Positives per action count every annotated person with the action, with or without role object.
    """
    jmax, ovmax = match_persons(gt, detections)
    ignored = np.any(gt.actions == -1, axis=1)
    npos = (gt.actions == 1).sum(axis=0).astype(np.float32)
    matches = _PersonMatches(gt, detections, jmax, ovmax, ignored, npos)
    agent = [matches.class_ap(detections.agent_scores[:, a], a) for a in range(len(ACTIONS))]
    roles = {
        scenario: np.array(
            [
                matches.class_ap(detections.role_scores[:, r], a, r, scenario)
                for r, (a, _) in enumerate(ACTION_ROLES)
            ],
            dtype=np.float32,
        )
        for scenario in SCENARIOS
    }
    return RoleApResult(roles, np.array(agent, dtype=np.float32), npos)


def _role_overlap(gt_roles: np.ndarray, predicted: np.ndarray, scenario: int) -> np.ndarray:
    """Whether each predicted role box passes: IoU >= 0.5 with the GT role box, or the scenario's rule where
    the GT person has no role object (upstream marks that case by a GT box of four -1)."""
    no_role = np.all(gt_roles == -1, axis=1)
    passed = overlaps(gt_roles, predicted) >= IOU_THRESHOLD
    if scenario == 1:
        empty = np.all(predicted == 0.0, axis=1) | np.all(np.isnan(predicted), axis=1)
        return np.where(no_role, empty, passed)
    return np.where(no_role, True, passed)


def _upstream_matrix(aps: np.ndarray) -> np.ndarray:
    """The 26 x 2 float32 ``role_ap`` array upstream averages (NaN where an action has no such role)."""
    matrix = np.full((len(ACTIONS), 2), np.nan, dtype=np.float32)
    for (a, r), ap in zip(ACTION_ROLES, aps):
        matrix[a, r] = ap
    return matrix


def mean_role_ap(aps: np.ndarray, *, exclude_point: bool = False) -> float:
    """Upstream's printed mean: float32 ``nanmean`` of its 26 x 2 array (the 25 roles, NaN skipped).

    ``exclude_point`` leaves out ``point_instr``: the 24-role mean papers report; with all 25 roles defined it
    equals iCAN's ``(25 * mean - AP_point) / 24`` up to float32 rounding.
    """
    matrix = _upstream_matrix(aps)
    if exclude_point:
        a, r = ACTION_ROLES[POINT_ROLE]
        matrix[a, r] = np.nan
    if np.isnan(matrix).all():
        return math.nan
    return float(np.nanmean(matrix))


def mean_agent_ap(aps: np.ndarray) -> float:
    """Upstream's average agent AP: float32 ``nansum`` over the 26 actions divided by 26."""
    if np.isnan(aps).all():
        return math.nan
    return float(np.nansum(aps.astype(np.float32)) / np.float32(len(ACTIONS)))
