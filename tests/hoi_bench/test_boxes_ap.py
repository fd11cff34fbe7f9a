"""IoU conventions, the xyxy box check and AP interpolations of the library against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from hoi_bench.ap import ELEVEN_POINTS, ap_all_point, precision_recall
from hoi_bench.boxes import iou_matrix
from hoi_bench.errors import PredictionError


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


def test_xyxy_check_names_the_first_reversed_or_non_finite_box():
    from sportshhi.evaluation import _boxes

    good = [[0, 0, 1, 1], [2, 2, 2, 2]]  # a zero-area box is still xyxy
    np.testing.assert_array_equal(_boxes(good, "boxes", 2), good)
    for bad, row in (([[0, 0, 1, 1], [2, 0, 1, 1], [0, 3, 1, 1]], 1), ([[0, 0, 1, 1], [0, 3, 1, 1]], 1),
                     ([[0, 0, np.nan, 1]], 0)):
        with pytest.raises(PredictionError, match=f"boxes: row {row} is not an xyxy box"):
            _boxes(bad, "boxes", len(bad))


def _eleven_point_ap(is_tp: list[int], num_gt: int) -> float:
    """hoi_sg's 11-point AP (QPIC's ``ELEVEN_POINTS``) of detections listed best first."""
    from hoi_sg_dataset.evaluation import _eleven_point_ap as eleven_point_ap

    scores = np.linspace(1.0, 0.5, len(is_tp))
    return eleven_point_ap(np.array(is_tp, dtype=bool), scores, num_gt, ELEVEN_POINTS, stable=True)[0]


def test_eleven_point_ap_perfect_and_empty():
    assert _eleven_point_ap([1, 1], num_gt=2) == pytest.approx(1.0)
    assert _eleven_point_ap([], num_gt=2) == 0.0
    assert _eleven_point_ap([0, 0], num_gt=2) == 0.0


def test_all_point_ap_by_hand():
    # TP, FP, TP with 2 GT: recall .5 at precision 1, recall 1 at precision 2/3 -> .5*1 + .5*2/3
    p, r = precision_recall(np.array([1, 0, 1]), num_gt=2)
    assert ap_all_point(p, r) == pytest.approx(0.5 + 0.5 * 2 / 3)


def test_eleven_point_ap_by_hand():
    # recall .25 at precision 1 and .5 at 2/3: t = 0, .1, .2 take 1; t = .3, .4, .5 take 2/3; t > .5 take 0
    assert _eleven_point_ap([1, 0, 1], num_gt=4) == pytest.approx((3 * 1.0 + 3 * 2 / 3) / 11)
    # the envelope: a later, higher precision (3/4 at recall .75) lifts t = .3 .. .7 above the 2/3 at .5
    assert _eleven_point_ap([1, 0, 1, 1], num_gt=4) == pytest.approx((3 * 1.0 + 5 * 3 / 4) / 11)
