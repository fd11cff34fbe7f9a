"""Model-output files the metrics read: the Haystack NPY and the scene-graph recall predictions (JSON or NPZ).

**Haystack NPY** (read by ``calc_metrics.py`` and by ``hoi-bench evaluate p_auc``): one 2-D float array, one
row per ordered pair of segments, ``[image_id, subject, object, score_0, ..., score_{n-1}]``. Subject and object
index the image's ``segments_info``; the n scores follow ``predicate_classes`` and contain **no no-relation
column**. Rows need not sum to 1 (OpenPSG's dumper drops the background column of a 57-way softmax without
renormalising). Extra rows for other images or pairs are ignored. :class:`NpyRows` reads such a file block by
block (a 1.26M-row file is 593 MB; only the rows of annotated pairs are kept).

**Recall JSON** (read by ``hoi-bench evaluate sg_recall``): a list with one object per image::

    {"image_id": "107902",                      # string or number, compared through formats.image_key
     "pairs": [[s, o], ...],                     # ranked, best first; the evaluator never re-sorts
     "predicate_scores": [[no_relation, p_0, ..., p_{n-1}], ...],   # one row per pair, n + 1 columns
     "boxes": [[x1, y1, x2, y2], ...],           # optional: predicted objects (SGDet); pairs index them
     "labels": [c, ...],                         # optional, 0-based object classes, with boxes
     "object_scores": [s, ...]}                  # optional (SGDet), used by no-graph-constraint recall

Without ``boxes``/``labels`` the entry is PredCls: pairs index the ground-truth segments and their boxes/labels
are used, and ``object_scores`` are ignored (OpenPSG sets them to one in PredCls). An entry with no pairs is
accepted (and skipped by the metric, as OpenPSG does).

**Recall NPZ** (the columnar form of the same predictions, :func:`write_recall_npz`, ``hoi-bench convert
recall-predictions``): JSON spends most of its reading time turning 20 million score texts into numbers; the NPZ
holds them as one float64 array and is read at disk speed. Arrays (I images, P pairs, O objects)::

    format              "hoi-bench recall predictions 1"
    image_ids           (I,) str          image_key of each entry's image_id
    pair_counts         (I,) int64        pairs of each entry, in file order
    pairs               (P, 2) int64
    predicate_scores    (P, n + 1) float64
    object_counts       (I,) int64        objects of each entry, -1 for a PredCls entry (no boxes/labels)
    boxes               (O, 4) float64,   labels (O,) int64
    object_score_counts (I,) int64        -1 where an entry has no object_scores
    object_scores       (sum of the non-negative counts,) float64
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from haystack_dataset import typed_json
from haystack_dataset.formats import image_key
from hoi_bench import forked
from hoi_bench.archives import read_npz_arrays
from hoi_bench.errors import FormatError, MissingFilesError, PredictionError
from hoi_bench.files import gc_paused, read_bytes, write_bytes_atomic, write_json_atomic

NPZ_FORMAT = "hoi-bench recall predictions 1"
_ZIP_MAGIC = b"PK\x03\x04"


class NpyRows:
    """A Haystack output ``.npy`` whose header is checked at once and whose rows are read in blocks.

    Only the header is read on construction: a missing, empty, truncated or pickled file, an ``.npz`` archive, a
    non-numeric dtype or a shape that is not (rows, 3 + n) is a :class:`FormatError` naming the file.
    :meth:`blocks` reads consecutive rows into one reused buffer, so memory stays at one block however large the
    file; :func:`haystack_dataset.evaluation.relation_scores` keeps only the rows of annotated pairs.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise MissingFilesError(str(self.path.parent), [self.path.name], what="prediction file")
        with open(self.path, "rb") as handle:
            self.shape, self.fortran_order, self.dtype, self.offset = _npy_header(handle, str(self.path))
        expected = self.offset + int(np.prod(self.shape)) * self.dtype.itemsize
        size = self.path.stat().st_size
        if size < expected:
            raise FormatError(str(self.path), "truncated .npy file", expected=f"{expected} bytes for shape "
                              f"{self.shape}", found=f"{size} bytes")

    def __len__(self) -> int:
        return self.shape[0]

    def blocks(self, rows_per_block: int) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, rows)`` blocks in file order; each block is only valid until the next is read."""
        rows, columns = self.shape
        if self.fortran_order:  # column-major on disk: rows are not contiguous, so map the file instead
            mapped = np.load(self.path, mmap_mode="r", allow_pickle=False)
            for start in range(0, rows, rows_per_block):
                yield start, np.ascontiguousarray(mapped[start:start + rows_per_block])
            return
        buffer = np.empty((min(rows_per_block, rows), columns), dtype=self.dtype)
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            for start in range(0, rows, rows_per_block):
                block = buffer[: min(rows_per_block, rows - start)]
                if handle.readinto(block.data.cast("B")) != block.nbytes:
                    raise FormatError(str(self.path), "truncated .npy file", expected=f"{rows} rows",
                                      found=f"the data ends in row {start}")
                yield start, block

    def read(self) -> np.ndarray:
        """The whole array, in the dtype it was saved in."""
        return np.load(self.path, allow_pickle=False)


def _npy_header(handle: BinaryIO, file: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    start = handle.read(6)
    if not start:
        raise FormatError(file, "empty file", expected="a .npy array written by np.save", found="0 bytes")
    if start.startswith(_ZIP_MAGIC):
        raise FormatError(file, "an .npz archive where a .npy array is expected", expected="one array written by "
                          "np.save (not np.savez)", found="a zip archive")
    if start != b"\x93NUMPY":
        raise FormatError(file, "not a .npy file", expected="a .npy array written by np.save",
                          found=f"first bytes {start!r}")
    handle.seek(0)
    try:
        version = np.lib.format.read_magic(handle)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = reader(handle)
    except (ValueError, OSError) as error:
        raise FormatError(file, "unreadable .npy header", expected="a .npy array written by np.save",
                          found=str(error)) from error
    if dtype.hasobject or dtype.kind not in "iuf":
        raise FormatError(file, "the array does not hold numbers", expected="a float (or integer) array, no "
                          "pickled objects", found=f"dtype {dtype}")
    if len(shape) != 2 or shape[1] < 4:
        raise FormatError(file, "wrong array shape", expected="(rows, 3 + n) with n >= 1", found=tuple(shape))
    return tuple(shape), fortran_order, dtype, handle.tell()


def read_haystack_npy(path: str | os.PathLike) -> np.ndarray:
    """Load a Haystack output array (float64, shape (rows, 3 + n)); its content is checked by the metrics.

    ``hoi-bench evaluate p_auc`` reads the file block by block through :class:`NpyRows` instead.
    """
    return NpyRows(path).read().astype(np.float64)


def write_haystack_npy(path: str | os.PathLike, rows: np.ndarray) -> Path:
    """Save a Haystack output array; the file appears only once completely written."""
    return _write_atomic(path, lambda out: np.save(out, np.asarray(rows, dtype=np.float64)))


def _write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Serialise with ``write`` into memory, then write the file atomically (umask permissions, clear errors)."""
    buffer = io.BytesIO()
    write(buffer)
    return write_bytes_atomic(path, buffer.getbuffer())


