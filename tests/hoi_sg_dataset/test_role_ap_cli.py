"""`hoi-bench evaluate vcoco_role_map` and `hoi-bench convert vcoco-detections`: the JSON contract (strict JSON,
``null`` for undefined values), one-line errors naming the file (exit 2), and the QPIC conversion rules."""

from __future__ import annotations

import json

import pytest

from hoi_bench import cli
from hoi_sg_dataset.role_ap import ACTION_ROLE_NAMES, ACTIONS
from tests.hoi_sg_dataset.role_ap_inputs import BALL, annotation, detection, vsrl_json, write_inputs

BALL_BOX = [20, 20, 29, 29]
SCENE = [
    annotation(11, 1, [0, 0, 10, 10]),
    annotation(21, 1, [20, 20, 10, 10], BALL),
    annotation(12, 1, [50, 50, 10, 10]),
]
PERSONS = [{"image_id": 1, "ann_id": 11, "labels": {"hold": [21], "look": [0]}}]
GOOD = [detection(1, [0, 0, 9, 9], {"hold": 0.9}, {"hold_obj": [*BALL_BOX, 0.9]})]


def strict_json(text: str):
    """json.loads that refuses the NaN / Infinity tokens Python's json would accept."""

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def arguments(paths: dict, vsrl=None) -> list[str]:
    return [
        "evaluate",
        "vcoco_role_map",
        "--vsrl",
        *(str(p) for p in (vsrl or [paths["vsrl.json"]])),
        "--instances",
        str(paths["instances.json"]),
        "--image-ids",
        str(paths["ids.txt"]),
        "--detections",
        str(paths["detections.json"]),
    ]


def fails(argv: list[str], capsys) -> str:
    """The CLI's error line for ``argv`` (exit code 2, one line, nothing on stdout)."""
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hoi-bench: error: "), captured.err
    return lines[0]


def test_output_is_strict_json_with_null_for_undefined_values(tmp_path, capsys):
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, GOOD)
    out = tmp_path / "out.json"
    assert cli.main([*arguments(paths), "--output", str(out), "--per-class"]) == 0
    printed = capsys.readouterr().out
    assert "mean_role_ap_scenario_1_excl_point  1.0000" in printed
    assert "ride_instr" in printed and "n/a" in printed
    result = strict_json(out.read_text())
    assert set(result) == {
        "role_ap_scenario_1",
        "role_ap_scenario_2",
        "agent_ap",
        "mean_role_ap_scenario_1",
        "mean_role_ap_scenario_2",
        "mean_role_ap_scenario_1_excl_point",
        "mean_role_ap_scenario_2_excl_point",
        "mean_agent_ap",
        "warnings",
    }
    assert result["warnings"] == []
    assert list(result["role_ap_scenario_2"]) == list(ACTION_ROLE_NAMES)
    assert list(result["agent_ap"]) == list(ACTIONS)
    # hold has a TP; look has a positive but no detection scored for it; ride has no positive
    assert result["role_ap_scenario_1"]["hold_obj"] == 1.0
    assert result["role_ap_scenario_1"]["look_obj"] is None and result["agent_ap"]["ride"] is None
    assert result["mean_agent_ap"] == pytest.approx(1 / 26, abs=1e-6)


def test_a_detection_without_a_key_is_refused_naming_file_record_and_key(tmp_path, capsys):
    broken = dict(GOOD[0])
    del broken["hold_obj"]
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, [GOOD[0], broken])
    line = fails(arguments(paths), capsys)
    assert str(paths["detections.json"]) in line and "record 1" in line and "'hold_obj'" in line


def test_a_detection_with_a_malformed_value_is_refused(tmp_path, capsys):
    broken = dict(GOOD[0], hold_obj=[20, 20, 29, 29])
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, [broken])
    line = fails(arguments(paths), capsys)
    assert str(paths["detections.json"]) in line and "record 0" in line and "hold_obj" in line


