"""An evaluation whose every number would be undefined is refused with the reason, not printed as a table of n/a.

Empty GT files (or predictions naming no evaluated image) used to give exit 0 and a table of ``n/a`` with nothing
saying why; Haystack annotations without images and a non-empty prediction file ended in an ``IndexError``
traceback. Each case is now one line, exit 2, naming the file and the reason, with no ``--output`` written.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_inputs import write_command_inputs
from tests.test_bad_inputs import one_line_error, replaced, run, snapshot


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return write_command_inputs(tmp_path_factory.mktemp("inputs"))


def value_of(argv: list[str], option: str) -> Path:
    return Path(argv[argv.index(option) + 1])


def empty_json(tmp: Path) -> Path:
    path = tmp / "empty.json"
    path.write_text("[]")
    return path


def empty_csv(tmp: Path) -> Path:
    path = tmp / "empty.csv"
    path.write_text("")
    return path


def haystack_without_images(commands, tmp: Path) -> Path:
    annotation = json.loads(value_of(commands["evaluate haystack"], "--annotations").read_text())
    path = tmp / "no_images.json"
    path.write_text(json.dumps(dict(annotation, data=[])))
    return path


def empty_npy(tmp: Path, width: int) -> Path:
    path = tmp / "empty.npy"
    np.save(path, np.zeros((0, width)))
    return path


CASES = {  # case: (command, {option: input maker}, file named, reason)
    "hoi_map, empty GT and predictions": ("evaluate hoi_map", {"--references": lambda c, t: empty_json(t),
                                                               "--predictions": lambda c, t: empty_json(t)},
                                          "--references", "nothing to score: the references hold no HOI"),
    "vcoco_map, empty GT and predictions": ("evaluate vcoco_map", {"--references": lambda c, t: empty_json(t),
                                                                   "--predictions": lambda c, t: empty_json(t)},
                                            "--references", "nothing to score: the references hold no HOI"),
    "hhi, empty GT": ("evaluate hhi", {"--references": lambda c, t: empty_csv(t)}, "--references",
                      "nothing to score: no GT interaction of an evaluated class (no rows"),
    "hhi, empty GT and predictions": ("evaluate hhi", {"--references": lambda c, t: empty_csv(t),
                                                       "--predictions": lambda c, t: empty_csv(t)},
                                      "--references", "nothing to score: no GT interaction"),
    "haystack, no images, no rows": ("evaluate haystack",
                                     {"--annotations": haystack_without_images,
                                      "--predictions": lambda c, t: empty_npy(t, 59)},
                                     "--annotations",
                                     "nothing to score: no predicate has 4 or more positive relations (0 images"),
    "haystack, no images, some rows": ("evaluate haystack", {"--annotations": haystack_without_images},
                                       "--predictions", "image ids match no annotated image"),  # was IndexError
    "bongard, empty predictions": ("evaluate bongard", {"--predictions": lambda c, t: empty_json(t)},
                                   "--predictions", "nothing to score: the file holds no prediction"),
    "vcoco_role_map, empty detections": ("evaluate vcoco_role_map", {"--detections": lambda c, t: empty_json(t)},
                                         "--detections", "holds no detection of the 1 evaluated images"),
}


@pytest.mark.parametrize("case", CASES)
def test_an_all_undefined_result_is_refused_with_the_reason(commands, case, tmp_path, capsys):
    command, changes, named, reason = CASES[case]
    argv = commands[command]
    for option, make in changes.items():
        argv = replaced(argv, option, make(commands, tmp_path))
    out = tmp_path / "result.json"
    before = snapshot(tmp_path)
    code, err = run([*argv, "--output", out], capsys)
    one_line_error(code, err, value_of(argv, named), reason)
    assert snapshot(tmp_path) == before and not out.exists()


def test_an_empty_prediction_file_against_real_gt_still_scores_zero(commands, tmp_path, capsys):
    """Not every empty input is refused: predictions missing for annotated GT are a defined score of 0."""
    out = tmp_path / "result.json"
    code, err = run([*replaced(commands["evaluate hoi_map"], "--predictions", empty_json(tmp_path)), "--output", out],
                    capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["mAP"] == 0.0
