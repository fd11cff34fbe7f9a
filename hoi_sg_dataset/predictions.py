"""Read HOI predictions in the PPDM/QPIC file format and line them up with GT records as ``HoiSet`` arrays.

A prediction file is a JSON list (optionally gzip-compressed, ``.json.gz``) with one entry per image::

    {"file_name": "HICO_test2015_00000002.jpg",
     "predictions": [{"bbox": [x1, y1, x2, y2], "category_id": <raw COCO id>}, ...],
     "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": <verb id>, "score": 0.93}, ...]}

Verb ids are in the GT file's id space (HICO 1..117, V-COCO 0..28); ``object_id`` may be ``-1`` (no object) in
V-COCO predictions. Entries are matched to GT images by ``file_name``; a GT image without an entry predicts
nothing, and entries for images the GT does not have are ignored (the official evaluators score only the GT's
images) and counted in an ``InputWarning``. Bad input raises ``FormatError`` (file, record, field, expected,
found); two entries for one image raise ``PredictionError``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hoi_bench.errors import FormatError, PredictionError
from hoi_bench.files import read_bytes, read_json
from hoi_bench.input_warnings import collected_notes, warn_input
from hoi_sg_dataset.evaluation import HoiSet
from hoi_sg_dataset.formats import DATASETS, FLOAT32_MAX, ImageRecord, detect_dataset
from hoi_sg_dataset.vocabulary import coco_objects, hico_verbs, vcoco_verbs


@dataclass(frozen=True)
class ImagePredictions:
    """One image's predictions: boxes (K×4), their raw COCO ids, HOIs (subject, object, verb) and scores."""

    file_name: str
    boxes: np.ndarray
    box_labels: np.ndarray
    hois: np.ndarray
    scores: np.ndarray


def read_predictions(path: str | os.PathLike, dataset: str | None = None) -> list[ImagePredictions]:
    """Read and validate a PPDM/QPIC prediction file (``.json`` or ``.json.gz``).

    ``dataset`` (``"hico"`` or ``"vcoco"``) picks the verb and "no object" rules; ``None`` detects it from the
    first file name.
    """
    path = Path(path)
    return parse_predictions(read_json(path, what="prediction file"), dataset, source=str(path))


def parse_predictions(
    data: Any, dataset: str | None = None, *, source: str = "<predictions>"
) -> list[ImagePredictions]:
    """Validate decoded prediction JSON and convert each entry to arrays.

    >>> entry = {"file_name": "HICO_test2015_00000001.jpg",
    ...          "predictions": [{"bbox": [0, 0, 9, 9], "category_id": 1},
    ...                          {"bbox": [2, 2, 8, 8], "category_id": 47}],
    ...          "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": 37, "score": 0.5}]}
    >>> parse_predictions([entry])[0].hois.tolist()
    [[0, 1, 37]]
    >>> entry["hoi_prediction"][0]["object_id"] = 2
    >>> parse_predictions([entry], source="pred.json")
    Traceback (most recent call last):
    ...
    hoi_bench.errors.FormatError: pred.json: record 0: field 'hoi_prediction[0].object_id': index past the box
    list of HICO_test2015_00000001.jpg (expected 0 <= object_id < 2, found 2)
    """
    if not isinstance(data, list):
        raise FormatError(
            source,
            "a prediction file is a JSON list of image entries",
            expected="list",
            found=type(data).__name__,
        )
    if dataset is None:
        first = data[0].get("file_name") if data and isinstance(data[0], dict) else None
        dataset = detect_dataset(first) if isinstance(first, str) else None
        dataset = dataset or "hico"
    if dataset not in DATASETS:
        raise FormatError(
            source, "unknown dataset", field="dataset", expected=" or ".join(DATASETS), found=dataset
        )
    checker = _EntryChecker(source, dataset)
    return [checker.entry(index, raw) for index, raw in enumerate(data)]


def _number(value: Any) -> bool:
    return type(value) in (int, float)


