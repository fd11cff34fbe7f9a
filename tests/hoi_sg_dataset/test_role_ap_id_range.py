"""`evaluate vcoco_role_map` with an id beyond 64 bits is one line naming the file, not an ``OverflowError``.

COCO ids are far below 2**63; an id of 2**70 in the VSRL file, the image-id file or the instances file used to
end in a traceback when the ids became int64 arrays.
"""

from __future__ import annotations

import json

import pytest

from tests.hoi_sg_dataset import role_ap_inputs
from tests.test_bad_inputs import one_line_error, run, snapshot

HUGE = 2**70


def inputs(tmp_path, *, vsrl_image=1, vsrl_ann=11, ids=None, ann_id=11, role_object=21):
    persons = [{"image_id": vsrl_image, "ann_id": vsrl_ann, "labels": {"hold": [role_object]}}]
    scene = [role_ap_inputs.annotation(ann_id, 1, [0, 0, 10, 10]),
             role_ap_inputs.annotation(21, 1, [20, 20, 10, 10], role_ap_inputs.BALL)]
    detections = [role_ap_inputs.detection(1, [0, 0, 9, 9], {"hold": 0.9}, {"hold_obj": [20, 20, 29, 29, 0.9]})]
    paths = role_ap_inputs.write_inputs(tmp_path / "in", persons, scene, {1: (100, 100)}, detections, ids)
    return paths, ["evaluate", "vcoco_role_map", "--vsrl", paths["vsrl.json"], "--instances",
                   paths["instances.json"], "--image-ids", paths["ids.txt"], "--detections",
                   paths["detections.json"], "--output", tmp_path / "out.json"]


CASES = {
    "VSRL image_id": (dict(vsrl_image=HUGE), "vsrl.json", "image_id[0]"),
    "VSRL ann_id": (dict(vsrl_ann=HUGE), "vsrl.json", "ann_id[0]"),
    "VSRL role object": (dict(role_object=HUGE), "vsrl.json", "role_object_id["),
    "id file": (dict(ids=[1, HUGE]), "ids.txt", "line 2"),
    "instances annotation id": (dict(ann_id=HUGE), "instances.json", "annotations"),
}


@pytest.mark.parametrize("case", CASES)
def test_an_id_beyond_64_bits_is_one_line(case, tmp_path, capsys):
    changes, file, where = CASES[case]
    paths, argv = inputs(tmp_path, **changes)
    before = snapshot(tmp_path)
    code, err = run(argv, capsys)
    line = one_line_error(code, err, paths[file], where)
    assert str(HUGE) in line
    assert snapshot(tmp_path) == before


def test_the_largest_64_bit_id_is_still_an_id(tmp_path, capsys):
    """The limit is the int64 range, not smaller: 2**63 - 1 reads (and then fails the split check by name)."""
    paths, argv = inputs(tmp_path, ids=[1, 2**63 - 1])
    code, err = run(argv, capsys)
    assert "image id in no VSRL file" in one_line_error(code, err, paths["ids.txt"], str(2**63 - 1))
    paths, argv = inputs(tmp_path / "ok")
    assert run(argv, capsys)[0] == 0
    assert "role_ap_scenario_1" in json.loads((tmp_path / "ok" / "out.json").read_text())
