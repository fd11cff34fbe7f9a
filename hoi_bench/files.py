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


def read_json(path: str | os.PathLike, what: str = "JSON file") -> Any:
    """Decoded JSON of ``path`` (gzip-compressed when the name ends in ``.gz``).

    A missing file raises ``MissingFilesError`` naming it; malformed or unreadable content raises ``FormatError``
    with the line and column of the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingFilesError(str(path.parent), [path.name], what=what)
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            return json.load(handle)
    except json.JSONDecodeError as error:
        raise FormatError(str(path), "malformed JSON", field=f"line {error.lineno} column {error.colno}",
                          expected="valid JSON", found=error.msg) from error
    except (OSError, EOFError, UnicodeDecodeError) as error:
        expected = "gzip-compressed UTF-8 JSON" if path.name.endswith(".gz") else "UTF-8 JSON"
        raise FormatError(str(path), f"unreadable {what}", expected=expected, found=str(error)) from error


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