@dataclass
class RecallPrediction:
    """One image of a recall JSON, as arrays (see the module docstring)."""

    image_id: Any
    pairs: np.ndarray
    predicate_scores: np.ndarray
    boxes: np.ndarray | None = None
    labels: np.ndarray | None = None
    object_scores: np.ndarray | None = None

    @property
    def key(self) -> str:
        return image_key(self.image_id)

    def to_json(self) -> dict:
        out = {"image_id": self.image_id, "pairs": self.pairs.tolist(),
               "predicate_scores": self.predicate_scores.tolist()}
        for name in ("boxes", "labels", "object_scores"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name).tolist()
        return out


def parse_recall_predictions(raw: Any, *, file: str | None = None) -> list[RecallPrediction]:
    """Validate an already-loaded recall JSON list; errors name the entry and the field.

    >>> p = parse_recall_predictions([{"image_id": 7, "pairs": [[0, 1]], "predicate_scores": [[0.5, 0.2, 0.3]]}])
    >>> p[0].key, p[0].pairs.tolist(), p[0].boxes is None
    ('7', [[0, 1]], True)
    >>> parse_recall_predictions([{"image_id": 8, "pairs": [], "predicate_scores": []}])[0].pairs.shape
    (0, 2)
    """
    if not isinstance(raw, list):
        raise FormatError(file, "recall predictions must be a JSON list of per-image objects", expected="list",
                          found=type(raw).__name__)
    out, seen = [], {}
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not {"image_id", "pairs", "predicate_scores"} <= set(entry):
            raise FormatError(file, "missing keys", record=index, expected="image_id, pairs, predicate_scores",
                              found=sorted(entry) if isinstance(entry, dict) else type(entry).__name__)
        _check_unique(entry["image_id"], index, seen, file)
        pairs = _array(entry["pairs"], np.int64, (-1, 2), file, index, "pairs")
        scores = _array(entry["predicate_scores"], np.float64, (len(pairs), -1), file, index, "predicate_scores")
        boxes = labels = object_scores = None
        if entry.get("boxes") is not None or entry.get("labels") is not None:
            if entry.get("boxes") is None or entry.get("labels") is None:
                raise FormatError(file, "boxes and labels go together", record=index, field="boxes/labels",
                                  expected="both or neither", found=sorted(k for k in ("boxes", "labels") if k in entry))
            boxes = _array(entry["boxes"], np.float64, (-1, 4), file, index, "boxes")
            labels = _array(entry["labels"], np.int64, (len(boxes),), file, index, "labels")
        if entry.get("object_scores") is not None:
            object_scores = _array(entry["object_scores"], np.float64, (-1,), file, index, "object_scores")
        out.append(RecallPrediction(entry["image_id"], pairs, scores, boxes, labels, object_scores))
    return out


