"""Compressed containers read without decompression bombs: ``.npz`` archives and MATLAB v5 ``.mat`` files.

``np.load`` and ``scipy.io.loadmat`` trust what a file says: an ``.npz`` member whose header claims a 2.9 TiB array
is allocated (``MemoryError``), and a 3 MB file of zeros that inflates to 3 GiB is inflated in full (12-15 s, over
3 GB of memory) before anything can refuse it. Both readers here decide from sizes known before inflating, with
the rule every compressed input follows (:func:`hoi_bench.files.decompressed_limit`: at most 100 times the
file's size, at least 64 MiB, at most 4 GiB):

- ``.npz``: the zip directory gives each member's inflated size (and ``zipfile`` never inflates past it); the
  ``.npy`` header of a member must describe exactly the bytes the member holds before the array is allocated;
- ``.mat`` (v5): the size each compressed (``miCOMPRESSED``) element declares in its first tag is checked
  first, then the element is inflated in steps and only counted, stopping as soon as it passes the declared
  size; scipy reads the file only once every element passed.

Every refusal is a ``FormatError`` naming the file (and the member or element).
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from hoi_bench.errors import FormatError, MissingFilesError
from hoi_bench.files import decompressed_limit, too_large_error

_STEP = 1 << 16
"""Compressed bytes read at a time while counting a ``.mat`` element."""
_OUTPUT_STEP = 1 << 20
"""Inflated bytes produced at a time (at most) while counting: the first tag is checked after the first step."""
_MAT_HEADER = 128
_MI_COMPRESSED = 15
_MI_MATRIX = 14
_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def read_npz_members(path: str | os.PathLike, names: Iterable[str] | None = None, *, what: str = ".npz file",
                     written_by: str = "numpy.savez") -> dict[str, np.ndarray]:
    """The arrays ``names`` (all when ``None``) of the ``.npz`` at ``path``; names it lacks are left out.

    Refused before inflating, as ``FormatError``: members whose inflated sizes add up past
    :func:`~hoi_bench.files.decompressed_limit` of the file's size; a member whose ``.npy`` header describes
    another number of bytes than the member holds (a header claiming terabytes); object (pickled) arrays; and
    anything ``zipfile`` or ``numpy`` cannot read. A missing file is a ``MissingFilesError``; ``what`` and
    ``written_by`` word the messages.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingFilesError(str(path.parent), [path.name], what=what)
    wanted = None if names is None else set(names)
    try:
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if info.filename.endswith(".npy")
                       and (wanted is None or info.filename[:-4] in wanted)]
            limit = decompressed_limit(path.stat().st_size)
            inflated = sum(info.file_size for info in members)
            if inflated > limit:
                raise too_large_error(path, what, limit, f"members of {inflated} bytes in all")
            return {info.filename[:-4]: _read_member(archive, info, path, written_by) for info in members}
    except MemoryError as error:  # within the limits, but more than this machine has free
        raise FormatError(str(path), f"{what} does not fit in memory", expected="arrays this machine can hold",
                          found=f"{inflated} bytes of arrays") from error
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        if isinstance(error, FormatError):
            raise
        raise FormatError(str(path), "unreadable .npz file", expected=f"an archive written by {written_by}",
                          found=str(error)) from error


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, written_by: str) -> np.ndarray:
    """One member's array, allocated only once its header matches the member's size."""
    name = info.filename[:-4]
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in _NPY_HEADERS:
            raise FormatError(str(path), "unsupported .npy version", field=name, expected="1.0 or 2.0",
                              found=".".join(map(str, version)))
        shape, fortran_order, dtype = _NPY_HEADERS[version](member)
        if dtype.hasobject:
            raise FormatError(str(path), "object array (a pickle)", field=name,
                              expected=f"numeric or text arrays written by {written_by}", found=str(dtype))
        count = 1
        for length in shape:
            count *= length
        claimed, held = count * dtype.itemsize, info.file_size - member.tell()
        if claimed != held:
            raise FormatError(str(path), "array header does not match the member's size", field=name,
                              expected=f"{claimed} bytes of data for shape {shape} of {dtype}",
                              found=held)
        data = np.empty(count, dtype=dtype)
        view = memoryview(data.view(np.uint8).reshape(-1))
        filled = 0
        while filled < claimed and (read := member.readinto(view[filled:filled + _STEP])):
            filled += read
        if filled != claimed:
            raise FormatError(str(path), "truncated array", field=name, expected=f"{claimed} bytes",
                              found=f"{filled} bytes")
    return data.reshape(shape, order="F" if fortran_order else "C")


