"""Bad Bongard-HOI inputs (issue 13, issue 14): one-line error, exit 2, no traceback, outputs untouched."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from bongard_hoi.samples import ANNOTATION_DIR, IMAGE_DIR, write_sample
from hoi_bench.cli import main


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return write_sample(tmp_path_factory.mktemp("bongard") / "native")


@pytest.fixture
def native(pristine, tmp_path):
    """A private copy of the synthetic native layout that a test may break."""
    return shutil.copytree(pristine, tmp_path / "native", symlinks=True)


def _one_line_error(capsys, *fragments) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("hoi-bench: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], err  # progress logs may come before it
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    return errors[0]


def _point_first_image_to(native, im_path: str) -> str:
    """Rewrite the first image of the train file's episode 1 to ``im_path``; return the file name."""
    path = native / ANNOTATION_DIR / "bongard_hoi_train.json"
    episodes = json.loads(path.read_text())
    episodes[1][0][0]["im_path"] = im_path
    path.write_text(json.dumps(episodes))
    return str(path)


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink"])
def test_build_refuses_an_image_path_leaving_the_image_folder(native, tmp_path, capsys, kind):
    secret = tmp_path / "secret.txt"
    secret.write_text("not an image, and not yours to upload")
    if kind == "absolute":
        im_path = str(secret)
    elif kind == "dotdot":
        im_path = "./../../secret.txt"
    else:
        os.symlink(secret, native / IMAGE_DIR / "link.jpg")
        im_path = "./link.jpg"
    file = _point_first_image_to(native, im_path)
    out = tmp_path / "hub"
    assert main(["build", "bongard_hoi", "--data-dir", str(native), "--out", str(out)]) == 2
    _one_line_error(capsys, file, "record 1", "'im_path'", "path leaves the data folder")
    assert not out.exists()


def _hico_annotations(tmp_path):
    from hoi_sg_dataset.formats import BoxAnnotation, HoiAnnotation, ImageRecord, write_annotations

    path = tmp_path / "test_hico.json"
    records = [ImageRecord(f"HICO_test2015_{n:08d}.jpg",
                           [BoxAnnotation([10, 10, 50, 120], 1), BoxAnnotation([30, 60, 90, 110], 19)],
                           [HoiAnnotation(0, 1, 88 if n % 2 else 37)]) for n in range(1, 6)]
    write_annotations(path, records, "hico")
    return path


def test_episodes_that_would_be_none_say_why_and_write_nothing(tmp_path, capsys):
    annotations = _hico_annotations(tmp_path)
    out = tmp_path / "episodes"
    assert main(["episodes", "--annotations", str(annotations), "--out", str(out)]) == 2
    message = _one_line_error(capsys, "0 episodes, nothing written", "7 images showing it",
                              "--shots 6 plus one query per side")
    assert "the best," in message
    assert not out.exists()


def test_episodes_on_a_missing_hoi_sg_folder(tmp_path, capsys):
    out = tmp_path / "episodes"
    assert main(["episodes", "--hoi-sg", str(tmp_path / "nowhere"), "--config", "hico_split3",
                 "--out", str(out)]) == 2
    _one_line_error(capsys, "hoi_sg Hub folder missing", "nowhere")
    assert not out.exists()


def test_episodes_out_naming_an_existing_file_is_refused_and_the_file_kept(tmp_path, capsys):
    annotations = _hico_annotations(tmp_path)
    out = tmp_path / "notes.txt"
    out.write_text("my notes")
    assert main(["episodes", "--annotations", str(annotations), "--out", str(out)]) == 2
    _one_line_error(capsys, "--out", "notes.txt", "is a file, not a folder")
    assert out.read_text() == "my notes"