def _check_unique(image_id: Any, index: int, seen: dict[str, int], file: str | None) -> None:
    key = image_key(image_id)
    if key in seen:
        raise FormatError(file, "duplicate image", record=index, field="image_id",
                          expected="one entry per image", found=f"{image_id!r} (also entry {seen[key]})")
    seen[key] = index


def read_recall_predictions(path: str | os.PathLike, *, workers: int = 1) -> list[RecallPrediction]:
    """Read recall predictions: the columnar ``.npz`` or the JSON list (``.json`` or ``.json.gz``).

    JSON is decoded entry by entry into typed records (msgspec, validation in compiled code) and each entry's
    scores go straight into one float64 array, so no Python object outlives its entry. ``workers`` > 1 lets a
    large JSON file be decoded by that many processes at once (``hoi_bench.forked``; the same entries, the same
    errors).
    """
    path = Path(path)
    if path.suffix == ".npz":
        return read_recall_npz(path)
    data = read_bytes(path, "prediction file", mutable=workers > 1)
    cuts = forked.list_cuts(data, workers, b"image_id") if workers > 1 and forked.can_fork() else []
    if cuts:
        try:
            image_ids, arrays = forked.decode_in_pieces(data, cuts, _piece_columns)
            return _recall_entries(image_ids, arrays, str(path))
        except forked.PieceFailed:
            pass
    return _read_recall_json(data, str(path))


def _read_recall_json(data: bytes | bytearray | memoryview, file: str) -> list[RecallPrediction]:
    try:
        entries = _ENTRY_LIST.decode(data)
    except msgspec.DecodeError:
        # not JSON to msgspec; the standard library also accepts NaN / Infinity, which the slow path reports
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as error:
            raise typed_json.malformed(data, file, "prediction file", str(error)) from None
        return parse_recall_predictions(raw, file=file)
    except msgspec.ValidationError:
        return parse_recall_predictions(typed_json.decode(data, _ANY, file=file, what="prediction file"), file=file)
    except RecursionError:
        raise FormatError(file, "unreadable prediction file", expected="JSON nested a few levels deep",
                          found="nesting too deep") from None
    out, seen = [], {}
    with gc_paused():
        for index, raw_entry in enumerate(entries):
            entry = typed_json.decode(raw_entry, _ENTRY, file=file, what="prediction file", record=index,
                                      describe=_describe_entry)
            _check_unique(entry.image_id, index, seen, file)
            out.append(_entry_arrays(entry, index, file))
    return out


def _piece_columns(piece: memoryview) -> forked.Columns:
    """A forked worker's share of a recall JSON: its image ids and the NPZ columns of its entries, in chunks."""
    predictions = _read_recall_json(piece, "<piece>")
    return [p.image_id for p in predictions], _recall_chunks(predictions)


class _Entry(msgspec.Struct, gc=False):
    image_id: int | str | float
    pairs: list[tuple[int, int]]
    predicate_scores: list[list[float]]
    boxes: list[tuple[float, float, float, float]] | None = None
    labels: list[int] | None = None
    object_scores: list[float] | None = None


_ENTRY = msgspec.json.Decoder(_Entry)
_ENTRY_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()


def _describe_entry(field_name: str) -> tuple[str, str | None]:
    name = field_name.split("[")[0]
    shapes = {"pairs": "[[subject, object], ...] of integers", "predicate_scores": "rows of numbers",
              "boxes": "[[x1, y1, x2, y2], ...] of numbers", "labels": "a list of integers",
              "object_scores": "a list of numbers"}
    if name in shapes:
        return "wrong shape or type", shapes[name]
    return "wrong type", None


