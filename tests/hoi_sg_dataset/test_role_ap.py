"""V-COCO official role AP (``vcoco_role_map``): hand-checked cases through the file readers, and the vectorized
math against a one-detection-at-a-time loop reference on random corner cases.

Common scene unless said otherwise: image 1 is 100 x 100; person 11 has COCO bbox [0, 0, 10, 10], so its GT box
is [0, 0, 9, 9] (x2 = x + w - 1); ball 21 has bbox [20, 20, 10, 10] -> [20, 20, 29, 29]; person 12 has bbox
[50, 50, 10, 10] -> [50, 50, 59, 59]. Every IoU below uses the +1 convention: a box [0, 0, 9, 9] has 100 pixels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hoi_sg_dataset.role_ap import ACTION_ROLE_NAMES, ACTIONS, overlaps, vcoco_role_ap, voc_ap
from hoi_sg_dataset.vcoco_role_files import vcoco_role_map_files
from tests.hoi_sg_dataset.role_ap_inputs import (
    BALL,
    annotation,
    detection,
    random_case,
    reference_role_ap,
    write_inputs,
)

P11, P12, BALL_BOX = [0, 0, 9, 9], [50, 50, 59, 59], [20, 20, 29, 29]
SCENE = [
    annotation(11, 1, [0, 0, 10, 10]),
    annotation(21, 1, [20, 20, 10, 10], BALL),
    annotation(12, 1, [50, 50, 10, 10]),
]
SIZES = {1: (100, 100)}


def evaluate(tmp_path, persons, detections, annotations=SCENE, sizes=SIZES, ids=None) -> dict:
    paths = write_inputs(tmp_path, persons, annotations, sizes, detections, ids)
    return vcoco_role_map_files(
        [paths["vsrl.json"]], paths["instances.json"], paths["ids.txt"], paths["detections.json"]
    )


def hold_look(ann_id: int) -> dict:
    """A person who holds ball 21 and looks without an annotated object (role object id 0)."""
    return {"image_id": 1, "ann_id": ann_id, "labels": {"hold": [21], "look": [0]}}


def test_scenario_1_and_2_differ_only_where_the_gt_person_has_no_role_object(tmp_path):
    # person 11 looks at nothing annotated. d0 (0.8) predicts a look object box, d1 (0.7) four nulls.
    # scenario 1: d0 FP (a box where the GT has none), d1 TP -> rec [0, 1], prec [0, 1/2] -> AP 1 * 1/2 = 0.5
    # scenario 2: the box is ignored, d0 TP, d1 a duplicate FP -> rec [1, 1], prec [1, 1/2] -> AP 1.0
    # hold_obj: d0 hits ball 21 exactly -> AP 1.0 in both scenarios; look agent: d0 TP, d1 FP -> AP 1.0
    detections = [
        detection(
            1, P11, {"hold": 0.9, "look": 0.8}, {"hold_obj": [*BALL_BOX, 0.9], "look_obj": [*BALL_BOX, 0.8]}
        ),
        detection(1, P11, {"look": 0.7}, {"look_obj": [None] * 4 + [0.7]}),
    ]
    result = evaluate(tmp_path, [hold_look(11)], detections)
    assert result["role_ap_scenario_1"]["look_obj"] == pytest.approx(0.5, abs=1e-6)
    assert result["role_ap_scenario_2"]["look_obj"] == pytest.approx(1.0, abs=1e-6)
    assert result["role_ap_scenario_1"]["hold_obj"] == result["role_ap_scenario_2"]["hold_obj"] == 1.0
    # roles of actions without positives are undefined (upstream stops there) and left out of the means
    assert result["role_ap_scenario_1"]["ride_instr"] is None
    assert result["mean_role_ap_scenario_1"] == pytest.approx((1.0 + 0.5) / 2, abs=1e-6)
    assert result["mean_role_ap_scenario_2"] == pytest.approx(1.0, abs=1e-6)
    # agent AP: hold 1.0 and look 1.0, the other 24 undefined; upstream's nansum / 26
    assert result["agent_ap"]["look"] == result["agent_ap"]["hold"] == 1.0
    assert result["mean_agent_ap"] == pytest.approx(2 / 26, abs=1e-6)


def test_nan_and_zero_role_boxes(tmp_path):
    # persons 11 and 12 both look at nothing annotated and both hold ball 21.
    # look_obj, scenario 1: D0 (0.9) [0,0,0,0] on 11 counts as "no object" -> TP; D1 (0.8) [nan,0,nan,0] on 12
    #   is neither all 0 nor all NaN, so it is a box -> FP. npos 2: rec [.5, .5], prec [1, .5] -> AP 0.5.
    #   Scenario 2 ignores both boxes: TP, TP -> rec [.5, 1], prec [1, 1] -> AP 1.0.
    # hold_obj (the GT has a role box): D0 four NaNs -> role IoU NaN fails -> FP; D1 [0,0,0,0] vs [20,20,29,29]
    #   -> intersection width max(0 - 20 + 1, 0) = 0 -> FP; D2 (0.7) the ball on 11 -> TP.
    #   rec [0, 0, .5], prec [0, 0, 1/3] -> envelope 1/3 up to recall .5 -> AP .5 * 1/3 = 1/6, both scenarios.
    detections = [
        detection(1, P11, roles={"look_obj": [0, 0, 0, 0, 0.9], "hold_obj": [None] * 4 + [0.9]}),
        detection(1, P12, roles={"look_obj": [None, 0, None, 0, 0.8], "hold_obj": [0, 0, 0, 0, 0.8]}),
        detection(1, P11, roles={"hold_obj": [*BALL_BOX, 0.7]}),
    ]
    result = evaluate(tmp_path, [hold_look(11), hold_look(12)], detections)
    assert result["role_ap_scenario_1"]["look_obj"] == pytest.approx(0.5, abs=1e-6)
    assert result["role_ap_scenario_2"]["look_obj"] == pytest.approx(1.0, abs=1e-6)
    for scenario in (1, 2):
        assert result[f"role_ap_scenario_{scenario}"]["hold_obj"] == pytest.approx(1 / 6, abs=1e-6)


def test_unannotated_persons_and_crowd_regions_are_skipped_not_false_positives(tmp_path):
    # person 13 ([50, 0, 59, 9]) is in COCO but in no VSRL row; 14 ([0, 50, 9, 59]) is a crowd region of
    # persons, also in no row. Both are GT persons for matching, and ignored: F0 (0.95) and F1 (0.9) match them
    # and are skipped, F2 (0.5) on person 11 is a TP -> AP 1.0 (as FPs they would give rec [0, 0, 1],
    # prec [0, 0, 1/3] -> 1/3). npos = 1: ignored persons are no positives.
    scene = SCENE[:2] + [annotation(13, 1, [50, 0, 10, 10]), annotation(14, 1, [0, 50, 10, 10], iscrowd=1)]
    detections = [
        detection(1, [50, 0, 59, 9], {"hold": 0.95}, {"hold_obj": [*BALL_BOX, 0.95]}),
        detection(1, [0, 50, 9, 59], {"hold": 0.9}, {"hold_obj": [*BALL_BOX, 0.9]}),
        detection(1, P11, {"hold": 0.5}, {"hold_obj": [*BALL_BOX, 0.5]}),
    ]
    result = evaluate(tmp_path, [hold_look(11)], detections, annotations=scene)
    assert result["role_ap_scenario_1"]["hold_obj"] == 1.0
    assert result["agent_ap"]["hold"] == 1.0


def test_an_ignore_flag_removes_the_annotation_itself(tmp_path):
    # person 13 has person 11's box and "ignore": 1, so it is no GT person at all and G0 matches 11 -> AP 1.0.
    # Kept, 13 would come first among the equal IoUs, be an unannotated (ignored) person, and G0 would be
    # skipped: no counted detection, hold_obj undefined.
    scene = [annotation(13, 1, [0, 0, 10, 10], ignore=1), *SCENE]
    result = evaluate(
        tmp_path,
        [hold_look(11)],
        [detection(1, P11, roles={"hold_obj": [*BALL_BOX, 0.5]})],
        annotations=scene,
    )
    assert result["role_ap_scenario_1"]["hold_obj"] == 1.0


def test_duplicates_after_a_true_positive_are_false_positives(tmp_path):
    # persons 11 and 12 hold ball 21. G0 (0.9) on 11 TP, G1 (0.8) on 11 again -> FP (11 covered), G2 (0.7) on
    # 12 TP. rec [.5, .5, 1], prec [1, .5, 2/3] -> AP .5 * 1 + .5 * 2/3 = 0.8333...
    detections = [
        detection(1, box, roles={"hold_obj": [*BALL_BOX, s]})
        for box, s in ((P11, 0.9), (P11, 0.8), (P12, 0.7))
    ]
    result = evaluate(tmp_path, [hold_look(11), hold_look(12)], detections)
    assert result["role_ap_scenario_1"]["hold_obj"] == pytest.approx(0.5 + 0.5 * 2 / 3, abs=1e-6)


def test_a_wrong_role_false_positive_does_not_cover_the_person(tmp_path):
    # W (0.95) on 11 with a box far from the ball -> FP, 11 stays uncovered; G0 (0.9) on 11 -> TP; G1 (0.8) on 11
    # -> FP; G2 (0.7) on 12 -> TP. rec [0, .5, .5, 1], prec [0, .5, 1/3, .5]; envelope .5 everywhere ->
    # AP .5 * .5 + .5 * .5 = 0.5
    detections = [detection(1, P11, roles={"hold_obj": [60, 60, 69, 69, 0.95]})]
    detections += [
        detection(1, box, roles={"hold_obj": [*BALL_BOX, s]})
        for box, s in ((P11, 0.9), (P11, 0.8), (P12, 0.7))
    ]
    result = evaluate(tmp_path, [hold_look(11), hold_look(12)], detections)
    assert result["role_ap_scenario_1"]["hold_obj"] == pytest.approx(0.5, abs=1e-6)


@pytest.mark.parametrize(
    ("person_box", "role_box", "expected"),
    [
        # [0,0,9,4] vs [0,0,9,9]: 10 x 5 = 50 pixels shared, union 100 + 50 - 50 = 100 -> IoU 0.5 -> match
        # (without the +1 it would be 36 / 81 = 0.44 and fail)
        (P11, BALL_BOX, 1.0),
        ([0, 0, 9, 4], BALL_BOX, 1.0),
        ([0, 0, 9, 3], BALL_BOX, 0.0),  # 40 / 100 = 0.4
        (P11, [20, 20, 29, 24], 1.0),  # the role box at exactly 0.5 too
        (P11, [20, 20, 29, 23], 0.0),
    ],
)
def test_iou_exactly_one_half_matches_with_the_plus_one_convention(tmp_path, person_box, role_box, expected):
    result = evaluate(
        tmp_path, [hold_look(11)], [detection(1, person_box, {"hold": 0.9}, {"hold_obj": [*role_box, 0.9]})]
    )
    assert result["role_ap_scenario_1"]["hold_obj"] == expected
    assert result["agent_ap"]["hold"] == (0.0 if person_box == [0, 0, 9, 3] else 1.0)


def test_a_detection_for_an_image_outside_the_split_is_ignored_even_without_keys(tmp_path):
    # image 2 is not in the id file: its entry is never read past image_id (upstream never looks at it).
    inside = detection(1, P11, {"hold": 0.5}, {"hold_obj": [*BALL_BOX, 0.5]})
    outside = {"image_id": 2, "person_box": P11, "hold_obj": [60, 60, 69, 69, 0.99]}
    alone = evaluate(tmp_path / "a", [hold_look(11)], [inside])
    with_outside = evaluate(tmp_path / "b", [hold_look(11)], [outside, inside])
    assert with_outside.pop("warnings")[0].endswith("1 detections are for images outside the evaluated split "
                                                    "(first: record 0, image_id 2); ignored, as vsrl_eval.py ignores them")
    assert alone.pop("warnings") == [] and with_outside == alone
    assert alone["role_ap_scenario_1"]["hold_obj"] == 1.0


def test_several_vsrl_files_and_an_id_subset_evaluate_v_coco_sg(tmp_path):
    # V-COCO-SG: test images come from two VSRL files; the id file selects images 1 and 3. Image 2's GT and
    # its (wrong, top-scored) detection are not evaluated: hold_obj gets TP (0.8, image 1), TP (0.7, image 3)
    # -> AP 1.0 with npos 2 (counting image 2 would give npos 3 and an FP first).
    scene = [annotation(10 * i + 1, i, [0, 0, 10, 10]) for i in (1, 2, 3)]
    scene += [annotation(10 * i + 2, i, [20, 20, 10, 10], BALL) for i in (1, 2, 3)]
    sizes = {i: (100, 100) for i in (1, 2, 3)}
    persons = [{"image_id": i, "ann_id": 10 * i + 1, "labels": {"hold": [10 * i + 2]}} for i in (1, 2, 3)]
    detections = [detection(2, P11, roles={"hold_obj": [60, 60, 69, 69, 0.9]})]
    detections += [detection(i, P11, roles={"hold_obj": [*BALL_BOX, s]}) for i, s in ((1, 0.8), (3, 0.7))]
    first = write_inputs(tmp_path / "trainval", persons[:2], scene, sizes, detections, ids=[1, 3])
    second = write_inputs(tmp_path / "test", persons[2:], scene, sizes, detections, ids=[1, 3])
    result = vcoco_role_map_files(
        [first["vsrl.json"], second["vsrl.json"]],
        first["instances.json"],
        first["ids.txt"],
        first["detections.json"],
    )
    assert result["role_ap_scenario_1"]["hold_obj"] == 1.0


def test_output_has_the_contract_keys_in_upstream_order(tmp_path):
    result = evaluate(
        tmp_path, [hold_look(11)], [detection(1, P11, {"hold": 0.5}, {"hold_obj": [*BALL_BOX, 0.5]})]
    )
    assert list(result) == [
        "role_ap_scenario_1",
        "role_ap_scenario_2",
        "agent_ap",
        "mean_role_ap_scenario_1",
        "mean_role_ap_scenario_2",
        "mean_role_ap_scenario_1_excl_point",
        "mean_role_ap_scenario_2_excl_point",
        "mean_agent_ap",
        "warnings",
    ]
    assert list(result["role_ap_scenario_1"]) == list(ACTION_ROLE_NAMES) and len(ACTION_ROLE_NAMES) == 25
    assert list(result["agent_ap"]) == list(ACTIONS) and len(ACTIONS) == 26
    assert ACTION_ROLE_NAMES[4:6] == ("hit_instr", "hit_obj") and ACTION_ROLE_NAMES[6:8] == (
        "eat_obj",
        "eat_instr",
    )


def test_voc_ap_and_overlaps_follow_upstream_formulas():
    # all-point AP: rec [.5, .5, 1], prec [1, .5, 2/3] -> .5 * 1 + .5 * 2/3
    assert voc_ap(np.array([0.5, 0.5, 1.0], np.float32), np.array([1.0, 0.5, 2 / 3])) == pytest.approx(5 / 6)
    gt = np.array([[0, 0, 9, 9]], np.float32)
    assert overlaps(gt, np.array([[0, 0, 9, 4]], np.float32))[0] == np.float32(0.5)
    assert overlaps(gt, np.array([[np.nan, 0, 9, 9]], np.float32)).dtype == np.float32


@pytest.mark.parametrize(("seed", "per_person"), [(s, 4) for s in range(12)] + [(s, 60) for s in range(3)])
def test_vectorized_math_equals_the_loop_reference(seed, per_person):
    gt, det = random_case(np.random.default_rng(seed), per_person)
    result = vcoco_role_ap(gt, det)
    expected = reference_role_ap(gt, det)
    np.testing.assert_array_equal(result.agent_ap, np.array(expected["agent"], np.float32))
    for scenario in (1, 2):
        np.testing.assert_array_equal(
            result.role_ap[scenario], np.array(expected[f"scenario_{scenario}"], np.float32)
        )


def test_24_role_mean_equals_icans_formula_when_all_25_roles_are_defined():
    for seed in range(50):
        result = vcoco_role_ap(*random_case(np.random.default_rng(seed), 60))
        if not np.isnan(result.role_ap[1]).any():
            break
    else:
        pytest.fail("no random case with all 25 roles defined")
    out = result.to_json()
    aps = out["role_ap_scenario_1"]
    icans = (out["mean_role_ap_scenario_1"] * 25 - aps["point_instr"]) / 24
    assert out["mean_role_ap_scenario_1_excl_point"] == pytest.approx(icans, abs=1e-6)
    assert out["mean_role_ap_scenario_1"] == pytest.approx(math.fsum(aps.values()) / 25, abs=1e-6)


def test_evaluate_module_gives_the_numbers_of_the_file_route(tmp_path):
    import evaluate

    from hoi_bench import metric_path
    from hoi_sg_dataset.vcoco_role_files import (
        ground_truth,
        read_detections,
        read_image_ids,
        read_instances,
        read_vsrl,
    )

    # the duplicate case above plus a look detection with a box where the GT has none (0.5 / 1.0 by scenario)
    detections = [
        detection(1, box, {"hold": s, "look": s}, {"hold_obj": [*BALL_BOX, s], "look_obj": [*BALL_BOX, s]})
        for box, s in ((P11, 0.9), (P11, 0.8), (P12, 0.7))
    ]
    paths = write_inputs(tmp_path, [hold_look(11), hold_look(12)], SCENE, SIZES, detections)
    expected = vcoco_role_map_files(
        [paths["vsrl.json"]], paths["instances.json"], paths["ids.txt"], paths["detections.json"]
    )
    assert expected["role_ap_scenario_1"]["hold_obj"] == pytest.approx(5 / 6, abs=1e-6)
    ids = read_image_ids(paths["ids.txt"])
    gt = ground_truth(read_vsrl([paths["vsrl.json"]]), read_instances(paths["instances.json"], ids), ids)
    dets = read_detections(paths["detections.json"], ids)
    references = [
        {
            "image_id": 1,
            "person_boxes": gt.person_boxes.tolist(),
            "actions": gt.actions.tolist(),
            "role_boxes": gt.role_boxes.tolist(),
        }
    ]
    predictions = [
        {
            "person_boxes": dets.person_boxes.tolist(),
            "agent_scores": dets.agent_scores.tolist(),
            "role_boxes": dets.role_boxes.tolist(),
            "role_scores": dets.role_scores.tolist(),
        }
    ]
    metric = evaluate.load(metric_path("vcoco_role_map"))
    assert expected.pop("warnings") == []  # the files' reading notes; the module takes arrays
    assert metric.compute(predictions=predictions, references=references) == expected
    assert metric.compute(predictions=[0], references=[0], ground_truth=gt, detections=dets) == expected
    with pytest.raises(ValueError, match="predictions = references = list"):
        metric.compute(predictions=[0, 1], references=[0, 1], ground_truth=gt, detections=dets)
