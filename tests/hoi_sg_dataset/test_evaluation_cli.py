"""`hoi-bench evaluate hoi_map|vcoco_map` and the metrics demo step: tables, JSON contract, clean errors."""

from __future__ import annotations

import json

import pytest

from hoi_bench import cli
from hoi_sg_dataset.predictions import vcoco_map_files

GT = [
    {
        "file_name": "HICO_test2015_00000001.jpg",
        "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 37}],
        "annotations": [
            {"bbox": [10, 10, 50, 90], "category_id": 1},
            {"bbox": [40, 40, 80, 80], "category_id": 47},
        ],
    }
]
PRED = [
    {
        "file_name": "HICO_test2015_00000001.jpg",
        "predictions": GT[0]["annotations"],
        "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": 37, "score": 0.9}],
    }
]


def files(tmp_path, gt=GT, pred=PRED):
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    return ["--references", str(tmp_path / "gt.json"), "--predictions", str(tmp_path / "pred.json")]


def test_hoi_map_prints_a_table_and_writes_the_public_keys(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert cli.main(["evaluate", "hoi_map", *files(tmp_path), "--output", str(out), "--per-class"]) == 0
    printed = capsys.readouterr().out
    assert "mAP              1.0000" in printed
    assert "no training annotations given" in printed
    assert "1_47_37  person hold cup  1.0000" in printed
    result = json.loads(out.read_text())
    assert {"mAP", "mAP_rare", "mAP_non_rare", "mean_max_recall", "ap_per_triplet"} <= result.keys()
    assert result["mAP_rare"] is None and list(result["ap_per_triplet"]) == ["1_47_37"]


def test_vcoco_map_writes_the_public_keys(tmp_path, capsys):
    gt = [
        dict(
            GT[0],
            file_name="COCO_val2014_000000000001.jpg",
            hoi_annotation=[{"subject_id": 0, "object_id": 1, "category_id": 0}],
        )
    ]
    pred = [
        dict(
            PRED[0],
            file_name="COCO_val2014_000000000001.jpg",
            hoi_prediction=[{"subject_id": 0, "object_id": 1, "category_id": 0, "score": 0.9}],
        )
    ]
    out = tmp_path / "out.json"
    assert (
        cli.main(
            ["evaluate", "vcoco_map", *files(tmp_path, gt, pred), "--output", str(out), "--top-k", "none"]
        )
        == 0
    )
    assert "mAP_all" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert {"mAP_all", "mAP_thesis", "ap_per_verb"} <= result.keys() and list(result["ap_per_verb"]) == ["0"]


def test_prediction_for_an_unknown_image_is_ignored_with_one_counted_warning_line(tmp_path, capsys):
    out = tmp_path / "out.json"
    pred = [*PRED, dict(PRED[0], file_name="HICO_test2015_00000777.jpg")]
    assert cli.main(["evaluate", "hoi_map", *files(tmp_path, GT, pred), "--output", str(out)]) == 0
    printed = capsys.readouterr()
    lines = [line for line in printed.out.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and "1 prediction entries are for images the references do not have" in lines[0]
    assert "InputWarning" not in printed.err
    result = json.loads(out.read_text())
    assert result["warnings"] == [lines[0].removeprefix("warning: ")]
    alone = tmp_path / "alone"
    alone.mkdir()
    assert cli.main(["evaluate", "hoi_map", *files(alone, GT, PRED), "--output", str(alone / "o.json")]) == 0
    assert json.loads((alone / "o.json").read_text())["mAP"] == result["mAP"]


def test_nan_score_exits_2_naming_the_field(tmp_path, capsys):
    pred = [dict(PRED[0], hoi_prediction=[dict(PRED[0]["hoi_prediction"][0], score=float("nan"))])]
    assert cli.main(["evaluate", "hoi_map", *files(tmp_path, GT, pred)]) == 2
    assert "field 'hoi_prediction[0].score'" in capsys.readouterr().err


@pytest.mark.slow  # a session build of every config of the sample
def test_demo_step_scores_the_rule_on_the_sample(hoi_sg_demo):
    context, said, out_dir = hoi_sg_demo  # the session's demo: the build step, then this scoring step
    metrics = {(row.benchmark, row.metric): row.value for row in context.rows}
    assert 0 < metrics[("hoi_sg/hico_split1", "hoi_map mAP, qpic (verb-prior rule)")] < 1
    vcoco = metrics[("hoi_sg/vcoco_split1", "vcoco_map mAP_all (verb-prior rule)")]
    assert 0 < vcoco < 1
    base = out_dir / "work" / "hoi_sg" / "metrics"  # the evaluate module gave what the file-level API gives
    assert vcoco == vcoco_map_files(base / "test_vcoco_sg1.json", base / "predictions_vcoco_sg1.json")["mAP_all"]
    assert any("hoi-bench evaluate hoi_map" in line for line in said)
    assert (base / "predictions_hico_sg1.json").is_file()
