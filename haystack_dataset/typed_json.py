"""Typed JSON decoding for the Haystack / PSG readers: msgspec does the parsing and type checks in compiled code.

Readers declare what a file holds as ``msgspec.Struct`` types; :func:`decode` turns every msgspec failure into a
:class:`~hoi_bench.errors.FormatError` that names the file, the record (the index in the file's record list), the
field and what was expected and found. Malformed JSON is re-parsed by the standard library only to report its
line and column, so the error path costs what it always did and the good path costs a fraction of ``json.loads``
plus a per-value validation loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import msgspec

from hoi_bench.errors import FormatError

_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_MISSING = re.compile(r"Object missing required field `(?P<name>[^`]+)`")
_EXPECTED = re.compile(r"Expected `(?P<expected>[^`]+)`(?:, got `(?P<found>[^`]+)`)?(?P<rest>.*)")
_RECORD = re.compile(r"^(?P<list>\.[A-Za-z_]\w*)?\[(?P<index>\d+)\]\.?(?P<field>.*)$")

Describe = Callable[[str], tuple[str, str | None]]
"""Maps a field path (``relations[0]``) to the reader's own wording: ``(reason, expected)``; ``expected`` None keeps
msgspec's ``Expected `...``` text."""


def decode(data: bytes, decoder: msgspec.json.Decoder, *, file: str | None, what: str,
           records: str | None = None, record: int | None = None, describe: Describe | None = None) -> Any:
    """Decode ``data`` with ``decoder``; ``records`` names the list whose index is the record number (``"data"``
    for ``{"data": [...]}``, ``""`` for a top-level list); ``record`` is the record number of ``data`` itself when
    it is one record of a larger file."""
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as error:
        located = _validation_error(str(error), file, records, describe)
        if record is not None:
            located = FormatError(file, located.reason, record=record, field=located.field,
                                  expected=located.expected, found=located.found)
        raise located from None
    except msgspec.DecodeError as error:
        raise malformed(data, file, what, str(error)) from None
    except RecursionError:
        raise FormatError(file, f"unreadable {what}", expected="JSON nested at most a few hundred levels deep",
                          found="nesting too deep") from None


def malformed(data: bytes, file: str | None, what: str, detail: str) -> FormatError:
    """The error for JSON msgspec could not parse, with the line and column the standard library reports."""
    try:
        json.loads(data)
    except json.JSONDecodeError as error:
        return FormatError(file, "malformed JSON", field=f"line {error.lineno} column {error.colno}",
                           expected="valid JSON", found=error.msg)
    except (UnicodeDecodeError, RecursionError, ValueError) as error:
        return FormatError(file, f"unreadable {what}", expected="UTF-8 JSON", found=str(error))
    return FormatError(file, f"unreadable {what}", expected="valid JSON", found=detail)


def _validation_error(message: str, file: str | None, records: str | None, describe: Describe | None) -> FormatError:
    match = _AT.match(message)
    what, path = match.group("what"), match.group("path") or ""
    record, field = None, path.lstrip(".") or None
    if records is not None:
        located = _RECORD.match(path)
        if located and (located.group("list") or "") == (f".{records}" if records else ""):
            record, field = int(located.group("index")), located.group("field") or None
    missing = _MISSING.match(what)
    if missing:
        name = missing.group("name")
        return FormatError(file, "missing key", record=record, field=f"{field}.{name}" if field else name,
                           expected="a value for it", found="absent")
    expected = _EXPECTED.match(what)
    reason, wanted = describe(field or "") if describe else ("wrong type", None)
    if expected:
        found = expected.group("found") or expected.group("rest").strip() or None
        return FormatError(file, reason, record=record, field=field,
                           expected=wanted or expected.group("expected"), found=found)
    return FormatError(file, reason if describe else what, record=record, field=field, expected=wanted,
                       found=what if describe else None)
