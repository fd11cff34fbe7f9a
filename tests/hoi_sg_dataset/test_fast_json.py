"""The typed readers (``fast_json``) give the Python validators' arrays on good files and their exact error on
bad ones, including the cases only a typed decoder meets (``1.0`` as an id, a huge integer, a ``NaN`` token);
values that would change a number silently (an image listed twice, coordinates beyond float32, non-finite
scores) are errors wherever they are read."""

from __future__ import annotations

import copy
import gzip
import json
import random

import numpy as np
import pytest

from hoi_bench import cli
from hoi_bench.errors import FormatError, HoiBenchError
from hoi_sg_dataset.evaluation import HoiSet
from hoi_sg_dataset.fast_json import TypedDecodeError, decode_predictions, decode_references
from hoi_sg_dataset.formats import read_annotations, write_annotations
from hoi_sg_dataset.predictions import (
    load_hoi_sets,
    load_sets,
    read_prediction_set,
    read_reference_set,
    reference_set,
    verb_prior_predictions,
)
from hoi_sg_dataset.samples import sample_plan
from hoi_sg_dataset.splits import make_split
from tests.hoi_sg_dataset.test_predictions import ENTRY, GT, broken

HUGE = 10**30


def same_set(a: HoiSet, b: HoiSet) -> None:
    for field in ("boxes", "box_labels", "box_offsets", "hois", "hoi_offsets"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert (a.scores is None) == (b.scores is None)
    if a.scores is not None:
        assert np.array_equal(a.scores, b.scores)


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    """Split sg1 of the synthetic sample with verb-prior predictions: shuffled, one image left out, .gz."""
    base = tmp_path_factory.mktemp("fast-json")
    plan = sample_plan()
    out = {}
    for dataset, trainval, test, seed in (
        ("hico", plan.hico_trainval, plan.hico_test, 368),
        ("vcoco", plan.vcoco_trainval, plan.vcoco_test, 564),
    ):
        split = make_split(trainval, test, dataset, seed=seed)
        entries = verb_prior_predictions(split.trainval, split.test)[1:]
        random.Random(0).shuffle(entries)
        pred = base / f"pred_{dataset}.json.gz"
        with gzip.open(pred, "wt") as handle:
            json.dump(entries, handle)
        out[dataset] = (write_annotations(base / f"test_{dataset}.json", split.test, dataset), pred)
    return out


@pytest.mark.parametrize("dataset", ["hico", "vcoco"])
def test_typed_readers_give_the_python_readers_arrays(sample_files, dataset):
    gt_path, pred_path = sample_files[dataset]
    fast_gt, fast_pred = load_hoi_sets(gt_path, pred_path, dataset)
    slow_gt, slow_pred, _ = load_sets(gt_path, pred_path, dataset)
    same_set(fast_gt, slow_gt)
    same_set(fast_pred, slow_pred)
    # and the typed path itself accepted them (no silent fall back to the Python validators)
    decode_references(gt_path.read_bytes(), dataset)
    decode_predictions(gzip.decompress(pred_path.read_bytes()), dataset)


@pytest.mark.anchors
@pytest.mark.parametrize(
    "name", [f"test_{d}_sg{k}.json" for d in ("hico", "vcoco") for k in (1, 2, 3)]
)
def test_typed_reader_equals_the_python_reader_on_every_official_sg_test_file(anchors_dir, name):
    path = anchors_dir / "hoi_sg" / name
    dataset = "hico" if "hico" in name else "vcoco"
    names, fast = read_reference_set(path, dataset)
    records = read_annotations(path, dataset)
    assert names == [r.file_name for r in records]
    same_set(fast, reference_set(records))
    decode_references(path.read_bytes(), dataset)


@pytest.mark.parametrize("dataset", ["hico", "vcoco"])
@pytest.mark.parametrize("workers", [2, 4])
def test_reading_in_forked_pieces_gives_the_one_process_result(sample_files, forked_pieces, dataset, workers):
    _, pred_path = sample_files[dataset]
    names, pieces = read_prediction_set(pred_path, dataset, workers=workers)
    assert forked_pieces == [(workers, "decoded")]
    one_names, whole = read_prediction_set(pred_path, dataset)
    assert names == one_names
    same_set(pieces, whole)


def test_a_bad_entry_in_a_worker_piece_gets_the_one_process_message(tmp_path, forked_pieces):
    entries = [dict(ENTRY, file_name=f"HICO_test2015_{i:08d}.jpg") for i in range(1, 30)]
    entries[-1] = broken("predictions.1.bbox", [0, 0, 1])
    pred = write_text(tmp_path / "pred.json", json.dumps(entries))
    with pytest.raises(FormatError) as one_process:
        read_prediction_set(pred, "hico")
    with pytest.raises(FormatError) as in_pieces:
        read_prediction_set(pred, "hico", workers=3)
    assert forked_pieces == [(3, "failed")]
    assert str(in_pieces.value) == str(one_process.value) and in_pieces.value.record == 28


def write_text(path, text: str):
    path.write_text(text)
    return path


def prediction_cases():
    """(name, prediction file text): each breaks one rule; the Python validator's message must come out."""
    def entry_text(entry) -> str:
        return json.dumps([ENTRY, entry])

    cases = [
        ("verb id as 1.0", entry_text(broken("hoi_prediction.0.category_id", 37.0))),
        ("subject as true", entry_text(broken("hoi_prediction.0.subject_id", True))),
        ("object index past the list", entry_text(broken("hoi_prediction.0.object_id", 2))),
        ("huge subject index", entry_text(broken("hoi_prediction.0.subject_id", HUGE))),
        ("unknown verb", entry_text(broken("hoi_prediction.0.category_id", 118))),
        ("unknown COCO id", entry_text(broken("predictions.1.category_id", 12))),
        ("three coordinates", entry_text(broken("predictions.1.bbox", [0, 0, 1]))),
        ("five coordinates", entry_text(broken("predictions.1.bbox", [0, 0, 1, 1, 1]))),
        ("coordinate as string", entry_text(broken("predictions.1.bbox", [0, 0, "1", 1]))),
        ("category id past one byte", entry_text(broken("predictions.1.category_id", 300))),
        ("negative category id", entry_text(broken("predictions.0.category_id", -1))),
        ("NaN token score", entry_text(broken("hoi_prediction.0.score", float("nan")))),
        ("Infinity token coordinate", entry_text(broken("predictions.0.bbox", [0, 0, float("inf"), 1]))),
        ("coordinate beyond float32", entry_text(broken("predictions.0.bbox", [0, 0, 1e39, 1]))),
        ("score beyond float32", entry_text(broken("hoi_prediction.0.score", 1e39))),
        ("score as string", entry_text(broken("hoi_prediction.0.score", "0.5"))),
        ("empty file name", entry_text(broken("file_name", ""))),
        ("missing score", entry_text({**ENTRY, "hoi_prediction": [{"subject_id": 0, "object_id": 1,
                                                                   "category_id": 37}]})),
        ("entry not an object", json.dumps([ENTRY, [1, 2]])),
        ("not a list", json.dumps({"file_name": "x"})),
        ("malformed JSON", json.dumps([ENTRY])[:-5]),
        ("1e999 score", entry_text(broken("hoi_prediction.0.score", 0.123)).replace("0.123", "1e999")),
    ]
    return cases


@pytest.mark.parametrize("name, text", prediction_cases(), ids=[n for n, _ in prediction_cases()])
def test_bad_prediction_file_gets_the_python_validators_message(tmp_path, name, text):
    gt = write_text(tmp_path / "gt.json", json.dumps(GT))
    pred = write_text(tmp_path / "pred.json", text)
    with pytest.raises(TypedDecodeError):
        decode_predictions(text.encode(), "hico")
    with pytest.raises(HoiBenchError) as slow:
        load_sets(gt, pred, "hico")
    with pytest.raises(HoiBenchError) as fast:
        load_hoi_sets(gt, pred, "hico")
    assert str(fast.value) == str(slow.value)
    assert str(pred) in str(fast.value)


def test_out_of_range_values_name_record_field_expected_and_found(tmp_path):
    far = broken("predictions.0.bbox", [0, 0, 1e39, 1])
    pred = write_text(tmp_path / "pred.json", json.dumps([ENTRY, far]))
    with pytest.raises(FormatError) as error:
        read_prediction_set(pred, "hico")
    assert error.value.record == 1 and error.value.field == "predictions[0].bbox"
    assert "float32" in error.value.expected and "1e+39" in str(error.value)
    score = write_text(tmp_path / "score.json", json.dumps([broken("hoi_prediction.0.score", -1e39)]))
    message = r"record 0: field 'hoi_prediction\[0\].score': score of .* out of range"
    with pytest.raises(FormatError, match=message):
        read_prediction_set(score, "hico")


def gt_cases():
    """(name, GT records, field named in the error) for GT files that must be refused."""
    twice = copy.deepcopy(GT) + [copy.deepcopy(GT[0])]
    far = copy.deepcopy(GT)
    far[1]["annotations"][0]["bbox"] = [0, 0, 1e39, 60]
    order = copy.deepcopy(GT)
    order[0]["annotations"][1]["bbox"] = [80, 40, 40, 80]
    wrong_class = copy.deepcopy(GT)
    wrong_class[0]["hoi_annotation"][0]["hoi_category_id"] = 1
    no_object = copy.deepcopy(GT)
    no_object[0]["hoi_annotation"][0]["object_id"] = -1
    float_id = copy.deepcopy(GT)
    float_id[1]["annotations"][1]["category_id"] = 2.0
    five = copy.deepcopy(GT)
    five[0]["annotations"][0]["bbox"] = [10, 10, 50, 90, 90]
    return [
        ("image listed twice", twice, "file_name"),
        ("coordinate beyond float32", far, "annotations[0].bbox"),
        ("corners out of order", order, "annotations[1].bbox"),
        ("HOI class id disagrees", wrong_class, "hoi_annotation[0].hoi_category_id"),
        ("HICO HOI without object", no_object, "hoi_annotation[0].object_id"),
        ("category id as 2.0", float_id, "annotations[1].category_id"),
        ("five coordinates", five, "annotations[0].bbox"),
    ]


@pytest.mark.parametrize("name, records, field", gt_cases(), ids=[n for n, _, _ in gt_cases()])
def test_bad_gt_file_gets_the_python_validators_message(tmp_path, name, records, field):
    path = write_text(tmp_path / "gt.json", json.dumps(records))
    with pytest.raises(TypedDecodeError):
        decode_references(path.read_bytes(), "hico")
    with pytest.raises(FormatError) as slow:
        read_annotations(path, "hico")
    with pytest.raises(FormatError) as fast:
        read_reference_set(path, "hico")
    assert str(fast.value) == str(slow.value)
    assert fast.value.file == str(path) and fast.value.field == field


def test_gt_image_listed_twice_names_both_records(tmp_path):
    path = write_text(tmp_path / "gt.json", json.dumps(GT + [GT[0]]))
    with pytest.raises(FormatError) as error:
        read_reference_set(path, "hico")
    assert error.value.record == 2 and "first at record 0" in str(error.value)
    assert error.value.found == GT[0]["file_name"]


def one_line_error(argv, capsys) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hoi-bench: error: ") and "\n" not in err
    return err


@pytest.mark.parametrize("metric", ["hoi_map", "vcoco_map"])
def test_cli_refuses_a_gt_file_listing_an_image_twice(tmp_path, capsys, metric):
    gt = copy.deepcopy(GT)
    for record in gt:  # the same images as V-COCO records (verb 0, hold_obj)
        record["file_name"] = record["file_name"].replace("HICO_test2015_0", "COCO_val2014_00000")
        record["hoi_annotation"][0]["category_id"] = 0
    dataset_gt = gt if metric == "vcoco_map" else GT
    gt_path = write_text(tmp_path / "gt.json", json.dumps(dataset_gt + [dataset_gt[0]]))
    pred_path = write_text(tmp_path / "pred.json", "[]")
    out = tmp_path / "out.json"
    argv = ["evaluate", metric, "--references", str(gt_path), "--predictions", str(pred_path)]
    err = one_line_error([*argv, "--output", str(out)], capsys)
    assert str(gt_path) in err and "image listed twice" in err
    assert not out.exists()


def test_cli_refuses_a_coordinate_beyond_float32(tmp_path, capsys):
    gt_path = write_text(tmp_path / "gt.json", json.dumps(GT))
    far = broken("predictions.1.bbox", [0, 0, 1e39, 9])
    pred_path = write_text(tmp_path / "pred.json", json.dumps([far]))
    err = one_line_error(
        ["evaluate", "hoi_map", "--references", str(gt_path), "--predictions", str(pred_path)], capsys
    )
    assert str(pred_path) in err and "out of range" in err
