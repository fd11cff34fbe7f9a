"""JSON reading errors name file and position; atomic writes never leave partial files."""

from __future__ import annotations

import gzip

import pytest

from hoi_bench.errors import FormatError, MissingFilesError
from hoi_bench.files import read_json, write_json_atomic, write_text_atomic


def test_read_json_plain_and_gzip(tmp_path):
    (tmp_path / "a.json").write_text('[1, {"b": 2}]')
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(b'{"c": 3}'))
    assert read_json(tmp_path / "a.json") == [1, {"b": 2}]
    assert read_json(tmp_path / "a.json.gz") == {"c": 3}


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
