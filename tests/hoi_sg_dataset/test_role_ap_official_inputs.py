"""``vcoco_role_map`` on inputs vsrl_eval.py scores though they look wrong (issue 19): image ids that are floats or
strings, a COCO annotation id used twice; and numbers that its float32 cast would make infinite, which are refused
as ``hoi_map`` refuses them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoi_bench import cli
from hoi_bench.errors import FormatError
from hoi_bench.input_warnings import InputWarning
from hoi_sg_dataset.vcoco_role_files import vcoco_role_map_files
from tests.hoi_sg_dataset.role_ap_inputs import BALL, annotation, detection, write_inputs

BALL_BOX = [20, 20, 29, 29]
SCENE = [annotation(11, 1, [0, 0, 10, 10]), annotation(21, 1, [20, 20, 10, 10], BALL)]
PERSONS = [{"image_id": 1, "ann_id": 11, "labels": {"hold": [21]}}]


def hold(image_id, person_box=(0, 0, 9, 9), score=0.9, box=BALL_BOX) -> dict:
    return detection(image_id, list(person_box), {"hold": score}, {"hold_obj": [*box, score]})


def score(tmp_path, detections, scene=SCENE) -> dict:
    paths = write_inputs(tmp_path, PERSONS, scene, {1: (100, 100)}, detections)
    return vcoco_role_map_files([paths["vsrl.json"]], paths["instances.json"], paths["ids.txt"],
                                paths["detections.json"])


def test_an_integral_float_image_id_is_that_image(tmp_path):
    as_float = score(tmp_path / "f", [hold(1.0)])
    assert as_float["role_ap_scenario_1"]["hold_obj"] == 1.0 and as_float["warnings"] == []
    assert as_float == score(tmp_path / "i", [hold(1)])


def test_a_string_or_fractional_image_id_matches_no_image_and_is_counted(tmp_path):
    """The string entry scores higher than the true positive: counted as an FP it would halve the AP."""
    with pytest.warns(InputWarning, match="2 detections have an image_id that is not an integer"):
        result = score(tmp_path, [hold("1", score=0.95), hold(1), hold(1.5, score=0.97)])
    assert result["role_ap_scenario_1"]["hold_obj"] == 1.0
    assert len(result["warnings"]) == 1 and "record 0, found '1'" in result["warnings"][0]


def test_detections_outside_the_split_are_ignored_and_counted(tmp_path):
    with pytest.warns(InputWarning, match="1 detections are for images outside the evaluated split"):
        result = score(tmp_path, [hold(7, score=0.95), hold(1)])
    assert result["role_ap_scenario_1"]["hold_obj"] == 1.0 and len(result["warnings"]) == 1


@pytest.mark.parametrize("detection_of", [lambda: hold(1, score=1e39), lambda: hold(1, box=[20, 20, 1e300, 29]),
                                          lambda: hold(1, person_box=(0, 0, 9, -1e39))])
def test_a_number_float32_cannot_hold_is_refused_naming_record_and_field(tmp_path, capsys, detection_of):
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, [hold(1), detection_of()])
    with pytest.raises(FormatError, match=r"record 1.*float32"):
        vcoco_role_map_files([paths["vsrl.json"]], paths["instances.json"], paths["ids.txt"],
                             paths["detections.json"])
    argv = ["evaluate", "vcoco_role_map", "--vsrl", str(paths["vsrl.json"]), "--instances",
            str(paths["instances.json"]), "--image-ids", str(paths["ids.txt"]), "--detections",
            str(paths["detections.json"])]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "record 1" in err and "RuntimeWarning" not in err


def test_a_repeated_annotation_id_is_the_last_annotation_every_time_as_pycocotools(tmp_path):
    """vsrl_eval.py reads COCO through pycocotools: ``anns[id]`` keeps the last annotation with an id, while the
    image lists the id twice. So person 11 counts twice (2 positives: one TP is AP 0.5), both times with the
    box of the second annotation."""
    moved = annotation(11, 1, [30, 60, 10, 10])  # clean box [30, 60, 39, 69]
    scene = [*SCENE, moved]
    with pytest.warns(InputWarning, match=r"1 annotations repeat an id used before \(first: id 11 at records 0 and 2\)"):
        at_last = score(tmp_path / "last", [hold(1, person_box=(30, 60, 39, 69))], scene)
    assert at_last["role_ap_scenario_1"]["hold_obj"] == 0.5 and len(at_last["warnings"]) == 1
    with pytest.warns(InputWarning):
        at_first = score(tmp_path / "first", [hold(1)], scene)
    assert at_first["role_ap_scenario_1"]["hold_obj"] == 0.0


def test_cli_prints_one_warning_line_per_kind(tmp_path, capsys):
    paths = write_inputs(tmp_path, PERSONS, SCENE, {1: (100, 100)}, [hold("1"), hold(1)])
    out = tmp_path / "out.json"
    argv = ["evaluate", "vcoco_role_map", "--vsrl", str(paths["vsrl.json"]), "--instances",
            str(paths["instances.json"]), "--image-ids", str(paths["ids.txt"]), "--detections",
            str(paths["detections.json"]), "--output", str(out)]
    assert cli.main(argv) == 0
    printed = capsys.readouterr()
    lines = [line for line in printed.out.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and "not an integer" in lines[0] and "InputWarning" not in printed.err
    assert json.loads(out.read_text())["warnings"] == [lines[0].removeprefix("warning: ")]


def test_convert_still_refuses_a_prediction_for_an_image_the_references_lack(tmp_path, capsys):
    """The converter is no metric: it refuses what it would otherwise drop (hoi_map / vcoco_map ignore and count)."""
    boxes = [{"bbox": [0.0, 0.0, 9.0, 9.0], "category_id": 1}, {"bbox": [20.0, 20.0, 29.0, 29.0], "category_id": 37}]
    gt = [{"annotations": boxes, "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 0}],
           "file_name": "COCO_val2014_000000000001.jpg"}]
    pred = [{"file_name": "COCO_val2014_000000000002.jpg", "predictions": boxes,
             "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": 0, "score": 0.9}]}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    out = tmp_path / "dets.json"
    argv = ["convert", "vcoco-detections", "--predictions", str(tmp_path / "pred.json"), "--references",
            str(tmp_path / "gt.json"), "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "image not in the references" in err and not out.exists()


def test_the_array_route_refuses_a_number_float32_cannot_hold_too():
    """The ``vcoco_role_map`` module's arrays: 1e39 as a score, 1e300 in a role box, no silent infinity."""
    from hoi_sg_dataset.role_ap import ACTION_ROLES, ACTIONS, detections_from_images

    agents = [None] * len(ACTIONS)
    role_boxes = [[[None] * 4] * len(ACTION_ROLES)]
    role_scores = [[None] * len(ACTION_ROLES)]
    ok = detections_from_images([[[0, 0, 9, 9]]], [[agents]], [role_boxes], [role_scores])
    assert ok.person_boxes.dtype == np.float32 and np.isnan(ok.agent_scores).all()
    with pytest.raises(FormatError, match=r"agent_scores of image 0 .*float32.*found 1e\+39"):
        detections_from_images([[[0, 0, 9, 9]]], [[[1e39, *agents[1:]]]], [role_boxes], [role_scores])
    far_box = [[[1e300, 0, 9, 9], *role_boxes[0][1:]]]
    with pytest.raises(FormatError, match=r"role_boxes of image 0 .*float32"):
        detections_from_images([[[0, 0, 9, 9]]], [[agents]], [far_box], [role_scores])