def check_mat_inflated_size(path: str | os.PathLike, what: str = "MATLAB file") -> None:
    """Refuse a MATLAB v5 ``.mat`` whose compressed elements inflate past
    :func:`~hoi_bench.files.decompressed_limit` of its size, counting without keeping the inflated bytes.

    Each ``miCOMPRESSED`` element is a zlib stream holding one array (``miMATRIX``) whose tag declares its size.
    The first inflated step must be that tag: another element is refused there, and a declared size past the
    limit stops at once (an honest bomb). The stream is then inflated in 1 MiB steps and counted, stopping as
    soon as it passes the size its tag declared (a stream that lies about its size is malformed), so no element
    costs more than the limit. Files that are not v5 (v4, v7.3/HDF5) and streams that do not inflate are left to
    the reader, which names the problem. Raises ``FormatError`` naming the file.
    """
    path = Path(path)
    limit = decompressed_limit(path.stat().st_size)
    with open(path, "rb") as handle:
        header = handle.read(_MAT_HEADER)
        if len(header) < _MAT_HEADER or header[126:128] not in (b"IM", b"MI"):
            return
        endian = "<" if header[126:128] == b"IM" else ">"
        inflated = 0
        while len(tag := handle.read(8)) == 8:
            data_type, size = struct.unpack(endian + "II", tag)
            if data_type >> 16:  # a small data element: its data sits in the tag
                continue
            if data_type != _MI_COMPRESSED:
                handle.seek(size + (-size % 8), os.SEEK_CUR)
                continue
            inflated += _inflated_size(handle, size, limit - inflated, endian, path, what, limit)


def _inflated_size(handle: BinaryIO, size: int, budget: int, endian: str, path: Path, what: str,
                   limit: int) -> int:
    """Bytes the zlib stream of ``size`` bytes at the handle's position inflates to, at most ``budget`` (else
    ``FormatError``); leaves the handle after the stream."""
    end = handle.tell() + size
    inflater = zlib.decompressobj()
    total, declared, pending = 0, budget, b""
    try:
        while True:
            if not pending:  # output stopped at _OUTPUT_STEP leaves input pending; else read more
                left = end - handle.tell()
                if inflater.eof or left <= 0 or not (pending := handle.read(min(_STEP, left))):
                    break
            data = inflater.decompress(pending, _OUTPUT_STEP)
            pending = inflater.unconsumed_tail
            if total == 0 and data:
                declared = _declared_size(data, endian, path, what)
                if declared > budget:
                    raise too_large_error(path, what, limit, f"an array declaring {declared} bytes")
            total += len(data)
            if total > declared:
                raise FormatError(str(path), f"{what}: a compressed array inflates past the size its tag declares",
                                  expected=f"{declared} bytes", found=f"more than {declared}")
    except zlib.error:
        pass  # a broken stream: scipy's error names it
    handle.seek(end)
    return total


def _declared_size(data: bytes, endian: str, path: Path, what: str) -> int:
    """The size (with its 8-byte tag) that the first tag of an inflated element declares; a ``FormatError``
    unless it is the tag of an array (``miMATRIX``), the only element MATLAB and scipy compress."""
    data_type, length = struct.unpack(endian + "II", data[:8]) if len(data) >= 8 else (None, 0)
    if data_type != _MI_MATRIX:
        raise FormatError(str(path), f"{what}: a compressed element does not hold an array",
                          expected=f"an miMATRIX tag ({_MI_MATRIX})", found=f"type {data_type}")
    return 8 + length


def read_npz_arrays(path: str | os.PathLike, arrays: dict[str, tuple[int, str]], *, format_tag: str,
                    what: str, written_by: str) -> dict[str, Any]:
    """The arrays of a hoi-bench columnar ``.npz`` (``name -> (ndim, dtype kind)``), checked before any use.

    The archive must carry a ``format`` array equal to ``format_tag`` and every named array with its number
    of dimensions and dtype kind (integers pass where floats are expected); pickles are never loaded, and no
    array is inflated or allocated past its member's size and the limits of
    :func:`read_npz_members`. Each problem is a ``FormatError`` naming the file and the
    array; ``what`` and ``written_by`` word the messages.
    """
    path = Path(path)
    file = str(path)
    if not path.is_file():
        raise MissingFilesError(str(path.parent), [path.name], what="prediction file")
    found = read_npz_members(path, [*arrays, "format"], what=f"{what} NPZ", written_by=written_by)
    if "format" not in found or str(found["format"]) != format_tag:
        raise FormatError(file, f"not a hoi-bench {what} NPZ", field="format", expected=repr(format_tag),
                          found=str(found["format"]) if "format" in found else "no 'format' array")
    missing = sorted(set(arrays) - set(found))
    if missing:
        raise FormatError(file, "missing arrays", field=", ".join(missing), expected=sorted(arrays),
                          found=sorted(found))
    for name, (ndim, kind) in arrays.items():
        array = found[name]
        if array.ndim != ndim or (array.dtype.kind != kind and not (kind == "f" and array.dtype.kind == "i")):
            raise FormatError(file, "wrong array", field=name, expected=f"{ndim}-D, dtype kind {kind!r}",
                              found=f"{array.ndim}-D {array.dtype}")
    return found