def _entry_arrays(entry: _Entry, index: int, file: str) -> RecallPrediction:
    rows = entry.predicate_scores
    pairs = np.array(entry.pairs, dtype=np.int64).reshape(-1, 2)
    widths = set(map(len, rows))
    if len(rows) != len(pairs) or len(widths) > 1:
        raise FormatError(file, "wrong shape", record=index, field="predicate_scores",
                          expected=f"{len(pairs)} rows (one per pair) of equal length",
                          found=f"{len(rows)} rows of lengths {sorted(widths)}")
    width = widths.pop() if widths else 0
    scores = np.fromiter(chain.from_iterable(rows), np.float64, count=len(rows) * width).reshape(len(rows), width)
    boxes = labels = object_scores = None
    if entry.boxes is not None or entry.labels is not None:
        if entry.boxes is None or entry.labels is None:
            raise FormatError(file, "boxes and labels go together", record=index, field="boxes/labels",
                              expected="both or neither", found="only " + ("boxes" if entry.labels is None else "labels"))
        boxes = np.array(entry.boxes, dtype=np.float64).reshape(-1, 4)
        labels = np.array(entry.labels, dtype=np.int64)
        if len(labels) != len(boxes):
            raise FormatError(file, "wrong shape", record=index, field="labels", expected=f"{len(boxes)} labels, "
                              "one per box", found=len(labels))
    if entry.object_scores is not None:
        object_scores = np.array(entry.object_scores, dtype=np.float64)
    return RecallPrediction(entry.image_id, pairs, scores, boxes, labels, object_scores)


def write_recall_predictions(path: str | os.PathLike, predictions: list[RecallPrediction]) -> Path:
    """Write recall predictions atomically: columnar when ``path`` ends in ``.npz``, the JSON list otherwise."""
    if Path(path).suffix == ".npz":
        return write_recall_npz(path, predictions)
    return write_json_atomic(path, [p.to_json() for p in predictions])


def write_recall_npz(path: str | os.PathLike, predictions: list[RecallPrediction]) -> Path:
    """Write recall predictions as the columnar NPZ of the module docstring (uncompressed: read at disk speed)."""
    predictions = list(predictions)
    arrays = {"format": np.array(NPZ_FORMAT), "image_ids": np.array([p.key for p in predictions], dtype=np.str_),
              **_recall_columns(predictions)}
    return _write_atomic(path, lambda out: np.savez(out, **arrays))


def _recall_columns(predictions: list[RecallPrediction]) -> dict[str, np.ndarray]:
    """The NPZ arrays of ``predictions`` from ``pair_counts`` on (the module docstring), all entries concatenated."""
    return {name: np.concatenate(value) if isinstance(value, list) else value
            for name, value in _recall_chunks(predictions).items()}


def _recall_chunks(predictions: list[RecallPrediction]) -> dict[str, np.ndarray | list[np.ndarray]]:
    """:func:`_recall_columns` before concatenation: the counts, and each array as its entries' parts in order."""
    width = {p.predicate_scores.shape[1] for p in predictions if len(p.pairs)}
    if len(width) > 1:
        raise PredictionError(f"score rows of different widths {sorted(width)}: one width n + 1 for every entry")
    width = width.pop() if width else 0

    def counts(name: str) -> np.ndarray:
        return np.array([-1 if getattr(p, name) is None else len(getattr(p, name)) for p in predictions],
                        dtype=np.int64)

    def parts(name: str, shape: tuple[int, ...], dtype) -> list[np.ndarray]:
        return [np.asarray(getattr(p, name), dtype=dtype).reshape(shape) for p in predictions
                if getattr(p, name) is not None] or [np.zeros([0 if s == -1 else s for s in shape], dtype=dtype)]

    return {
        "pair_counts": np.array([len(p.pairs) for p in predictions], dtype=np.int64),
        "pairs": parts("pairs", (-1, 2), np.int64),
        "predicate_scores": [p.predicate_scores.reshape(-1, width) for p in predictions] or [np.zeros((0, 0))],
        "object_counts": counts("boxes"),
        "boxes": parts("boxes", (-1, 4), np.float64),
        "labels": parts("labels", (-1,), np.int64),
        "object_score_counts": counts("object_scores"),
        "object_scores": parts("object_scores", (-1,), np.float64),
    }


_NPZ_ARRAYS = {"image_ids": (1, "U"), "pair_counts": (1, "i"), "pairs": (2, "i"),
               "predicate_scores": (2, "f"), "object_counts": (1, "i"), "boxes": (2, "f"), "labels": (1, "i"),
               "object_score_counts": (1, "i"), "object_scores": (1, "f")}