def test_unknown_action_role_names_are_refused(tmp_path, capsys):
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, GOOD)
    vsrl = vsrl_json(PERSONS)
    vsrl[6]["role_name"] = ["agent", "obj", "instr"]  # hit lists instr first
    paths["vsrl.json"].write_text(json.dumps(vsrl))
    line = fails(arguments(paths), capsys)
    assert str(paths["vsrl.json"]) in line and "unknown action-role names" in line and "'hit'" in line


def test_a_vsrl_image_missing_from_the_id_file_is_refused(tmp_path, capsys):
    persons = [*PERSONS, {"image_id": 2, "ann_id": 31, "labels": {}}]
    paths = write_inputs(tmp_path, persons, SCENE, {1: (100, 100)}, GOOD, ids=[1])
    line = fails(arguments(paths), capsys)
    assert str(paths["vsrl.json"]) in line and "image not in the id file" in line and "found 2" in line


def test_an_id_in_no_vsrl_file_is_refused(tmp_path, capsys):
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, GOOD, ids=[1, 5])
    line = fails(arguments(paths), capsys)
    assert str(paths["ids.txt"]) in line and "image id in no VSRL file" in line and "found 5" in line


def test_unsorted_ids_are_refused(tmp_path, capsys):
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100), 2: (100, 100)}, GOOD, ids=[2, 1])
    line = fails(arguments(paths), capsys)
    assert str(paths["ids.txt"]) in line and "line 2" in line and "out of order" in line


def test_actions_whose_rows_disagree_are_refused(tmp_path, capsys):
    persons = [*PERSONS, {"image_id": 1, "ann_id": 12, "labels": {}}]
    paths = write_inputs(tmp_path, persons, SCENE, {1: (100, 100)}, GOOD)
    vsrl = vsrl_json(persons)
    vsrl[5]["ann_id"] = vsrl[5]["ann_id"][::-1]  # look lists the persons in another order
    paths["vsrl.json"].write_text(json.dumps(vsrl))
    line = fails(arguments(paths), capsys)
    assert str(paths["vsrl.json"]) in line and "rows of look disagree with those of hold" in line


def test_vsrl_files_that_disagree_on_a_person_are_refused(tmp_path, capsys):
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, GOOD)
    other = tmp_path / "other_vsrl.json"
    other.write_text(json.dumps(vsrl_json([{"image_id": 1, "ann_id": 11, "labels": {"hold": [21]}}])))
    line = fails(arguments(paths, vsrl=[paths["vsrl.json"], other]), capsys)
    assert str(other) in line and "rows disagree with another VSRL file" in line and "'look'" in line


def test_a_role_object_that_is_not_a_kept_annotation_is_refused(tmp_path, capsys):
    # ball 21 has a 1-pixel-wide box: x2 = x + max(0, 1 - 1) = x, not > x1, so upstream drops it
    scene = [SCENE[0], annotation(21, 1, [20, 20, 1, 10], BALL)]
    paths = write_inputs(tmp_path, PERSONS, scene, {1: (100, 100)}, GOOD)
    line = fails(arguments(paths), capsys)
    assert str(paths["vsrl.json"]) in line and "role object is not a kept annotation" in line


def test_a_scored_detection_in_an_image_without_gt_person_is_refused(tmp_path, capsys):
    sizes = {1: (100, 100), 2: (100, 100)}
    persons = [*PERSONS, {"image_id": 2, "ann_id": 41, "labels": {}}]
    scene = [*SCENE, annotation(41, 2, [0, 0, 1, 1])]  # too small to keep: image 2 has no GT person left
    paths = write_inputs(tmp_path, persons, scene, sizes, [*GOOD, detection(2, [0, 0, 9, 9], {"hold": 0.5})])
    line = fails(arguments(paths), capsys)
    assert (
        str(paths["detections.json"]) in line and "detection 1" in line and "image 2 has no GT person" in line
    )