class _EntryChecker:
    """Validates one file's entries; every failure names the record, field, expectation and value."""

    def __init__(self, source: str, dataset: str) -> None:
        self.source = source
        self.objects = coco_objects()
        self.verbs = hico_verbs() if dataset == "hico" else vcoco_verbs()
        self.no_object = dataset == "vcoco"

    def fail(self, index: int, field: str, message: str, expected: Any, found: Any) -> FormatError:
        return FormatError(self.source, message, record=index, field=field, expected=expected, found=found)

    def entry(self, index: int, raw: Any) -> ImagePredictions:
        if type(raw) is not dict:
            raise self.fail(index, "<record>", "an entry is a JSON object", "object", type(raw).__name__)
        name = raw.get("file_name")
        if type(name) is not str or not name:
            raise self.fail(index, "file_name", "missing or empty image file name", "non-empty string", name)
        boxes = raw.get("predictions")
        if type(boxes) is not list:
            raise self.fail(
                index, "predictions", f"box list of {name} is missing or not a list", "list", boxes
            )
        box_rows, labels = [], []
        for k, box in enumerate(boxes):
            where = f"predictions[{k}]"
            if type(box) is not dict:
                raise self.fail(index, where, "a box is a JSON object", "object", box)
            bbox, category = box.get("bbox"), box.get("category_id")
            finite = type(bbox) is list and all(_number(v) and math.isfinite(v) for v in bbox)
            if not finite or len(bbox) != 4:
                raise self.fail(
                    index,
                    f"{where}.bbox",
                    f"malformed box in {name}",
                    "[x1, y1, x2, y2] of 4 finite numbers",
                    bbox,
                )
            if type(category) is not int or category not in self.objects:
                raise self.fail(
                    index,
                    f"{where}.category_id",
                    f"unknown COCO category in {name}",
                    "a COCO id among the 80 used in 1..90",
                    category,
                )
            if not all(abs(v) <= FLOAT32_MAX for v in bbox):
                raise self.fail(
                    index,
                    f"{where}.bbox",
                    f"coordinate out of range in {name} (it would be stored as inf)",
                    f"coordinates within +-{FLOAT32_MAX:.4g} (float32)",
                    bbox,
                )
            box_rows.append(bbox)
            labels.append(category)
        hois = raw.get("hoi_prediction")
        if type(hois) is not list:
            raise self.fail(
                index, "hoi_prediction", f"HOI list of {name} is missing or not a list", "list", hois
            )
        triples, scores = [], []
        low = -1 if self.no_object else 0
        for k, hoi in enumerate(hois):
            where = f"hoi_prediction[{k}]"
            if type(hoi) is not dict:
                raise self.fail(index, where, "an HOI prediction is a JSON object", "object", hoi)
            keys = ("subject_id", "object_id", "category_id", "score")
            subject, obj, verb, score = (hoi.get(key) for key in keys)
            for key, value in (("subject_id", subject), ("object_id", obj), ("category_id", verb)):
                if type(value) is not int:
                    raise self.fail(
                        index,
                        f"{where}.{key}",
                        f"HOI field of {name} is missing or not an integer",
                        "int",
                        value,
                    )
            if not 0 <= subject < len(box_rows):
                raise self.fail(
                    index,
                    f"{where}.subject_id",
                    f"index past the box list of {name}",
                    f"0 <= subject_id < {len(box_rows)}",
                    subject,
                )
            if not low <= obj < len(box_rows):
                raise self.fail(
                    index,
                    f"{where}.object_id",
                    f"index past the box list of {name}",
                    f"{low} <= object_id < {len(box_rows)}",
                    obj,
                )
            if verb not in self.verbs:
                raise self.fail(
                    index,
                    f"{where}.category_id",
                    f"unknown verb id in {name}",
                    f"a verb id in {self.verbs.raw_ids[0]}..{self.verbs.raw_ids[-1]}",
                    verb,
                )
            if not _number(score) or not math.isfinite(score):
                raise self.fail(
                    index,
                    f"{where}.score",
                    f"score of {name} is not a finite number",
                    "a finite number",
                    score,
                )
            if abs(score) > FLOAT32_MAX:
                raise self.fail(
                    index,
                    f"{where}.score",
                    f"score of {name} out of range",
                    f"a number within +-{FLOAT32_MAX:.4g} (float32)",
                    score,
                )
            triples.append((subject, obj, verb))
            scores.append(score)
        return ImagePredictions(
            name,
            np.array(box_rows, dtype=np.float64).reshape(-1, 4),
            np.array(labels, dtype=np.int64),
            np.array(triples, dtype=np.int64).reshape(-1, 3),
            np.array(scores, dtype=np.float64),
        )


