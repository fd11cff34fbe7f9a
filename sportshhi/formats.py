"""Read, validate and write the native SportsHHI files exactly as the release and the official code use them.

* Annotation CSV (``sports_{train,val}_v1.csv``), no header, 13 columns:
  ``video_id, frame_id, x11, y11, x12, y12, x21, y21, x22, y22, label, p1_id, p2_id``. Box 1 is the subject,
  box 2 the object, both normalised xyxy in [0, 1]; ``label`` is the 1-based id of the action list; the
  keyframe index is ``frame_id // 5`` (keyframes are annotated at 5 FPS of 25 FPS video).
* Prediction CSV (what the official ``results2csv_hhi`` writes), no header, 12 columns:
  ``video_id, keyframe, x11, y11, x12, y12, x21, y21, x22, y22, label, score``. Keyed by the keyframe index
  directly (not the frame index).
* Action list (``sports_action_list.pbtxt``), AVA-style protobuf text:
  ``label { name: "basketball - pass" label_id: 2 label_type: PERSON_INTERACTION }``.
* Proposal pickles (``{gt,sports}_dense_proposals_{train,val}.pkl``): a dict ``"video_id,TTTT"`` -> N×4
  (normalised xyxy) or N×5 (xyxy + detector score) array.

Every reader raises :class:`hoi_bench.errors.FormatError` naming the file, the line (or key), the field, what
was expected and what was found.

The CSVs are decoded by Arrow's CSV reader straight into typed columns (video ids as a small vocabulary and
one integer code per row, no Python object per row) and validated column-wise with numpy. Whenever a column
fails a check, the file is read again row by row, which names the first offending line with the same message
as always: the fast path never decides what is an error, it only skips the slow path for valid files.
``pyarrow`` is imported inside the reader, so commands that read no CSV (and ``--help``) never load it.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import pickle
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hoi_bench.errors import FormatError
from hoi_bench.files import read_bytes, write_bytes_atomic, write_text_atomic

logger = logging.getLogger(__name__)

FRAMES_PER_KEYFRAME = 5
"""Keyframes are every 5th frame: ``keyframe = frame_id // 5``; keyframe ``t`` is centred on frame ``5t``."""

ANNOTATION_COLUMNS = ("video_id", "frame_id", "x11", "y11", "x12", "y12", "x21", "y21", "x22", "y22",
                      "label", "p1_id", "p2_id")
PREDICTION_COLUMNS = ("video_id", "keyframe", "x11", "y11", "x12", "y12", "x21", "y21", "x22", "y22",
                      "label", "score")
_BOX_FIELDS = ("subject_box", "object_box")

ACTION_LIST_FILE = "annotations/sports_action_list.pbtxt"
RELEASE_SPLITS = {"train": "train", "validation": "val"}
"""Dataset split name -> the split tag of the release file names (the release has no test split)."""


def annotation_file(split: str) -> str:
    """Path of a split's annotation CSV inside the release folder, e.g. ``annotations/sports_val_v1.csv``."""
    return f"annotations/sports_{RELEASE_SPLITS[split]}_v1.csv"


def detector_proposal_file(split: str) -> str:
    """Path of a split's detector proposals (HHIDet mode): ``annotations/sports_dense_proposals_val.pkl``."""
    return f"annotations/sports_dense_proposals_{RELEASE_SPLITS[split]}.pkl"


def gt_proposal_file(split: str) -> str:
    """Path of a split's GT human boxes (HHICls mode), e.g. ``annotations/gt_dense_proposals_val.pkl``."""
    return f"annotations/gt_dense_proposals_{RELEASE_SPLITS[split]}.pkl"


def frame_file(video_id: str, frame: int) -> str:
    """Path of one extracted frame inside the release folder.

    >>> frame_file("v_-6Os86HzwCs_c001", 105)
    'frames/v_-6Os86HzwCs_c001/000105.jpg'
    """
    return f"frames/{video_id}/{int(frame):06d}.jpg"


def keyframe_key(video_id: str, keyframe: int) -> str:
    """The official key of a keyframe, as used by the proposal pickles and the metric: ``"video,TTTT"``.

    >>> keyframe_key("v_-6Os86HzwCs_c001", 21)
    'v_-6Os86HzwCs_c001,0021'
    """
    return f"{video_id},{int(keyframe):04d}"


