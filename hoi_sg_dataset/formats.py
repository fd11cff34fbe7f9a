"""Read, validate and write the PPDM/QPIC annotation files of HICO-DET, V-COCO and their SG splits.

Every HICO-DET-SG / V-COCO-SG file (``trainval_hico.json``, ``test_hico.json``, ``trainval_vcoco.json``,
``test_vcoco.json``, ``SGsplits/*/{trainval,test}/*_sg{1,2,3}.json``) is a JSON list, one record per image::

    {"file_name": "HICO_train2015_00000005.jpg", "img_id": 5,
     "annotations": [{"bbox": [81, 153, 202, 271], "category_id": 1}, ...],
     "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 88, "hoi_category_id": 242}]}

Quirks the readers accept (all seen in the official files):

- ``img_id`` and ``hoi_category_id`` appear only in HICO records that come from ``trainval_hico.json``;
- V-COCO ``object_id`` may be ``-1`` (no object: ``stand``, ``walk``, ... or an unannotated role);
- ``hoi_annotation`` may be empty (V-COCO images whose persons have no action);
- HICO boxes are ints, V-COCO boxes floats (crowd boxes ints); both are kept as written;
- key order differs between the HICO trainval, HICO test and V-COCO records; the writer reproduces it, so
  ``write_annotations(path, read_annotations(official_file))`` rewrites an official file byte for byte.

Ids stay raw: box ``category_id`` is a COCO id 1..90 (with gaps), HOI ``category_id`` is a verb id
(HICO 1..117, V-COCO 0..28), ``hoi_category_id`` a HICO HOI class 1..600.

Public API:

- ``read_annotations(path, dataset=None, validate=True) -> list[ImageRecord]`` (``dataset`` = ``"hico"`` or
  ``"vcoco"``; ``None`` detects it from the file names);
- ``parse_annotations(data, dataset, source=...)`` for already-decoded JSON;
- ``write_annotations(path, records, dataset=None)`` (atomic: a failed write leaves the old file);
- ``ImageRecord`` with ``boxes``/``box_labels``/``hoi_triplets`` numpy views and ``origin_split``;
- ``detect_dataset(file_name)``, ``origin_split(file_name)``.

Every problem raises ``hoi_bench.errors.FormatError`` naming the file, the record index, the field, what was
expected and what was found.

>>> records = parse_annotations([{"file_name": "COCO_val2014_000000000042.jpg",
...     "annotations": [{"category_id": 1, "bbox": [0.5, 1.0, 20.0, 30.0]}],
...     "hoi_annotation": [{"subject_id": 0, "object_id": -1, "category_id": 1}]}], "vcoco")
>>> records[0].origin_split, records[0].hoi_triplets.tolist()
('val2014', [[0, -1, 1]])
>>> parse_annotations([{"file_name": "x.jpg", "annotations": [], "hoi_annotation": [
...     {"subject_id": 0, "object_id": -1, "category_id": 1}]}], "vcoco", source="mine.json")
Traceback (most recent call last):
...
hoi_bench.errors.FormatError: mine.json: record 0: field 'hoi_annotation[0].subject_id': index past the box
list of x.jpg (expected 0 <= subject_id < 0, found 0)
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hoi_bench.errors import FormatError
from hoi_bench.files import read_json, write_json_atomic
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_lookup, hico_verbs, vcoco_verbs

logger = logging.getLogger(__name__)

Dataset = Literal["hico", "vcoco"]
DATASETS: tuple[str, ...] = ("hico", "vcoco")

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""Largest coordinate or score magnitude accepted anywhere: beyond it a float32 (the datasets' box feature,
QPIC's tensors) holds inf, so a finite-looking number would silently become an infinite box."""



def within_float32(values: np.ndarray) -> bool:
    """Whether every value of a numeric array is finite and within +-``FLOAT32_MAX`` (two reductions, no
    temporary array: NaN fails the comparisons).

    >>> within_float32(np.array([0.0, -3e38])), within_float32(np.array([1e39])), within_float32(np.array([np.nan]))
    (True, False, False)
    """
    return values.size == 0 or bool(-FLOAT32_MAX <= values.min() and values.max() <= FLOAT32_MAX)


