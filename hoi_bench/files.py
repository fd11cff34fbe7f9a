"""Reading and writing the small files every benchmark has: JSON in (with hoi-bench errors), anything out atomically.

Readers name the file, the line and column of malformed JSON; writers go through a temporary sibling renamed over
the target, so a crash never leaves half a file where a reader (or a later evaluation) would find it.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hoi_bench.errors import FormatError, MissingFilesError


MAX_DECOMPRESSED_BYTES = 4 * 1024**3
"""Largest input hoi-bench decompresses: ten times the biggest real prediction file, far below a gzip bomb's size."""


def read_bytes(path: str | os.PathLike, what: str = "file", *, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The bytes of ``path``, gunzipped when the name ends in ``.gz``, refusing more than ``max_bytes`` of them.

    A missing file raises ``MissingFilesError``; an unreadable file, a broken gzip stream or content past the
    limit raises ``FormatError`` naming the file, so a 400 KB gzip bomb costs at most ``max_bytes`` of memory.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingFilesError(str(path.parent), [path.name], what=what)
    compressed = path.name.endswith(".gz")
    try:
        with (gzip.open if compressed else open)(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except (OSError, EOFError) as error:
        expected = f"gzip-compressed {what}" if compressed else f"a readable {what}"
        raise FormatError(str(path), f"unreadable {what}", expected=expected, found=str(error)) from error
    if len(data) > max_bytes:
        raise FormatError(str(path), f"{what} too large", expected=f"at most {max_bytes} bytes"
                          + (" once decompressed" if compressed else ""), found=f"more than {max_bytes}")
    return data


def resolve_inside(root: str | os.PathLike, relative: str, *, file: str, record: int | str | None,
                   field: str) -> Path:
    """``root / relative`` with symlinks resolved, refused unless it stays inside ``root``.

    Annotation files name images by path; an absolute path, ``..`` or a symlink leading out of the data folder
    would make a build read (and embed, and later upload) an unrelated file, so each is a ``FormatError`` that
    names the annotation file, the record and the field.
    """
    base = Path(root).resolve()
    if Path(relative).is_absolute():
        raise FormatError(file, "path leaves the data folder", record=record, field=field,
                          expected=f"a path relative to {base}", found=relative)
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise FormatError(file, "path leaves the data folder", record=record, field=field,
                          expected=f"a path inside {base}", found=relative)
    return target


def read_json(path: str | os.PathLike, what: str = "JSON file") -> Any:
    """Decoded JSON of ``path`` (gzip-compressed when the name ends in ``.gz``, see :func:`read_bytes`).

    A missing file raises ``MissingFilesError`` naming it; malformed or unreadable content raises ``FormatError``
    with the line and column of the problem.
    """
    data = read_bytes(path, what)
    try:
        return json.loads(data)
    except json.JSONDecodeError as error:
        raise FormatError(str(path), "malformed JSON", field=f"line {error.lineno} column {error.colno}",
                          expected="valid JSON", found=error.msg) from error
    except (UnicodeDecodeError, RecursionError) as error:
        expected = "gzip-compressed UTF-8 JSON" if str(path).endswith(".gz") else "UTF-8 JSON"
        found = "nesting too deep" if isinstance(error, RecursionError) else str(error)
        raise FormatError(str(path), f"unreadable {what}", expected=expected, found=found) from error


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to a temporary sibling and rename it over ``path``: a failure leaves no partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.partial-", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` atomically (see :func:`write_bytes_atomic`)."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, payload: Any, *, indent: int | None = None) -> Path:
    """Write ``payload`` as JSON atomically; ``indent=None`` is the compact form upstream files use."""
    return write_text_atomic(path, json.dumps(payload, indent=indent) + ("\n" if indent is not None else ""))
