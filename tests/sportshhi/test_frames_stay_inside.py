"""`build sportshhi` embeds only frames inside the release folder, as the other three builders do.

A ``video_id`` with ``../`` and a frame that is a symlink out of the folder used to be read and embedded into the
Hub folder (and so uploaded by a later push). Both are refused through ``hoi_bench.files.resolve_inside`` with one
line naming the CSV, the keyframe and the field, and nothing is written.
"""

from __future__ import annotations

import os
import shutil

import pytest

from hoi_bench import cli
from sportshhi import formats
from tests.test_bad_inputs import snapshot


@pytest.fixture
def release(sample, tmp_path):
    """A private copy of the synthetic release that a test may break."""
    return shutil.copytree(sample.root, tmp_path / "release")


def build(release, out, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["build", "sportshhi", "--data-dir", str(release), "--out", str(out)])
    return code, capsys.readouterr().err


def error_line(code: int, err: str) -> str:
    assert "Traceback" not in err and code == 2, err
    lines = [line for line in err.splitlines() if line.startswith("hoi-bench: error: ")]
    assert len(lines) == 1 and err.rstrip().splitlines()[-1] == lines[0], err
    return lines[0]


def test_a_video_id_leaving_the_release_is_refused(release, tmp_path, capsys):
    train = release / formats.annotation_file("train")
    video = formats.read_annotation_csv(train).video_ids[0]
    outside = tmp_path / "secret"
    shutil.copytree(release / "frames" / video, outside)  # real frames, so only the check can stop the build
    escaping = "../../secret"
    assert (release / "frames" / escaping).resolve() == outside.resolve()
    train.write_text(train.read_text().replace(f"{video},", f"{escaping},"))
    before = snapshot(tmp_path)
    out = tmp_path / "hub"
    line = error_line(*build(release, out, capsys))
    assert str(train) in line and "field 'video_id'" in line and "leaves the data folder" in line
    assert escaping in line
    assert not out.exists() and snapshot(tmp_path) == before


def test_a_frame_linked_out_of_the_release_is_refused(release, tmp_path, capsys):
    validation = formats.read_annotation_csv(release / formats.annotation_file("validation"))
    video, keyframe = validation.video_ids[0], int(validation.keyframes[0])
    frame = release / formats.frame_file(video, keyframe * formats.FRAMES_PER_KEYFRAME)
    outside = tmp_path / "elsewhere.jpg"
    shutil.copyfile(frame, outside)
    frame.unlink()
    os.symlink(outside, frame)
    out = tmp_path / "hub"
    line = error_line(*build(release, out, capsys))
    assert formats.annotation_file("validation") in line and formats.keyframe_key(video, keyframe) in line
    assert "leaves the data folder" in line and frame.name in line
    assert not out.exists()


def test_a_symlink_inside_the_release_still_builds(release, tmp_path):
    """Only links that leave the folder are refused: a frame linked to another frame of the release is read."""
    from sportshhi.builder import build_sportshhi_folder

    validation = formats.read_annotation_csv(release / formats.annotation_file("validation"))
    video, keyframe = validation.video_ids[0], int(validation.keyframes[0])
    frame = release / formats.frame_file(video, keyframe * formats.FRAMES_PER_KEYFRAME)
    copy = release / "frames" / "kept.jpg"
    shutil.move(frame, copy)
    os.symlink(copy, frame)
    import datasets

    hub = build_sportshhi_folder(release, tmp_path / "hub", clip_len=0)
    rows = datasets.load_dataset(str(hub), "hhi", split="validation", cache_dir=str(tmp_path / "cache"))
    row = rows.cast_column("image", datasets.Image(decode=False))[0]
    assert row["keyframe_key"] == formats.keyframe_key(video, keyframe)
    assert row["image"]["path"] == frame.name and row["image"]["bytes"] == copy.read_bytes()


@pytest.mark.parametrize(("setting", "value"), [("clip_len", -3), ("frame_interval", 0)])
def test_the_library_build_refuses_a_context_clip_that_cannot_be(sample, tmp_path, setting, value):
    """The CLI refuses these while parsing; the Python entry point used to build --clip-len -3 as 0."""
    from hoi_bench.errors import FormatError
    from sportshhi.builder import build_sportshhi_folder

    with pytest.raises(FormatError, match=f"field '{setting}'.*expected an integer >= {int(setting != 'clip_len')}"):
        build_sportshhi_folder(sample.root, tmp_path / "hub", **{setting: value})
    assert not (tmp_path / "hub").exists()
