"""Read, validate and write the native files: OpenPSG ``psg.json``, the Haystack annotation file, panoptic PNGs.

Both annotation files share one layout (``thing_classes``, ``stuff_classes``, ``predicate_classes``, ``data``):
per image ``segments_info`` (COCO panoptic segments, ``category_id`` 0-based into ``thing_classes +
stuff_classes``), a parallel ``annotations`` list with xyxy pixel boxes, and ``relations`` ``[subject, object,
predicate]`` whose subject/object index ``segments_info`` and whose predicate is 0-based. PSG uses string image
ids and lists its test images in ``test_image_ids``; the Haystack file uses numeric ids and adds
``neg_relations`` (same shape: "this pair is *not* this predicate"). Haystack allows the predicate ``-1`` in both
lists; the official metric script skips such entries and so does :mod:`haystack_dataset.evaluation`.

Image ids are compared through :func:`image_key` everywhere, so ``7``, ``7.0`` and ``"7"`` name the same image.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from itertools import chain
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from haystack_dataset import typed_json
from hoi_bench.errors import FormatError
from hoi_bench.files import gc_paused, read_bytes

NO_PREDICATE = -1
"""Predicate index Haystack allows in ``relations``/``neg_relations``; skipped by the metrics."""

PSG_FILE = "psg/psg.json"
"""Default place of OpenPSG's ``psg.json`` under a data folder (OpenPSG's own ``data/psg/psg.json``)."""
HAYSTACK_FILE = "haystack/annotation_v1.json"
"""Default place of the Haystack annotation file (named ``annotation_v1.json`` in the Haystack README)."""
IMAGE_ROOT = "coco"
"""Folder that ``file_name`` and ``pan_seg_file_name`` are relative to (COCO 2017: ``train2017/``,
``val2017/``, ``panoptic_train2017/``, ``panoptic_val2017/``)."""


@lru_cache(maxsize=1)
def psg_classes() -> dict[str, list[str]]:
    """The released PSG class lists: 80 thing + 53 stuff object classes and 56 predicates, in index order.

    >>> c = psg_classes(); len(c["thing_classes"]), len(c["stuff_classes"]), len(c["predicate_classes"])
    (80, 53, 56)
    >>> c["predicate_classes"][0], c["predicate_classes"][-1]
    ('over', 'leaning on')
    """
    text = resources.files("haystack_dataset").joinpath("data/psg_classes.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return {key: list(data[key]) for key in ("thing_classes", "stuff_classes", "predicate_classes")}


def image_key(image_id: Any) -> str:
    """Canonical text form of an image id, so string ids (PSG), ints (Haystack) and NPY floats compare equal.

    >>> image_key(7), image_key("7"), image_key(7.0), image_key("000123"), image_key("a7")
    ('7', '7', '7', '123', 'a7')
    """
    if isinstance(image_id, (float, np.floating)):
        if not float(image_id).is_integer():
            raise FormatError(None, "image id is not an integer", field="image_id", expected="integer",
                              found=image_id)
        return str(int(image_id))
    if isinstance(image_id, (int, np.integer)) and not isinstance(image_id, bool):
        return str(int(image_id))
    text = str(image_id).strip()
    return str(int(text)) if text.isdigit() else text


@dataclass
class SceneGraphImage:
    """One image record: its segments, their boxes and the positive / negative relation triplets."""

    image_id: Any
    file_name: str
    height: int
    width: int
    pan_seg_file_name: str
    segments_info: list[dict]
    boxes: np.ndarray
    """(S, 4) float64 xyxy pixel boxes, parallel to ``segments_info``."""
    categories: np.ndarray
    """(S,) int64 object class of each segment, 0-based into ``thing_classes + stuff_classes``."""
    relations: np.ndarray
    """(R, 3) int64 ``[subject, object, predicate]``; the pair has the predicate."""
    neg_relations: np.ndarray
    """(N, 3) int64 ``[subject, object, predicate]``; the pair does not have the predicate (empty for PSG)."""
    extra: dict = field(default_factory=dict)
    """Other keys of the record (``coco_image_id`` ...), written back unchanged."""

    @property
    def key(self) -> str:
        return image_key(self.image_id)


@dataclass
class SceneGraphAnnotation:
    """A whole PSG or Haystack annotation file."""

    thing_classes: list[str]
    stuff_classes: list[str]
    predicate_classes: list[str]
    images: list[SceneGraphImage]
    test_image_ids: list[Any] = field(default_factory=list)
    has_negatives: bool = False
    """True for a Haystack file (every record carries ``neg_relations``)."""
    source: str | None = None
    has_test_image_ids: bool = True
    """False when the file has no ``test_image_ids`` key (the ``psg`` config needs it to define its test split)."""

    @property
    def object_classes(self) -> list[str]:
        return self.thing_classes + self.stuff_classes

    def by_key(self) -> dict[str, SceneGraphImage]:
        """Images indexed by :func:`image_key` of their id."""
        return {image.key: image for image in self.images}


_IMAGE_KEYS = ("file_name", "height", "width", "image_id", "pan_seg_file_name", "segments_info", "annotations",
               "relations")


class _Segment(msgspec.Struct, gc=False):
    id: int
    category_id: int
    isthing: int | bool


class _Box(msgspec.Struct, gc=False):
    category_id: int | None = None
    bbox: tuple[float, float, float, float] | None = None
    bbox_mode: int = 0


class _Record(msgspec.Struct, gc=False):
    file_name: str
    height: int
    width: int
    image_id: int | str | float
    pan_seg_file_name: str
    segments_info: list[_Segment]
    annotations: list[_Box]
    relations: list[tuple[int, int, int]]
    neg_relations: list[tuple[int, int, int]] | msgspec.UnsetType = msgspec.UNSET


class _File(msgspec.Struct, gc=False):
    thing_classes: list[Any]
    stuff_classes: list[Any]
    predicate_classes: list[Any]
    data: list[_Record]
    test_image_ids: list[Any] | msgspec.UnsetType = msgspec.UNSET


_DECODER = msgspec.json.Decoder(_File)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _describe(field_name: str) -> tuple[str, str | None]:
    """The wording of a type error at ``field_name`` (a path inside one record, or a top-level key)."""
    if re.fullmatch(r"(neg_)?relations\[\d+\](\[\d+\])?", field_name):
        return "not a triplet of integers", "[subject, object, predicate]"
    if field_name in ("relations", "neg_relations", "segments_info", "annotations", "test_image_ids"):
        return "not a list", "list"
    if field_name in ("thing_classes", "stuff_classes", "predicate_classes", "data"):
        return "missing or not a list", "list"
    if field_name in ("height", "width"):
        return "not a positive integer", "pixels > 0"
    if re.fullmatch(r"annotations\[\d+\]\.bbox(\[\d+\])?", field_name):
        return "bad box", "[x1, y1, x2, y2] with x1 <= x2, y1 <= y2 (bbox_mode 0)"
    if field_name == "":
        return "top level is not an object", "dict"
    return "wrong type", None


def read_annotation(path: str | os.PathLike, *, require_negatives: bool | None = None,
                    records: bool = True) -> SceneGraphAnnotation:
    """Read and validate a ``psg.json`` or Haystack annotation file (``.json`` or ``.json.gz``).

    ``require_negatives=True`` insists on ``neg_relations`` in every record (Haystack), ``False`` ignores them
    if present, ``None`` reads them when present. ``records=False`` leaves each image's ``segments_info`` and
    ``extra`` empty (the metrics need only the boxes, classes and relations), which halves the reading time.
    Every problem raises :class:`FormatError` naming the record (its position in ``data``) and the field.
    """
    path = Path(path)
    data = read_bytes(path, "annotation file")
    with gc_paused():
        return _parse(data, str(path), require_negatives, records)


def parse_annotation(raw: Any, *, source: str | None = None,
                     require_negatives: bool | None = None) -> SceneGraphAnnotation:
    """Validate an already-loaded annotation dict (see :func:`read_annotation`).

    >>> ann = parse_annotation({"thing_classes": ["person"], "stuff_classes": ["grass"],
    ...     "predicate_classes": ["on"], "data": [{"file_name": "a.jpg", "height": 4, "width": 4,
    ...     "image_id": "1", "pan_seg_file_name": "a.png",
    ...     "segments_info": [{"id": 1, "category_id": 0, "iscrowd": 0, "isthing": 1, "area": 4},
    ...                       {"id": 2, "category_id": 1, "iscrowd": 0, "isthing": 0, "area": 12}],
    ...     "annotations": [{"bbox": [0, 0, 2, 2], "bbox_mode": 0, "category_id": 0},
    ...                     {"bbox": [0, 0, 4, 4], "bbox_mode": 0, "category_id": 1}],
    ...     "relations": [[0, 1, 0]]}]})
    >>> ann.images[0].relations.tolist(), ann.has_negatives
    ([[0, 1, 0]], False)
    """
    try:
        data = msgspec.json.encode(raw)
    except (TypeError, ValueError, OverflowError) as error:
        raise FormatError(source, "not JSON-serialisable annotation data", expected="JSON values",
                          found=str(error)) from error
    return _parse(data, source, require_negatives, True)


def _parse(data: bytes, source: str | None, require_negatives: bool | None, records: bool) -> SceneGraphAnnotation:
    typed = typed_json.decode(data, _DECODER, file=source, what="annotation file", records="data",
                              describe=_describe)
    num_objects = len(typed.thing_classes) + len(typed.stuff_classes)
    num_predicates = len(typed.predicate_classes)
    has_negatives = [r.neg_relations is not msgspec.UNSET for r in typed.data]
    if require_negatives is None:
        require_negatives = bool(typed.data) and all(has_negatives)
    if require_negatives and not all(has_negatives):
        index = has_negatives.index(False)
        raise FormatError(source, "missing key", record=index, field="neg_relations",
                          expected=f"keys {list(_IMAGE_KEYS + ('neg_relations',))}", found="no neg_relations")
    for index, record in enumerate(typed.data):
        for key in ("height", "width"):
            if getattr(record, key) <= 0:
                raise FormatError(source, "not a positive integer", record=index, field=key, expected="pixels > 0",
                                  found=getattr(record, key))
        if len(record.segments_info) != len(record.annotations):
            raise FormatError(source, "annotations must be parallel to segments_info", record=index,
                              field="annotations", expected=f"{len(record.segments_info)} entries",
                              found=len(record.annotations))
    segment_counts = np.array([len(r.segments_info) for r in typed.data], dtype=np.int64)
    boxes, categories = _check_segments(typed.data, segment_counts, source, num_objects)
    relations = _check_triplets(typed.data, "relations", segment_counts, source, num_predicates,
                                allow_no_predicate=bool(require_negatives))
    negatives = (_check_triplets(typed.data, "neg_relations", segment_counts, source, num_predicates,
                                 allow_no_predicate=True) if require_negatives else None)
    raw_records = _raw_records(data) if records else None
    images, seen = [], {}
    empty = np.zeros((0, 3), dtype=np.int64)
    # each image's arrays are views of the validated concatenations: split once, no per-record numpy arithmetic
    box_parts = np.split(boxes, np.cumsum(segment_counts)[:-1]) if len(typed.data) else []
    category_parts = np.split(categories, np.cumsum(segment_counts)[:-1]) if len(typed.data) else []
    relation_parts = np.split(relations, np.cumsum([len(r.relations) for r in typed.data])[:-1]) \
        if len(typed.data) else []
    negative_parts = np.split(negatives, np.cumsum([len(r.neg_relations) for r in typed.data])[:-1]) \
        if negatives is not None and len(typed.data) else [empty] * len(typed.data)
    for index, record in enumerate(typed.data):
        key = image_key(record.image_id)
        if key in seen:
            raise FormatError(source, "duplicate image id", record=index, field="image_id",
                              expected="ids unique across data", found=f"{record.image_id!r} (also record {seen[key]})")
        seen[key] = index
        raw = raw_records[index] if raw_records is not None else {}
        images.append(SceneGraphImage(
            record.image_id, record.file_name, record.height, record.width, record.pan_seg_file_name,
            list(raw.get("segments_info", [])), box_parts[index], category_parts[index], relation_parts[index],
            negative_parts[index], {k: v for k, v in raw.items() if k not in _IMAGE_KEYS and k != "neg_relations"}))
    test_ids = [] if typed.test_image_ids is msgspec.UNSET else list(typed.test_image_ids)
    return SceneGraphAnnotation(list(typed.thing_classes), list(typed.stuff_classes), list(typed.predicate_classes),
                                images, test_ids, bool(require_negatives), source,
                                has_test_image_ids=typed.test_image_ids is not msgspec.UNSET)


def _raw_records(data: bytes) -> list[dict]:
    """The records as plain dicts, for ``segments_info`` and the keys this reader does not interpret."""
    return msgspec.json.decode(data)["data"]


def _locate(flat_index: int, counts: np.ndarray) -> tuple[int, int]:
    """(record, position inside it) of entry ``flat_index`` of the records' concatenated lists."""
    ends = np.cumsum(counts)
    record = int(np.searchsorted(ends, flat_index, side="right"))
    return record, int(flat_index - (ends[record] - counts[record]))


