"""`hoi-bench evaluate hhi`, `show sportshhi`, `stats sportshhi`, `build sportshhi` and the demo steps."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from hoi_bench import cli
from hoi_bench.plugins import DemoContext, Registry
from sportshhi import formats
from sportshhi.cli import demo_score, register


def _main(*argv) -> int:
    return cli.main([str(a) for a in argv])


@pytest.fixture(scope="module")
def exact_predictions(sample, tmp_path_factory):
    """The validation GT written back as predictions (score 1), i.e. a perfect HHICls model."""
    ann = formats.read_annotation_csv(sample.root / formats.annotation_file("validation"))
    rows = [(v, t, tuple(s), tuple(o), int(label), 1.0) for v, t, s, o, label in
            zip(ann.video_ids, ann.keyframes, ann.subject_boxes, ann.object_boxes, ann.labels)]
    path = tmp_path_factory.mktemp("pred") / "exact.csv"
    formats.write_prediction_csv(path, rows)
    return path


def test_evaluate_writes_the_documented_json(sample, exact_predictions, tmp_path, capsys):
    out = tmp_path / "scores.json"
    code = _main("evaluate", "hhi", "--references", sample.root / formats.annotation_file("validation"),
                 "--predictions", exact_predictions, "--action-list", sample.root / formats.ACTION_LIST_FILE,
                 "--output", out)
    assert code == 0
    result = json.loads(out.read_text())
    assert set(result) == {"settings", "mAP", "ap_per_class", "recall@20", "recall@50", "recall@100",
                           "recall@150", "warnings"}
    assert result["warnings"] == []
    assert result["mAP"] == 1.0 and result["recall@20"] == 1.0
    assert result["settings"]["iou_threshold"] == 0.5 and not result["settings"]["official"]
    assert {k for k, v in result["ap_per_class"].items() if v is not None} == {"2", "3", "5", "6"}
    printed = capsys.readouterr().out
    assert "basketball - sample - partner to the right" in printed and "mAP" in printed


def test_evaluate_official_flag_and_threshold_override(sample, exact_predictions, tmp_path):
    out = tmp_path / "scores.json"
    _main("evaluate", "hhi", "--references", sample.root / formats.annotation_file("validation"),
          "--predictions", exact_predictions, "--action-list", sample.root / formats.ACTION_LIST_FILE,
          "--official", "--iou-threshold", "0.7", "--output", out)
    settings = json.loads(out.read_text())["settings"]
    assert settings["official"] and settings["iou_threshold"] == 0.7


def test_evaluate_reports_a_bad_prediction_file_with_exit_2(sample, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("v_sample-court02_c001,1,0.1,0.1,0.3,0.8,0.5,0.1,0.7,0.8,99,0.5\n")
    code = _main("evaluate", "hhi", "--references", sample.root / formats.annotation_file("validation"),
                 "--predictions", bad, "--action-list", sample.root / formats.ACTION_LIST_FILE)
    assert code == 2
    assert f"{bad}: record line 1: field 'label': label not in the action list" in capsys.readouterr().err


def test_show_draws_a_keyframe_png(sample, exact_predictions, tmp_path):
    video = sample.videos["validation"][0]
    out = tmp_path / "frame.png"
    assert _main("show", "sportshhi", "--data-dir", sample.root, "--keyframe", f"{video},3", "--out", out,
                 "--predictions", exact_predictions) == 0
    with Image.open(out) as image:
        assert image.format == "PNG" and image.width >= 640
    missing = f"{video},99"
    assert _main("show", "sportshhi", "--data-dir", sample.root, "--keyframe", missing, "--out", out) == 2


def test_stats_counts_interactions_per_class(sample, capsys):
    assert _main("stats", "sportshhi", "--annotations", sample.root / formats.annotation_file("train"),
                 "--action-list", sample.root / formats.ACTION_LIST_FILE) == 0
    out = capsys.readouterr().out
    ann = formats.read_annotation_csv(sample.root / formats.annotation_file("train"))
    assert f"{len(ann):,} interactions on {len(set(ann.keys))} keyframes" in out


def test_build_reports_missing_release_with_exit_2(tmp_path, capsys):
    assert _main("build", "sportshhi", "--data-dir", tmp_path, "--out", tmp_path / "hub") == 2
    assert "7 annotation files missing" in capsys.readouterr().err


def test_demo_steps_are_registered_at_build_evaluation_and_training_orders():
    registry = Registry()
    register(registry)
    assert sorted(step.order for step in registry.demo_steps) == [13, 33, 53]


def test_demo_score_records_map_and_recall_rows(tmp_path):
    context = DemoContext(out_dir=tmp_path, say=lambda text: None)
    demo_score(context)
    metrics = {row.metric: row.value for row in context.rows}
    expected = {"mAP (proximity rule)", "recall@20 (proximity rule)", "recall@150 (proximity rule)"}
    assert expected <= metrics.keys()
    assert 0.0 < metrics["mAP (proximity rule)"] < 1.0
    assert context.artifacts["sportshhi keyframe drawing"].is_file()
