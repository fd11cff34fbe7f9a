"""Prediction files: PPDM/QPIC JSON (and .json.gz) read, validated and lined up with the GT by file name."""

from __future__ import annotations

import copy
import gzip
import json

import numpy as np
import pytest

from hoi_bench.errors import FormatError, MissingFilesError, PredictionError
from hoi_bench.input_warnings import InputWarning
from hoi_sg_dataset.evaluation import hoi_map, vcoco_map
from hoi_sg_dataset.formats import parse_annotations, read_annotations
from hoi_sg_dataset.predictions import (
    hoi_map_files,
    parse_predictions,
    prediction_json,
    prediction_set,
    read_predictions,
    reference_set,
    vcoco_map_files,
)

GT = [
    {
        "file_name": "HICO_test2015_00000001.jpg",
        "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 37}],
        "annotations": [
            {"bbox": [10, 10, 50, 90], "category_id": 1},
            {"bbox": [40, 40, 80, 80], "category_id": 47},
        ],
    },
    {
        "file_name": "HICO_test2015_00000002.jpg",
        "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 9}],
        "annotations": [
            {"bbox": [0, 0, 30, 60], "category_id": 1},
            {"bbox": [5, 5, 25, 25], "category_id": 2},
        ],
    },
]
ENTRY = {
    "file_name": "HICO_test2015_00000001.jpg",
    "predictions": [
        {"bbox": [10, 10, 50, 90], "category_id": 1},
        {"bbox": [40, 40, 80, 80], "category_id": 47},
    ],
    "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": 37, "score": 0.75}],
}


def write(path, payload):
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt") as out:
            json.dump(payload, out)
    else:
        path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize("name", ["pred.json", "pred.json.gz"])
def test_reads_plain_and_gzip_files(tmp_path, name):
    entries = read_predictions(write(tmp_path / name, [ENTRY]))
    assert entries[0].file_name == ENTRY["file_name"]
    assert entries[0].boxes.tolist() == [[10, 10, 50, 90], [40, 40, 80, 80]]
    assert entries[0].hois.tolist() == [[0, 1, 37]] and entries[0].scores.tolist() == [0.75]


def test_gt_image_without_entry_predicts_nothing_and_lowers_recall():
    records = parse_annotations(GT, "hico")
    pred = prediction_set(records, parse_predictions([ENTRY]))
    assert np.diff(pred.hoi_offsets).tolist() == [1, 0]
    result = hoi_map(reference_set(records), pred)
    assert result["ap_per_triplet"]["1_2_9"] == 0.0 and result["mean_max_recall"] == 0.5


def test_entries_are_matched_by_file_name_not_position():
    records = parse_annotations(GT, "hico")
    second = {
        "file_name": GT[1]["file_name"],
        "predictions": GT[1]["annotations"],
        "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": 9, "score": 0.5}],
    }
    pred = prediction_set(records, parse_predictions([second, ENTRY]))
    assert hoi_map(reference_set(records), pred)["mean_max_recall"] == 1.0


def test_prediction_json_round_trips():
    records = parse_annotations(GT, "hico")
    pred = prediction_set(records, parse_predictions([ENTRY]))
    again = prediction_set(records, parse_predictions(prediction_json(pred, [r.file_name for r in records])))
    assert again.hois.tolist() == pred.hois.tolist() and again.scores.tolist() == pred.scores.tolist()


def test_unknown_image_is_ignored_and_counted():
    records = parse_annotations(GT, "hico")
    stranger = dict(ENTRY, file_name="HICO_test2015_00000099.jpg")
    with pytest.warns(InputWarning, match="1 prediction entries are for images the references do not have") as caught:
        aligned = prediction_set(records, parse_predictions([stranger, ENTRY]), source="p.json")
    message = str(caught[0].message)
    assert "record 0, file_name 'HICO_test2015_00000099.jpg'" in message and message.startswith("p.json: ")
    alone = prediction_set(records, parse_predictions([ENTRY]))
    assert aligned.hois.tolist() == alone.hois.tolist() and aligned.scores.tolist() == alone.scores.tolist()


def test_two_entries_for_one_image_is_a_prediction_error():
    records = parse_annotations(GT, "hico")
    with pytest.raises(PredictionError, match="record 1: field 'file_name': second entry for one image"):
        prediction_set(records, parse_predictions([ENTRY, ENTRY]))


def broken(path: str, value):
    entry = copy.deepcopy(ENTRY)
    target = entry
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    target[int(last) if last.isdigit() else last] = value
    return entry


