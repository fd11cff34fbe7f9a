"""JSON reading errors name file and position; writes are strict JSON, atomic, and refuse bad output paths."""

from __future__ import annotations

import gzip
import json
import os
import stat
import tempfile
from pathlib import Path

import numpy as np
import pytest

from hoi_bench.errors import FormatError, MissingFilesError, OutputPathError
from hoi_bench.files import (
    check_output_file,
    decode_json,
    dumps_json,
    json_safe,
    read_bytes,
    read_json,
    write_json_atomic,
    write_text_atomic,
)


def test_read_json_plain_and_gzip(tmp_path):
    (tmp_path / "a.json").write_text('[1, {"b": 2}]')
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(b'{"c": 3}'))
    assert read_json(tmp_path / "a.json") == [1, {"b": 2}]
    assert read_json(tmp_path / "a.json.gz") == {"c": 3}


@pytest.mark.parametrize("name", ["a.json", "a.json.gz", "empty.json"])
def test_mutable_read_gives_the_same_bytes_and_the_same_limits(tmp_path, name):
    content = b"" if name == "empty.json" else b'[{"file_name": "x"}]' * 1000
    path = tmp_path / name
    path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
    data = read_bytes(path, mutable=True)
    assert isinstance(data, bytearray) and data == read_bytes(path) == content
    if content:
        with pytest.raises(FormatError, match="too large"):
            read_bytes(path, mutable=True, max_bytes=len(content) - 1)
        assert read_bytes(path, mutable=True, max_bytes=len(content)) == content


def test_malformed_json_names_line_and_column(tmp_path):
    (tmp_path / "bad.json").write_text('[1,\n 2,,]')
    with pytest.raises(FormatError, match=r"bad.json: field 'line 2 column 4': malformed JSON"):
        read_json(tmp_path / "bad.json")


def test_missing_and_corrupt_gzip(tmp_path):
    with pytest.raises(MissingFilesError, match="nope.json"):
        read_json(tmp_path / "nope.json", what="prediction file")
    (tmp_path / "x.json.gz").write_bytes(b"not gzip")
    with pytest.raises(FormatError, match="expected gzip-compressed JSON file"):
        read_json(tmp_path / "x.json.gz")


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    target = tmp_path / "out.json"
    write_json_atomic(target, {"v": 1})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"v": object()})
    assert read_json(target) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_indented_json_ends_with_newline(tmp_path):
    write_json_atomic(tmp_path / "r.json", {"a": 1}, indent=2)
    assert (tmp_path / "r.json").read_text() == '{\n  "a": 1\n}\n'
    write_text_atomic(tmp_path / "t.txt", "é")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "é"