def parse_keyframe_key(key: str) -> tuple[str, int]:
    """Split ``"video,TTTT"`` into ``(video_id, keyframe)``; raises ``ValueError`` on anything else.

    >>> parse_keyframe_key("v_-6Os86HzwCs_c001,0021")
    ('v_-6Os86HzwCs_c001', 21)
    """
    video_id, sep, keyframe = str(key).rpartition(",")
    if not sep or not video_id or not keyframe.isdigit():
        raise ValueError(f"not a keyframe key 'video_id,TTTT': {key!r}")
    return video_id, int(keyframe)


# --------------------------------------------------------------------------------------------- action list


@dataclass(frozen=True)
class ActionList:
    """The classes of ``sports_action_list.pbtxt``: 1-based label ids and their names, in file order."""

    label_ids: tuple[int, ...]
    names: tuple[str, ...]
    label_types: tuple[str, ...]

    def name_of(self, label_id: int) -> str:
        """The name of a 1-based label id; ``KeyError`` when the id is not in the file."""
        return self.names[self.label_ids.index(int(label_id))]

    def sorted_by_id(self) -> ActionList:
        """The same classes ordered by label id (the order of the dataset's ``ClassLabel``)."""
        order = np.argsort(self.label_ids, kind="stable")
        return ActionList(tuple(self.label_ids[i] for i in order), tuple(self.names[i] for i in order),
                          tuple(self.label_types[i] for i in order))

    def __contains__(self, label_id: object) -> bool:
        return label_id in self.label_ids

    def __len__(self) -> int:
        return len(self.label_ids)


_PBTXT_TOKEN = re.compile(
    r'\s*(?:(#[^\n]*)|(\{)|(\})|([A-Za-z_][A-Za-z0-9_]*)\s*:?|"((?:[^"\\]|\\.)*)"|(-?\d+))')


def parse_action_list(text: str, file: str = "<string>") -> ActionList:
    """Parse AVA-style pbtxt text: ``label { name: "..." label_id: N [label_type: T] }`` blocks.

    Accepts one field per line (as the release is written) or several per line, ``id`` as an alias of
    ``label_id`` (the official parser does), and ``#`` comments.

    >>> parse_action_list('label {\\n  name: "basketball - pass"\\n  label_id: 2\\n'
    ...                   '  label_type: PERSON_INTERACTION\\n}\\n'
    ...                   'label { name: "volleyball - block" label_id: 20 }').names
    ('basketball - pass', 'volleyball - block')
    """
    labels: list[dict] = []
    block: dict | None = None
    key: str | None = None
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _PBTXT_TOKEN.match(text, pos)
        line = text.count("\n", 0, pos) + 1
        if not match:
            raise FormatError(file, "cannot parse the action list", record=f"line {line}",
                              expected='label { name: "..." label_id: N }', found=text[pos:pos + 30])
        pos = match.end()
        comment, opening, closing, word, string, number = match.groups()
        if comment:
            continue
        if opening:
            if block is not None or key != "label":
                raise FormatError(file, "unexpected '{'", record=f"line {line}", expected="label {")
            block, key = {"line": line}, None
        elif closing:
            if block is None:
                raise FormatError(file, "unexpected '}'", record=f"line {line}")
            labels.append(block)
            block = None
        elif word is not None and (block is None or key is None):
            key = word
            if block is None and key != "label":
                raise FormatError(file, "unknown top-level field", record=f"line {line}",
                                  expected="label", found=word)
        elif block is not None and key is not None:
            value = string if string is not None else (int(number) if number is not None else word)
            block["label_id" if key == "id" else key] = value
            key = None
        else:
            raise FormatError(file, "unexpected value", record=f"line {line}", found=match.group(0).strip())
    if block is not None:
        raise FormatError(file, "unterminated label block", record=f"line {block['line']}", expected="}")
    ids, names, types = [], [], []
    for entry in labels:
        record = f"line {entry['line']}"
        if not isinstance(entry.get("label_id"), int) or entry["label_id"] < 1:
            raise FormatError(file, "label without a positive integer id", record=record, field="label_id",
                              expected="integer >= 1", found=entry.get("label_id"))
        if not isinstance(entry.get("name"), str) or not entry["name"]:
            raise FormatError(file, "label without a name", record=record, field="name",
                              expected="quoted string", found=entry.get("name"))
        if entry["label_id"] in ids:
            raise FormatError(file, "duplicate label id", record=record, field="label_id",
                              expected="unique ids", found=entry["label_id"])
        ids.append(entry["label_id"])
        names.append(entry["name"])
        types.append(str(entry.get("label_type", "PERSON_INTERACTION")))
    if not ids:
        raise FormatError(file, "no label blocks", expected='label { name: "..." label_id: N }', found="none")
    return ActionList(tuple(ids), tuple(names), tuple(types))