@pytest.mark.parametrize(
    "path, value, field, expected",
    [
        ("hoi_prediction.0.score", float("nan"), "hoi_prediction[0].score", "a finite number"),
        ("hoi_prediction.0.score", float("inf"), "hoi_prediction[0].score", "a finite number"),
        ("hoi_prediction.0.score", "0.5", "hoi_prediction[0].score", "a finite number"),
        ("hoi_prediction.0.object_id", 2, "hoi_prediction[0].object_id", "0 <= object_id < 2"),
        ("hoi_prediction.0.object_id", -1, "hoi_prediction[0].object_id", "0 <= object_id < 2"),
        ("hoi_prediction.0.subject_id", 5, "hoi_prediction[0].subject_id", "0 <= subject_id < 2"),
        ("hoi_prediction.0.subject_id", True, "hoi_prediction[0].subject_id", "int"),
        ("hoi_prediction.0.category_id", 118, "hoi_prediction[0].category_id", "a verb id in 1..117"),
        (
            "predictions.1.category_id",
            12,
            "predictions[1].category_id",
            "a COCO id among the 80 used in 1..90",
        ),
        ("predictions.1.bbox", [0, 0, 1], "predictions[1].bbox", "[x1, y1, x2, y2] of 4 finite numbers"),
        (
            "predictions.1.bbox",
            [0, 0, float("nan"), 1],
            "predictions[1].bbox",
            "[x1, y1, x2, y2] of 4 finite numbers",
        ),
        ("file_name", 7, "file_name", "non-empty string"),
        ("hoi_prediction", {}, "hoi_prediction", "list"),
    ],
)
def test_bad_entries_name_file_record_field_expected_and_found(tmp_path, path, value, field, expected):
    file = write(tmp_path / "pred.json", [ENTRY, broken(path, value)])
    with pytest.raises(FormatError) as error:
        read_predictions(file, "hico")
    assert error.value.file == str(file) and error.value.record == 1
    assert error.value.field == field and error.value.expected == expected
    assert f"found {value!r}"[:20] in str(error.value)


def test_no_object_is_allowed_in_vcoco_predictions_only():
    entry = broken("hoi_prediction.0.object_id", -1)
    entry["hoi_prediction"][0]["category_id"] = 1
    assert parse_predictions([entry], "vcoco")[0].hois.tolist() == [[0, -1, 1]]


def test_unreadable_files_raise_hoi_bench_errors(tmp_path):
    with pytest.raises(MissingFilesError, match="prediction file missing"):
        read_predictions(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("[{")
    with pytest.raises(FormatError, match="malformed JSON"):
        read_predictions(tmp_path / "bad.json")
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip")
    with pytest.raises(FormatError, match="unreadable prediction file"):
        read_predictions(tmp_path / "bad.json.gz")
    write(tmp_path / "dict.json", {"file_name": "x"})
    with pytest.raises(FormatError, match="JSON list of image entries"):
        read_predictions(tmp_path / "dict.json")


def test_files_give_the_array_numbers(tmp_path):
    gt_path = write(tmp_path / "gt.json", GT)
    pred_path = write(tmp_path / "pred.json", [ENTRY])
    records = read_annotations(gt_path, "hico")
    expected = hoi_map(reference_set(records), prediction_set(records, read_predictions(pred_path)))
    assert hoi_map_files(gt_path, pred_path) == expected


@pytest.mark.anchors
def test_perfect_predictions_on_the_vcoco_sg_anchor_score_one(anchors_dir, tmp_path):
    """Every GT HOI of test_vcoco_sg1.json predicted exactly: AP 1 for every verb with GT."""
    gt_path = anchors_dir / "hoi_sg" / "test_vcoco_sg1.json"
    records = read_annotations(gt_path, "vcoco")
    entries = [
        {
            "file_name": r.file_name,
            "predictions": [{"bbox": b.bbox, "category_id": b.category_id} for b in r.annotations],
            "hoi_prediction": [
                {
                    "subject_id": h.subject_id,
                    "object_id": h.object_id,
                    "category_id": h.category_id,
                    "score": 1.0,
                }
                for h in r.hoi_annotation
            ],
        }
        for r in records
    ]
    pred_path = write(tmp_path / "perfect.json.gz", entries)
    result = vcoco_map_files(gt_path, pred_path, top_k=None)
    assert len(result["ap_per_verb"]) == 14
    assert all(ap == pytest.approx(1.0, abs=1e-12) for ap in result["ap_per_verb"].values())
    assert result["mAP_all"] == pytest.approx(1.0, abs=1e-12)
    assert (
        vcoco_map(reference_set(records), prediction_set(records, parse_predictions(entries)), top_k=None)
        == result
    )
