"""HOI predictions as columnar NPZ: the arrays of a ``HoiSet`` plus the file names, read without any parsing.

A full-size QPIC prediction file (8,515 images x 100 HOIs, 150-170 MB of JSON) takes most of a second to decode
even with the typed readers; the same predictions as NPZ load at disk speed. ``hoi-bench convert
hoi-predictions --predictions P.json --out P.npz`` writes it (and ``--out P.json`` the JSON list back);
``hoi-bench evaluate hoi_map|vcoco_map --predictions P.npz`` reads it. Arrays (``np.savez``, no pickle):

- ``format``: ``"hoi-bench HOI predictions v1"``;
- ``file_names`` (N, str): one entry per image, as the JSON ``file_name``;
- ``box_counts`` (N, int), ``boxes`` (B x 4, float: x1, y1, x2, y2 pixels), ``box_labels`` (B, raw COCO ids);
- ``hoi_counts`` (N, int), ``hois`` (H x 3, int: subject index, object index or -1, verb id; indices into the
  image's own boxes), ``scores`` (H, float).

The reader checks what the JSON readers check (counts adding up, ids in the vocabulary, indices inside the
image's box list, finite numbers within the float32 range) and names the file, the entry and the field.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from hoi_bench.archives import read_npz_arrays
from hoi_bench.errors import FormatError
from hoi_bench.files import write_bytes_atomic
from hoi_sg_dataset.evaluation import HoiSet
from hoi_sg_dataset.formats import FLOAT32_MAX, within_float32
from hoi_sg_dataset.vocabulary import coco_objects, hico_verbs, vcoco_verbs

NPZ_FORMAT = "hoi-bench HOI predictions v1"
_ARRAYS = {"file_names": (1, "U"), "box_counts": (1, "i"), "boxes": (2, "f"), "box_labels": (1, "i"),
           "hoi_counts": (1, "i"), "hois": (2, "i"), "scores": (1, "f")}


def write_prediction_npz(path: str | os.PathLike, file_names: list[str], predictions: HoiSet) -> Path:
    """Write ``predictions`` (one image per name of ``file_names``) as the NPZ of the module docstring, atomically."""
    import io

    if len(file_names) != predictions.num_images:
        raise ValueError(f"{len(file_names)} file names for {predictions.num_images} images")
    buffer = io.BytesIO()
    np.savez(
        buffer,
        format=np.array(NPZ_FORMAT),
        file_names=np.array(file_names, dtype=np.str_),
        box_counts=np.diff(predictions.box_offsets),
        boxes=predictions.boxes,
        box_labels=predictions.box_labels,
        hoi_counts=np.diff(predictions.hoi_offsets),
        hois=predictions.hois,
        scores=predictions.scores,
    )
    return write_bytes_atomic(path, buffer.getvalue())


def read_prediction_npz(path: str | os.PathLike, dataset: str) -> tuple[list[str], HoiSet]:
    """File names and ``HoiSet`` (entry order) of a prediction NPZ; every problem is a ``FormatError``."""
    file = str(path)
    arrays = read_npz_arrays(path, _ARRAYS, format_tag=NPZ_FORMAT, what="HOI prediction",
                             written_by="hoi-bench convert hoi-predictions")
    images = len(arrays["file_names"])
    for counts, rows, width in (("box_counts", "boxes", 4), ("hoi_counts", "hois", 3)):
        table = arrays[rows]
        if len(arrays[counts]) != images or (arrays[counts] < 0).any() or int(arrays[counts].sum()) != len(table):
            raise FormatError(file, "counts do not add up", field=counts,
                              expected=f"{images} counts >= 0 summing to {len(table)} rows of {rows}",
                              found=f"{len(arrays[counts])} counts summing to {int(arrays[counts].sum())}")
        if table.shape[1:] != (width,):
            raise FormatError(file, "wrong array", field=rows, expected=f"rows of {width}", found=table.shape)
    if len(arrays["box_labels"]) != len(arrays["boxes"]) or len(arrays["scores"]) != len(arrays["hois"]):
        raise FormatError(file, "arrays of inconsistent lengths", field="box_labels/scores",
                          expected="one label per box and one score per HOI",
                          found=f"{len(arrays['box_labels'])} labels, {len(arrays['boxes'])} boxes, "
                          f"{len(arrays['scores'])} scores, {len(arrays['hois'])} HOIs")
    box_offsets = np.concatenate([[0], np.cumsum(arrays["box_counts"])]).astype(np.int64)
    hoi_offsets = np.concatenate([[0], np.cumsum(arrays["hoi_counts"])]).astype(np.int64)
    boxes = arrays["boxes"].astype(np.float64)
    scores = arrays["scores"].astype(np.float64)
    labels, hois = arrays["box_labels"].astype(np.int64), arrays["hois"].astype(np.int64)
    verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
    if not within_float32(boxes):
        _first_bad(file, box_offsets, ~(np.abs(boxes) <= FLOAT32_MAX).all(axis=1), "boxes", boxes,
                   f"4 finite numbers within +-{FLOAT32_MAX:.4g} (float32)")
    _first_bad(file, box_offsets, ~coco_objects().contains(labels), "box_labels", labels,
               "a COCO id among the 80 used in 1..90")
    _first_bad(file, hoi_offsets, ~verbs.contains(hois[:, 2]), "hois", hois,
               f"a verb id in {verbs.raw_ids[0]}..{verbs.raw_ids[-1]} in column 3")
    if not within_float32(scores):
        _first_bad(file, hoi_offsets, ~(np.abs(scores) <= FLOAT32_MAX), "scores", scores,
                   f"a finite number within +-{FLOAT32_MAX:.4g} (float32)")
    boxes_of_hoi = np.repeat(arrays["box_counts"], arrays["hoi_counts"])
    low = -1 if dataset == "vcoco" else 0
    outside = (hois[:, 0] < 0) | (hois[:, 0] >= boxes_of_hoi) | (hois[:, 1] < low) | (hois[:, 1] >= boxes_of_hoi)
    _first_bad(file, hoi_offsets, outside, "hois", hois,
               f"subject in 0..(boxes of the entry - 1), object in {low}..(boxes of the entry - 1)")
    names = arrays["file_names"].tolist()
    return names, HoiSet(boxes, labels, box_offsets, hois, hoi_offsets, scores, what=file)


def _first_bad(file: str, offsets: np.ndarray, bad: np.ndarray, field: str, values: np.ndarray,
               expected: str) -> None:
    rows = np.flatnonzero(bad)
    if rows.size:
        entry = int(np.searchsorted(offsets, rows[0], side="right") - 1)
        raise FormatError(file, "bad value", record=entry, field=f"{field}[{int(rows[0] - offsets[entry])}]",
                          expected=expected, found=values[rows[0]].tolist())