def read_recall_npz(path: str | os.PathLike) -> list[RecallPrediction]:
    """Read the columnar NPZ of the module docstring; every array is checked against the others' counts.

    Entries are views into the file's arrays: nothing is copied per image.
    """
    file = str(path)
    arrays = read_npz_arrays(path, _NPZ_ARRAYS, format_tag=NPZ_FORMAT, what="recall",
                             written_by="write_recall_npz")
    images = len(arrays["image_ids"])
    _check_counts(arrays, "pair_counts", images, len(arrays["pairs"]), file, allow_absent=False)
    _check_counts(arrays, "object_counts", images, len(arrays["boxes"]), file, allow_absent=True)
    _check_counts(arrays, "object_score_counts", images, len(arrays["object_scores"]), file, allow_absent=True)
    scores, pairs = arrays["predicate_scores"], arrays["pairs"]
    if len(scores) != len(pairs) or pairs.shape[1:] != (2,) or arrays["boxes"].shape[1:] != (4,) \
            or len(arrays["labels"]) != len(arrays["boxes"]):
        raise FormatError(file, "arrays of inconsistent shapes", field="pairs/predicate_scores/boxes/labels",
                          expected="pairs (P, 2), predicate_scores (P, n + 1), boxes (O, 4), labels (O,)",
                          found=f"{pairs.shape}, {scores.shape}, {arrays['boxes'].shape}, {arrays['labels'].shape}")
    for name in ("predicate_scores", "boxes", "object_scores"):
        bad = ~np.isfinite(arrays[name])
        if bad.any():
            raise PredictionError(f"{file}: array {name!r}: expected finite numbers, found "
                                  f"{arrays[name][bad][0]} at {np.argwhere(bad)[0].tolist()}")
    return _recall_entries(arrays["image_ids"].tolist(), arrays, file)


def _recall_entries(image_ids: list, arrays: dict[str, np.ndarray], file: str) -> list[RecallPrediction]:
    """One entry per image id, as views into the columnar ``arrays`` (nothing copied per image); an image listed
    twice is an error naming both entries."""
    scores, pairs = arrays["predicate_scores"], arrays["pairs"]
    seen: dict[str, int] = {}
    out = []
    pair_ends = np.cumsum(arrays["pair_counts"]).tolist()
    object_ends = np.cumsum(np.maximum(arrays["object_counts"], 0)).tolist()
    score_ends = np.cumsum(np.maximum(arrays["object_score_counts"], 0)).tolist()
    for index, image_id in enumerate(image_ids):
        _check_unique(image_id, index, seen, file)
        pair_count = int(arrays["pair_counts"][index])
        objects, object_score_count = int(arrays["object_counts"][index]), int(arrays["object_score_counts"][index])
        rows = slice(pair_ends[index] - pair_count, pair_ends[index])
        boxes = labels = object_scores = None
        if objects >= 0:
            where = slice(object_ends[index] - objects, object_ends[index])
            boxes, labels = arrays["boxes"][where], arrays["labels"][where]
        if object_score_count >= 0:
            object_scores = arrays["object_scores"][score_ends[index] - object_score_count: score_ends[index]]
        out.append(RecallPrediction(image_id, pairs[rows], scores[rows], boxes, labels, object_scores))
    return out


def _check_counts(arrays: dict, name: str, images: int, total: int, file: str, *, allow_absent: bool) -> None:
    counts = arrays[name]
    low = -1 if allow_absent else 0
    if len(counts) != images or (counts < low).any() or int(np.maximum(counts, 0).sum()) != total:
        raise FormatError(file, "counts do not add up", field=name,
                          expected=f"{images} counts >= {low} summing to {total}",
                          found=f"{len(counts)} counts summing to {int(np.maximum(counts, 0).sum())}")


def _array(value: Any, dtype, shape: tuple[int, ...], file: str | None, index: int, name: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as error:
        raise FormatError(file, f"not a numeric array ({error})", record=index, field=name,
                          expected=f"shape {shape}", found=_shape(value)) from error
    if array.size == 0 and array.ndim == 1:
        array = np.zeros([0 if s == -1 else s for s in shape], dtype=dtype)
    if array.ndim != len(shape) or any(s not in (-1, a) for s, a in zip(shape, array.shape)):
        raise FormatError(file, "wrong shape", record=index, field=name, expected=f"shape {shape}",
                          found=array.shape)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise PredictionError(f"{file or '<predictions>'}: entry {index}: field {name!r}: expected finite numbers, "
                              f"found NaN/inf at {np.argwhere(~np.isfinite(array))[0].tolist()}")
    return array


def _shape(value: Any) -> str:
    try:
        return str(np.asarray(value).shape)
    except (TypeError, ValueError):
        return type(value).__name__