_ORIGIN = re.compile(r"^(HICO|COCO)_(train2015|test2015|train2014|val2014)_(\d+)\.\w+$")
_KNOWN_RECORD_KEYS = frozenset({"file_name", "img_id", "annotations", "hoi_annotation"})


@dataclass(slots=True)
class BoxAnnotation:
    """One entry of ``annotations``: a box ``[x1, y1, x2, y2]`` in pixels and its raw COCO category id."""

    bbox: list[int | float]
    category_id: int


@dataclass(slots=True)
class HoiAnnotation:
    """One entry of ``hoi_annotation``: subject and object index into the boxes, the raw verb id.

    ``object_id`` is ``-1`` for a V-COCO action without object; ``hoi_category_id`` (HICO 1..600) is present
    only in records taken from ``trainval_hico.json``.
    """

    subject_id: int
    object_id: int
    category_id: int
    hoi_category_id: int | None = None


@dataclass(slots=True)
class ImageRecord:
    """One image of an annotation file, fields named as upstream writes them.

    ``extra`` keeps record keys this format does not define, so writing a record back loses nothing.
    """

    file_name: str
    annotations: list[BoxAnnotation]
    hoi_annotation: list[HoiAnnotation]
    img_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def boxes(self) -> np.ndarray:
        """``(num_boxes, 4)`` float64 array of ``[x1, y1, x2, y2]``."""
        return np.array([b.bbox for b in self.annotations], dtype=np.float64).reshape(-1, 4)

    @property
    def box_labels(self) -> np.ndarray:
        """``(num_boxes,)`` int64 array of raw COCO category ids."""
        return np.array([b.category_id for b in self.annotations], dtype=np.int64)

    @property
    def hoi_triplets(self) -> np.ndarray:
        """``(num_hois, 3)`` int64 array of ``[subject_id, object_id, verb_id]`` (raw ids, -1: no object)."""
        rows = [(h.subject_id, h.object_id, h.category_id) for h in self.hoi_annotation]
        return np.array(rows, dtype=np.int64).reshape(-1, 3)

    @property
    def origin_split(self) -> str | None:
        """Original split the image file is in (``train2015``, ``test2015``, ``train2014``, ``val2014``)."""
        return origin_split(self.file_name)


def origin_split(file_name: str) -> str | None:
    """Original split encoded in an upstream image name, or ``None`` for a name in no known pattern.

    SG test files mix images of both original splits, so a loader must pick the folder from this prefix.

    >>> origin_split("HICO_test2015_00000002.jpg"), origin_split("COCO_train2014_000000226162.jpg")
    ('test2015', 'train2014')
    >>> origin_split("a.jpg") is None
    True
    """
    match = _ORIGIN.match(file_name)
    return match.group(2) if match else None


def detect_dataset(file_name: str) -> Dataset | None:
    """``"hico"`` for ``HICO_*`` image names, ``"vcoco"`` for ``COCO_*``, else ``None``.

    >>> detect_dataset("HICO_train2015_00000005.jpg"), detect_dataset("COCO_val2014_000000000042.jpg")
    ('hico', 'vcoco')
    """
    if file_name.startswith("HICO_"):
        return "hico"
    if file_name.startswith("COCO_"):
        return "vcoco"
    return None


def read_annotations(
    path: str | os.PathLike,
    dataset: Dataset | None = None,
    *,
    validate: bool = True,
    allow_inverted_boxes: bool = False,
    allow_repeated_images: bool = False,
) -> list[ImageRecord]:
    """Read and validate one annotation file; ``dataset`` ``None`` detects it from the first file name.

    ``validate=False`` skips the id and index checks (the record structure is still checked), for files in
    this format that use other vocabularies. The two ``allow_*`` switches are for the metrics, which score what
    the official evaluation code scores: a box with x2 < x1 or y2 < y1 (the metric counts them in a warning),
    an image listed twice (a training file counted for rare / non-rare, as QPIC counts every listing).
    """
    path = Path(path)
    data = read_json(path, what="annotation file")
    if dataset is None:
        dataset = _detect_from_data(data, str(path))
    return parse_annotations(data, dataset, source=str(path), validate=validate,
                             allow_inverted_boxes=allow_inverted_boxes, allow_repeated_images=allow_repeated_images)


