"""Model-output files the metrics read: the Haystack NPY and the scene-graph recall JSON.

**Haystack NPY** (read by ``calc_metrics.py`` and by ``hoi-bench evaluate haystack``): one 2-D float array, one
row per ordered pair of segments, ``[image_id, subject, object, score_0, ..., score_{n-1}]``. Subject and object
index the image's ``segments_info``; the n scores follow ``predicate_classes`` and contain **no no-relation
column**. Rows need not sum to 1 (OpenPSG's dumper drops the background column of a 57-way softmax without
renormalising). Extra rows for other images or pairs are ignored.

**Recall JSON** (read by ``hoi-bench evaluate sg_recall``): a list with one object per image::

    {"image_id": "107902",                      # string or number, compared through formats.image_key
     "pairs": [[s, o], ...],                     # ranked, best first; the evaluator never re-sorts
     "predicate_scores": [[no_relation, p_0, ..., p_{n-1}], ...],   # one row per pair, n + 1 columns
     "boxes": [[x1, y1, x2, y2], ...],           # optional: predicted objects (SGDet); pairs index them
     "labels": [c, ...],                         # optional, 0-based object classes, with boxes
     "object_scores": [s, ...]}                  # optional, used by no-graph-constraint recall (default 1)

Without ``boxes``/``labels`` the entry is PredCls: pairs index the ground-truth segments and their boxes/labels
are used.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoi_bench.errors import FormatError, PredictionError
from haystack_dataset.formats import image_key, write_json


def read_haystack_npy(path: str | os.PathLike) -> np.ndarray:
    """Load a Haystack output array (float64, shape (rows, 3 + n)); its content is checked by the metrics."""
    path = Path(path)
    try:
        rows = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as error:
        raise FormatError(str(path), f"not a readable .npy array: {error}") from error
    if rows.ndim != 2 or rows.shape[1] < 4:
        raise FormatError(str(path), "wrong array shape", expected="(rows, 3 + n) with n >= 1",
                          found=tuple(rows.shape))
    return rows.astype(np.float64)


def write_haystack_npy(path: str | os.PathLike, rows: np.ndarray) -> Path:
    """Save a Haystack output array; the file appears only once completely written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".npy", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            np.save(out, np.asarray(rows, dtype=np.float64))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


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
    """Validate a loaded recall JSON list; errors name the entry and the field.

    >>> p = parse_recall_predictions([{"image_id": 7, "pairs": [[0, 1]], "predicate_scores": [[0.5, 0.2, 0.3]]}])
    >>> p[0].key, p[0].pairs.tolist(), p[0].boxes is None
    ('7', [[0, 1]], True)
    """
    if not isinstance(raw, list):
        raise FormatError(file, "recall predictions must be a JSON list of per-image objects", expected="list",
                          found=type(raw).__name__)
    out, seen = [], {}
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not {"image_id", "pairs", "predicate_scores"} <= set(entry):
            raise FormatError(file, "missing keys", record=index, expected="image_id, pairs, predicate_scores",
                              found=sorted(entry) if isinstance(entry, dict) else type(entry).__name__)
        key = image_key(entry["image_id"])
        if key in seen:
            raise FormatError(file, "duplicate image", record=index, field="image_id",
                              expected="one entry per image", found=f"{entry['image_id']!r} (also entry {seen[key]})")
        seen[key] = index
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


def read_recall_predictions(path: str | os.PathLike) -> list[RecallPrediction]:
    """Read a recall JSON file (see the module docstring)."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as error:
        raise FormatError(str(path), f"not a readable JSON file: {error}") from error
    return parse_recall_predictions(raw, file=str(path))


def write_recall_predictions(path: str | os.PathLike, predictions: list[RecallPrediction]) -> Path:
    """Write a recall JSON file atomically."""
    return write_json(path, [p.to_json() for p in predictions])


def _array(value: Any, dtype, shape: tuple[int, ...], file: str | None, index: int, name: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as error:
        raise FormatError(file, f"not a numeric array ({error})", record=index, field=name,
                          expected=f"shape {shape}", found=_shape(value)) from error
    if array.size == 0 and all(s in (-1, 0) for s in shape):
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
