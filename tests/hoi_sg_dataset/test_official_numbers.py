"""The worked examples of the "official numbers" table (issue 19, part 1), each checked by hand, through every
route that reads the inputs (Python validators, the typed msgspec readers, the columnar NPZ, the MATLAB caches).

* QPIC holds GT boxes as float32 (``datasets/hico.py`` / ``vcoco.py``), so GT [0, 0, 2, 7.0000002] is
  [0, 0, 2, 7]: against the prediction [0, 0, 2, 3] the +1-pixel areas are 3 x 8 = 24 and 3 x 4 = 12, the
  intersection 12, IoU 12 / 24 = 0.5 exactly, a match; one TP of one GT is an 11-point AP of 11 x 1/11.
  In float64 the GT area is 3 x 8.0000002 and the IoU 0.4999999875: no match.
* MATLAB keeps a single-precision cache single: the person x1 3 + 2^-22 (0-based) plus 1 is 4 + 2^-22 in double
  but rounds to 4 in single, so against GT [1, 1, 6, 10] the boxes are 3 x 10 = 30 and 6 x 10 = 60 pixels, the
  intersection 30, IoU 30 / 60 = 0.5; in double the IoU is just below 0.5.
* eval_one.m asserts one cache column per test image.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from hoi_bench import cli
from hoi_bench.errors import PredictionError
from hoi_bench.input_warnings import InputWarning
from hoi_sg_dataset.columnar import write_prediction_npz
from hoi_sg_dataset.evaluation import HoiSet, hoi_map, vcoco_map
from hoi_sg_dataset.predictions import read_prediction_set
from hoi_sg_dataset.predictions import hoi_map_files, load_sets, vcoco_map_files
from hoi_sg_dataset.vocabulary import hico_hoi_classes

ONE_TP = 0.0
for _ in range(11):  # 11-point AP of one TP for one GT, summed as upstream sums it: 1.0000000000000002
    ONE_TP += 1.0 / 11
PERSON, CUP, HOLD = 1, 47, 37
HAIR_GT, PRED_BOX = [0, 0, 2, 7.0000002], [0, 0, 2, 3]
CUP_BOX = [10, 10, 20, 20]


def hico_files(tmp_path, gt_boxes=(HAIR_GT, CUP_BOX), pred_boxes=(PRED_BOX, CUP_BOX)):
    gt = [{"file_name": "HICO_test2015_00000001.jpg",
           "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": HOLD}],
           "annotations": [{"bbox": list(gt_boxes[0]), "category_id": PERSON},
                           {"bbox": list(gt_boxes[1]), "category_id": CUP}]}]
    pred = [{"file_name": "HICO_test2015_00000001.jpg",
             "predictions": [{"bbox": list(pred_boxes[0]), "category_id": PERSON},
                             {"bbox": list(pred_boxes[1]), "category_id": CUP}],
             "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": HOLD, "score": 0.9}]}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    return tmp_path / "gt.json", tmp_path / "pred.json"


def test_qpic_float32_gt_box_gives_iou_one_half_and_map_one():
    gt = HoiSet.from_images(boxes=[[HAIR_GT, CUP_BOX]], box_labels=[[PERSON, CUP]], hois=[[[0, 1, HOLD]]])
    pred = HoiSet.from_images(boxes=[[PRED_BOX, CUP_BOX]], box_labels=[[PERSON, CUP]], hois=[[[0, 1, HOLD]]],
                              scores=[[0.9]])
    result = hoi_map(gt, pred)
    assert result["mAP"] == ONE_TP and result["warnings"] == []
    # the same box a float32 step further out is 7.0000005 in float32 too: IoU below 0.5, no match
    farther = HoiSet.from_images(boxes=[[[0, 0, 2, 7.0000005], CUP_BOX]], box_labels=[[PERSON, CUP]],
                                 hois=[[[0, 1, HOLD]]])
    assert hoi_map(farther, pred)["mAP"] == 0.0
    # predictions are taken as given (QPIC's evaluator does not cast them): the mirror case does not match
    mirrored = HoiSet.from_images(boxes=[[HAIR_GT, CUP_BOX]], box_labels=[[PERSON, CUP]], hois=[[[0, 1, HOLD]]],
                                  scores=[[0.9]])
    short = HoiSet.from_images(boxes=[[PRED_BOX, CUP_BOX]], box_labels=[[PERSON, CUP]], hois=[[[0, 1, HOLD]]])
    assert hoi_map(short, mirrored)["mAP"] == 0.0


@pytest.mark.parametrize("route", ["typed", "python", "npz"])
def test_qpic_float32_gt_from_files_on_every_reading_route(tmp_path, route):
    gt_file, pred_file = hico_files(tmp_path)
    if route == "typed":
        result = hoi_map_files(gt_file, pred_file)
    elif route == "python":
        gt, pred, _ = load_sets(gt_file, pred_file, "hico")
        result = hoi_map(gt, pred)
    else:
        names, predictions = read_prediction_set(pred_file, "hico")
        result = hoi_map_files(gt_file, write_prediction_npz(tmp_path / "pred.npz", names, predictions))
    assert result["mAP"] == ONE_TP


def test_vcoco_map_float32_gt_box_gives_ap_one(tmp_path):
    gt = [{"file_name": "COCO_val2014_000000000001.jpg",
           "annotations": [{"bbox": HAIR_GT, "category_id": PERSON}],
           "hoi_annotation": [{"subject_id": 0, "object_id": -1, "category_id": 1}]}]
    pred = [{"file_name": "COCO_val2014_000000000001.jpg",
             "predictions": [{"bbox": PRED_BOX, "category_id": PERSON}],
             "hoi_prediction": [{"subject_id": 0, "object_id": -1, "category_id": 1, "score": 0.5}]}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    result = vcoco_map_files(tmp_path / "gt.json", tmp_path / "pred.json")
    assert result["ap_per_verb"] == {"1": ONE_TP} and result["mAP_all"] == ONE_TP
    gt_set, pred_set, _ = load_sets(tmp_path / "gt.json", tmp_path / "pred.json", "vcoco")
    assert vcoco_map(gt_set, pred_set)["mAP_all"] == ONE_TP


# ---------------------------------------------------------------------------------------------- MATLAB caches

CLASSES = hico_hoi_classes()
HOLD_CUP = next(c for c, h in enumerate(CLASSES) if (h.verb_id, h.object_id) == (HOLD, CUP))
MATLAB_GT_PERSON, MATLAB_GT_CUP = [1, 1, 6, 10], [21, 21, 31, 31]
# 0-based, as the cache stores it: x1 3 + 2^-22 is exact in single precision
DETECTION = [3 + 2 ** -22, 0, 5, 9, 20, 20, 30, 30, 0.9]


def matlab_gt(tmp_path, images=1):
    records = [{"file_name": f"HICO_test2015_{n:08d}.jpg",
                "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": HOLD}],
                "annotations": [{"bbox": MATLAB_GT_PERSON, "category_id": PERSON},
                                {"bbox": MATLAB_GT_CUP, "category_id": CUP}]} for n in range(1, images + 1)]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(records))
    return path


@pytest.fixture
def scipy_io():
    return pytest.importorskip("scipy.io", reason="the MATLAB layout needs scipy (hoi-bench[matlab])")


def cache(scipy_io, tmp_path, dtype, columns=1, name="detections.mat"):
    cells = np.empty((len(CLASSES), columns), dtype=object)
    for r in range(len(CLASSES)):
        for j in range(columns):
            cells[r, j] = np.zeros((0, 0))
    cells[HOLD_CUP, 0] = np.array([DETECTION], dtype=dtype)
    folder = tmp_path / f"m_{np.dtype(dtype).name}_{columns}"
    folder.mkdir()
    scipy_io.savemat(folder / name, {"all_boxes": cells})
    return folder / name


def test_single_precision_cache_is_scored_in_single_as_matlab_does(scipy_io, tmp_path):
    gt = matlab_gt(tmp_path)
    single = hoi_map_files(gt, cache(scipy_io, tmp_path, np.float32), protocol="ho-rcnn")
    assert single["ap_per_triplet"][f"{PERSON}_{CUP}_{HOLD}"] == ONE_TP
    double = hoi_map_files(gt, cache(scipy_io, tmp_path, np.float64), protocol="ho-rcnn")  # 4 + 2^-22: IoU < 0.5
    assert double["ap_per_triplet"][f"{PERSON}_{CUP}_{HOLD}"] == 0.0


def test_single_precision_rounds_every_detection_of_the_class(scipy_io, tmp_path):
    """MATLAB's ``[det_bb; single]`` makes the class's double rows single too: a double cell of the same class
    in another column is rounded as well."""
    gt = matlab_gt(tmp_path, images=2)
    cells = np.empty((len(CLASSES), 2), dtype=object)
    for r in range(len(CLASSES)):
        cells[r, 0] = cells[r, 1] = np.zeros((0, 0))
    cells[HOLD_CUP, 0] = np.array([DETECTION], dtype=np.float32)
    cells[HOLD_CUP, 1] = np.array([DETECTION], dtype=np.float64)
    scipy_io.savemat(tmp_path / "detections.mat", {"all_boxes": cells})
    result = hoi_map_files(gt, tmp_path / "detections.mat", protocol="ho-rcnn")
    assert result["ap_per_triplet"][f"{PERSON}_{CUP}_{HOLD}"] == ONE_TP  # both detections are TPs


def test_cache_with_fewer_columns_than_gt_images_stops_as_eval_one_asserts(scipy_io, tmp_path, capsys):
    gt = matlab_gt(tmp_path, images=2)
    detections = cache(scipy_io, tmp_path, np.float64, columns=1)
    with pytest.raises(PredictionError, match=r"1 image columns.*HICO_test2015_00000002\.jpg.*numel\(det\)"):
        hoi_map_files(gt, detections, protocol="ho-rcnn")
    out = tmp_path / "out.json"
    argv = ["evaluate", "hoi_map", "--protocol", "ho-rcnn", "--references", str(gt), "--predictions",
            str(detections), "--output", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "assert(numel(det) == numel(gt_bbox))" in err and not out.exists()


def test_cache_with_one_column_per_gt_image_is_scored_without_warnings(scipy_io, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        result = hoi_map_files(matlab_gt(tmp_path), cache(scipy_io, tmp_path, np.float64), protocol="ho-rcnn")
    assert result["warnings"] == [] and result["num_classes"] == len(CLASSES)