def _detect_from_data(data: Any, source: str) -> Dataset:
    if isinstance(data, list):
        for record in data:
            if isinstance(record, dict) and isinstance(record.get("file_name"), str):
                found = detect_dataset(record["file_name"])
                if found is not None:
                    return found
                break
    raise FormatError(
        source,
        "cannot tell HICO-DET from V-COCO; pass dataset='hico' or 'vcoco'",
        record=0,
        field="file_name",
        expected="a name starting with HICO_ or COCO_",
        found=data[0].get("file_name") if data and isinstance(data[0], dict) else None,
    )


def parse_annotations(
    data: Any,
    dataset: Dataset,
    *,
    source: str = "<annotations>",
    validate: bool = True,
    allow_inverted_boxes: bool = False,
    allow_repeated_images: bool = False,
) -> list[ImageRecord]:
    """Turn decoded JSON (a list of image dicts) into ``ImageRecord`` objects, validating every field
    (``allow_*``: see :func:`read_annotations`)."""
    if dataset not in DATASETS:
        raise FormatError(
            source, "unknown dataset", field="dataset", expected=" or ".join(DATASETS), found=dataset
        )
    if not isinstance(data, list):
        raise FormatError(
            source,
            "an annotation file is a JSON list of image records",
            expected="list",
            found=type(data).__name__,
        )
    checker = _Checker(source, dataset, validate, allow_inverted_boxes)
    records = [checker.record(index, raw) for index, raw in enumerate(data)]
    if allow_repeated_images:
        return records
    first_at: dict[str, int] = {}
    for index, record in enumerate(records):
        first = first_at.setdefault(record.file_name, index)
        if first != index:
            raise FormatError(
                source,
                f"image listed twice (its GT would be counted twice), first at record {first}",
                record=index,
                field="file_name",
                expected="one record per image",
                found=record.file_name,
            )
    return records


