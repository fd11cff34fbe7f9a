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
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from hoi_bench.errors import FormatError
from hoi_bench.files import read_json

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

    @property
    def object_classes(self) -> list[str]:
        return self.thing_classes + self.stuff_classes

    def by_key(self) -> dict[str, SceneGraphImage]:
        """Images indexed by :func:`image_key` of their id."""
        return {image.key: image for image in self.images}


_IMAGE_KEYS = ("file_name", "height", "width", "image_id", "pan_seg_file_name", "segments_info", "annotations",
               "relations")


def read_annotation(path: str | os.PathLike, *, require_negatives: bool | None = None) -> SceneGraphAnnotation:
    """Read and validate a ``psg.json`` or Haystack annotation file.

    ``require_negatives=True`` insists on ``neg_relations`` in every record (Haystack), ``False`` ignores them
    if present, ``None`` reads them when present. Every problem raises :class:`FormatError` naming the record
    (its position in ``data``) and the field.
    """
    path = Path(path)
    raw = read_json(path, what="annotation file")
    return parse_annotation(raw, source=str(path), require_negatives=require_negatives)


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
    if not isinstance(raw, dict):
        raise FormatError(source, "top level is not an object", expected="dict", found=type(raw).__name__)
    for key in ("thing_classes", "stuff_classes", "predicate_classes", "data"):
        if not isinstance(raw.get(key), list):
            raise FormatError(source, "missing or not a list", field=key, expected="list",
                              found=type(raw.get(key)).__name__)
    num_objects = len(raw["thing_classes"]) + len(raw["stuff_classes"])
    num_predicates = len(raw["predicate_classes"])
    if require_negatives is None:
        require_negatives = bool(raw["data"]) and all("neg_relations" in r for r in raw["data"] if isinstance(r, dict))
    images = []
    seen: dict[str, int] = {}
    for index, record in enumerate(raw["data"]):
        image = _parse_image(record, index, source, num_objects, num_predicates, require_negatives)
        if image.key in seen:
            raise FormatError(source, "duplicate image id", record=index, field="image_id",
                              expected="ids unique across data", found=f"{image.image_id!r} (also record {seen[image.key]})")
        seen[image.key] = index
        images.append(image)
    test_ids = raw.get("test_image_ids", [])
    if not isinstance(test_ids, list):
        raise FormatError(source, "not a list", field="test_image_ids", expected="list", found=type(test_ids).__name__)
    return SceneGraphAnnotation(list(raw["thing_classes"]), list(raw["stuff_classes"]),
                                list(raw["predicate_classes"]), images, list(test_ids), bool(require_negatives),
                                source)


