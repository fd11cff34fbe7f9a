"""Decode one large JSON list in several processes at once: the list is cut between elements, each piece is
decoded by a forked copy of this process, and the pieces' numpy columns come back through a pipe.

Why: reading a full-size prediction file (150 MB, a million HOIs) is msgspec building one small object per box
and score and numpy copying them out, CPU-bound work that Python threads cannot share. On the 2-core machines
hoi-bench is measured on, two processes read it in 55-75 % of the one-process time.

Why it cannot change a result: a cut is a comma followed by an element that opens with the list's first key
(``{"file_name"`` in HOI prediction files, ``{"image_id"`` in recall predictions), and each piece is decoded as a JSON list of its own. The first piece, the text before the cut
plus ``]``, is valid JSON only when the cut comma sits between two top-level elements (a comma inside a string or a
nested value would leave a string or a bracket open), and the same holds for each later piece in turn; so when
every piece decodes, the pieces are exactly the file's elements in order. Any failure (no cut found, a piece that
does not decode or breaks a rule, a worker that dies) makes the caller read the whole file in one piece, as it
does with one process, so numbers and error messages never depend on the split.

Where it runs: only on Linux (the start method there; macOS system libraries are not safe to fork), only while
this process runs a single Python thread (a fork copies no other thread, and a lock another thread holds would
stay held in the child), and only for inputs of at least :data:`MIN_PIECE_BYTES` per piece. Native thread pools
such as OpenBLAS's shut down and restart around ``fork`` themselves. Library calls default to one process; the
``hoi-bench evaluate`` commands ask for more (``--num-proc``).
"""

from __future__ import annotations

import os
import re
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import numpy as np

MIN_PIECE_BYTES = 8 << 20
"""Smallest piece worth a process (roughly 0.1 s of decoding): below it, forking and sending the columns back eat
most of the gain."""

Columns = tuple[list[Any], dict[str, np.ndarray | list[np.ndarray]]]
"""What a piece decodes to: a list of plain values (file names; image ids, str, int or float) and named arrays of
at least one dimension. An array may also be given as the list of its row chunks (same dtype, same trailing shape
unless a chunk has no rows), so that a decoder can hand over per-image arrays without concatenating them."""


class PieceFailed(Exception):
    """A piece did not decode, or a worker died: decode the whole input in one piece instead."""


def available_processes() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_count(requested: int | None) -> int:
    """Processes to decode with: ``requested`` (a command's ``--num-proc``), else the CPUs available, at most 4
    (more pieces cost memory and gain little on a laptop)."""
    return requested if requested is not None else min(4, available_processes())