def reference_set(records: Sequence[ImageRecord]) -> HoiSet:
    """GT records (from ``formats.read_annotations``) as a ``HoiSet``, in file order."""
    return HoiSet.from_images(
        boxes=[r.boxes for r in records],
        box_labels=[r.box_labels for r in records],
        hois=[r.hoi_triplets for r in records],
        what="references",
    )


def prediction_set(
    records: Sequence[ImageRecord],
    predictions: Sequence[ImagePredictions],
    source: str = "<predictions>",
    *,
    refuse_unknown: bool = False,
) -> HoiSet:
    """Predictions aligned with the GT ``records`` by file name (a GT image without entry predicts nothing).

    Raises ``PredictionError`` for two entries of one image; entries whose image is not in the GT are ignored
    and counted in an ``InputWarning`` (as the official evaluators never see them), or refused with
    ``refuse_unknown`` (a converter that must not drop anything).
    """
    position = {r.file_name: i for i, r in enumerate(records)}
    aligned: list[ImagePredictions | None] = [None] * len(records)
    unknown: list[tuple[int, str]] = []
    for index, entry in enumerate(predictions):
        image = position.get(entry.file_name)
        if image is None and refuse_unknown:
            raise PredictionError(
                f"{source}: record {index}: field 'file_name': image not in the references "
                f"(expected one of the {len(records)} GT file names, found {entry.file_name!r})"
            )
        if image is None:
            unknown.append((index, entry.file_name))
            continue
        if aligned[image] is not None:
            raise PredictionError(
                f"{source}: record {index}: field 'file_name': second entry for one image "
                f"(expected one entry per image, found {entry.file_name!r} again)"
            )
        aligned[image] = entry
    _note_unknown_images(unknown, source)
    empty_boxes, empty_ids = np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
    return HoiSet.from_images(
        boxes=[empty_boxes if e is None else e.boxes for e in aligned],
        box_labels=[empty_ids if e is None else e.box_labels for e in aligned],
        hois=[np.zeros((0, 3), dtype=np.int64) if e is None else e.hois for e in aligned],
        scores=[np.zeros(0) if e is None else e.scores for e in aligned],
        what=source,
    )


