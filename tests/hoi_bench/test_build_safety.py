"""``hoi-bench build`` never loses or leaks what is already on disk, and bad images stop it with one clear line.

Each case runs the real command (``hoi_sg`` on its synthetic sample: annotation-only builds are fast, image
builds embed the sample's JPEGs) and asserts the exit code, a one-line ``hoi-bench: error:`` message naming the
path at fault, and that the files given are byte for byte, mode for mode, as they were.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import datasets
import pytest

from hoi_bench.cli import main
from hoi_bench.hub import folder_lock
from hoi_sg_dataset.samples import write_sample


@pytest.fixture(scope="module")
def native(tmp_path_factory) -> Path:
    """The hoi_sg synthetic sample (HICO-DET + V-COCO native layouts)."""
    return write_sample(tmp_path_factory.mktemp("hoi_sg") / "native").root


@pytest.fixture
def native_copy(native, tmp_path) -> Path:
    """A copy of the sample whose images a test may break."""
    return Path(shutil.copytree(native, tmp_path / "native"))


def _build(native: Path, out: Path, config: str, *extra: str, images: bool = False) -> list[str]:
    return ["build", "hoi_sg", "--data-dir", str(native), "--config", config, "--out", str(out),
            *([] if images else ["--no-images"]), *extra]


def _snapshot(root: Path) -> dict:
    """Every entry under ``root`` (hidden ones too): kind, mode and bytes."""
    if not root.exists():
        return {}
    if root.is_file():
        return {".": ("file", root.stat().st_mode, root.read_bytes())}
    entries = {".": ("dir", root.stat().st_mode, None)}
    for path in sorted(root.rglob("*")):
        kind = "dir" if path.is_dir() else "file"
        entries[str(path.relative_to(root))] = (kind, path.stat().st_mode, path.read_bytes() if kind == "file" else None)
    return entries


def _error_line(capsys) -> str:
    """The single ``hoi-bench: error:`` line of the command's stderr (no traceback, nothing else)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("hoi-bench: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _configs(folder: Path) -> list[str]:
    return datasets.get_dataset_config_names(str(folder))


# ------------------------------------------------------------------------------------------- what --out may be


def test_folder_hoi_bench_did_not_write_is_refused_and_untouched(native, tmp_path, capsys):
    out = tmp_path / "thesis"
    (out / ".git").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "chapter1.tex").write_text("\\section{Intro}\n")
    (out / "README.md").write_text("# My thesis\n")
    before = _snapshot(out)
    for extra in ((), ("--force",)):
        assert main(_build(native, out, "vcoco", *extra)) == 2
        line = _error_line(capsys)
        assert str(out) in line and "chapter1.tex" in line and "did not write" in line
        assert ("--force only replaces" in line) == bool(extra)
        assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis"]


def test_out_naming_a_file_is_refused_and_the_file_kept(native, tmp_path, capsys):
    out = tmp_path / "results.json"
    out.write_text('{"mAP": 0.31}')
    before = _snapshot(out)
    assert main(_build(native, out, "vcoco")) == 2
    line = _error_line(capsys)
    assert str(out) in line and "is a file" in line
    assert _snapshot(out) == before


@pytest.mark.slow
def test_hidden_entries_and_other_files_survive_rebuilds(native, tmp_path):
    out = tmp_path / "hub"
    (out / ".git").mkdir(parents=True)  # a freshly cloned, empty dataset repository: accepted
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / ".gitattributes").write_text("*.parquet filter=lfs\n")
    assert main(_build(native, out, "vcoco")) == 0
    (out / ".env").write_text("HF_TOKEN=do-not-lose-me\n")
    (out / "NOTES.md").write_text("built on the lab server\n")
    kept = {name: _snapshot(out / name) for name in (".git", ".gitattributes", ".env", "NOTES.md")}
    assert main(_build(native, out, "hico")) == 0
    assert main(_build(native, out, "hico", "--force")) == 0
    assert {name: _snapshot(out / name) for name in kept} == kept
    assert _configs(out) == ["hico"]


@pytest.mark.slow
def test_force_replaces_the_configs_of_a_hoi_bench_folder(native, tmp_path):
    out = tmp_path / "hub"
    assert main(_build(native, out, "vcoco")) == 0
    assert main(_build(native, out, "hico")) == 0
    assert _configs(out) == ["hico", "vcoco"]  # without --force configs are added
    assert main(_build(native, out, "hico", "--force")) == 0
    assert _configs(out) == ["hico"]
    assert not (out / "vcoco").exists()


@pytest.mark.slow
def test_folder_written_before_the_card_tag_is_still_recognised(native, tmp_path):
    out = tmp_path / "hub"
    assert main(_build(native, out, "vcoco")) == 0
    readme = out / "README.md"
    readme.write_text(readme.read_text().replace("- hoi-bench\n", ""))
    assert main(_build(native, out, "hico")) == 0
    assert _configs(out) == ["hico", "vcoco"]


# --------------------------------------------------------------------------------------- concurrent and killed


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from hoi_bench.cli import main; sys.exit(main(sys.argv[1:]))", *args]