def read_action_list(path: str | os.PathLike) -> ActionList:
    """Read ``sports_action_list.pbtxt``; class names always come from this file, never from code."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise FormatError(str(path), f"cannot read the action list: {error}") from error
    except UnicodeDecodeError as error:
        raise FormatError(str(path), "not UTF-8 text", expected="a UTF-8 pbtxt file",
                          found=f"byte 0x{error.object[error.start]:02x} at offset {error.start}") from None
    return parse_action_list(text, str(path))


def format_action_list(actions: ActionList) -> str:
    """The pbtxt text of ``actions``, one field per line with two-space indent as the release writes it."""
    blocks = [f'label {{\n  name: "{name}"\n  label_id: {label_id}\n  label_type: {label_type}\n}}\n'
              for label_id, name, label_type in zip(actions.label_ids, actions.names, actions.label_types)]
    return "".join(blocks)


def write_action_list(path: str | os.PathLike, actions: ActionList) -> None:
    """Write ``actions`` as a pbtxt file (atomically)."""
    write_text_atomic(path, format_action_list(actions))


# --------------------------------------------------------------------------------------------- annotation CSV


@dataclass(frozen=True)
class VideoCoding:
    """Video ids as a vocabulary (``names``) and the vocabulary index of every row (``codes``)."""

    names: np.ndarray  # (V,) object, str
    codes: np.ndarray  # (N,) int64

    @classmethod
    def of(cls, video_ids: np.ndarray) -> VideoCoding:
        names, codes = np.unique(np.asarray(video_ids, dtype=str), return_inverse=True)
        return cls(names.astype(object), codes.reshape(-1).astype(np.int64))

    def ids(self) -> np.ndarray:
        """The video id of every row (an object array of references to the vocabulary's strings)."""
        return self.names[self.codes] if len(self.names) else np.array([], dtype=object)


@dataclass
class Annotations:
    """The interactions of one annotation CSV as parallel arrays (one entry per row, file order kept)."""

    video_ids: np.ndarray  # (N,) str
    frame_ids: np.ndarray  # (N,) int64, frame index in the video
    subject_boxes: np.ndarray  # (N, 4) float64, normalised xyxy
    object_boxes: np.ndarray  # (N, 4) float64
    labels: np.ndarray  # (N,) int64, 1-based ids of the action list
    subject_ids: np.ndarray  # (N,) int64, person (track) id of the subject
    object_ids: np.ndarray  # (N,) int64
    video_coding: VideoCoding | None = field(default=None, repr=False, compare=False)

    @property
    def keyframes(self) -> np.ndarray:
        """Keyframe index of every row: ``frame_id // 5``."""
        return self.frame_ids // FRAMES_PER_KEYFRAME

    @property
    def keys(self) -> np.ndarray:
        """``"video,TTTT"`` key of every row (the official ``img_key``)."""
        return np.array([keyframe_key(v, t) for v, t in zip(self.video_ids, self.keyframes)], dtype=object)

    def videos(self) -> VideoCoding:
        """The video ids as a vocabulary and one code per row (kept from the reader, else computed)."""
        if self.video_coding is None:
            self.video_coding = VideoCoding.of(self.video_ids)
        return self.video_coding

    def __len__(self) -> int:
        return len(self.labels)


def _read_csv_bytes(path: Path) -> bytes:
    """The bytes of a CSV (gunzipped when it ends in ``.gz``), refused unless they are UTF-8 text."""
    data = read_bytes(path, "CSV file")
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            raise FormatError(str(path), "not UTF-8 text", record=f"line {line}", expected="a UTF-8 CSV file",
                              found=f"byte 0x{data[error.start]:02x} at offset {error.start}") from None
    return data


def _arrow_columns(data: bytes, columns: tuple[str, ...], integers: tuple[str, ...]) -> dict | None:
    """Typed columns of a header-less CSV by ``pyarrow.csv``; ``None`` when Arrow cannot type every cell.

    The video ids come back as ``VideoCoding`` (a vocabulary and one integer per row, dictionary-encoded by
    the CSV reader itself, so ``pyarrow.compute`` is never imported), numbers as numpy arrays. Empty cells
    and ``NA``-like words are not nulls here: they fail the conversion, so the row reader reports them.
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    types = {name: pa.int64() if name in integers else pa.float64() for name in columns[1:]}
    types[columns[0]] = pa.dictionary(pa.int32(), pa.string())  # video ids: a vocabulary and a code per row
    convert = pa_csv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                    quoted_strings_can_be_null=False)
    try:
        table = pa_csv.read_csv(pa.BufferReader(data), convert_options=convert,
                                read_options=pa_csv.ReadOptions(column_names=list(columns)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    video_ids = table.column(columns[0]).unify_dictionaries()  # one vocabulary for every chunk
    names = video_ids.chunk(0).dictionary.to_pylist() if video_ids.num_chunks else []
    codes = _numpy_of([chunk.indices for chunk in video_ids.chunks], np.dtype(np.int32))
    values = {name: _numpy_of(table.column(name).chunks,
                              np.dtype(np.int64 if name in integers else np.float64)) for name in columns[1:]}
    values[columns[0]] = VideoCoding(np.array(names, dtype=object), codes.astype(np.int64))
    return values


def _numpy_of(chunks, dtype: np.dtype) -> np.ndarray:
    """Null-free Arrow arrays of fixed-width numbers (a column's chunks) as one numpy array, read from their
    data buffers. (``ChunkedArray.to_numpy`` would import pandas, which costs more than reading the file.)"""
    parts = [np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk),
                           offset=chunk.offset * dtype.itemsize) for chunk in chunks if len(chunk)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _box_columns(columns: dict, names: tuple[str, ...],
                 allow_outside_image: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """``(subject boxes, object boxes)`` (N×4 each) from the 8 coordinate columns ``names``, or ``None``
    unless every box is normalised (in [0, 1], NaN excluded; any finite value with ``allow_outside_image``) with
    ordered corners. Checked on the 1-D columns, before any stacking."""
    coordinates = [columns[name] for name in names]
    low, high = (-np.inf, np.inf) if allow_outside_image else (0.0, 1.0)
    if not all(len(c) == 0 or (c.min() >= low and c.max() <= high) for c in coordinates):  # NaN fails both
        return None
    x11, y11, x12, y12, x21, y21, x22, y22 = coordinates
    if not all((high >= low).all() for low, high in ((x11, x12), (y11, y12), (x21, x22), (y21, y22))):
        return None
    return np.stack([x11, y11, x12, y12], axis=1), np.stack([x21, y21, x22, y22], axis=1)


def _valid_labels(labels: np.ndarray, actions: ActionList | None) -> bool:
    return bool(labels.min(initial=1) >= 1 and (actions is None or np.isin(labels, actions.label_ids).all()))


def _valid_video_ids(coding: VideoCoding) -> bool:
    """No empty id and no id that the row reader would strip (it strips every cell)."""
    return all(name and name == name.strip() for name in coding.names)


def _read_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    text = _read_csv_bytes(path).decode("utf-8")
    rows = []
    for line, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(columns):
            raise FormatError(str(path), "wrong number of columns", record=f"line {line}",
                              expected=f"{len(columns)} columns ({', '.join(columns)})", found=len(row))
        rows.append((line, [cell.strip() for cell in row]))
    return rows


def _number(path: Path, line: int, column: str, text: str, kind: type) -> float | int:
    try:
        value = kind(text) if kind is float else int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            as_float = None
        if kind is int and as_float is not None and as_float.is_integer():
            return int(as_float)
        raise FormatError(str(path), "not a number", record=f"line {line}", field=column,
                          expected="integer" if kind is int else "number", found=text) from None
    if kind is float and not np.isfinite(value):
        raise FormatError(str(path), "not a finite number", record=f"line {line}", field=column,
                          expected="finite number", found=text)
    return value


def _check_box(path: Path, line: int, field: str, box: list[float], allow_outside_image: bool = False) -> None:
    x1, y1, x2, y2 = box
    if not allow_outside_image and (min(box) < 0.0 or max(box) > 1.0):
        raise FormatError(str(path), "box outside the normalised image", record=f"line {line}", field=field,
                          expected="coordinates in [0, 1]", found=box)
    if x2 < x1 or y2 < y1:
        raise FormatError(str(path), "box corners out of order", record=f"line {line}", field=field,
                          expected="x1 <= x2 and y1 <= y2", found=box)


def _check_label(path: Path, line: int, label: int, actions: ActionList | None) -> None:
    if actions is not None and label not in actions:
        raise FormatError(str(path), "label not in the action list", record=f"line {line}", field="label",
                          expected=f"one of the {len(actions)} label ids of the pbtxt", found=label)
    if label < 1:
        raise FormatError(str(path), "label ids are 1-based", record=f"line {line}", field="label",
                          expected="integer >= 1", found=label)


def read_annotation_csv(path: str | os.PathLike, actions: ActionList | None = None, *,
                        one_label_per_pair: bool = False, allow_outside_image: bool = False) -> Annotations:
    """Read and validate a 13-column SportsHHI annotation CSV (``.csv`` or ``.csv.gz``).

    Rejects (with file and line): a file that is not UTF-8, a wrong column count, non-numbers, boxes outside
    [0, 1] (unless ``allow_outside_image``: the official evaluation scores them, and ``hhi_metrics`` in official
    mode counts them in a warning) or with x2 < x1 / y2 < y1, and labels missing from ``actions`` (when given).
    The release lists an ordered (subject, object) pair once per label, and the official evaluation counts each
    row as a GT instance, so several rows of one pair are accepted; ``one_label_per_pair=True`` refuses them
    instead, as the official training loader does (single-label classification), naming both lines.
    """
    path = Path(path)
    data = _read_csv_bytes(path)
    columns = _arrow_columns(data, ANNOTATION_COLUMNS, ("frame_id", "label", "p1_id", "p2_id"))
    if columns is not None:
        coding: VideoCoding = columns["video_id"]
        boxes = _box_columns(columns, ANNOTATION_COLUMNS[2:10], allow_outside_image)
        frame_ids, labels = columns["frame_id"], columns["label"]
        valid = (boxes is not None and _valid_video_ids(coding) and frame_ids.min(initial=0) >= 0
                 and _valid_labels(labels, actions))
        if valid and one_label_per_pair:
            keyframes = frame_ids // FRAMES_PER_KEYFRAME
            pairs = np.concatenate([coding.codes[:, None], keyframes[:, None], *boxes], axis=1)
            valid = len(np.unique(pairs, axis=0)) == len(pairs)
        if valid:
            logger.debug("read %d interactions from %s", len(labels), path)
            return Annotations(
                video_ids=coding.ids(), frame_ids=frame_ids, subject_boxes=boxes[0], object_boxes=boxes[1],
                labels=labels,
                subject_ids=columns["p1_id"], object_ids=columns["p2_id"], video_coding=coding)
    return _read_annotations_by_row(path, actions, one_label_per_pair, allow_outside_image)


def _read_annotations_by_row(path: Path, actions: ActionList | None, one_label_per_pair: bool,
                             allow_outside_image: bool = False) -> Annotations:
    """The row-by-row reader: slow, and the one that words every error (the first bad line of the file)."""
    rows = _read_rows(path, ANNOTATION_COLUMNS)
    video_ids, frame_ids, labels, subject_ids, object_ids = [], [], [], [], []
    boxes = np.zeros((len(rows), 8), dtype=np.float64)
    seen: dict[tuple, int] = {}
    for i, (line, cells) in enumerate(rows):
        if not cells[0]:
            raise FormatError(str(path), "empty video id", record=f"line {line}", field="video_id",
                              expected="a video id", found="")
        frame_id = _number(path, line, "frame_id", cells[1], int)
        if frame_id < 0:
            raise FormatError(str(path), "negative frame index", record=f"line {line}", field="frame_id",
                              expected="integer >= 0", found=frame_id)
        coords = [_number(path, line, ANNOTATION_COLUMNS[2 + j], cells[2 + j], float) for j in range(8)]
        for field_name, box in zip(_BOX_FIELDS, (coords[:4], coords[4:])):
            _check_box(path, line, field_name, box, allow_outside_image)
        label = _number(path, line, "label", cells[10], int)
        _check_label(path, line, label, actions)
        pair = (cells[0], frame_id // FRAMES_PER_KEYFRAME, tuple(coords))
        if one_label_per_pair and pair in seen:
            raise FormatError(str(path), "duplicate ordered pair in one keyframe (one label per pair)",
                              record=f"line {line}", field="x11..y22",
                              expected="one row per (subject box, object box) per keyframe",
                              found=f"same pair as line {seen[pair]}")
        seen.setdefault(pair, line)
        video_ids.append(cells[0])
        frame_ids.append(frame_id)
        boxes[i] = coords
        labels.append(label)
        subject_ids.append(_number(path, line, "p1_id", cells[11], int))
        object_ids.append(_number(path, line, "p2_id", cells[12], int))
    logger.debug("read %d interactions from %s", len(rows), path)
    return Annotations(
        video_ids=np.array(video_ids, dtype=object), frame_ids=np.array(frame_ids, dtype=np.int64),
        subject_boxes=boxes[:, :4].copy(), object_boxes=boxes[:, 4:].copy(),
        labels=np.array(labels, dtype=np.int64), subject_ids=np.array(subject_ids, dtype=np.int64),
        object_ids=np.array(object_ids, dtype=np.int64))


def _fmt(value: float) -> str:
    """Shortest text that reads back as the same float (so written files round-trip exactly)."""
    return repr(float(value))


def write_annotation_csv(path: str | os.PathLike, annotations: Annotations) -> None:
    """Write ``annotations`` as a 13-column annotation CSV (atomically, no header, like the release)."""
    lines = []
    for i in range(len(annotations)):
        cells = [str(annotations.video_ids[i]), str(int(annotations.frame_ids[i]))]
        cells += [_fmt(v) for v in annotations.subject_boxes[i]]
        cells += [_fmt(v) for v in annotations.object_boxes[i]]
        cells += [str(int(annotations.labels[i])), str(int(annotations.subject_ids[i])),
                  str(int(annotations.object_ids[i]))]
        lines.append(",".join(cells))
    write_text_atomic(path, "".join(line + "\n" for line in lines))


# --------------------------------------------------------------------------------------------- prediction CSV


class PredictionRow(NamedTuple):
    """One scored interaction of a prediction CSV: a subject/object box pair on a keyframe with a class."""

    video_id: str
    keyframe: int
    subject_box: tuple[float, float, float, float]
    object_box: tuple[float, float, float, float]
    label: int
    score: float


@dataclass
class Predictions:
    """Scored interactions as parallel arrays (one entry per prediction CSV row, file order kept)."""

    video_ids: np.ndarray  # (N,) str
    keyframes: np.ndarray  # (N,) int64, keyframe index (frame index // 5)
    subject_boxes: np.ndarray  # (N, 4) float64, normalised xyxy
    object_boxes: np.ndarray  # (N, 4) float64
    labels: np.ndarray  # (N,) int64, 1-based ids of the action list
    scores: np.ndarray  # (N,) float64
    video_coding: VideoCoding | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_rows(cls, rows: Iterable[PredictionRow | tuple]) -> Predictions:
        """Collect :class:`PredictionRow` tuples (or plain 6-tuples in the same order) into arrays."""
        rows = [PredictionRow(*row) for row in rows]
        return cls(
            video_ids=np.array([r.video_id for r in rows], dtype=object),
            keyframes=np.array([int(r.keyframe) for r in rows], dtype=np.int64),
            subject_boxes=np.array([list(r.subject_box) for r in rows], dtype=np.float64).reshape(-1, 4),
            object_boxes=np.array([list(r.object_box) for r in rows], dtype=np.float64).reshape(-1, 4),
            labels=np.array([int(r.label) for r in rows], dtype=np.int64),
            scores=np.array([float(r.score) for r in rows], dtype=np.float64))

    @property
    def keys(self) -> np.ndarray:
        """``"video,TTTT"`` key of every row."""
        return np.array([keyframe_key(v, t) for v, t in zip(self.video_ids, self.keyframes)], dtype=object)

    def videos(self) -> VideoCoding:
        """The video ids as a vocabulary and one code per row (kept from the reader, else computed)."""
        if self.video_coding is None:
            self.video_coding = VideoCoding.of(self.video_ids)
        return self.video_coding

    def __len__(self) -> int:
        return len(self.labels)


def read_prediction_csv(path: str | os.PathLike, actions: ActionList | None = None, *,
                        allow_outside_image: bool = False) -> Predictions:
    """Read and validate a 12-column prediction CSV (keyed by keyframe index, normalised boxes).

    Rejects (with file and line): a file that is not UTF-8, a wrong column count, non-finite numbers, boxes
    outside [0, 1] (unless ``allow_outside_image``, as :func:`read_annotation_csv`) or with x2 < x1 / y2 < y1,
    and labels missing from ``actions`` (when given). Duplicate rows
    are allowed: a model may emit the same pair several times and each row is scored. The file (``.csv`` or
    ``.csv.gz``) is decoded by Arrow into typed columns and checked column-wise; any problem sends it through
    the row-by-row reader, which names the first offending line.
    """
    path = Path(path)
    return (_read_predictions_columnar(path, actions, allow_outside_image)
            or _read_predictions_by_row(path, actions, allow_outside_image))


def _read_predictions_columnar(path: Path, actions: ActionList | None,
                               allow_outside_image: bool = False) -> Predictions | None:
    """The whole file through ``pyarrow.csv``; ``None`` whenever any row would need an error message."""
    columns = _arrow_columns(_read_csv_bytes(path), PREDICTION_COLUMNS, ("keyframe", "label"))
    if columns is None:
        return None
    coding: VideoCoding = columns["video_id"]
    boxes = _box_columns(columns, PREDICTION_COLUMNS[2:10], allow_outside_image)
    labels, scores, keyframes = columns["label"], columns["score"], columns["keyframe"]
    valid = (boxes is not None and np.isfinite(scores).all() and keyframes.min(initial=0) >= 0
             and _valid_labels(labels, actions) and _valid_video_ids(coding))
    if not valid:
        return None
    return Predictions(video_ids=coding.ids(), keyframes=keyframes, subject_boxes=boxes[0],
                       object_boxes=boxes[1], labels=labels, scores=scores, video_coding=coding)


def _read_predictions_by_row(path: Path, actions: ActionList | None,
                             allow_outside_image: bool = False) -> Predictions:
    rows = _read_rows(path, PREDICTION_COLUMNS)
    video_ids, keyframes, labels, scores = [], [], [], []
    boxes = np.zeros((len(rows), 8), dtype=np.float64)
    for i, (line, cells) in enumerate(rows):
        keyframe = _number(path, line, "keyframe", cells[1], int)
        if keyframe < 0:
            raise FormatError(str(path), "negative keyframe index", record=f"line {line}", field="keyframe",
                              expected="integer >= 0", found=keyframe)
        coords = [_number(path, line, PREDICTION_COLUMNS[2 + j], cells[2 + j], float) for j in range(8)]
        for field_name, box in zip(_BOX_FIELDS, (coords[:4], coords[4:])):
            _check_box(path, line, field_name, box, allow_outside_image)
        label = _number(path, line, "label", cells[10], int)
        _check_label(path, line, label, actions)
        video_ids.append(cells[0])
        keyframes.append(keyframe)
        boxes[i] = coords
        labels.append(label)
        scores.append(_number(path, line, "score", cells[11], float))
    return Predictions(
        video_ids=np.array(video_ids, dtype=object), keyframes=np.array(keyframes, dtype=np.int64),
        subject_boxes=boxes[:, :4].copy(), object_boxes=boxes[:, 4:].copy(),
        labels=np.array(labels, dtype=np.int64), scores=np.array(scores, dtype=np.float64))


def write_prediction_csv(path: str | os.PathLike,
                         predictions: Predictions | Iterable[PredictionRow | tuple]) -> int:
    """Write predictions as the official 12-column CSV (atomically); returns the number of rows written.

    ``predictions`` is a :class:`Predictions` or any iterable of :class:`PredictionRow` (or plain tuples
    ``(video_id, keyframe, subject_box, object_box, label, score)``). Boxes must be normalised xyxy and labels
    the 1-based ids of the action list; everything is checked before anything is written. Numbers are written
    in their shortest exact form (``1.0`` as ``1``), so reading the file back gives the same floats.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "pred.csv"
    >>> write_prediction_csv(out, [("v_a_c001", 3, (0.1, 0.2, 0.3, 0.9), (0.5, 0.2, 0.7, 0.9), 2, 0.75)])
    1
    >>> out.read_text()
    'v_a_c001,3,0.1,0.2,0.3,0.9,0.5,0.2,0.7,0.9,2,0.75\\n'
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    if not isinstance(predictions, Predictions):
        predictions = Predictions.from_rows(predictions)
    target = str(path)
    _check_predictions(target, predictions)
    columns = [pa.array([str(v) for v in predictions.video_ids], pa.string()),
               pa.array(np.asarray(predictions.keyframes, dtype=np.int64))]
    columns += [pa.array(predictions.subject_boxes[:, j].astype(np.float64)) for j in range(4)]
    columns += [pa.array(predictions.object_boxes[:, j].astype(np.float64)) for j in range(4)]
    columns += [pa.array(np.asarray(predictions.labels, dtype=np.int64)),
                pa.array(np.asarray(predictions.scores, dtype=np.float64))]
    sink = pa.BufferOutputStream()
    pa_csv.write_csv(pa.table(columns, names=list(PREDICTION_COLUMNS)), sink,
                     write_options=pa_csv.WriteOptions(include_header=False, quoting_style="none"))
    write_bytes_atomic(path, sink.getvalue().to_pybytes())
    return len(predictions)


def _check_predictions(file: str, predictions: Predictions) -> None:
    """Raise a ``FormatError`` naming the first row (1-based, as its future line) that cannot be written."""
    subject = np.asarray(predictions.subject_boxes, dtype=np.float64).reshape(-1, 4)
    obj = np.asarray(predictions.object_boxes, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(predictions.scores, dtype=np.float64)
    boxes = np.concatenate([subject, obj], axis=1)
    bad_box = (~np.isfinite(boxes).all(axis=1) | (boxes < 0).any(axis=1) | (boxes > 1).any(axis=1)
               | (boxes[:, [2, 3, 6, 7]] < boxes[:, [0, 1, 4, 5]]).any(axis=1))
    for i in np.flatnonzero(bad_box)[:1]:
        for field_name, box in zip(_BOX_FIELDS, (subject[i].tolist(), obj[i].tolist())):
            if not np.isfinite(box).all():
                raise FormatError(file, "box is not finite", record=f"line {i + 1}", field=field_name,
                                  expected="finite numbers", found=box)
            _check_box(Path(file), int(i) + 1, field_name, box)
    for i in np.flatnonzero(~np.isfinite(scores))[:1]:
        raise FormatError(file, "score is not finite", record=f"line {i + 1}", field="score",
                          expected="finite number", found=float(scores[i]))
    for i, video_id in enumerate(predictions.video_ids):
        if not str(video_id) or any(c in str(video_id) for c in ',"\n\r'):
            raise FormatError(file, "video id cannot be written to a CSV cell", record=f"line {i + 1}",
                              field="video_id", expected="non-empty, no comma, quote or newline",
                              found=str(video_id))


# --------------------------------------------------------------------------------------------- proposals


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles only dicts, strings, numbers and numpy arrays: a proposal file cannot run code on load."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"), ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"), ("collections", "OrderedDict"), ("builtins", "list"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name}")


def read_proposals(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a proposal pickle: ``{"video,TTTT": N×4 or N×5 array}`` -> ``{key: float64 N×5 array}``.

    N×4 arrays (GT human boxes) get a score column of 1.0, which is how the official loader treats them (it
    keeps every box); N×5 arrays keep their detector score, which must be a number in [0, 1] (a NaN would
    silently drop the box from the official ``score >= 0.9`` filter). Boxes are checked like annotation boxes.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = _ArrayUnpickler(handle, encoding="latin1").load()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError) as error:
        raise FormatError(str(path), f"cannot read the proposal pickle: {error}") from error
    if not isinstance(data, Mapping):
        raise FormatError(str(path), "proposal pickle is not a dict", expected='{"video,TTTT": array}',
                          found=type(data).__name__)
    proposals = {}
    for key, value in data.items():
        try:
            parse_keyframe_key(key)
        except ValueError:
            raise FormatError(str(path), "bad proposal key", record=repr(key), expected='"video_id,TTTT"',
                              found=key) from None
        array = np.asarray(value, dtype=np.float64)
        if array.size == 0:
            array = array.reshape(0, 5)
        if array.ndim != 2 or array.shape[1] not in (4, 5):
            raise FormatError(str(path), "proposals must be an N×4 or N×5 array", record=key, field="shape",
                              expected="(N, 4) or (N, 5)", found=array.shape)
        if array.shape[1] == 4:
            array = np.concatenate([array, np.ones((len(array), 1))], axis=1)
        boxes, scores = array[:, :4], array[:, 4]
        bad_box = (~np.isfinite(boxes).all(axis=1) | (boxes < 0.0).any(axis=1) | (boxes > 1.0).any(axis=1)
                   | (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1]))
        for row in np.flatnonzero(bad_box)[:1]:
            raise FormatError(str(path), "bad proposal box", record=key, field=f"row {row}",
                              expected="normalised xyxy in [0, 1] with x1 <= x2, y1 <= y2",
                              found=boxes[row].tolist())
        for row in np.flatnonzero(~((scores >= 0.0) & (scores <= 1.0)))[:1]:  # NaN fails both comparisons
            raise FormatError(str(path), "bad detector score", record=key, field=f"row {row}, column 5",
                              expected="a score in [0, 1]", found=float(scores[row]))
        proposals[key] = array
    return proposals


def write_proposals(path: str | os.PathLike, proposals: Mapping[str, np.ndarray]) -> None:
    """Write a proposal pickle in the release layout (``{"video,TTTT": float32 array}``), atomically."""
    data = {str(key): np.asarray(value, dtype=np.float32) for key, value in proposals.items()}
    write_bytes_atomic(path, pickle.dumps(data, protocol=4))
