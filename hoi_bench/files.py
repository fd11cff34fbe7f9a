"""Reading and writing the small files every benchmark has: JSON in (with hoi-bench errors), anything out atomically.

Readers name the file, the line and column of malformed JSON; writers go through a temporary sibling renamed over
the target, so a crash never leaves half a file where a reader (or a later evaluation) would find it, and name the
path when it cannot be written. JSON goes out strict: undefined numbers (NaN, ±inf) as ``null``, never a bare
``NaN`` token. Every JSON report and ``--output`` file is written by :func:`write_json_atomic`.
"""

from __future__ import annotations

import gc
import gzip
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hoi_bench.errors import FormatError, MissingFilesError, OutputPathError

MAX_DECOMPRESSED_BYTES = 4 * 1024**3
"""Largest input hoi-bench reads or decompresses: ten times the biggest real prediction file."""
MAX_COMPRESSION_RATIO = 100
"""Decompressed bytes allowed per compressed byte of a ``.gz`` input (above :data:`BOMB_FLOOR_BYTES`). JSON and
CSV benchmark files compress 3-15 times; a gzip bomb 1,000 times or more (a 389 KB file to 829 MB)."""
BOMB_FLOOR_BYTES = 64 * 1024**2
"""A ``.gz`` input may always expand to this much, whatever its ratio (small, repetitive files compress well)."""


def read_bytes(path: str | os.PathLike, what: str = "file", *, max_bytes: int | None = None,
               mutable: bool = False) -> bytes | bytearray:
    """The bytes of ``path``, gunzipped when the name ends in ``.gz``, refusing more than ``max_bytes`` of them.

    A ``.gz`` file may also expand to at most :data:`MAX_COMPRESSION_RATIO` times its own size (or
    :data:`BOMB_FLOOR_BYTES`), so a 400 KB gzip bomb is refused after reading 64 MiB, not 800 MB. A missing file
    raises ``MissingFilesError``; an unreadable file, a broken gzip stream or content past the limit raises
    ``FormatError`` naming the file. ``max_bytes`` defaults to :data:`MAX_DECOMPRESSED_BYTES`, read at call time.
    ``mutable=True`` returns a ``bytearray`` (read in place, no extra copy), for readers that edit a few bytes
    (``hoi_bench.forked``).
    """
    if max_bytes is None:
        max_bytes = MAX_DECOMPRESSED_BYTES
    path = Path(path)
    if path.is_dir():
        raise FormatError(str(path), f"{what} is a folder", expected=f"a {what}", found="a folder")
    if not path.is_file():
        raise MissingFilesError(str(path.parent), [path.name], what=what)
    compressed = path.name.endswith(".gz")
    if compressed:
        max_bytes = min(max_bytes, decompressed_limit(path.stat().st_size))
    try:
        with (gzip.open if compressed else open)(path, "rb") as handle:
            data = _read_into(handle, max_bytes + 1) if mutable else handle.read(max_bytes + 1)
    except (OSError, EOFError) as error:
        expected = f"gzip-compressed {what}" if compressed else f"a readable {what}"
        raise FormatError(str(path), f"unreadable {what}", expected=expected, found=str(error)) from error
    if len(data) > max_bytes:
        raise FormatError(str(path), f"{what} too large", expected=f"at most {max_bytes} bytes"
                          + (f" once decompressed ({MAX_COMPRESSION_RATIO}x its compressed size, at least "
                             f"{BOMB_FLOOR_BYTES})" if compressed else ""), found=f"more than {max_bytes}")
    return data


def decompressed_limit(compressed_bytes: int) -> int:
    """Most bytes a compressed input of ``compressed_bytes`` may expand to: :data:`MAX_COMPRESSION_RATIO` times
    its size, at least :data:`BOMB_FLOOR_BYTES`, never more than :data:`MAX_DECOMPRESSED_BYTES`.

    The one rule for every compressed input (``.gz``, ``.npz`` members, compressed ``.mat`` elements, see
    ``hoi_bench.archives``), applied before inflating: a 3 MB file that would inflate to 3 GiB is refused
    after at most a few hundred megabytes of inflating, not after allocating 3 GiB. Limits are read at call time.

    >>> decompressed_limit(1_000) == BOMB_FLOOR_BYTES, decompressed_limit(10**7) == 100 * 10**7
    (True, True)
    """
    return min(MAX_DECOMPRESSED_BYTES, max(BOMB_FLOOR_BYTES, MAX_COMPRESSION_RATIO * compressed_bytes))