class _Checker:
    """Validates raw record dicts and builds ``ImageRecord`` objects; one instance per file."""

    def __init__(self, source: str, dataset: Dataset, validate: bool, allow_inverted_boxes: bool = False) -> None:
        self.source = source
        self.dataset = dataset
        self.validate = validate
        self.allow_inverted_boxes = allow_inverted_boxes
        self.objects = coco_objects()
        self.verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
        self.hoi_lookup = hico_hoi_lookup() if dataset == "hico" else {}
        self.allow_no_object = dataset == "vcoco"

    def fail(self, index: int, field: str, message: str, expected: Any, found: Any) -> FormatError:
        return FormatError(self.source, message, record=index, field=field, expected=expected, found=found)

    def record(self, index: int, raw: Any) -> ImageRecord:
        if type(raw) is not dict:
            raise self.fail(index, "<record>", "a record is a JSON object", "object", type(raw).__name__)
        file_name = raw.get("file_name")
        if type(file_name) is not str or not file_name:
            raise self.fail(
                index, "file_name", "missing or empty image file name", "non-empty string", file_name
            )
        img_id = raw.get("img_id")
        if img_id is not None and type(img_id) is not int:
            raise self.fail(index, "img_id", "image id is not an integer", "int", img_id)
        boxes = self.boxes(index, file_name, raw.get("annotations", _MISSING))
        hois = self.hois(index, file_name, raw.get("hoi_annotation", _MISSING), boxes)
        known = 3 + ("img_id" in raw)
        extra = {} if len(raw) == known else {k: v for k, v in raw.items() if k not in _KNOWN_RECORD_KEYS}
        return ImageRecord(file_name, boxes, hois, img_id, extra)

    def boxes(self, index: int, file_name: str, raw: Any) -> list[BoxAnnotation]:
        if type(raw) is not list:
            raise self.fail(
                index,
                "annotations",
                f"box list of {file_name} is missing or not a list",
                "list",
                None if raw is _MISSING else raw,
            )
        out = []
        for position, box in enumerate(raw):
            if type(box) is not dict:
                raise self.fail(index, f"annotations[{position}]", "a box is a JSON object", "object", box)
            bbox = box.get("bbox")
            category = box.get("category_id")
            if type(bbox) is not list or len(bbox) != 4 or not all(_is_number(v) for v in bbox):
                raise self.fail(
                    index,
                    f"annotations[{position}].bbox",
                    f"malformed box in {file_name}",
                    "[x1, y1, x2, y2] of 4 numbers",
                    bbox,
                )
            x1, y1, x2, y2 = bbox
            in_order = self.allow_inverted_boxes or (x1 <= x2 and y1 <= y2)
            if not in_order or not all(map(math.isfinite, bbox)):
                raise self.fail(
                    index,
                    f"annotations[{position}].bbox",
                    f"box corners out of order in {file_name}",
                    "finite x1 <= x2 and y1 <= y2",
                    bbox,
                )
            if not all(abs(v) <= FLOAT32_MAX for v in bbox):
                raise self.fail(
                    index,
                    f"annotations[{position}].bbox",
                    f"coordinate out of range in {file_name} (it would be stored as inf)",
                    f"coordinates within +-{FLOAT32_MAX:.4g} (float32)",
                    bbox,
                )
            if type(category) is not int:
                raise self.fail(
                    index,
                    f"annotations[{position}].category_id",
                    "object category is not an integer",
                    "int",
                    category,
                )
            if self.validate and category not in self.objects:
                raise self.fail(
                    index,
                    f"annotations[{position}].category_id",
                    f"unknown COCO category in {file_name}",
                    "a COCO id among the 80 used in 1..90",
                    category,
                )
            out.append(BoxAnnotation(bbox, category))
        return out

    def hois(self, index: int, file_name: str, raw: Any, boxes: list[BoxAnnotation]) -> list[HoiAnnotation]:
        if type(raw) is not list:
            raise self.fail(
                index,
                "hoi_annotation",
                f"HOI list of {file_name} is missing or not a list",
                "list",
                None if raw is _MISSING else raw,
            )
        num_boxes = len(boxes)
        out = []
        for position, hoi in enumerate(raw):
            where = f"hoi_annotation[{position}]"
            if type(hoi) is not dict:
                raise self.fail(index, where, "an HOI is a JSON object", "object", hoi)
            subject = hoi.get("subject_id")
            obj = hoi.get("object_id")
            verb = hoi.get("category_id")
            hoi_id = hoi.get("hoi_category_id")
            for name, value in (("subject_id", subject), ("object_id", obj), ("category_id", verb)):
                if type(value) is not int:
                    raise self.fail(
                        index,
                        f"{where}.{name}",
                        f"HOI field of {file_name} is missing or not an integer",
                        "int",
                        value,
                    )
            if hoi_id is not None and type(hoi_id) is not int:
                raise self.fail(
                    index, f"{where}.hoi_category_id", "HOI class id is not an integer", "int", hoi_id
                )
            if not 0 <= subject < num_boxes:
                raise self.fail(
                    index,
                    f"{where}.subject_id",
                    f"index past the box list of {file_name}",
                    f"0 <= subject_id < {num_boxes}",
                    subject,
                )
            if not (0 <= obj < num_boxes or (obj == -1 and self.allow_no_object)):
                low = "-1 (no object)" if self.allow_no_object else "0"
                raise self.fail(
                    index,
                    f"{where}.object_id",
                    f"index past the box list of {file_name}",
                    f"{low} <= object_id < {num_boxes}",
                    obj,
                )
            if self.validate:
                self.check_ids(
                    index, where, file_name, verb, hoi_id, boxes[obj].category_id if obj >= 0 else None
                )
            out.append(HoiAnnotation(subject, obj, verb, hoi_id))
        return out

    def check_ids(
        self,
        index: int,
        where: str,
        file_name: str,
        verb: int,
        hoi_id: int | None,
        object_category: int | None,
    ) -> None:
        if verb not in self.verbs:
            first, last = self.verbs.raw_ids[0], self.verbs.raw_ids[-1]
            raise self.fail(
                index,
                f"{where}.category_id",
                f"unknown {self.dataset} verb id in {file_name}",
                f"a verb id in {first}..{last}",
                verb,
            )
        if hoi_id is None:
            return
        if self.dataset != "hico":
            raise self.fail(
                index, f"{where}.hoi_category_id", "V-COCO records have no HOI class id", "absent", hoi_id
            )
        expected = self.hoi_lookup.get((verb, object_category))
        if expected is None:
            raise self.fail(
                index,
                f"{where}.category_id",
                f"verb-object pair of {file_name} is none of the 600 HICO-DET HOI classes",
                "a (verb, object) pair of the 600 classes",
                (verb, object_category),
            )
        if hoi_id != expected:
            raise self.fail(
                index,
                f"{where}.hoi_category_id",
                f"HOI class id disagrees with verb {verb} and object category {object_category}",
                expected,
                hoi_id,
            )