def _parse_image(record: Any, index: int, source: str | None, num_objects: int, num_predicates: int,
                 with_negatives: bool) -> SceneGraphImage:
    if not isinstance(record, dict):
        raise FormatError(source, "image record is not an object", record=index, expected="dict",
                          found=type(record).__name__)
    required = _IMAGE_KEYS + (("neg_relations",) if with_negatives else ())
    for key in required:
        if key not in record:
            raise FormatError(source, "missing key", record=index, field=key, expected=f"keys {list(required)}",
                              found=sorted(record))
    for key in ("height", "width"):
        if not isinstance(record[key], int) or isinstance(record[key], bool) or record[key] <= 0:
            raise FormatError(source, "not a positive integer", record=index, field=key, expected="pixels > 0",
                              found=record[key])
    segments = record["segments_info"]
    annotations = record["annotations"]
    if not isinstance(segments, list) or not isinstance(annotations, list) or len(segments) != len(annotations):
        raise FormatError(source, "annotations must be parallel to segments_info", record=index, field="annotations",
                          expected=f"{len(segments) if isinstance(segments, list) else '?'} entries",
                          found=len(annotations) if isinstance(annotations, list) else type(annotations).__name__)
    boxes = np.zeros((len(segments), 4), dtype=np.float64)
    categories = np.zeros(len(segments), dtype=np.int64)
    for position, (segment, annotation) in enumerate(zip(segments, annotations)):
        for key in ("id", "category_id", "isthing"):
            if not isinstance(segment, dict) or key not in segment:
                raise FormatError(source, "missing key", record=index, field=f"segments_info[{position}].{key}",
                                  expected="id, category_id, isthing", found=segment)
        category = segment["category_id"]
        if not isinstance(category, int) or not 0 <= category < num_objects:
            raise FormatError(source, "object class out of range", record=index,
                              field=f"segments_info[{position}].category_id",
                              expected=f"0 <= category_id < {num_objects}", found=category)
        if not isinstance(annotation, dict) or annotation.get("category_id") != category:
            raise FormatError(source, "annotation does not match its segment", record=index,
                              field=f"annotations[{position}].category_id", expected=category,
                              found=annotation.get("category_id") if isinstance(annotation, dict) else annotation)
        box = annotation.get("bbox")
        if (not isinstance(box, (list, tuple)) or len(box) != 4 or not all(isinstance(v, (int, float)) for v in box)
                or not (np.isfinite(box).all() and box[0] <= box[2] and box[1] <= box[3])):
            raise FormatError(source, "bad box", record=index, field=f"annotations[{position}].bbox",
                              expected="[x1, y1, x2, y2] with x1 <= x2, y1 <= y2 (bbox_mode 0)", found=box)
        if annotation.get("bbox_mode", 0) != 0:
            raise FormatError(source, "unsupported box mode", record=index, field=f"annotations[{position}].bbox_mode",
                              expected="0 (XYXY_ABS)", found=annotation.get("bbox_mode"))
        boxes[position] = box
        categories[position] = category
    relations = _parse_triplets(record["relations"], "relations", index, source, len(segments), num_predicates,
                                allow_no_predicate=with_negatives)
    negatives = (_parse_triplets(record["neg_relations"], "neg_relations", index, source, len(segments),
                                 num_predicates, allow_no_predicate=True)
                 if with_negatives else np.zeros((0, 3), dtype=np.int64))
    extra = {k: v for k, v in record.items() if k not in _IMAGE_KEYS and k != "neg_relations"}
    return SceneGraphImage(record["image_id"], str(record["file_name"]), int(record["height"]),
                           int(record["width"]), str(record["pan_seg_file_name"]), list(segments), boxes, categories,
                           relations, negatives, extra)


def _parse_triplets(value: Any, name: str, index: int, source: str | None, num_segments: int, num_predicates: int,
                    *, allow_no_predicate: bool) -> np.ndarray:
    if not isinstance(value, list):
        raise FormatError(source, "not a list", record=index, field=name, expected="list of [s, o, p]",
                          found=type(value).__name__)
    lowest = NO_PREDICATE if allow_no_predicate else 0
    for position, triplet in enumerate(value):
        if (not isinstance(triplet, (list, tuple)) or len(triplet) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in triplet)):
            raise FormatError(source, "not a triplet of integers", record=index, field=f"{name}[{position}]",
                              expected="[subject, object, predicate]", found=triplet)
        subject, obj, predicate = triplet
        for role, segment in (("subject", subject), ("object", obj)):
            if not 0 <= segment < num_segments:
                raise FormatError(source, f"{role} index past segments_info", record=index,
                                  field=f"{name}[{position}]", expected=f"0 <= {role} < {num_segments}",
                                  found=triplet)
        if not lowest <= predicate < num_predicates:
            raise FormatError(source, "predicate index out of range", record=index, field=f"{name}[{position}]",
                              expected=f"{lowest} <= predicate < {num_predicates}", found=triplet)
    return np.asarray(value, dtype=np.int64).reshape(-1, 3)


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


def read_panoptic(path: str | os.PathLike | bytes) -> np.ndarray:
    """Segment-id map (H×W uint32) of a panoptic PNG given as a path or as PNG bytes."""
    import io

    source = io.BytesIO(path) if isinstance(path, bytes) else path
    try:
        with Image.open(source) as image:
            return rgb_to_id(np.asarray(image.convert("RGB")))
    except (OSError, SyntaxError) as error:
        raise FormatError(None if isinstance(path, bytes) else str(path), f"not a readable PNG: {error}") from error


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