def too_large_error(path: str | os.PathLike, what: str, limit: int, found: str) -> FormatError:
    """The ``FormatError`` of a compressed input past :func:`decompressed_limit`."""
    return FormatError(str(path), f"{what} too large once decompressed",
                       expected=f"at most {limit} bytes ({MAX_COMPRESSION_RATIO}x its compressed size, at least "
                       f"{BOMB_FLOOR_BYTES}; a decompression bomb or a wrong file)", found=found)


def _read_into(handle, limit: int) -> bytearray:
    """At most ``limit`` bytes of ``handle`` as a bytearray, read straight into it when the size is known."""
    if isinstance(handle, gzip.GzipFile):
        return bytearray(handle.read(limit))
    data = bytearray(min(os.fstat(handle.fileno()).st_size + 1, limit))
    filled = 0
    while filled < len(data) and (count := handle.readinto(memoryview(data)[filled:])):
        filled += count
    del data[filled:]
    if filled == len(data) < limit:  # the file grew after fstat: read the rest as a plain read would
        data += handle.read(limit - filled)
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


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a reader creates its many small objects.

    Decoding builds hundreds of thousands of records and lists and no reference cycles; a collection pass every
    700 new objects would walk them all again and again (a quarter of the reading time on a 17 MB annotation
    file, a fifth on a 150 MB prediction file). The previous state is restored on exit.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode_json(data: bytes, type: Any, path: str | os.PathLike, what: str = "JSON file") -> Any:
    """``data`` decoded by msgspec into ``type`` (a ``msgspec.Struct``, ``list[...]``, ...), errors as ``FormatError``.

    For readers that validate in compiled code: malformed JSON names the line and column (as :func:`read_json`
    does), a value of the wrong type or a missing field names its location (``$[12].bbox[2]``), and nesting too
    deep for the decoder is a clear error instead of a ``RecursionError``. ``path`` and ``what`` only name the
    file in messages; read the bytes with :func:`read_bytes`.
    """
    import msgspec

    try:
        return msgspec.json.decode(data, type=type)
    except msgspec.ValidationError as error:
        message, _, where = str(error).partition(" - at ")
        raise FormatError(str(path), f"invalid {what}", field=where.strip("`") or None, expected="the "
                          f"documented {what} layout", found=message) from error
    except msgspec.DecodeError as error:
        message = str(error)
        offset = re.search(r"\(byte (\d+)\)", message)
        field = None
        if offset:
            position = int(offset.group(1))
            line = data.count(b"\n", 0, position) + 1
            column = position - (data.rfind(b"\n", 0, position) + 1) + 1
            field = f"line {line} column {column}"
            message = message[: offset.start()].strip()
        raise FormatError(str(path), f"malformed {what}" if offset else f"unreadable {what}", field=field,
                          expected="valid UTF-8 JSON", found=message.removeprefix("JSON is malformed: ")) from error
    except RecursionError as error:
        raise FormatError(str(path), f"unreadable {what}", expected="JSON nested at most a few hundred levels",
                          found="nesting too deep") from error