@pytest.mark.slow
def test_two_concurrent_builds_into_one_folder_keep_both_configs(native, tmp_path):
    out = tmp_path / "hub"
    logs = [tmp_path / "hico.log", tmp_path / "vcoco.log"]
    with folder_lock(out):  # both builds reach the write while the folder is busy, then take turns
        processes = []
        for config, log in zip(("hico", "vcoco"), logs, strict=True):
            with open(log, "w") as stream:
                processes.append(subprocess.Popen(_cli(*_build(native, out, config)), stderr=stream,
                                                  stdout=subprocess.DEVNULL))
        deadline = time.monotonic() + 240
        while not all("is writing this folder" in log.read_text() for log in logs):
            assert time.monotonic() < deadline, [log.read_text()[-2000:] for log in logs]
            assert all(p.poll() is None for p in processes), [log.read_text()[-2000:] for log in logs]
            time.sleep(0.2)
    assert [p.wait(timeout=240) for p in processes] == [0, 0], [log.read_text()[-2000:] for log in logs]
    assert _configs(out) == ["hico", "vcoco"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_staging_left_by_a_killed_build_is_removed_by_the_next(native, tmp_path):
    out = tmp_path / "hub"
    finished = subprocess.run([sys.executable, "-c", "pass"], check=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        stale = tmp_path / f".hub.partial-{dead.pid}-k1ll3d"
        (stale / "vcoco").mkdir(parents=True)
        (stale / "vcoco" / "train-00000-of-00001.parquet").write_bytes(b"half a shard")
        busy = tmp_path / f".hub.partial-{alive.pid}-w0rk1n"
        busy.mkdir()
        unknown = tmp_path / ".hub.partial-notapid"
        unknown.mkdir()
        assert main(_build(native, out, "vcoco")) == 0
        assert not stale.exists()
        assert busy.is_dir() and unknown.is_dir()  # a live writer's, and one whose owner cannot be told
    finally:
        alive.kill()
        alive.wait()
    assert finished.returncode == 0


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_outputs_follow_the_umask(native, tmp_path, umask):
    out = tmp_path / "hub"
    previous = os.umask(umask)
    try:
        assert main(_build(native, out, "vcoco")) == 0
    finally:
        os.umask(previous)
    for path in [out, *out.rglob("*")]:
        expected = (0o777 if path.is_dir() else 0o666) & ~umask
        assert oct(path.stat().st_mode & 0o777) == oct(expected), path


# ------------------------------------------------------------------------------------------------ bad images


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (a decompression bomb as Pillow's header parser sees it)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    ihdr = struct.pack(">I", len(header)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    data = zlib.compress(b"\0" * 64)
    idat = struct.pack(">I", len(data)) + b"IDAT" + data + struct.pack(">I", zlib.crc32(b"IDAT" + data))
    return b"\x89PNG\r\n\x1a\n" + ihdr + idat + struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))


def _first_vcoco_image(native: Path) -> Path:
    return min((native / "v-coco" / "images" / "train2014").glob("*.jpg"))


@pytest.mark.parametrize("content", [
    pytest.param(_png_claiming(12_000, 9_000), id="108-megapixel-bomb"),
    pytest.param(b"this is a text file, not a picture\n", id="text-file"),
])
def test_bad_image_stops_the_build_naming_the_file(native_copy, tmp_path, capsys, content):
    image = _first_vcoco_image(native_copy)
    image.write_bytes(content)
    out = tmp_path / "hub"
    assert main(_build(native_copy, out, "vcoco", images=True)) == 2
    line = _error_line(capsys)
    assert image.name in line
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["native"]


def test_num_proc_zero_is_refused(native, tmp_path, capsys):
    out = tmp_path / "hub"
    with pytest.raises(SystemExit) as stopped:  # refused while parsing the arguments, before anything runs
        main(_build(native, out, "vcoco", "--num-proc", "0"))
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--num-proc" in err.strip().splitlines()[-1]
    assert not out.exists()


def test_bomb_stops_a_builder_that_embeds_without_measuring_first(tmp_path, capsys):
    """Haystack embeds its images straight from the annotation (no size pass): the check sits in the embedding."""
    from haystack_dataset.samples import write_sample as write_haystack_sample

    layout = write_haystack_sample(tmp_path / "native")
    image = min(layout.image_root.rglob("*.jpg"))
    image.write_bytes(_png_claiming(12_000, 9_000))
    out = tmp_path / "hub"
    assert main(["build", "haystack", "--data-dir", str(layout.root), "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert str(image) in line and "12000 x 9000" in line and "too large" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["native"]


def test_bomb_stops_the_bongard_build_before_it_is_cropped(tmp_path, capsys):
    """Bongard-HOI decodes each picture to crop it: the header's pixel count is checked before that decode."""
    from bongard_hoi.samples import write_sample as write_bongard_sample

    native = write_bongard_sample(tmp_path / "native")
    image = min((native / "images").rglob("*.jpg"))
    image.write_bytes(_png_claiming(12_000, 9_000))
    out = tmp_path / "hub"
    assert main(["build", "bongard_hoi", "--data-dir", str(native), "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert image.name in line and "too large" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["native"]