def qpic_files(tmp_path, hois):
    name = "COCO_val2014_000000000001.jpg"
    boxes = [
        {"bbox": [0.0, 0.0, 9.0, 9.0], "category_id": 1},
        {"bbox": [20.0, 20.0, 29.0, 29.0], "category_id": 37},
    ]
    gt = [
        {
            "annotations": boxes,
            "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 0}],
            "file_name": name,
        }
    ]
    pred = [{"file_name": name, "predictions": boxes, "hoi_prediction": hois}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    return ["--predictions", str(tmp_path / "pred.json"), "--references", str(tmp_path / "gt.json")]


def hoi(subject, obj, verb, score):
    return {"subject_id": subject, "object_id": obj, "category_id": verb, "score": score}


def test_convert_follows_the_qpic_rules(tmp_path, capsys):
    # verb ids: 0 hold_obj, 1 stand, 5 look_obj, 16 cut_instr, 17 cut_obj
    hois = [hoi(0, 1, 0, 0.9), hoi(0, 1, 16, 0.3), hoi(0, 1, 17, 0.6), hoi(0, 1, 1, 0.4), hoi(0, -1, 5, 0.2)]
    out = tmp_path / "dets.json"
    assert cli.main(["convert", "vcoco-detections", *qpic_files(tmp_path, hois), "--out", str(out)]) == 0
    assert "wrote 2 detections" in capsys.readouterr().out
    first, second = strict_json(out.read_text())
    # one detection per (subject, object) pair; image id from the file name
    assert first["image_id"] == second["image_id"] == 1 and first["person_box"] == [0.0, 0.0, 9.0, 9.0]
    assert first["hold_obj"] == [20.0, 20.0, 29.0, 29.0, 0.9] and first["hold_agent"] == 0.9
    assert first["cut_instr"][4] == 0.3 and first["cut_obj"][4] == 0.6 and first["cut_agent"] == 0.6  # max
    assert first["stand_agent"] == 0.4  # verbs without role write the agent score only
    assert first["look_obj"] == [None] * 5 and first["look_agent"] is None  # not predicted: not ranked
    assert first["hit_agent"] is None  # hit has no role score for this pair
    # object_id -1: QPIC's "missing" object, four NaN (null) coordinates
    assert second["look_obj"] == [None, None, None, None, 0.2] and second["look_agent"] == 0.2
    assert (
        set(first)
        == set(second)
        == {"image_id", "person_box", *(f"{a}_agent" for a in ACTIONS), *ACTION_ROLE_NAMES}
    )


def test_converted_detections_evaluate_end_to_end(tmp_path, capsys):
    # person 11 holds ball 21 ([20, 20, 29, 29] in both files) and looks at nothing annotated; the QPIC pair
    # scores hold 0.9 (TP) and look 0.5 with the ball as object: scenario 1 FP, scenario 2 TP.
    det_path = tmp_path / "dets.json"
    argv = [
        "convert",
        "vcoco-detections",
        *qpic_files(tmp_path, [hoi(0, 1, 0, 0.9), hoi(0, 1, 5, 0.5)]),
        "--out",
        str(det_path),
    ]
    assert cli.main(argv) == 0
    paths = write_inputs(tmp_path / "official", PERSONS, SCENE, {1: (100, 100)}, [])
    paths["detections.json"] = det_path
    out = tmp_path / "out.json"
    assert cli.main([*arguments(paths), "--output", str(out)]) == 0
    result = strict_json(out.read_text())
    assert result["role_ap_scenario_1"]["hold_obj"] == result["role_ap_scenario_2"]["hold_obj"] == 1.0
    assert result["role_ap_scenario_1"]["look_obj"] == 0.0 and result["role_ap_scenario_2"]["look_obj"] == 1.0


def test_convert_refuses_two_scores_for_one_verb_of_a_pair(tmp_path, capsys):
    argv = [
        "convert",
        "vcoco-detections",
        *qpic_files(tmp_path, [hoi(0, 1, 0, 0.9), hoi(0, 1, 0, 0.8)]),
        "--out",
        str(tmp_path / "dets.json"),
    ]
    line = fails(argv, capsys)
    assert "pred.json" in line and "hoi_prediction[1]" in line
    assert not (tmp_path / "dets.json").exists()