def align_predictions(
    gt_names: Sequence[str], entry_names: Sequence[str], entries: HoiSet, source: str = "<predictions>"
) -> HoiSet:
    """Predictions ``entries`` (one image per entry, named ``entry_names``) lined up with the GT images
    ``gt_names`` as :func:`prediction_set` lines up ``ImagePredictions``: same rules and errors, on arrays."""
    position = {name: i for i, name in enumerate(gt_names)}
    entry_of_image = np.full(len(gt_names), -1, dtype=np.int64)
    unknown: list[tuple[int, str]] = []
    for index, name in enumerate(entry_names):
        image = position.get(name)
        if image is None:
            unknown.append((index, name))
            continue
        if entry_of_image[image] >= 0:
            raise PredictionError(
                f"{source}: record {index}: field 'file_name': second entry for one image "
                f"(expected one entry per image, found {name!r} again)"
            )
        entry_of_image[image] = index
    _note_unknown_images(unknown, source)
    present = entry_of_image >= 0
    if not unknown and present.all() and (entry_of_image == np.arange(len(gt_names))).all():
        return replace(entries, what=source)  # already in GT order: no copy
    entry = np.where(present, entry_of_image, 0)

    def gather(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lengths = np.where(present, np.diff(offsets)[entry] if len(offsets) > 1 else 0, 0)
        new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        rows = np.repeat(offsets[entry] - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
        return rows, new_offsets

    box_rows, box_offsets = gather(entries.box_offsets)
    hoi_rows, hoi_offsets = gather(entries.hoi_offsets)
    return HoiSet(
        boxes=entries.boxes[box_rows],
        box_labels=entries.box_labels[box_rows],
        box_offsets=box_offsets,
        hois=entries.hois[hoi_rows],
        hoi_offsets=hoi_offsets,
        scores=entries.scores[hoi_rows],
        what=source,
    )


def read_reference_set(path: str | os.PathLike, dataset: str, *, allow_inverted_boxes: bool = False,
                       allow_repeated_images: bool = False) -> tuple[list[str], HoiSet]:
    """GT file names and ``HoiSet`` of an annotation file (``.json`` or ``.json.gz``), strictly validated but for
    what the ``allow_*`` switches allow (``formats.read_annotations``): the typed decoder of ``fast_json``, and
    on any problem the Python validators for their exact error."""
    from hoi_sg_dataset.fast_json import TypedDecodeError, decode_references
    from hoi_sg_dataset.formats import parse_annotations

    path = Path(path)
    data = read_bytes(path, "annotation file")
    allowed = {"allow_inverted_boxes": allow_inverted_boxes, "allow_repeated_images": allow_repeated_images}
    try:
        return decode_references(data, dataset, **allowed)
    except TypedDecodeError:
        records = parse_annotations(read_json(path, "annotation file"), dataset, source=str(path), **allowed)
        return [r.file_name for r in records], reference_set(records)


def read_prediction_set(path: str | os.PathLike, dataset: str, *, workers: int = 1) -> tuple[list[str], HoiSet]:
    """Entry file names and ``HoiSet`` (entry order) of a PPDM/QPIC prediction file, strictly validated.

    ``workers`` > 1 lets a large file be decoded by that many processes at once (``hoi_bench.forked``: Linux,
    single-threaded callers; the result is the same).
    """
    from hoi_sg_dataset.fast_json import TypedDecodeError, decode_predictions_in_pieces

    path = Path(path)
    data = read_bytes(path, "prediction file", mutable=workers > 1)
    try:
        return decode_predictions_in_pieces(data, dataset, workers)
    except TypedDecodeError:
        entries = parse_predictions(read_json(path, "prediction file"), dataset, source=str(path))
        return [e.file_name for e in entries], HoiSet.from_images(
            boxes=[e.boxes for e in entries],
            box_labels=[e.box_labels for e in entries],
            hois=[e.hois for e in entries],
            scores=[e.scores for e in entries],
            what="predictions",
        )


def _note_unknown_images(unknown: list[tuple[int, str]], source: str) -> None:
    if unknown:
        index, name = unknown[0]
        warn_input(f"{source}: {len(unknown)} prediction entries are for images the references do not have "
                   f"(first: record {index}, file_name {name!r}); ignored, as the official evaluators score only "
                   "the references' images")


def _note_repeated_images(names: Sequence[str], source: str) -> None:
    seen: set[str] = set()
    repeated = []
    for name in names:
        if name in seen:
            repeated.append(name)
        seen.add(name)
    if repeated:
        warn_input(f"{source}: {len(repeated)} records repeat an image listed before (first: {repeated[0]!r}); "
                   "every listing counts for rare / non-rare, as QPIC counts the training annotations")


def load_hoi_sets(
    references: str | os.PathLike, predictions: str | os.PathLike, dataset: str, *, workers: int = 1
) -> tuple[HoiSet, HoiSet]:
    """``(references, predictions)`` of a GT file and a prediction file (JSON, or the columnar ``.npz`` of
    ``columnar``), read by the typed readers of ``fast_json`` (no Python object per box or score; the same
    checks and errors as :func:`load_sets`); ``workers`` processes may decode a large JSON prediction file."""
    gt_names, gt = read_reference_set(references, dataset, allow_inverted_boxes=True)
    if Path(predictions).suffix == ".npz":
        from hoi_sg_dataset.columnar import read_prediction_npz

        entry_names, entries = read_prediction_npz(predictions, dataset)
    else:
        entry_names, entries = read_prediction_set(predictions, dataset, workers=workers)
    return gt, align_predictions(gt_names, entry_names, entries, source=str(predictions))


def prediction_json(predictions: HoiSet, file_names: Sequence[str]) -> list[dict]:
    """The PPDM/QPIC prediction-file entries of a ``HoiSet`` (inverse of ``read_predictions``)."""
    out = []
    for i, name in enumerate(file_names):
        b0, b1 = predictions.box_offsets[i], predictions.box_offsets[i + 1]
        h0, h1 = predictions.hoi_offsets[i], predictions.hoi_offsets[i + 1]
        out.append(
            {
                "file_name": name,
                "predictions": [
                    {"bbox": [float(v) for v in box], "category_id": int(label)}
                    for box, label in zip(
                        predictions.boxes[b0:b1], predictions.box_labels[b0:b1], strict=True
                    )
                ],
                "hoi_prediction": [
                    {"subject_id": int(s), "object_id": int(o), "category_id": int(v), "score": float(p)}
                    for (s, o, v), p in zip(predictions.hois[h0:h1], predictions.scores[h0:h1], strict=True)
                ],
            }
        )
    return out


def load_sets(
    references: str | os.PathLike, predictions: str | os.PathLike, dataset: str
) -> tuple[HoiSet, HoiSet, list[ImageRecord]]:
    """Read a GT file and a prediction file of ``dataset``: ``(references, predictions, GT records)``."""
    from hoi_sg_dataset.formats import read_annotations

    records = read_annotations(references, dataset, allow_inverted_boxes=True)
    entries = read_predictions(predictions, dataset)
    return reference_set(records), prediction_set(records, entries, source=str(predictions)), records


def hoi_map_files(
    references: str | os.PathLike,
    predictions: str | os.PathLike,
    *,
    train_references: str | os.PathLike | None = None,
    workers: int = 1,
    **options: Any,
) -> dict:
    """``evaluation.hoi_map`` of a HICO-DET(-SG) GT file and a prediction file (``options``: protocol...);
    ``workers`` processes may decode a large JSON prediction file (``read_prediction_set``).

    With ``protocol="ho-rcnn"``, ``predictions`` may also be the MATLAB tool's detections (a folder of
    ``detections_XX.mat`` or one ``detections.mat``, see ``hoi_sg_dataset.matlab_detections``). GT boxes with
    x2 < x1 are scored, a training file may list an image twice (every listing counts, as in QPIC), prediction
    entries for other images are ignored: each counted in the result's ``warnings``.
    """
    from hoi_sg_dataset.evaluation import hoi_map
    from hoi_sg_dataset.matlab_detections import is_matlab_layout

    with collected_notes() as notes:
        if is_matlab_layout(predictions):
            gt, pred = _matlab_sets(references, predictions, options.get("protocol", "qpic"))
        else:
            gt, pred = load_hoi_sets(references, predictions, "hico", workers=workers)
        train = None
        if train_references is not None:
            train_names, train = read_reference_set(train_references, "hico", allow_inverted_boxes=True,
                                                    allow_repeated_images=True)
            _note_repeated_images(train_names, str(train_references))
        result = hoi_map(gt, pred, train_references=train, **options)
    result["warnings"] = notes
    return result


def _matlab_sets(
    references: str | os.PathLike, predictions: str | os.PathLike, protocol: str
) -> tuple[HoiSet, HoiSet]:
    """GT and prediction sets from MATLAB-tool detections, which only the ho-rcnn protocol reads."""
    from hoi_sg_dataset.formats import read_annotations
    from hoi_sg_dataset.matlab_detections import check_detection_folder, matlab_sets, read_matlab_detections

    if Path(predictions).is_dir():
        check_detection_folder(predictions)
    if protocol != "ho-rcnn":
        raise PredictionError(
            f"{predictions}: MATLAB detections (.mat, or a folder of them) are the official HICO-DET tool's "
            f"input and are scored with --protocol ho-rcnn (found protocol {protocol!r}); for qpic write "
            "a JSON prediction file"
        )
    detections = read_matlab_detections(predictions)
    records, pred = matlab_sets(read_annotations(references, "hico", allow_inverted_boxes=True), detections,
                                str(predictions))
    return reference_set(records), pred


def vcoco_map_files(
    references: str | os.PathLike, predictions: str | os.PathLike, *, workers: int = 1, **options: Any
) -> dict:
    """``evaluation.vcoco_map`` on a V-COCO(-SG) GT file and a prediction file (``options``: top_k);
    ``workers`` processes may decode a large JSON prediction file."""
    from hoi_sg_dataset.evaluation import vcoco_map

    with collected_notes() as notes:
        gt, pred = load_hoi_sets(references, predictions, "vcoco", workers=workers)
        result = vcoco_map(gt, pred, **options)
    result["warnings"] = notes
    return result


def verb_prior_predictions(
    train: Sequence[ImageRecord], test: Sequence[ImageRecord], *, jitter: float = 2.0, seed: int = 0
) -> list[dict]:
    """Prediction-file entries of a simple rule, for demos and tests: no detector, no image pixels.

    Every (subject, object) box pair of a test image's GT boxes (moved by up to ``jitter`` pixels) gets every
    training verb, scored by the verb's training frequency (ignoring the object category, so held-out
    combinations are reachable) times ``1 / (1 + d)``, ``d`` the centre distance in subject heights. Subjects
    are the persons; each person also gets every verb seen without object in training (``object_id = -1``,
    V-COCO).

    >>> from hoi_sg_dataset.formats import BoxAnnotation, HoiAnnotation, ImageRecord
    >>> boxes = [BoxAnnotation([0, 0, 9, 19], 1), BoxAnnotation([5, 5, 9, 9], 47)]
    >>> r = ImageRecord("HICO_test2015_00000001.jpg", boxes, [HoiAnnotation(0, 1, 37)])
    >>> entry = verb_prior_predictions([r], [r], jitter=0)[0]
    >>> [(h["subject_id"], h["object_id"], h["category_id"]) for h in entry["hoi_prediction"]]
    [(0, 1, 37)]
    """
    rng = np.random.default_rng(seed)
    verb_counts: dict[int, int] = {}
    with_object: set[int] = set()
    no_object: set[int] = set()
    for record in train:
        for h in record.hoi_annotation:
            verb_counts[h.category_id] = verb_counts.get(h.category_id, 0) + 1
            (with_object if h.object_id >= 0 else no_object).add(h.category_id)
    total = max(sum(verb_counts.values()), 1)
    prior = {verb: count / total for verb, count in sorted(verb_counts.items())}
    entries = []
    for record in test:
        boxes = record.boxes + rng.uniform(-jitter, jitter, size=record.boxes.shape)
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
        labels = record.box_labels
        centres = (boxes[:, :2] + boxes[:, 2:]) / 2
        hois = []
        for s in np.flatnonzero(labels == 1):
            height = max(boxes[s, 3] - boxes[s, 1], 1.0)
            for o in range(len(boxes)):
                if o == s:
                    continue
                closeness = 1.0 / (1.0 + float(np.linalg.norm(centres[o] - centres[s])) / height)
                hois += [
                    {"subject_id": int(s), "object_id": o, "category_id": verb, "score": float(p * closeness)}
                    for verb, p in prior.items()
                    if verb in with_object
                ]
            hois += [
                {"subject_id": int(s), "object_id": -1, "category_id": verb, "score": float(prior[verb])}
                for verb in sorted(no_object)
            ]
        entries.append(
            {
                "file_name": record.file_name,
                "predictions": [
                    {"bbox": [round(float(v), 2) for v in box], "category_id": int(label)}
                    for box, label in zip(boxes, labels, strict=True)
                ],
                "hoi_prediction": hois,
            }
        )
    return entries
