"""Typed readers that decode PPDM/QPIC prediction files and hoi_sg GT files straight into ``HoiSet``s.

``predictions.read_predictions`` and ``formats.read_annotations`` check every field in Python, one dict per
box and per HOI: on a full-size QPIC prediction file (851,500 HOIs, 1.7 million boxes, 150-170 MB) that is
most of the time of ``hoi-bench evaluate``. Here msgspec decodes the file into ``Struct`` classes, checking
JSON syntax, field names and JSON types (``int`` rejects ``1.0`` and ``true``) in compiled code, with the
garbage collector paused; the values are then copied into numpy arrays (boxes through msgspec's MessagePack
bytes, see :func:`_boxes`) and every remaining rule (ids in the vocabulary, indices inside the image's box list, finite
numbers inside the float32 range, box corners in order, HOI class ids, one record per image) is checked on
whole columns at once.

The error messages stay those of the Python validators: on the first problem of any kind the file is read
again by them (``read_json``), and they raise their usual ``FormatError`` (file, record, field, expected,
found). The second read costs time only when the input is wrong; that fallback lives with the Python
validators (``predictions.read_reference_set`` / ``read_prediction_set``), so this module imports none of them.
A large prediction file may be decoded in pieces by several processes (:func:`decode_predictions_in_pieces`,
``hoi_bench.forked``). Why msgspec
``Struct`` classes and not ``msgspec.Raw`` spans parsed by numpy, and the figures behind each choice:
``docs/hoi_sg_metrics.md``, "Reading speed".
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter

import msgspec
import numpy as np

from hoi_bench import forked
from hoi_bench.files import gc_paused
from hoi_sg_dataset.evaluation import HoiSet
from hoi_sg_dataset.formats import within_float32
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_lookup, hico_verbs, vcoco_verbs


class _Box(msgspec.Struct, gc=False):
    bbox: list[float]
    category_id: int


class _PredictedHoi(msgspec.Struct, gc=False):
    subject_id: int
    object_id: int
    category_id: int
    score: float


class _PredictionEntry(msgspec.Struct, gc=False):
    file_name: str
    predictions: list[_Box]
    hoi_prediction: list[_PredictedHoi]


class _GtHoi(msgspec.Struct, gc=False):
    subject_id: int
    object_id: int
    category_id: int
    hoi_category_id: int | None = None


class _GtRecord(msgspec.Struct, gc=False):
    file_name: str
    annotations: list[_Box]
    hoi_annotation: list[_GtHoi]
    img_id: int | None = None


_PREDICTIONS = msgspec.json.Decoder(list[_PredictionEntry])
_REFERENCES = msgspec.json.Decoder(list[_GtRecord])


class TypedDecodeError(Exception):
    """Some rule failed: the caller re-reads the file with the Python validator for the exact message."""


_PACKED_BOX = 56
"""Bytes of one ``_Box`` as MessagePack when it holds 4 coordinates and a category id in -32..127: a map
header, the key ``bbox``, an array header, 4 float64 (a type byte and 8 big-endian bytes each), the key
``category_id`` and a one-byte integer."""
_COORDINATES = [8 + 9 * corner + byte for corner in range(4) for byte in range(8)]
_TEMPLATE = np.frombuffer(msgspec.msgpack.encode(_Box([0.0] * 4, 0)), np.uint8)
_LAYOUT = np.setdiff1d(np.arange(_PACKED_BOX - 1), _COORDINATES)


def _boxes(items: list[_Box]) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates (n×4) and category ids of decoded boxes.

    msgspec writes the boxes back out as MessagePack in compiled code, where every valid box takes the same
    56 bytes, and numpy reads the columns from those bytes; that is half the time of copying 5 Python numbers
    per box. A bbox of other than 4 numbers, or a category id outside -32..127, changes the layout and the box
    is refused (valid COCO category ids are 1..90).
    """
    n = len(items)
    if n == 0:
        return np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
    packed = msgspec.msgpack.encode(items)
    start = len(packed) - _PACKED_BOX * n
    if start != (1 if n < 16 else 3 if n < 1 << 16 else 5):
        raise TypedDecodeError
    records = np.frombuffer(packed, np.uint8, offset=start).reshape(n, _PACKED_BOX)
    if not (records[:, _LAYOUT] == _TEMPLATE[_LAYOUT]).all():
        raise TypedDecodeError
    labels = records[:, -1].view(np.int8).astype(np.int64)
    boxes = np.ndarray((n, 4), ">f8", packed, start + _COORDINATES[0], (_PACKED_BOX, 9)).astype(np.float64)
    if not within_float32(boxes) or not coco_objects().contains(labels).all():
        raise TypedDecodeError
    return boxes, labels


def _columns_of(records: list, boxes_field: str, hois_field: str) -> tuple:
    """``(boxes, labels, box_offsets, hoi_items, hoi_offsets, hois)`` of decoded records (prediction entries or GT
    records): every image's boxes and HOIs concatenated, the HOIs' (subject, object, verb) as an M×3 array and
    the HOI records themselves for their remaining field."""
    box_items = list(chain.from_iterable(map(attrgetter(boxes_field), records)))
    hoi_items = list(chain.from_iterable(map(attrgetter(hois_field), records)))
    box_offsets = _offsets(len(getattr(r, boxes_field)) for r in records)
    hoi_offsets = _offsets(len(getattr(r, hois_field)) for r in records)
    boxes, labels = _boxes(box_items)
    del box_items
    fields = attrgetter("subject_id", "object_id", "category_id")
    hois = np.fromiter(chain.from_iterable(map(fields, hoi_items)), np.int64, 3 * len(hoi_items)).reshape(-1, 3)
    return boxes, labels, box_offsets, hoi_items, hoi_offsets, hois