def _check_segments(records: list[_Record], counts: np.ndarray, source: str | None,
                    num_objects: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, 4) boxes and (S,) classes of every segment of every record, validated all at once."""
    segments = list(chain.from_iterable(r.segments_info for r in records))
    annotations = list(chain.from_iterable(r.annotations for r in records))
    categories = np.array([s.category_id for s in segments], dtype=np.int64)
    bad = np.flatnonzero((categories < 0) | (categories >= num_objects))
    if len(bad):
        record, position = _locate(int(bad[0]), counts)
        raise FormatError(source, "object class out of range", record=record,
                          field=f"segments_info[{position}].category_id",
                          expected=f"0 <= category_id < {num_objects}", found=int(categories[bad[0]]))
    mismatch = np.flatnonzero(np.array([a.category_id != s.category_id for a, s in zip(annotations, segments)],
                                       dtype=bool))
    if len(mismatch):
        record, position = _locate(int(mismatch[0]), counts)
        raise FormatError(source, "annotation does not match its segment", record=record,
                          field=f"annotations[{position}].category_id", expected=int(categories[mismatch[0]]),
                          found=annotations[mismatch[0]].category_id)
    missing = [i for i, a in enumerate(annotations) if a.bbox is None]
    boxes = np.array([a.bbox if a.bbox is not None else (0.0, 0.0, 0.0, 0.0) for a in annotations],
                     dtype=np.float64).reshape(-1, 4)
    valid = (np.abs(boxes) <= _FLOAT32_MAX).all(axis=1) & (boxes[:, 0] <= boxes[:, 2]) & (boxes[:, 1] <= boxes[:, 3])
    bad = np.flatnonzero(~valid)
    candidates = ([int(bad[0])] if len(bad) else []) + missing[:1]
    if candidates:
        first = min(candidates)
        record, position = _locate(first, counts)
        raise FormatError(source, "bad box", record=record, field=f"annotations[{position}].bbox",
                          expected="[x1, y1, x2, y2] with x1 <= x2, y1 <= y2 (bbox_mode 0), within float32 range",
                          found=annotations[first].bbox)
    modes = np.flatnonzero(np.array([a.bbox_mode for a in annotations], dtype=np.int64))
    if len(modes):
        record, position = _locate(int(modes[0]), counts)
        raise FormatError(source, "unsupported box mode", record=record, field=f"annotations[{position}].bbox_mode",
                          expected="0 (XYXY_ABS)", found=annotations[modes[0]].bbox_mode)
    return boxes, categories


def _check_triplets(records: list[_Record], name: str, segment_counts: np.ndarray, source: str | None,
                    num_predicates: int, *, allow_no_predicate: bool) -> np.ndarray:
    """Every record's ``name`` triplets as one (T, 3) int64 array; indices checked against each record's segments."""
    lists = [getattr(r, name) for r in records]
    counts = np.array([len(triplets) for triplets in lists], dtype=np.int64)
    table = np.array(list(chain.from_iterable(lists)), dtype=np.int64).reshape(-1, 3)
    limit = np.repeat(segment_counts, counts)
    lowest = NO_PREDICATE if allow_no_predicate else 0
    checks = (
        ((table[:, 0] < 0) | (table[:, 0] >= limit), "subject index past segments_info", "0 <= subject < {limit}"),
        ((table[:, 1] < 0) | (table[:, 1] >= limit), "object index past segments_info", "0 <= object < {limit}"),
        ((table[:, 2] < lowest) | (table[:, 2] >= num_predicates), "predicate index out of range",
         f"{lowest} <= predicate < {num_predicates}"),
    )
    firsts = [(int(np.flatnonzero(bad)[0]), reason, expected) for bad, reason, expected in checks if bad.any()]
    if firsts:
        flat, reason, expected = min(firsts, key=lambda item: item[0])
        record, position = _locate(flat, counts)
        raise FormatError(source, reason, record=record, field=f"{name}[{position}]",
                          expected=expected.format(limit=int(limit[flat])), found=table[flat].tolist())
    return table


def annotation_to_json(annotation: SceneGraphAnnotation) -> dict:
    """The native JSON object of ``annotation`` (inverse of :func:`parse_annotation`)."""
    data = []
    for image in annotation.images:
        record = {
            "file_name": image.file_name, "height": image.height, "width": image.width,
            "image_id": image.image_id, "pan_seg_file_name": image.pan_seg_file_name,
            "segments_info": image.segments_info,
            "annotations": [{"bbox": [float(v) for v in box], "bbox_mode": 0, "category_id": int(category)}
                            for box, category in zip(image.boxes, image.categories)],
            "relations": image.relations.tolist(),
        }
        if annotation.has_negatives:
            record["neg_relations"] = image.neg_relations.tolist()
        record.update(image.extra)
        data.append(record)
    out = {"thing_classes": annotation.thing_classes, "stuff_classes": annotation.stuff_classes,
           "predicate_classes": annotation.predicate_classes, "data": data}
    if annotation.test_image_ids:
        out["test_image_ids"] = annotation.test_image_ids
    return out


# ----------------------------------------------------------------------------------------------- panoptic PNGs


def rgb_to_id(rgb: np.ndarray) -> np.ndarray:
    """COCO panoptic segment ids of an H×W×3 uint8 PNG: ``R + 256·G + 256²·B`` (panopticapi ``rgb2id``).

    >>> rgb_to_id(np.array([[[1, 2, 3], [0, 0, 0]]], dtype=np.uint8)).tolist()
    [[197121, 0]]
    """
    rgb = np.asarray(rgb, dtype=np.uint32)
    return rgb[..., 0] + 256 * rgb[..., 1] + 256 * 256 * rgb[..., 2]


def id_to_rgb(ids: np.ndarray) -> np.ndarray:
    """Inverse of :func:`rgb_to_id`: the H×W×3 uint8 colours that encode segment ids.

    >>> id_to_rgb(np.array([[197121]])).tolist()
    [[[1, 2, 3]]]
    """
    ids = np.asarray(ids, dtype=np.uint32)
    return np.stack([ids % 256, ids // 256 % 256, ids // 65536 % 256], axis=-1).astype(np.uint8)


def read_panoptic(path: str | os.PathLike | bytes, *, file: str | os.PathLike | None = None,
                  record: int | str | None = None) -> np.ndarray:
    """Segment-id map (H×W uint32) of a panoptic PNG given as a path or as PNG bytes.

    The PNG goes through the image checks of ``hoi_bench.images`` first: a header claiming more than
    ``MAX_IMAGE_PIXELS`` pixels (a decompression bomb) or a file that is no image is a ``FormatError`` naming
    ``file`` (default: the path) and ``record``, before any pixel is decoded.
    """
    import io

    from hoi_bench.images import open_checked

    source = io.BytesIO(path) if isinstance(path, bytes) else path
    file = file if file is not None else "<panoptic PNG bytes>" if isinstance(path, bytes) else path
    try:
        with open_checked(source, file, record) as image:
            return rgb_to_id(np.asarray(image.convert("RGB")))
    except (OSError, SyntaxError) as error:
        raise FormatError(str(file), f"not a readable PNG: {error}", record=record) from error


def segment_masks(id_map: np.ndarray, segments_info: list[dict], *, file: str | None = None,
                  record: int | str | None = None) -> np.ndarray:
    """(S, H, W) boolean masks, one per ``segments_info`` entry, from a decoded panoptic id map.

    A segment whose id does not occur in the PNG is an error naming it.

    >>> ids = np.array([[5, 5], [0, 9]])
    >>> segment_masks(ids, [{"id": 9}, {"id": 5}]).astype(int).tolist()
    [[[0, 0], [0, 1]], [[1, 1], [0, 0]]]
    """
    wanted = np.asarray([int(s["id"]) for s in segments_info], dtype=np.int64)
    masks = np.asarray(id_map)[None, :, :] == wanted[:, None, None]
    empty = np.flatnonzero(~masks.reshape(len(wanted), -1).any(axis=1))
    if len(empty):
        position = int(empty[0])
        raise FormatError(file, "segment id absent from the panoptic PNG", record=record,
                          field=f"segments_info[{position}].id", expected="an id present in the PNG",
                          found=int(wanted[position]))
    return masks