_MISSING = object()


def _is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


def record_to_json(record: ImageRecord, dataset: Dataset) -> dict[str, Any]:
    """The upstream dict of ``record``, keys in the order upstream writes them.

    HICO trainval records: ``file_name, img_id, annotations, hoi_annotation``; HICO test records (no
    ``img_id``): ``file_name, hoi_annotation, annotations``; V-COCO: ``annotations, hoi_annotation,
    file_name`` with boxes as ``{"category_id", "bbox"}``.

    >>> box, hoi = BoxAnnotation([1, 2, 3, 4], 1), HoiAnnotation(0, 0, 77)
    >>> r = ImageRecord("HICO_test2015_00000002.jpg", [box], [hoi])
    >>> list(record_to_json(r, "hico"))
    ['file_name', 'hoi_annotation', 'annotations']
    """
    hois = []
    for h in record.hoi_annotation:
        entry = {"subject_id": h.subject_id, "object_id": h.object_id, "category_id": h.category_id}
        if h.hoi_category_id is not None:
            entry["hoi_category_id"] = h.hoi_category_id
        hois.append(entry)
    if dataset == "vcoco":
        boxes = [{"category_id": b.category_id, "bbox": b.bbox} for b in record.annotations]
        out = {"annotations": boxes, "hoi_annotation": hois, "file_name": record.file_name}
        if record.img_id is not None:
            out["img_id"] = record.img_id
    else:
        boxes = [{"bbox": b.bbox, "category_id": b.category_id} for b in record.annotations]
        if record.img_id is not None:
            out = {
                "file_name": record.file_name,
                "img_id": record.img_id,
                "annotations": boxes,
                "hoi_annotation": hois,
            }
        else:
            out = {"file_name": record.file_name, "hoi_annotation": hois, "annotations": boxes}
    out.update(record.extra)
    return out


def write_annotations(
    path: str | os.PathLike, records: Sequence[ImageRecord], dataset: Dataset | None = None
) -> Path:
    """Write ``records`` as an upstream annotation file (``json.dump``, no indentation) atomically.

    ``dataset`` ``None`` detects it from the first file name (HICO when there are no records).
    """
    if dataset is None:
        dataset = (detect_dataset(records[0].file_name) if records else None) or "hico"
    payload = [record_to_json(r, dataset) for r in records]
    return write_json_atomic(path, payload)


def iter_combinations(records: Iterable[ImageRecord]) -> Iterable[tuple[int, int]]:
    """``(object category, verb)`` of every HOI with an object, in file order (raw ids)."""
    for record in records:
        boxes = record.annotations
        for h in record.hoi_annotation:
            if h.object_id >= 0:
                yield boxes[h.object_id].category_id, h.category_id
