"""HHI mAP and Recall@K: matching rules, official-mode quirks, agreement with a clean-room loop reference."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoi_bench.boxes import iou_matrix
from hoi_bench.errors import PredictionError
from sportshhi.evaluation import (
    EVALUATED_LABEL_IDS,
    hhi_metrics,
    paired_iou,
    released_paired_iou,
    score_tables,
)


def _load_loop_reference():
    """The clean-room reference beside this file (tests/ is not a package, so it is loaded by path)."""
    spec = importlib.util.spec_from_file_location("sportshhi_loop_reference",
                                                  Path(__file__).with_name("loop_reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.loop_hhi_metrics


loop_hhi_metrics = _load_loop_reference()

A = [0.10, 0.10, 0.30, 0.80]
B = [0.50, 0.10, 0.70, 0.80]
C = [0.35, 0.20, 0.45, 0.90]
D = [0.75, 0.05, 0.95, 0.60]
SHIFTED_A = [0.11, 0.10, 0.31, 0.80]  # IoU with A = 0.19 / 0.21 ≈ 0.905


def score(gt, pred, **kwargs):
    """``gt``: [(key, subject, object, label)]; ``pred``: [(key, subject, object, label, score)]."""
    gt_cols = list(zip(*gt)) if gt else [[], [], [], []]
    pred_cols = list(zip(*pred)) if pred else [[], [], [], [], []]
    def boxes(column):
        return np.array(column).reshape(-1, 4)

    return hhi_metrics(list(gt_cols[0]), boxes(gt_cols[1]), boxes(gt_cols[2]), list(gt_cols[3]),
                       list(pred_cols[0]), boxes(pred_cols[1]), boxes(pred_cols[2]), list(pred_cols[3]),
                       list(pred_cols[4]), **kwargs)


GT = [("v,0001", A, B, 2), ("v,0001", B, C, 3), ("v,0002", C, D, 2), ("v,0002", D, A, 5), ("w,0001", A, D, 2)]


def test_exact_boxes_give_ap_one_and_recall_one():
    pred = [(k, s, o, label, 0.5 + 0.1 * i) for i, (k, s, o, label) in enumerate(GT)]
    for official in (False, True):
        result = score(GT, pred, official=official)
        assert result["mAP"] == 1.0
        reported = {k: v for k, v in result["ap_per_class"].items() if v is not None}
        assert reported == {"2": 1.0, "3": 1.0, "5": 1.0}
        assert all(result[f"recall@{k}"] == 1.0 for k in (20, 50, 100, 150))


def test_swapped_subject_and_object_is_no_true_positive():
    pred = [(k, o, s, label, 0.9) for k, s, o, label in GT]
    result = score(GT, pred)
    assert result["mAP"] == 0.0 and result["recall@150"] == 0.0


def test_prediction_on_keyframe_without_gt_changes_nothing():
    pred = [(k, s, o, label, 0.5) for k, s, o, label in GT[:3]] + [("v,0003", C, D, 3, 0.7)]
    distractors = pred + [("x,0009", A, B, 2, 0.99), ("v,0003", A, B, 2, 0.95)]
    for official in (False, True):
        assert score(GT, pred, official=official) == score(GT, distractors, official=official)


def test_wrong_class_and_low_iou_are_false_positives_and_threshold_is_inclusive():
    gt = [("v,0001", A, B, 2)]
    assert score(gt, [("v,0001", A, B, 3, 0.9)], class_whitelist=[2, 3])["ap_per_class"]["2"] == 0.0
    shifted = [("v,0001", SHIFTED_A, B, 2, 0.9)]
    iou = float(paired_iou(np.array([SHIFTED_A]), np.array([A]))[0])
    assert 0.9 < iou < 0.91
    assert score(gt, shifted, iou_threshold=iou)["mAP"] == 1.0
    assert score(gt, shifted, iou_threshold=iou + 1e-9)["mAP"] == 0.0


def test_a_taken_gt_sends_the_detection_to_the_next_unmatched_gt():
    # Both GT rows have the same class and overlap the two detections above 0.5; the better-scored detection
    # takes the GT it overlaps most, and the second one falls back to the other GT (VOC would call it a FP).
    near_a = [0.10, 0.10, 0.30, 0.75]
    gt = [("v,0001", A, B, 2), ("v,0001", near_a, B, 2)]
    pred = [("v,0001", A, B, 2, 0.9), ("v,0001", A, B, 2, 0.8)]
    result = score(gt, pred)
    assert result["mAP"] == 1.0 and result["recall@20"] == 1.0


def test_hand_computed_average_precision():
    gt = [("v,0001", A, B, 2), ("v,0002", A, B, 2), ("v,0003", A, B, 2)]
    pred = [("v,0001", A, B, 2, 0.9), ("v,0002", C, D, 2, 0.8), ("v,0002", A, B, 2, 0.7)]
    # ranked: TP, FP, TP with 3 GT -> precision 1, 1/2, 2/3 at recall 1/3, 1/3, 2/3 -> AP = 1/3 + 2/9
    assert score(gt, pred)["mAP"] == pytest.approx(1 / 3 + 2 / 9)


def test_official_truncates_gt_to_the_first_k_rows_of_each_keyframe():
    gt = [("v,0001", A, B, 2), ("v,0001", B, C, 2), ("v,0001", C, D, 2)]
    pred = [("v,0001", C, D, 2, 0.9), ("v,0001", A, B, 2, 0.8), ("v,0001", B, C, 2, 0.7)]
    # top-2 predictions: (C, D) and (A, B). Default: 2 hits of 3 GT. Official keeps GT rows 1-2 only, so
    # (C, D) finds no GT: 1 hit of 2 GT.
    assert score(gt, pred, ks=[2])["recall@2"] == pytest.approx(2 / 3)
    assert score(gt, pred, ks=[2], official=True, iou_threshold=0.5)["recall@2"] == pytest.approx(1 / 2)
    assert score(gt, pred, ks=[3], official=True)["recall@3"] == 1.0


def test_official_drops_classes_without_predictions_from_map_and_recall():
    gt = [("v,0001", A, B, 2), ("v,0001", B, C, 3), ("v,0002", C, D, 5)]
    pred = [("v,0001", A, B, 2, 0.9), ("v,0002", C, D, 6, 0.8)]  # class 6 predicted but has no GT
    default = score(gt, pred)
    official = score(gt, pred, official=True)
    assert default["ap_per_class"]["2"] == 1.0 and default["ap_per_class"]["3"] == 0.0
    assert default["ap_per_class"]["6"] is None
    assert default["mAP"] == pytest.approx(1 / 3)
    assert default["recall@20"] == pytest.approx(1 / 3)
    assert official["ap_per_class"]["3"] is None and official["ap_per_class"]["6"] is None
    assert official["mAP"] == 1.0
    assert official["recall@20"] == 1.0  # class 2 only: 1 hit / 1 GT; class 6 adds no GT


def test_classes_outside_the_whitelist_are_ignored():
    gt = [("v,0001", A, B, 1), ("v,0001", B, C, 2)]
    pred = [("v,0001", A, B, 1, 0.9), ("v,0001", B, C, 2, 0.5)]
    result = score(gt, pred)
    assert "1" not in result["ap_per_class"] and len(result["ap_per_class"]) == 28
    assert result["mAP"] == 1.0
    only_excluded = score([("v,0001", A, B, 1)], [("v,0001", A, B, 2, 0.9)])
    assert only_excluded["mAP"] is None and only_excluded["recall@20"] is None


def test_settings_state_mode_threshold_and_whitelist():
    assert score(GT, [])["settings"] == {"iou_threshold": 0.5, "official": False,
                                         "class_whitelist": list(EVALUATED_LABEL_IDS),
                                         "ks": [20, 50, 100, 150]}
    assert score(GT, [], official=True)["settings"]["iou_threshold"] == 0.9
    assert score(GT, [], official=True, iou_threshold=0.5)["settings"]["iou_threshold"] == 0.5


def test_bad_inputs_name_the_row():
    with pytest.raises(PredictionError, match="row 1"):
        score(GT, [("v,0001", A, B, 2, 0.5), ("v,0001", A, B, 2, math.nan)])
    with pytest.raises(PredictionError, match="pred_subject_boxes: row 0"):
        score(GT, [("v,0001", [0.5, 0.1, 0.2, 0.8], B, 2, 0.5)])
    with pytest.raises(PredictionError, match="iou_threshold"):
        score(GT, [], iou_threshold=0.0)
    with pytest.raises(PredictionError, match="expected 5 values"):
        hhi_metrics([g[0] for g in GT], [g[1] for g in GT], [g[2] for g in GT], [2, 3], [], [], [], [], [])


# ----------------------------------------------------------- worked examples of the notes' Corrections block


def test_tied_scores_rank_as_the_released_argsort_does():
    # One GT, two detections at score 0.5 of which only the first (in file order) matches. The released code
    # ranks a class with np.argsort(float32 scores)[::-1], which puts the later, unmatched one first: the TP
    # comes second, precision 1/2 at recall 1 -> AP 0.5. The default mode keeps input order: AP 1.
    gt = [("v,0001", A, B, 2)]
    pred = [("v,0001", A, B, 2, 0.5), ("v,0001", C, D, 2, 0.5)]
    assert score(gt, pred, official=True, iou_threshold=0.5)["mAP"] == 0.5
    assert score(gt, pred)["mAP"] == 1.0
    # 0.5 and 0.5 + 1e-9 are one float32 value: tied in official mode, ordered in the default mode
    pred = [("v,0001", A, B, 2, 0.5 + 1e-9), ("v,0001", C, D, 2, 0.5)]
    assert score(gt, pred, official=True, iou_threshold=0.5)["mAP"] == 0.5
    assert score(gt, pred)["mAP"] == 1.0


def test_gt_of_equal_iou_are_tried_in_the_released_argsort_order():
    # Sixteenths are exact in binary, so the first detection (4/16..8/16) has IoU exactly 4/7 with both GT
    # subject boxes (1/16..8/16 and 4/16..11/16), whose own IoU is 0.4. The released code tries GT in
    # np.argsort(iou)[::-1] order: the later GT row first, so detection 1 takes GT 2 and detection 2 (GT 1's
    # exact boxes) takes GT 1: AP 1. Trying the earlier GT first (default mode) leaves detection 2 without a
    # GT: TP then FP, AP 0.5.
    obj = [0.5, 0.0, 1.0, 1.0]
    gt = [("v,0001", [1 / 16, 0.0, 0.5, 1.0], obj, 2), ("v,0001", [0.25, 0.0, 11 / 16, 1.0], obj, 2)]
    pred = [("v,0001", [0.25, 0.0, 0.5, 1.0], obj, 2, 0.9), ("v,0001", [1 / 16, 0.0, 0.5, 1.0], obj, 2, 0.8)]
    official = score(gt, pred, official=True, iou_threshold=0.5)
    assert official["mAP"] == 1.0 and official["recall@20"] == 1.0
    default = score(gt, pred)
    assert default["mAP"] == 0.5 and default["recall@20"] == 0.5


def test_iou_at_the_threshold_is_decided_on_float32_detection_boxes():
    # Subject IoU is 0.07 / 0.14 = 0.5 exactly in real numbers. In float64 it is 0.5 (a match at 0.5); with
    # the detection rounded to float32, as the released code stores it, it is 0.49999998585... (no match).
    gt_subject, det_subject = [0.1, 0.1, 0.24, 0.51], [0.1, 0.1, 0.17, 0.51]
    assert float(paired_iou(np.array([det_subject]), np.array([gt_subject]))[0]) >= 0.5
    assert float(released_paired_iou(np.array([det_subject]), np.array([gt_subject]))[0]) == \
        pytest.approx(0.49999998585168487, abs=1e-15)
    gt = [("v,0001", gt_subject, B, 2)]
    pred = [("v,0001", det_subject, B, 2, 0.9)]
    assert score(gt, pred, iou_threshold=0.5)["mAP"] == 1.0
    official = score(gt, pred, official=True, iou_threshold=0.5)
    assert official["mAP"] == 0.0 and official["recall@20"] == 0.0


def test_one_ordered_pair_with_two_labels_is_two_gt_instances():
    # The release lists the same (subject, object) pair of a keyframe once per label; each row is a GT
    # instance in both modes: one detection per label finds its own GT.
    gt = [("v,0001", A, B, 2), ("v,0001", A, B, 3)]
    both = [("v,0001", A, B, 2, 0.9), ("v,0001", A, B, 3, 0.8)]
    one = both[:1]
    for official in (False, True):
        assert score(gt, both, official=official, iou_threshold=0.5)["mAP"] == 1.0
        assert score(gt, both, official=official, iou_threshold=0.5)["recall@20"] == 1.0
        assert score(gt, one, official=official, iou_threshold=0.5)["recall@20"] == (1.0 if official else 0.5)
    # official recall drops the class with no prediction (3) from the sums; the default counts its GT


# --------------------------------------------------------------------------------------------- properties

_GRID = sorted({round(0.1 * i, 1) for i in range(11)} | {i / 8 for i in range(9)})
"""Tenths (IoUs that are decimal fractions: float32 and float64 can disagree at the threshold) and eighths
(exact in binary, so different GT often have exactly equal IoUs with a detection: ties in GT order)."""


@st.composite
def _box(draw):
    x1, x2 = sorted(draw(st.sampled_from(_GRID)) for _ in range(2))
    y1, y2 = sorted(draw(st.sampled_from(_GRID)) for _ in range(2))
    return [x1, y1, x2 + (0.05 if x2 == x1 else 0.0), y2 + (0.05 if y2 == y1 else 0.0)]


def _at_threshold(box, threshold):
    """``box`` narrowed so that its IoU with ``box`` is exactly ``threshold`` in real (decimal) numbers."""
    x1, y1, x2, y2 = box
    return [x1, y1, round(x1 + threshold * (x2 - x1), 6), y2]


@st.composite
def _equal_iou_pattern(draw, key, person):
    """Two GT rows whose subject boxes overlap one detection equally (mirror images around it, in eighths so
    the float IoUs are exactly equal), and a second detection that is one of the two GT pairs exactly: which
    GT the first detection takes decides whether the second one is a hit."""
    a, b = sorted(draw(st.lists(st.integers(1, 7), min_size=2, max_size=2, unique=True)))
    d = draw(st.integers(1, min(a, 8 - b)))
    obj, label = draw(person), draw(st.integers(1, 3))
    left, right = [(a - d) / 8, 0.0, b / 8, 1.0], [a / 8, 0.0, (b + d) / 8, 1.0]
    gt = [(key, right, obj, label), (key, left, obj, label)]
    confidence = st.sampled_from([0.5, 0.9])
    pred = [(key, [a / 8, 0.0, b / 8, 1.0], obj, label, draw(confidence)),
            (key, draw(st.sampled_from([left, right])), obj, label, draw(confidence))]
    return gt, pred


@st.composite
def _case(draw, threshold):
    """GT and predictions with ties (scores from a few values, duplicated people), several labels on one
    ordered pair, and detections whose IoU with a GT box is the threshold exactly in real numbers."""
    keys = [f"v,{i:04d}" for i in range(draw(st.integers(1, 4)))]
    people = draw(st.lists(_box(), min_size=2, max_size=5))
    person = st.sampled_from(people)
    row = st.tuples(st.sampled_from(keys), person, person, st.integers(1, 4))
    gt = draw(st.lists(row, max_size=10))
    for key, subject, obj, label in draw(st.lists(st.sampled_from(gt), max_size=3)) if gt else []:
        gt.append((key, subject, obj, draw(st.integers(1, 4))))  # the same ordered pair, another label
    jitter = st.sampled_from([0.0, 0.0, 0.02, 0.1, "threshold"])
    pred = []
    for key, subject, obj, label in draw(st.lists(row, max_size=25)):
        shift = draw(jitter)
        confidence = draw(st.sampled_from([0.1, 0.5, 0.5, 0.9, 0.5 + 1e-9]))  # 0.5 + 1e-9 ties 0.5 in float32
        if shift == "threshold":
            pred.append((key, _at_threshold(subject, threshold), obj, label, confidence))
        else:
            pred.append((key, [v + shift for v in subject], obj, label, confidence))
    if draw(st.booleans()):
        extra_gt, extra_pred = draw(_equal_iou_pattern(draw(st.sampled_from(keys)), person))
        gt += extra_gt
        pred += extra_pred
    return gt, pred


def _as_reference(gt, pred):
    gt_cols = tuple(list(c) for c in zip(*gt)) if gt else ([], [], [], [])
    pred_cols = tuple(list(c) for c in zip(*pred)) if pred else ([], [], [], [], [])
    return gt_cols, pred_cols


def _agree(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_agree(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), official=st.booleans(), threshold=st.sampled_from([0.3, 0.5, 0.9]))
def test_vectorised_metric_matches_the_loop_reference(data, official, threshold):
    gt, pred = data.draw(_case(threshold))
    ks = (1, 2, 5)
    fast = score(gt, pred, official=official, iou_threshold=threshold, class_whitelist=[1, 2, 3], ks=ks)
    fast.pop("settings")
    fast.pop("warnings")
    slow = loop_hhi_metrics(*_as_reference(gt, pred), official=official, iou_threshold=threshold,
                            whitelist=[1, 2, 3], ks=ks)
    assert _agree(fast, slow), (fast, slow)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_box(), _box()), min_size=1, max_size=8))
def test_paired_iou_is_the_diagonal_of_iou_matrix(pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    assert np.allclose(paired_iou(a, b), np.diag(iou_matrix(a, b, plus_one=False)))


@pytest.mark.parametrize("seed", range(4))
def test_integer_keyframe_keys_of_read_tables_score_like_string_keys(tmp_path, seed):
    # score_tables keys keyframes by integers from the readers' video codes; the numbering must follow the GT
    # file's first appearances exactly as string keys do (the official ranking of tied scores depends on it)
    from sportshhi import formats

    rng = np.random.default_rng(seed)
    videos = np.array(["v_b_c002", "v_a_c001", "v_c_c003"], dtype=object)
    people = np.array([A, B, C, D])
    n_gt, n_pred = 30, 200
    frame_ids = rng.integers(0, 6, n_gt) * 5 + rng.integers(0, 5, n_gt)
    gt = formats.Annotations(videos[rng.integers(0, 3, n_gt)], frame_ids, people[rng.integers(0, 4, n_gt)],
                             people[rng.integers(0, 4, n_gt)], rng.choice([2, 3, 5], n_gt),
                             np.zeros(n_gt, np.int64), np.ones(n_gt, np.int64))
    pred_videos = np.r_[videos, ["v_x_c009"]][rng.integers(0, 4, n_pred)]
    subjects = people[rng.integers(0, 4, n_pred)] + 0.01 * rng.random((n_pred, 4))
    objects = people[rng.integers(0, 4, n_pred)]
    pred_rows = [(v, int(t), tuple(s), tuple(o), int(c), float(p)) for v, t, s, o, c, p in zip(
        pred_videos, rng.integers(0, 7, n_pred), subjects, objects, rng.choice([2, 3, 5], n_pred),
        rng.choice([0.25, 0.5, 0.75], n_pred))]
    formats.write_annotation_csv(tmp_path / "gt.csv", gt)
    formats.write_prediction_csv(tmp_path / "pred.csv", pred_rows)
    annotations = formats.read_annotation_csv(tmp_path / "gt.csv")
    predictions = formats.read_prediction_csv(tmp_path / "pred.csv")
    assert annotations.video_coding is not None and predictions.video_coding is not None
    for official in (False, True):
        by_codes = score_tables(annotations, predictions, official=official, iou_threshold=0.5)
        by_strings = hhi_metrics(annotations.keys, annotations.subject_boxes, annotations.object_boxes,
                                 annotations.labels, predictions.keys, predictions.subject_boxes,
                                 predictions.object_boxes, predictions.labels, predictions.scores,
                                 official=official, iou_threshold=0.5)
        by_codes.pop("warnings")  # only the tables know videos: they count predictions for unknown ones
        by_strings.pop("warnings")
        assert by_codes == by_strings
