"""The same sample predictions give identical numbers through the array API, the CLI and evaluate."""

from __future__ import annotations

import json

import evaluate
import pytest

from hoi_bench import cli, metric_path
from hoi_bench.files import dumps_json
from hoi_sg_dataset.evaluation import HoiSet, hoi_map, vcoco_map
from hoi_sg_dataset.formats import write_annotations, write_json_atomic
from hoi_sg_dataset.predictions import (
    parse_predictions,
    prediction_set,
    reference_set,
    verb_prior_predictions,
)
from hoi_sg_dataset.samples import sample_plan
from hoi_sg_dataset.splits import make_split


@pytest.fixture(scope="module")
def sample_split_files(tmp_path_factory):
    """Split sg1 of the synthetic sample (HICO and V-COCO) with verb-prior predictions, as files and sets."""
    base = tmp_path_factory.mktemp("hoi-map-sample")
    plan = sample_plan()
    out = {}
    for dataset, trainval, test, seed in (
        ("hico", plan.hico_trainval, plan.hico_test, 368),
        ("vcoco", plan.vcoco_trainval, plan.vcoco_test, 564),
    ):
        split = make_split(trainval, test, dataset, seed=seed)
        entries = verb_prior_predictions(split.trainval, split.test)
        out[dataset] = {
            "train": write_annotations(base / f"train_{dataset}.json", split.trainval, dataset),
            "test": write_annotations(base / f"test_{dataset}.json", split.test, dataset),
            "pred": write_json_atomic(base / f"pred_{dataset}.json", entries),
            "gt_set": reference_set(split.test),
            "train_set": reference_set(split.trainval),
            "pred_set": prediction_set(split.test, parse_predictions(entries, dataset)),
        }
    return out


def per_image(hoi_set: HoiSet, with_scores: bool) -> list[dict]:
    images = []
    for i in range(hoi_set.num_images):
        b0, b1 = hoi_set.box_offsets[i], hoi_set.box_offsets[i + 1]
        h0, h1 = hoi_set.hoi_offsets[i], hoi_set.hoi_offsets[i + 1]
        image = {
            "boxes": hoi_set.boxes[b0:b1].tolist(),
            "box_labels": hoi_set.box_labels[b0:b1].tolist(),
            "hois": hoi_set.hois[h0:h1].tolist(),
        }
        if with_scores:
            image["scores"] = hoi_set.scores[h0:h1].tolist()
        images.append(image)
    return images


def as_written(result: dict) -> dict:
    """``result`` as a strict JSON output file holds it (NaN as null), so results with NaN compare equal."""
    return json.loads(dumps_json(result))


def run_cli(argv, tmp_path):
    out = tmp_path / "out.json"
    assert cli.main([*argv, "--output", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("protocol", ["qpic", "ho-rcnn"])
def test_hoi_map_is_identical_through_array_api_cli_and_evaluate(sample_split_files, tmp_path, protocol):
    files = sample_split_files["hico"]
    expected = hoi_map(
        files["gt_set"], files["pred_set"], protocol=protocol, train_references=files["train_set"]
    )
    assert 0 < expected["mAP"] < 1
    from_cli = run_cli(
        [
            "evaluate",
            "hoi_map",
            "--references",
            str(files["test"]),
            "--predictions",
            str(files["pred"]),
            "--train-references",
            str(files["train"]),
            "--protocol",
            protocol,
        ],
        tmp_path,
    )
    assert from_cli == as_written(expected)
    metric = evaluate.load(metric_path("hoi_map"))
    from_module = metric.compute(
        predictions=per_image(files["pred_set"], True),
        references=per_image(files["gt_set"], False),
        protocol=protocol,
        train_references=per_image(files["train_set"], False),
    )
    assert as_written(from_module) == as_written(expected)
    fast = metric.compute(
        predictions=list(range(files["gt_set"].num_images)),
        references=list(range(files["gt_set"].num_images)),
        protocol=protocol,
        prediction_set=files["pred_set"],
        reference_set=files["gt_set"],
        train_references=files["train_set"],
    )
    assert as_written(fast) == as_written(expected)


def test_vcoco_map_is_identical_through_array_api_cli_and_evaluate(sample_split_files, tmp_path):
    files = sample_split_files["vcoco"]
    expected = vcoco_map(files["gt_set"], files["pred_set"])
    assert 0 < expected["mAP_all"] < 1
    from_cli = run_cli(
        ["evaluate", "vcoco_map", "--references", str(files["test"]), "--predictions", str(files["pred"])],
        tmp_path,
    )
    assert from_cli == as_written(expected)
    metric = evaluate.load(metric_path("vcoco_map"))
    from_module = metric.compute(
        predictions=per_image(files["pred_set"], True), references=per_image(files["gt_set"], False)
    )
    assert as_written(from_module) == as_written(expected)
    n = files["gt_set"].num_images
    assert (
        metric.compute(
            predictions=list(range(n)),
            references=list(range(n)),
            prediction_set=files["pred_set"],
            reference_set=files["gt_set"],
        )
        == expected
    )


def test_evaluate_module_accumulates_batches(sample_split_files):
    files = sample_split_files["hico"]
    predictions, references = per_image(files["pred_set"], True), per_image(files["gt_set"], False)
    metric = evaluate.load(metric_path("hoi_map"))
    for start in range(0, len(predictions), 10):
        metric.add_batch(
            predictions=predictions[start : start + 10], references=references[start : start + 10]
        )
    assert as_written(metric.compute()) == as_written(hoi_map(files["gt_set"], files["pred_set"]))


def test_fast_route_requires_one_row_per_image_in_order(sample_split_files):
    files = sample_split_files["hico"]
    metric = evaluate.load(metric_path("hoi_map"))
    with pytest.raises(ValueError, match="predictions = references = list"):
        metric.compute(
            predictions=[0], references=[0], prediction_set=files["pred_set"], reference_set=files["gt_set"]
        )
