"""Read HICO-DET detections in the layout the official MATLAB evaluation reads (ho-rcnn ``eval_one.m``).

Many HICO-DET exporters (UPT, CDN, iCAN-style) write their detections for that tool, in one of two
layouts:

* format ``obj`` (the one its driver uses): a folder of ``detections_01.mat`` .. ``detections_80.mat``, one
  per object category in COCO id order (person, bicycle, ..., toothbrush); each holds ``all_boxes``, a cell
  array of (HOI classes of that object, in the 600-class order) x (test images, in ``list_test`` order);
* format ``all``: one ``detections.mat`` whose ``all_boxes`` is 600 x (test images).

Each cell is a k x 9 double matrix ``[h_x1 h_y1 h_x2 h_y2 o_x1 o_y1 o_x2 o_y2 score]`` of **0-based** pixel
boxes; the tool adds 1 to every coordinate (``det_bb = det_bb + 1``), and so does this reader. A cache saved in
single precision stays single in MATLAB (``[zeros(0, 8); single]`` is single), so a HOI class with any single
cell has all its detections rounded to single, ``+ 1`` added in single, and its IoU computed in single
(``HoiSet.single_precision``); this reader does the same. Extra columns
are ignored, as ``det{j}(:, 1:8)`` and ``det{j}(:, 9)`` ignore them. Column ``j`` (1-based) is the test image
``HICO_test2015_<j, 8 digits>.jpg`` (``list_test`` of ``anno.mat`` lists the test images in that order).

Reading ``.mat`` files needs ``scipy`` (``pip install 'hoi-bench[matlab]'``); it is imported only here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoi_bench.archives import check_mat_inflated_size
from hoi_bench.errors import FormatError, HoiBenchError, MissingFilesError, PredictionError
from hoi_bench.input_warnings import warn_input
from hoi_sg_dataset.evaluation import HoiSet
from hoi_sg_dataset.formats import FLOAT32_MAX, ImageRecord, within_float32
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_classes

ALL_FILE = "detections.mat"
OBJECT_FILE = "detections_{:02d}.mat"
TEST_IMAGE = re.compile(r"^HICO_test2015_(\d{8})\.jpg$")
PERSON = 1


def is_matlab_layout(path: str | os.PathLike) -> bool:
    """Whether ``path`` names MATLAB-tool detections (a folder, or a ``.mat`` file) rather than JSON."""
    path = Path(path)
    return path.is_dir() or path.suffix == ".mat"


@dataclass(frozen=True)
class MatlabDetections:
    """Every detection of a MATLAB-layout file set, one row each, in the tool's order (class, image, row).

    ``columns``: 0-based image column (``list_test`` position); ``classes``: HOI class index 0..599;
    ``boxes``: n x 8 one-based ``[human box, object box]``; ``scores``: n; ``num_columns``: images per class;
    ``single``: n, True for the detections of a class MATLAB holds in single precision (values already rounded).
    """

    columns: np.ndarray
    classes: np.ndarray
    boxes: np.ndarray
    scores: np.ndarray
    num_columns: int
    single: np.ndarray


def read_matlab_detections(path: str | os.PathLike) -> MatlabDetections:
    """Read a folder of ``detections_XX.mat`` (format ``obj``), a folder with ``detections.mat`` or that file
    (format ``all``). Anything else, and any cell that is not a k x (>= 9) matrix of finite numbers, raises a
    ``FormatError`` naming the file, the cell and what was found."""
    path = Path(path)
    if not path.exists():
        raise MissingFilesError(str(path.parent), [path.name], what="prediction file or folder")
    loadmat = _loadmat()
    if path.is_dir():
        check_detection_folder(path)
        if any(path.glob("detections_[0-9][0-9].mat")):
            return _read_object_files(path, loadmat)
        path = path / ALL_FILE
    if path.name != ALL_FILE:
        raise FormatError(
            str(path),
            "not a MATLAB detection file eval_one.m reads",
            expected=f"{ALL_FILE}, or the folder of {OBJECT_FILE.format(1)} .. {OBJECT_FILE.format(80)}",
            found=path.name,
        )
    cells = _all_boxes(path, loadmat, rows=len(hico_hoi_classes()))
    return _collect([(path, cells, np.arange(cells.shape[0]))])


def check_detection_folder(folder: str | os.PathLike) -> None:
    """Refuse a folder given as predictions that holds neither layout: a ``FormatError`` saying what such a
    folder must hold, and that a JSON or ``.npz`` prediction file is given as the file itself."""
    folder = Path(folder)
    if (folder / ALL_FILE).is_file() or any(folder.glob("detections_[0-9][0-9].mat")):
        return
    names = sorted(p.name for p in folder.iterdir())
    files = [name for name in names if name.endswith((".json", ".json.gz", ".npz"))]
    hint = f"; to score a prediction file, give the file itself (e.g. {folder / files[0]})" if files else ""
    raise FormatError(
        str(folder),
        "a folder given as --predictions must hold detection .mat files" + hint,
        expected=f"{ALL_FILE}, or {OBJECT_FILE.format(1)} .. {OBJECT_FILE.format(80)} (one per object), with "
        "--protocol ho-rcnn; or a JSON / .npz prediction file instead of a folder",
        found=f"{len(names)} entries: {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}" if names
        else "an empty folder",
    )


def _loadmat():
    try:
        from scipy.io import loadmat
    except ImportError as error:
        raise HoiBenchError(
            "reading MATLAB .mat detections needs scipy: pip install 'hoi-bench[matlab]'"
        ) from error
    return loadmat


def _read_object_files(folder: Path, loadmat) -> MatlabDetections:
    classes = hico_hoi_classes()
    objects = coco_objects().raw_ids
    missing = [OBJECT_FILE.format(k + 1) for k in range(len(objects))]
    missing = [name for name in missing if not (folder / name).is_file()]
    if missing:
        raise MissingFilesError(
            str(folder), missing, what="per-object detection files (eval_one.m format 'obj' reads all 80)"
        )
    parts = []
    for k, object_id in enumerate(objects):
        of_object = np.array([c for c, hoi in enumerate(classes) if hoi.object_id == object_id])
        file = folder / OBJECT_FILE.format(k + 1)
        parts.append((file, _all_boxes(file, loadmat, rows=len(of_object)), of_object))
    columns = {cells.shape[1] for _, cells, _ in parts}
    if len(columns) != 1:
        raise FormatError(
            str(folder),
            "per-object files disagree on the number of test images",
            field="all_boxes",
            expected="the same number of columns in every file",
            found=sorted(columns),
        )
    return _collect(parts)


def _all_boxes(file: Path, loadmat, rows: int) -> np.ndarray:
    """The ``all_boxes`` cell array of ``file`` as a 2-D object array with ``rows`` rows (a file inflating past
    ``hoi_bench.files.decompressed_limit`` is refused before scipy reads it)."""
    check_mat_inflated_size(file, "MATLAB detection file")
    try:
        content = loadmat(str(file), variable_names=["all_boxes"])
    except Exception as error:  # scipy raises ValueError, TypeError, MatReadError... on a non-.mat file
        raise FormatError(
            str(file), "unreadable MATLAB file", expected="a .mat file saved by MATLAB or scipy",
            found=f"{type(error).__name__}: {error}",
        ) from error
    cells = content.get("all_boxes")
    if cells is None:
        raise FormatError(
            str(file), "no variable all_boxes", field="all_boxes", expected="a cell array all_boxes",
            found=sorted(k for k in content if not k.startswith("__")),
        )
    if cells.dtype != object or cells.ndim != 2 or cells.shape[0] != rows:
        raise FormatError(
            str(file),
            "all_boxes has the wrong shape",
            field="all_boxes",
            expected=f"a cell array of {rows} HOI classes x test images",
            found=f"{cells.dtype} array of shape {cells.shape}",
        )
    return cells


def _collect(parts: Sequence[tuple[Path, np.ndarray, np.ndarray]]) -> MatlabDetections:
    """Every non-empty cell's rows, file by file, class by class, then image then row: within one class
    this is the order in which the tool concatenates its detections (kept by its stable sort on ties)."""
    columns, classes, matrices, single_classes = [], [], [], set()
    num_columns = parts[0][1].shape[1]
    for file, cells, class_of_row in parts:
        for r in range(cells.shape[0]):
            for j in range(cells.shape[1]):
                matrix = cells[r, j]
                if np.size(matrix) == 0:
                    continue
                if isinstance(matrix, np.ndarray) and matrix.dtype == np.float32:
                    single_classes.add(int(class_of_row[r]))
                matrix = _check_cell(file, r, j, matrix)
                columns.append(np.full(len(matrix), j, dtype=np.int64))
                classes.append(np.full(len(matrix), class_of_row[r], dtype=np.int64))
                matrices.append(matrix)
    if not matrices:
        empty = np.zeros(0, dtype=np.int64)
        return MatlabDetections(empty, empty, np.zeros((0, 8)), np.zeros(0), num_columns, np.zeros(0, dtype=bool))
    rows = np.concatenate(matrices)
    class_ids = np.concatenate(classes)
    single = np.isin(class_ids, sorted(single_classes))
    boxes, scores = rows[:, :8] + 1, rows[:, 8].copy()
    if single.any():  # MATLAB: the class's det_bb and det_conf are single, and so is det_bb + 1
        boxes[single] = (rows[single, :8].astype(np.float32) + np.float32(1)).astype(np.float64)
        scores[single] = rows[single, 8].astype(np.float32).astype(np.float64)
    return MatlabDetections(np.concatenate(columns), class_ids, boxes, scores, num_columns, single)


def _check_cell(file: Path, r: int, j: int, matrix: Any) -> np.ndarray:
    where = f"all_boxes{{{r + 1},{j + 1}}}"
    numeric = isinstance(matrix, np.ndarray) and matrix.dtype.kind in "fiu" and matrix.ndim == 2
    if not numeric or matrix.shape[1] < 9:
        found = f"{matrix.dtype} array of shape {matrix.shape}" if isinstance(matrix, np.ndarray) else matrix
        raise FormatError(
            str(file), "a detection cell is not a k x 9 matrix", field=where,
            expected="[h_x1 h_y1 h_x2 h_y2 o_x1 o_y1 o_x2 o_y2 score] rows", found=found,
        )
    values = matrix[:, :9].astype(np.float64)
    if not within_float32(values):
        bad = np.flatnonzero(~(np.abs(values) <= FLOAT32_MAX).all(axis=1))
        raise FormatError(
            str(file), "non-finite or out-of-range box coordinate or score",
            field=f"{where} row {bad[0] + 1}",
            expected=f"9 finite numbers within +-{FLOAT32_MAX:.4g} (float32)", found=values[bad[0]].tolist(),
        )
    return values


def matlab_sets(
    records: Sequence[ImageRecord], detections: MatlabDetections, source: str
) -> tuple[list[ImageRecord], HoiSet]:
    """GT records in ``list_test`` order and the detections as a prediction ``HoiSet`` aligned with them.

    The records must be HICO-DET test2015 images (column ``j`` is ``HICO_test2015_<j>.jpg``). A column with
    detections for an image the GT file does not list becomes an image without GT, where every detection is a
    false positive, as ``eval_one.m`` scores an image without visible GT HOIs; a warning says how many. A GT
    image past the last column is an error: ``eval_one.m`` asserts one column per test image.
    """
    numbers = []
    for index, record in enumerate(records):
        match = TEST_IMAGE.match(record.file_name)
        if match is None:
            raise PredictionError(
                f"{source}: MATLAB detections index the HICO-DET test2015 image list, but the references "
                f"list {record.file_name!r} (record {index}; an SG split mixes train2015 images): "
                "write the predictions as a JSON prediction file instead"
            )
        numbers.append(int(match.group(1)))
    listed = dict(zip(numbers, records, strict=True))
    if len(listed) != len(records):
        raise PredictionError(f"{source}: the references list one test image twice")
    if numbers and max(numbers) > detections.num_columns:
        last = max(numbers)
        raise PredictionError(
            f"{source}: all_boxes has {detections.num_columns} image columns, but the references list "
            f"HICO_test2015_{last:08d}.jpg (column {last}): eval_one.m stops here "
            "(assert(numel(det) == numel(gt_bbox))); expected one column per test image, in list_test order"
        )
    with_detections = {int(j) + 1 for j in np.unique(detections.columns)}
    unlisted = sorted(with_detections - listed.keys())
    if unlisted:
        warn_input(
            f"{source}: {len(unlisted)} test images with detections are not in the references (first: "
            f"HICO_test2015_{unlisted[0]:08d}.jpg); they are scored as images without GT, so their detections are "
            "false positives, as eval_one.m scores them"
        )
        for number in unlisted:
            listed[number] = ImageRecord(f"HICO_test2015_{number:08d}.jpg", [], [])
    ordered = sorted(listed)
    position = np.full(max(ordered[-1] if ordered else 0, detections.num_columns) + 1, -1, dtype=np.int64)
    position[ordered] = np.arange(len(ordered))
    image = position[detections.columns + 1]
    order = np.argsort(image, kind="stable")
    image = image[order]
    counts = np.bincount(image, minlength=len(ordered))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    local = np.arange(len(image)) - offsets[image]
    classes = hico_hoi_classes()
    verbs = np.array([c.verb_id for c in classes], dtype=np.int64)[detections.classes[order]]
    objects = np.array([c.object_id for c in classes], dtype=np.int64)[detections.classes[order]]
    boxes = detections.boxes[order].reshape(-1, 4)
    labels = np.column_stack([np.full(len(image), PERSON, dtype=np.int64), objects]).reshape(-1)
    hois = np.column_stack([2 * local, 2 * local + 1, verbs])
    predictions = HoiSet(
        boxes=boxes,
        box_labels=labels,
        box_offsets=2 * offsets,
        hois=hois.reshape(-1, 3),
        hoi_offsets=offsets,
        scores=detections.scores[order],
        what=source,
        single_precision=detections.single[order] if detections.single.any() else None,
    )
    return [listed[number] for number in ordered], predictions
