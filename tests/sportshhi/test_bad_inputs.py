"""Bad SportsHHI inputs (issue 13): one-line error, exit 2, no traceback, and outputs left as they were."""

from __future__ import annotations

import pickle
import shutil

import numpy as np
import pytest

from hoi_bench import cli
from sportshhi import formats


def _main(*argv) -> int:
    return cli.main([str(a) for a in argv])


@pytest.fixture
def release(sample, tmp_path):
    """A private copy of the synthetic release that a test may break."""
    return shutil.copytree(sample.root, tmp_path / "release")


def _one_line_error(capsys, *fragments) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("hoi-bench: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], err  # progress logs may come before it
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    return errors[0]


def _latin1(path):
    """Rewrite ``path`` with a Latin-1 'é' in the first video id (invalid UTF-8), return the line number."""
    lines = path.read_bytes().splitlines()
    lines[0] = lines[0].replace(b"v_", b"v_caf\xe9_", 1)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return 1


def test_evaluate_hhi_on_a_non_utf8_csv(release, tmp_path, capsys):
    references = release / formats.annotation_file("validation")
    _latin1(references)
    out = tmp_path / "scores.json"
    out.write_text("keep me")
    code = _main("evaluate", "hhi", "--references", references, "--predictions", references,
                 "--action-list", release / formats.ACTION_LIST_FILE, "--output", out)
    assert code == 2
    _one_line_error(capsys, str(references), "line 1", "not UTF-8 text", "0xe9")
    assert out.read_text() == "keep me"


def test_stats_on_a_non_utf8_csv(release, capsys):
    train = release / formats.annotation_file("train")
    _latin1(train)
    assert _main("stats", "sportshhi", "--annotations", train,
                 "--action-list", release / formats.ACTION_LIST_FILE) == 2
    _one_line_error(capsys, str(train), "not UTF-8 text")


def test_stats_on_a_non_utf8_action_list(release, capsys):
    action_list = release / formats.ACTION_LIST_FILE
    action_list.write_bytes(action_list.read_bytes().replace(b"sample", b"\xff", 1))
    assert _main("stats", "sportshhi", "--annotations", release / formats.annotation_file("train"),
                 "--action-list", action_list) == 2
    _one_line_error(capsys, str(action_list), "not UTF-8 text", "0xff")


@pytest.mark.parametrize("breakage, fragments", [
    ("latin1", ("sports_train_v1.csv", "not UTF-8 text")),
    ("empty", ("sports_train_v1.csv", "no interactions", "train split would be empty")),
    ("nan score", ("sports_dense_proposals_train.pkl", "bad detector score", "nan")),
    ("score above 1", ("sports_dense_proposals_train.pkl", "bad detector score", "1.5")),
    ("infinite coordinate", ("sports_dense_proposals_train.pkl", "bad proposal box", "inf")),
])
def test_build_refuses_a_broken_release_and_writes_nothing(release, tmp_path, capsys, breakage, fragments):
    train = release / formats.annotation_file("train")
    proposals = release / formats.detector_proposal_file("train")
    if breakage == "latin1":
        _latin1(train)
    elif breakage == "empty":
        train.write_bytes(b"")
    else:
        data = formats.read_proposals(proposals)
        key = sorted(data)[0]
        array = data[key].copy()
        if breakage == "nan score":
            array[0, 4] = np.nan
        elif breakage == "score above 1":
            array[0, 4] = 1.5
        else:
            array[0, 2] = np.inf
        data[key] = array
        proposals.write_bytes(pickle.dumps(data))
    out = tmp_path / "hub"
    assert _main("build", "sportshhi", "--data-dir", release, "--out", out) == 2
    _one_line_error(capsys, *fragments)
    assert not out.exists()


def test_an_empty_annotation_csv_still_evaluates_and_counts(release, tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert _main("stats", "sportshhi", "--annotations", empty,
                 "--action-list", release / formats.ACTION_LIST_FILE) == 0
    assert "0 interactions on 0 keyframes" in capsys.readouterr().out
