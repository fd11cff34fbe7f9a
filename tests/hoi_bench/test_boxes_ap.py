"""IoU conventions and AP interpolations (library code and the tests' reference helpers) against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from hoi_bench.ap import ap_all_point, precision_recall
from hoi_bench.boxes import iou_matrix
from tests.hoi_bench.reference_math import ap_11_point, check_xyxy


def test_iou_identical_and_disjoint_boxes():
    a = np.array([[0, 0, 4, 4], [10, 10, 12, 12]])
    assert iou_matrix(a, a).diagonal().tolist() == [1.0, 1.0]
    assert iou_matrix(a, a)[0, 1] == 0.0


def test_iou_plus_one_convention_by_hand():
    # [0,9]x[0,9] is 10x10 px; [5,14]x[0,9] overlaps 5x10 px -> 50 / (100 + 100 - 50)
    assert iou_matrix([[0, 0, 9, 9]], [[5, 0, 14, 9]], plus_one=True)[0, 0] == pytest.approx(50 / 150)


def test_iou_strict_rule_drops_single_pixel_touch():
    assert iou_matrix([[0, 0, 5, 5]], [[5, 0, 9, 5]], plus_one=True)[0, 0] == 0.0
    assert iou_matrix([[0, 0, 5, 5]], [[5, 0, 9, 5]], plus_one=True, strict=False)[0, 0] > 0.0


def test_iou_of_empty_sets_has_right_shape():
    assert iou_matrix(np.zeros((0, 4)), np.zeros((3, 4))).shape == (0, 3)


def test_check_xyxy_flags_reversed_boxes():
    assert check_xyxy([[0, 0, 1, 1], [2, 0, 1, 1], [0, 3, 1, 1]]).tolist() == [1, 2]


def test_eleven_point_ap_perfect_and_empty():
    p, r = precision_recall(np.array([1, 1]), num_gt=2)
    assert ap_11_point(p, r) == pytest.approx(1.0)
    assert ap_11_point(np.array([]), np.array([])) == 0.0


def test_all_point_ap_by_hand():
    # TP, FP, TP with 2 GT: recall .5 at precision 1, recall 1 at precision 2/3 -> .5*1 + .5*2/3
    p, r = precision_recall(np.array([1, 0, 1]), num_gt=2)
    assert ap_all_point(p, r) == pytest.approx(0.5 + 0.5 * 2 / 3)


def test_eleven_point_ap_by_hand():
    # recall .25 at precision 1 and .5 at 2/3: t = 0, .1, .2 take 1; t = .3, .4, .5 take 2/3; t > .5 take 0
    p, r = precision_recall(np.array([1, 0, 1]), num_gt=4)
    assert ap_11_point(p, r) == pytest.approx((3 * 1.0 + 3 * 2 / 3) / 11)
