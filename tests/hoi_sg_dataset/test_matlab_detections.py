"""`hoi_map --protocol ho-rcnn` reads the official MATLAB tool's detection layout (eval_one.m, formats obj
and all) exactly as the JSON prediction file with the same detections, and refuses anything else with one
clear line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoi_bench import cli
from hoi_bench.input_warnings import InputWarning
from hoi_sg_dataset.formats import BoxAnnotation, HoiAnnotation, ImageRecord, write_annotations
from hoi_sg_dataset.predictions import hoi_map_files
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_classes

scipy_io = pytest.importorskip("scipy.io", reason="the MATLAB layout needs scipy (hoi-bench[matlab])")

PERSON, CUP = 1, 47
CLASSES = hico_hoi_classes()
HOLD_CUP = next(c for c, h in enumerate(CLASSES) if (h.verb_id, h.object_id) == (37, CUP))
CARRY_CUP = next(c for c, h in enumerate(CLASSES) if (h.verb_id, h.object_id) == (9, CUP))
NUM_IMAGES = 4  # list_test columns; image 4 is not in the GT file
HUMAN, THING = [10, 10, 50, 90], [40, 40, 80, 80]


def gt_records() -> list[ImageRecord]:
    boxes = [BoxAnnotation(HUMAN, PERSON), BoxAnnotation(THING, CUP)]
    return [
        ImageRecord("HICO_test2015_00000001.jpg", boxes, [HoiAnnotation(0, 1, 37)]),
        ImageRecord("HICO_test2015_00000002.jpg", boxes, [HoiAnnotation(0, 1, 37), HoiAnnotation(0, 1, 9)]),
        ImageRecord("HICO_test2015_00000003.jpg", boxes, [HoiAnnotation(0, 1, 9)]),
    ]


# (HOI class, 0-based column, one-based boxes as in the GT, score)
DETECTIONS = [
    (HOLD_CUP, 0, HUMAN, THING, 0.9),
    (HOLD_CUP, 1, HUMAN, [40, 40, 60, 60], 0.8),  # object IoU < 0.5: FP
    (HOLD_CUP, 1, HUMAN, THING, 0.8),  # tie with the FP above: MATLAB's stable order decides
    (CARRY_CUP, 2, HUMAN, THING, 0.7),
    (CARRY_CUP, 1, [11, 10, 50, 90], THING, 0.3),
]


def matrix(rows) -> np.ndarray:
    """Cell content: 0-based boxes (the tool adds 1) and the score."""
    return np.array([[*(np.array(h) - 1), *(np.array(o) - 1), s] for h, o, s in rows], dtype=np.float64)


def cells(classes, detections) -> np.ndarray:
    out = np.empty((len(classes), NUM_IMAGES), dtype=object)
    for r in range(len(classes)):
        for j in range(NUM_IMAGES):
            rows = [(h, o, s) for c, col, h, o, s in detections if c == classes[r] and col == j]
            out[r, j] = matrix(rows) if rows else np.zeros((0, 0))
    return out


def write_all(folder, detections=DETECTIONS):
    folder.mkdir(parents=True, exist_ok=True)
    scipy_io.savemat(folder / "detections.mat", {"all_boxes": cells(list(range(600)), detections)})
    return folder


def write_per_object(folder, detections=DETECTIONS):
    folder.mkdir(parents=True, exist_ok=True)
    for k, object_id in enumerate(coco_objects().raw_ids):
        of_object = [c for c, h in enumerate(CLASSES) if h.object_id == object_id]
        scipy_io.savemat(folder / f"detections_{k + 1:02d}.mat", {"all_boxes": cells(of_object, detections)})
    return folder


def write_json(path, detections=DETECTIONS):
    entries = {}
    for c, col, h, o, s in detections:
        entry = entries.setdefault(
            col, {"file_name": f"HICO_test2015_{col + 1:08d}.jpg", "predictions": [], "hoi_prediction": []}
        )
        k = len(entry["predictions"])
        entry["predictions"] += [
            {"bbox": h, "category_id": PERSON},
            {"bbox": o, "category_id": CLASSES[c].object_id},
        ]
        entry["hoi_prediction"].append(
            {"subject_id": k, "object_id": k + 1, "category_id": CLASSES[c].verb_id, "score": s}
        )
    path.write_text(json.dumps([entries[col] for col in sorted(entries)]))
    return path


@pytest.fixture
def gt_file(tmp_path):
    return write_annotations(tmp_path / "test_hico.json", gt_records(), "hico")


@pytest.mark.parametrize("layout", ["all", "all-file", "obj"])
def test_matlab_layouts_give_the_numbers_of_the_same_detections_as_json(tmp_path, gt_file, layout):
    if layout == "obj":
        predictions = write_per_object(tmp_path / "obj")
    else:
        predictions = write_all(tmp_path / "all")
        predictions = predictions / "detections.mat" if layout == "all-file" else predictions
    from_mat = hoi_map_files(gt_file, predictions, protocol="ho-rcnn")
    from_json = hoi_map_files(gt_file, write_json(tmp_path / "pred.json"), protocol="ho-rcnn")
    assert from_mat["ap_per_triplet"] == from_json["ap_per_triplet"]
    assert from_mat["mAP"] == from_json["mAP"]
    # hand-checked: hold cup has 2 GT; 0.9 TP, 0.8 FP, 0.8 TP (stable: cell row order) -> precision 1, 2/3
    ap_hold = sum([1.0] * 6 + [2 / 3] * 5) / 11
    assert from_mat["ap_per_triplet"][f"{PERSON}_{CUP}_37"] == pytest.approx(ap_hold, abs=1e-15)


def test_detections_for_a_test_image_the_gt_lacks_are_false_positives(tmp_path, gt_file):
    extra = (HOLD_CUP, 3, HUMAN, THING, 0.95)  # column 4: HICO_test2015_00000004.jpg, not in the GT file
    with pytest.warns(InputWarning, match="HICO_test2015_00000004.jpg"):
        result = hoi_map_files(gt_file, write_all(tmp_path / "m", [*DETECTIONS, extra]), protocol="ho-rcnn")
    assert len(result["warnings"]) == 1 and "1 test images with detections" in result["warnings"][0]
    # 0.95 FP, 0.9 TP (precision 1/2), 0.8 FP, 0.8 TP (2/4): the envelope is 0.5 at every recall threshold
    assert result["ap_per_triplet"][f"{PERSON}_{CUP}_37"] == pytest.approx(sum([0.5] * 11) / 11, abs=1e-15)


def run(argv, capsys):
    code = cli.main(argv)
    return code, capsys.readouterr().err.strip()


def test_cli_reads_a_matlab_folder_and_writes_the_result(tmp_path, gt_file, capsys):
    out = tmp_path / "out.json"
    argv = ["evaluate", "hoi_map", "--protocol", "ho-rcnn", "--references", str(gt_file)]
    assert cli.main([*argv, "--predictions", str(write_all(tmp_path / "m")), "--output", str(out)]) == 0
    assert json.loads(out.read_text())["num_classes"] == 600


def bad_inputs(tmp_path, gt_file):
    """(name, argv tail, text the one-line error must contain)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    not_mat = tmp_path / "junk" / "detections.mat"
    not_mat.parent.mkdir()
    not_mat.write_text("not a mat file")
    wrong_name = tmp_path / "other.mat"
    wrong_name.write_bytes(b"")
    no_var = tmp_path / "novar"
    no_var.mkdir()
    scipy_io.savemat(no_var / "detections.mat", {"boxes": np.zeros((2, 2))})
    wrong_shape = tmp_path / "shape"
    wrong_shape.mkdir()
    scipy_io.savemat(wrong_shape / "detections.mat", {"all_boxes": cells(list(range(10)), [])})
    short = tmp_path / "short"
    short.mkdir()
    bad_cells = cells(list(range(600)), [])
    bad_cells[HOLD_CUP, 0] = np.zeros((1, 8))
    scipy_io.savemat(short / "detections.mat", {"all_boxes": bad_cells})
    nan = tmp_path / "nan"
    nan.mkdir()
    nan_cells = cells(list(range(600)), DETECTIONS)
    nan_cells[HOLD_CUP, 0] = np.array([[0, 0, 9, 9, 0, 0, 9, 9, np.nan]])
    scipy_io.savemat(nan / "detections.mat", {"all_boxes": nan_cells})
    far = tmp_path / "far"
    far.mkdir()
    far_cells = cells(list(range(600)), DETECTIONS)
    far_cells[HOLD_CUP, 0] = np.array([[0, 0, 9, 1e39, 0, 0, 9, 9, 0.5]])
    scipy_io.savemat(far / "detections.mat", {"all_boxes": far_cells})
    partial = tmp_path / "partial"
    partial.mkdir()
    scipy_io.savemat(partial / "detections_01.mat", {"all_boxes": cells([0], [])})
    sg_gt = tmp_path / "sg.json"
    write_annotations(sg_gt, [ImageRecord("HICO_train2015_00000005.jpg", [], [])], "hico")
    good = write_all(tmp_path / "good")
    ref = ["--references", str(gt_file), "--protocol", "ho-rcnn", "--predictions"]
    return [
        ("missing file", [*ref, str(tmp_path / "absent" / "detections.mat")], "file or folder missing"),
        ("folder without detection files", [*ref, str(empty)], "detections.mat"),
        ("not a .mat file", [*ref, str(not_mat)], "unreadable MATLAB file"),
        ("other .mat name", [*ref, str(wrong_name)], "not a MATLAB detection file"),
        ("no all_boxes", [*ref, str(no_var)], "no variable all_boxes"),
        ("wrong number of classes", [*ref, str(wrong_shape)], "all_boxes has the wrong shape"),
        ("cell with 8 columns", [*ref, str(short)], f"all_boxes{{{HOLD_CUP + 1},1}}"),
        ("NaN score", [*ref, str(nan)], "non-finite or out-of-range box coordinate or score"),
        ("coordinate beyond float32", [*ref, str(far)], f"all_boxes{{{HOLD_CUP + 1},1}} row 1"),
        ("per-object files missing", [*ref, str(partial)], "detections_02.mat"),
        ("qpic protocol", ["--references", str(gt_file), "--predictions", str(good)], "--protocol ho-rcnn"),
        (
            "SG references",
            ["--references", str(sg_gt), "--protocol", "ho-rcnn", "--predictions", str(good)],
            "HICO_train2015_00000005.jpg",
        ),
    ]


def test_anything_else_is_one_clear_line_with_exit_code_2(tmp_path, gt_file, capsys):
    for name, tail, needle in bad_inputs(tmp_path, gt_file):
        code, err = run(["evaluate", "hoi_map", *tail], capsys)
        assert code == 2, name
        assert err.startswith("hoi-bench: error: ") and "\n" not in err, (name, err)
        assert needle in err, (name, err)