def _offsets(lengths) -> np.ndarray:
    counts = np.fromiter(lengths, np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _check_indices(
    hois: np.ndarray, box_offsets: np.ndarray, hoi_offsets: np.ndarray, no_object: bool
) -> None:
    boxes_of_hoi = np.repeat(np.diff(box_offsets), np.diff(hoi_offsets))
    subject, obj = hois[:, 0], hois[:, 1]
    low = -1 if no_object else 0
    if not ((subject >= 0) & (subject < boxes_of_hoi) & (obj >= low) & (obj < boxes_of_hoi)).all():
        raise TypedDecodeError


@gc_paused()
def decode_predictions(data: bytes, dataset: str) -> tuple[list[str], HoiSet]:
    """File names (entry order) and the entries as one ``HoiSet``; raises ``TypedDecodeError`` on any problem."""
    try:
        entries = _PREDICTIONS.decode(data)
        names = [e.file_name for e in entries]
        if not all(names):
            raise TypedDecodeError
        boxes, labels, box_offsets, hoi_items, hoi_offsets, hois = _columns_of(entries, "predictions",
                                                                               "hoi_prediction")
        del entries
        scores = np.fromiter(map(attrgetter("score"), hoi_items), np.float64, len(hoi_items))
        del hoi_items
    except (msgspec.DecodeError, OverflowError) as error:
        raise TypedDecodeError from error
    verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
    _check_indices(hois, box_offsets, hoi_offsets, no_object=dataset == "vcoco")
    if not verbs.contains(hois[:, 2]).all() or not within_float32(scores):
        raise TypedDecodeError
    return names, HoiSet(boxes, labels, box_offsets, hois, hoi_offsets, scores, what="predictions")


@gc_paused()
def decode_references(data: bytes, dataset: str, *, allow_inverted_boxes: bool = False,
                      allow_repeated_images: bool = False) -> tuple[list[str], HoiSet]:
    """File names and GT of an annotation file as a ``HoiSet``; raises ``TypedDecodeError`` on any problem, including
    an image listed twice and a box with x2 < x1 or y2 < y1 unless allowed (``formats.read_annotations``)."""
    try:
        records = _REFERENCES.decode(data)
        names = [r.file_name for r in records]
        if not all(names) or (not allow_repeated_images and len(set(names)) != len(names)):
            raise TypedDecodeError
        boxes, labels, box_offsets, hoi_items, hoi_offsets, hois = _columns_of(records, "annotations",
                                                                               "hoi_annotation")
        del records
        hoi_ids = np.fromiter((-1 if h.hoi_category_id is None else h.hoi_category_id for h in hoi_items),
                              np.int64, len(hoi_items))
        del hoi_items
    except (msgspec.DecodeError, OverflowError) as error:
        raise TypedDecodeError from error
    if not allow_inverted_boxes and not ((boxes[:, 0] <= boxes[:, 2]) & (boxes[:, 1] <= boxes[:, 3])).all():
        raise TypedDecodeError
    _check_indices(hois, box_offsets, hoi_offsets, no_object=dataset == "vcoco")
    verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
    if not verbs.contains(hois[:, 2]).all():
        raise TypedDecodeError
    has_id = hoi_ids != -1
    if has_id.any():
        if dataset != "hico" or (hoi_ids[has_id] < 0).any():
            raise TypedDecodeError
        image_start = np.repeat(box_offsets[:-1], np.diff(hoi_offsets))
        rows = np.flatnonzero(has_id)
        objects = labels[image_start[rows] + hois[rows, 1]]
        lookup = hico_hoi_lookup()
        expected = [lookup.get((int(v), int(o)), -2) for v, o in zip(hois[rows, 2], objects, strict=True)]
        if not (np.array(expected, dtype=np.int64) == hoi_ids[rows]).all():
            raise TypedDecodeError
    return names, HoiSet(boxes, labels, box_offsets, hois, hoi_offsets, None, what="references")


def decode_predictions_in_pieces(data: bytes | bytearray, dataset: str, workers: int) -> tuple[list[str], HoiSet]:
    """``decode_predictions`` of ``data``, by ``workers`` processes when it is large enough to pay."""
    cuts = forked.list_cuts(data, workers, b"file_name") if workers > 1 and forked.can_fork() else []
    if not cuts:
        return decode_predictions(data, dataset)
    try:
        names, arrays = forked.decode_in_pieces(data, cuts, lambda piece: _columns(*decode_predictions(piece, dataset)))
    except forked.PieceFailed:
        return decode_predictions(data, dataset)
    return names, HoiSet(arrays["boxes"], arrays["box_labels"], _offsets(arrays["box_counts"]), arrays["hois"],
                         _offsets(arrays["hoi_counts"]), arrays["scores"], what="predictions")


def _columns(names: list[str], predictions: HoiSet) -> forked.Columns:
    return names, {
        "boxes": predictions.boxes,
        "box_labels": predictions.box_labels,
        "box_counts": np.diff(predictions.box_offsets),
        "hois": predictions.hois,
        "hoi_counts": np.diff(predictions.hoi_offsets),
        "scores": predictions.scores,
    }