def check_output_file(path: str | os.PathLike, what: str = "output file") -> Path:
    """``path`` if a file can be written there, checked before any expensive work; else ``OutputPathError``.

    Refused: an existing folder, a path under a regular file, and a folder where no file can be created (probed
    by creating and removing a temporary file in the nearest existing folder, which is what the writer will need;
    permission bits alone say nothing for root or read-only mounts). Nothing is created or changed.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(path, what, "is a folder", expected="a file path")
    folder = path.parent
    while not folder.exists():
        if folder.is_symlink():
            raise OutputPathError(path, what, f"{folder} is a broken link", expected="an existing or creatable folder")
        folder = folder.parent
    if not folder.is_dir():
        raise OutputPathError(path, what, f"{folder} is a file, not a folder", expected="a path inside a folder")
    try:
        handle, probe = tempfile.mkstemp(prefix=f".{path.name}.probe-", dir=folder)
    except OSError as error:
        raise OutputPathError(path, what, f"cannot create files in {folder} ({error.strerror or error})",
                              expected="a writable folder") from error
    os.close(handle)
    Path(probe).unlink(missing_ok=True)
    return path


def refuse_overwriting_inputs(outputs: Mapping[str, str | os.PathLike | None],
                              inputs: Mapping[str, Any]) -> None:
    """Refuse, before any work, an output file that is one of the command's own input files.

    ``outputs`` and ``inputs`` map the names shown in the message (``"--output"``, ``"--predictions"``) to a path,
    ``None``, or (inputs) a list of paths; anything else among the inputs (a number, a keyframe key) is skipped.
    Files are compared as the file system sees them (``os.path.samefile``: links, ``..`` and hard links
    included), so ``--output DETS.json`` onto ``--detections ./x/../DETS.json`` is caught. An output that does not
    exist yet replaces nothing and passes; an input folder is not looked into. Raises ``OutputPathError`` naming
    both options and the path, so writing the result never destroys the file it was computed from.

    >>> import tempfile; folder = Path(tempfile.mkdtemp()); (folder / "dets.json").write_text("[]")
    2
    >>> refuse_overwriting_inputs({"--output": folder / "result.json"}, {"--detections": folder / "dets.json"})
    >>> refuse_overwriting_inputs({"--output": folder / "dets.json"}, {"--vsrl": [folder / "dets.json"]})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    hoi_bench.errors.OutputPathError: --output '.../dets.json': is also the input --vsrl ...
    """
    for output_name, output in outputs.items():
        if not isinstance(output, (str, os.PathLike)) or not os.path.isfile(output):
            continue
        for input_name, given in inputs.items():
            for path in given if isinstance(given, (list, tuple)) else [given]:
                if isinstance(path, (str, os.PathLike)) and os.path.isfile(path) and os.path.samefile(output, path):
                    raise OutputPathError(output, output_name, f"is also the input {input_name} {str(path)!r}; "
                                          "writing it would replace that input",
                                          expected="a path other than every input file of the command")


def write_bytes_atomic(path: str | os.PathLike, data: bytes, what: str = "output file") -> Path:
    """Write ``data`` to a temporary sibling and rename it over ``path``: a failure leaves no partial file.

    A path that cannot be written (a folder, under a regular file, no permission, disk full) raises
    ``OutputPathError`` naming it; whatever was at ``path`` before stays as it was.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(path, what, "is a folder", expected="a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.partial-", dir=path.parent)
    except OSError as error:
        raise OutputPathError(path, what, f"cannot create it ({error.strerror or error})",
                              expected="a path in a writable folder") from error
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise OutputPathError(path, what, f"cannot write it ({error.strerror or error})",
                                  expected="a path in a writable folder") from error
        raise
    return path


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (``os.umask`` alone must set it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def write_text_atomic(path: str | os.PathLike, text: str, what: str = "output file") -> Path:
    """Write UTF-8 ``text`` atomically (see :func:`write_bytes_atomic`)."""
    return write_bytes_atomic(path, text.encode("utf-8"), what)


def json_safe(value: Any) -> Any:
    """``value`` with NaN and ±inf replaced by ``None`` and numpy scalars and arrays turned into Python values.

    JSON has no NaN: ``json.dumps`` would write a bare ``NaN`` token that strict parsers (and most languages)
    refuse. hoi-bench reports an undefined value (an AP with no positives, a mean over nothing) as ``null``.

    >>> json_safe({"ap": float("nan"), "ks": (20, 50), "x": [float("inf"), 0.5]})
    {'ap': None, 'ks': [20, 50], 'x': [None, 0.5]}
    """
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_json_key(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):  # numpy scalar or array, numpy not imported
        return json_safe(value.tolist())
    return value


def _json_key(key: Any) -> Any:
    return key.item() if type(key).__module__ == "numpy" and hasattr(key, "item") else key


def dumps_json(payload: Any, *, indent: int | None = None, default: Callable[[Any], Any] | None = None) -> str:
    """Strict JSON text of ``payload``: undefined numbers as ``null`` (see :func:`json_safe`), never ``NaN``.

    Clean payloads take the C encoder directly; only a payload it refuses (a non-finite float, a numpy value) is
    converted first, so big prediction files cost no extra pass. ``default`` is ``json.dumps``'s hook for other
    objects (``str`` writes paths as text).
    """
    try:
        return json.dumps(payload, indent=indent, allow_nan=False, default=default)
    except (ValueError, TypeError):
        return json.dumps(json_safe(payload), indent=indent, allow_nan=False,
                          default=None if default is None else lambda value: json_safe(default(value)))


def write_json_atomic(path: str | os.PathLike, payload: Any, *, indent: int | None = None,
                      what: str = "output file") -> Path:
    """Write ``payload`` as strict JSON (:func:`dumps_json`) atomically; ``indent=None`` is the compact form
    upstream files use."""
    return write_text_atomic(path, dumps_json(payload, indent=indent) + ("\n" if indent is not None else ""), what)