def can_fork() -> bool:
    """Whether forking workers is safe here: Linux, and no Python thread besides this one."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


def list_cuts(data: bytes | bytearray, parts: int, first_key: bytes) -> list[int]:
    """Offsets of up to ``parts - 1`` commas that end an element of the JSON list ``data`` and are followed by an
    element opening with the key ``first_key`` (e.g. ``b"file_name"``), near equal fractions of ``data``.

    A cut is only a candidate here: :func:`decode_in_pieces` confirms it by decoding the pieces. Fewer cuts are
    returned when pieces would be smaller than :data:`MIN_PIECE_BYTES` or no candidate follows a fraction.
    """
    parts = min(parts, len(data) // MIN_PIECE_BYTES)
    pattern = re.compile(rb',\s*\{\s*"' + re.escape(first_key) + rb'"\s*:')
    cuts: list[int] = []
    for k in range(1, parts):
        found = pattern.search(data, max(k * len(data) // parts, cuts[-1] + 1 if cuts else 0))
        if found is None:
            break
        cuts.append(found.start())
    return cuts


@contextmanager
def _piece(data: bytearray, cuts: list[int], index: int) -> Iterator[memoryview]:
    """Piece ``index`` of ``data`` cut at ``cuts`` as a JSON list of its own, without copying it: while the piece is
    in use, the cut comma before it reads ``[`` and the one after it ``]`` (each process edits its own copy of the
    pages after the fork; this process's commas are put back on exit)."""
    bounds = [None, *cuts, None]
    before, after = bounds[index], bounds[index + 1]
    if before is not None:
        data[before] = ord("[")
    if after is not None:
        data[after] = ord("]")
    try:
        yield memoryview(data)[0 if before is None else before : len(data) if after is None else after + 1]
    finally:
        for comma in (before, after):
            if comma is not None:
                data[comma] = ord(",")


def decode_in_pieces(data: bytearray, cuts: list[int], decode: Callable[[memoryview], Columns]) -> Columns:
    """``decode`` of each piece of ``data`` cut at ``cuts`` (from :func:`list_cuts`), joined in order: the values
    concatenated and each array stacked along its first axis. The first piece is decoded by this process, the
    others by forked workers, whose arrays are read straight into the joined ones. ``data`` is a bytearray
    (``read_bytes(..., mutable=True)``) so that no piece is copied; it is unchanged on return. Raises
    :class:`PieceFailed` if any piece fails or the pieces' arrays differ in dtype or trailing shape."""
    workers: list[tuple[int, int]] = []
    try:
        for index in range(1, len(cuts) + 1):
            read_end, write_end = os.pipe()
            pid = _fork()
            if pid == 0:
                os.close(read_end)
                _work(write_end, lambda index=index: _decoded_piece(data, cuts, index, decode))
            os.close(write_end)
            workers.append((pid, read_end))
        try:
            first = _decoded_piece(data, cuts, 0, decode)
        except Exception as error:
            raise PieceFailed("the first piece failed") from error
        pipes = [os.fdopen(read_end, "rb", closefd=False) for _, read_end in workers]
        joined = _joined(first, pipes)
        for pid, _ in workers:
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise PieceFailed(f"worker {pid} exited with status {status}")
        return joined
    finally:
        for pid, read_end in workers:
            _close_quietly(read_end)
            _stop(pid)


def _joined(first: Columns, pipes: list) -> Columns:
    """This process's columns followed by those each worker sends on its pipe, in one set of arrays; this
    process's chunks are released as they are copied."""
    values, arrays = first
    headers = [_header(pipe) for pipe in pipes]
    values = list(values) + [value for header in headers for value in header["values"]]
    out, rows = {}, {}
    for name in list(arrays):
        chunks = _chunks(arrays[name])
        parts = [_layout(chunks)]
        for header in headers:
            layout = {entry[0]: (np.dtype(entry[1]), tuple(entry[2])) for entry in header["arrays"]}
            if layout.keys() != arrays.keys():
                raise PieceFailed(f"a worker sent arrays {sorted(layout)}, expected {sorted(arrays)}")
            parts.append(layout[name])
        dtype, shape = parts[0]
        filled = [part_shape for _, part_shape in parts if part_shape[0]] or [shape]
        if len({part_dtype for part_dtype, _ in parts}) > 1 or len({part[1:] for part in filled}) > 1:
            raise PieceFailed(f"the pieces' {name!r} arrays differ: {parts}")
        out[name] = np.empty((sum(part_shape[0] for _, part_shape in parts), *filled[0][1:]), dtype=dtype)
        rows[name] = 0
        arrays[name] = None
        for chunk in chunks:
            out[name][rows[name] : rows[name] + len(chunk)] = chunk.reshape(-1, *filled[0][1:])
            rows[name] += len(chunk)
        del chunks
    for pipe, header in zip(pipes, headers):
        for name, _, shape in header["arrays"]:
            _fill(pipe, _bytes_of(out[name][rows[name] : rows[name] + shape[0]]))
            rows[name] += shape[0]
    return values, out


def _chunks(value: np.ndarray | list[np.ndarray]) -> list[np.ndarray]:
    return value if isinstance(value, list) else [value]


def _layout(chunks: list[np.ndarray]) -> tuple[np.dtype, tuple[int, ...]]:
    """dtype and shape of the array that ``chunks`` make up; ``PieceFailed`` when they do not fit together."""
    if not chunks:
        raise PieceFailed("an array given as no chunks at all (give one empty chunk for its dtype and shape)")
    filled = [chunk for chunk in chunks if len(chunk)] or chunks[:1]
    if len({chunk.dtype for chunk in chunks}) > 1 or len({chunk.shape[1:] for chunk in filled}) > 1:
        raise PieceFailed(f"chunks of different dtypes or trailing shapes: {[c.shape for c in chunks[:5]]}")
    return chunks[0].dtype, (sum(len(chunk) for chunk in chunks), *filled[0].shape[1:])


def _fork() -> int:
    """``os.fork()``. CPython 3.12+ warns after forking whenever the OS reports more than one thread, native pools
    such as OpenBLAS's included; :func:`can_fork` has made sure no other Python thread runs, and native pools
    handle fork themselves, so that warning is not raised here (as an error it would strand the child)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
        return os.fork()


def _decoded_piece(data: bytearray, cuts: list[int], index: int, decode: Callable[[memoryview], Columns]) -> Columns:
    with _piece(data, cuts, index) as piece:
        return decode(piece)


def _work(write_end: int, job: Callable[[], Columns]) -> None:
    """The forked worker: run ``job``, send its columns, and leave without running any of the parent's exit code."""
    code = 1
    try:
        values, arrays = job()
        with os.fdopen(write_end, "wb") as pipe:
            _send(pipe, values, arrays)
        code = 0
    finally:
        os._exit(code)


def _send(pipe, values: list[Any], arrays: dict[str, np.ndarray | list[np.ndarray]]) -> None:
    chunks = {name: _chunks(value) for name, value in arrays.items()}
    layout = []
    for name, parts in chunks.items():
        dtype, shape = _layout(parts)
        layout.append([name, dtype.str, list(shape)])
    header = msgspec.msgpack.encode({"values": values, "arrays": layout})
    pipe.write(struct.pack("<Q", len(header)))
    pipe.write(header)
    for parts in chunks.values():
        for chunk in parts:
            pipe.write(_bytes_of(np.ascontiguousarray(chunk)))


def _header(pipe) -> dict:
    """A worker's values and the name, dtype and shape of each array it sends next."""
    (length,) = struct.unpack("<Q", _read_exactly(pipe, 8))
    return msgspec.msgpack.decode(_read_exactly(pipe, length))


def _bytes_of(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, as a writable view when the array is writable (any shape, even empty)."""
    return memoryview(array.reshape(-1).view(np.uint8))


def _read_exactly(pipe, size: int) -> bytes:
    buffer = bytearray(size)
    _fill(pipe, memoryview(buffer))
    return bytes(buffer)


def _fill(pipe, view: memoryview) -> None:
    filled = 0
    while filled < len(view):
        count = pipe.readinto(view[filled:])
        if not count:
            raise PieceFailed("a worker stopped before sending its piece")
        filled += count


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _stop(pid: int) -> None:
    """Reap worker ``pid``, killing it first if it is still running (its result is no longer wanted)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except ChildProcessError:
        pass
