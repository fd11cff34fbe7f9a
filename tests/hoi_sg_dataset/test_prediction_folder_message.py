"""`evaluate hoi_map --predictions FOLDER` says what a prediction folder must hold, not only that MATLAB reads it.

A folder of JSON prediction files used to be taken for the MATLAB tool's layout and refused with a message about
MATLAB detections and --protocol ho-rcnn; now the line says which files a folder must hold, and that a JSON or
``.npz`` prediction file is given as the file itself.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_inputs import HICO_GT, HICO_PRED
from tests.test_bad_inputs import one_line_error, run, snapshot


@pytest.mark.parametrize("protocol", ["qpic", "ho-rcnn"])
def test_a_folder_of_json_predictions_says_what_a_folder_must_hold(tmp_path, protocol, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(HICO_GT))
    folder = tmp_path / "predictions"
    folder.mkdir()
    (folder / "epoch_1.json").write_text(json.dumps(HICO_PRED))
    before = snapshot(tmp_path)
    code, err = run(["evaluate", "hoi_map", "--references", gt, "--predictions", folder, "--protocol", protocol],
                    capsys)
    line = one_line_error(code, err, folder, "detections.mat", "detections_01.mat", "epoch_1.json")
    assert "must hold" in line and f"give the file itself (e.g. {folder / 'epoch_1.json'})" in line
    assert snapshot(tmp_path) == before


def test_an_empty_folder_is_named_as_empty(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(HICO_GT))
    (tmp_path / "empty").mkdir()
    code, err = run(["evaluate", "hoi_map", "--references", gt, "--predictions", tmp_path / "empty"], capsys)
    assert "an empty folder" in one_line_error(code, err, tmp_path / "empty", "detections.mat")