def strict_loads(text: str):
    """json.loads that refuses the NaN / Infinity tokens Python's own encoder would write."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def test_undefined_numbers_are_written_as_null(tmp_path):
    payload = {"mAP": float("nan"), "inf": [float("inf"), -float("inf")], "ok": 0.5,
               "np": {"f32": np.float32(0.25), "nan64": np.float64("nan"), "int": np.int64(3),
                      "array": np.array([1.0, np.nan]), "flag": np.bool_(True)},
               np.int64(7): "numpy key", "nested": ({"ap": float("nan")},)}
    strict = strict_loads(write_json_atomic(tmp_path / "r.json", payload, indent=2).read_text())
    assert strict == {"mAP": None, "inf": [None, None], "ok": 0.5,
                      "np": {"f32": 0.25, "nan64": None, "int": 3, "array": [1.0, None], "flag": True},
                      "7": "numpy key", "nested": [{"ap": None}]}
    assert json_safe([float("nan")]) == [None] and "NaN" not in dumps_json({"x": float("nan")})


def test_clean_payloads_are_written_exactly_as_json_dumps_does(tmp_path):
    payload = {"a": [1, 2.5, None, "é"], "b": {"c": True}}
    assert dumps_json(payload) == json.dumps(payload)
    assert dumps_json({"p": tmp_path}, default=str) == json.dumps({"p": str(tmp_path)})
    assert dumps_json({"p": tmp_path, "x": float("nan")}, default=str) == json.dumps({"p": str(tmp_path), "x": None})


def test_output_file_checks_refuse_folders_files_and_unwritable_places(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.txt").write_text("keep")
    with pytest.raises(OutputPathError, match=r"folder'?: is a folder \(expected a file path\)"):
        check_output_file(tmp_path / "folder")
    with pytest.raises(OutputPathError, match=r"file\.txt is a file, not a folder"):
        check_output_file(tmp_path / "file.txt" / "sub" / "out.json", "--output")
    new = tmp_path / "new" / "deeper" / "out.json"
    assert check_output_file(new) == new and not (tmp_path / "new").exists()  # checking creates nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "folder"]  # the probe file is gone


def unwritable_folder(tmp_path):
    """A folder where creating a file fails: mode 0500 for a normal user; for root, sysfs (if it refuses)."""
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir(mode=0o500)
        return folder
    try:
        handle, probe = tempfile.mkstemp(dir="/sys")
    except OSError:
        return Path("/sys")
    os.close(handle)
    os.unlink(probe)
    pytest.skip("running as root and /sys accepts files: no unwritable folder to test with")


def test_unwritable_folder_is_reported_before_and_at_writing(tmp_path):
    folder = unwritable_folder(tmp_path)
    with pytest.raises(OutputPathError, match="cannot create files in"):
        check_output_file(folder / "out.json", "--output")
    with pytest.raises(OutputPathError, match="out.json"):
        write_json_atomic(folder / "out.json", {"v": 1})


def test_writer_refuses_a_folder_or_a_path_under_a_file_and_changes_nothing(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "inside.txt").write_text("keep")
    (tmp_path / "file.txt").write_text("keep")
    with pytest.raises(OutputPathError, match="is a folder"):
        write_json_atomic(tmp_path / "folder", {"v": 1})
    with pytest.raises(OutputPathError, match="file.txt"):
        write_json_atomic(tmp_path / "file.txt" / "out.json", {"v": 1})
    assert (tmp_path / "file.txt").read_text() == "keep"
    assert [p.name for p in (tmp_path / "folder").iterdir()] == ["inside.txt"]


def test_written_files_follow_the_umask(tmp_path):
    previous = os.umask(0o027)
    try:
        path = write_text_atomic(tmp_path / "shared.txt", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_decode_json_errors_name_the_place(tmp_path):
    assert decode_json(b'[{"a": 1}]', list[dict[str, int]], "f.json") == [{"a": 1}]
    with pytest.raises(FormatError, match=r"f.json: field 'line 2 column 4': malformed predictions"):
        decode_json(b"[1,\n 2,,]", list[int], "f.json", "predictions")
    with pytest.raises(FormatError, match=r"f.json: field '\$\[1\]': invalid JSON file .*found 'Expected `int`, got"):
        decode_json(b'[1, "a"]', list[int], "f.json")
    with pytest.raises(FormatError, match="f.json: unreadable JSON file .*nesting too deep"):
        decode_json(b"[" * 100_000 + b"]" * 100_000, object, "f.json")
    with pytest.raises(FormatError, match="f.json: unreadable JSON file"):
        decode_json(b'"\xff"', str, "f.json")


def test_reading_a_folder_names_it(tmp_path):
    with pytest.raises(FormatError, match="JSON file is a folder"):
        read_json(tmp_path)


def test_a_gzip_bomb_is_refused_by_its_compression_ratio_before_it_is_expanded(tmp_path):
    bomb = tmp_path / "pred.json.gz"
    with gzip.open(bomb, "wb") as handle:  # 70 MB of one byte packs into ~70 KB: a ratio of 1,000
        handle.write(b"[" + b" " * (70 * 1024**2) + b"]")
    with pytest.raises(FormatError, match=r"pred\.json\.gz: prediction file too large \(expected at most 67108864 "
                                          r"bytes once decompressed \(100x its compressed size"):
        read_bytes(bomb, "prediction file")


def test_well_compressed_real_inputs_still_read(tmp_path):
    rows = np.random.default_rng(0).random((20_000, 12)).round(6).tolist()
    path = tmp_path / "pred.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(rows, handle)
    assert json.loads(read_bytes(path)) == rows
