"""`hoi-bench build|stats|evaluate|show haystack`, `evaluate sg_recall` and the demo steps, end to end on files."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from haystack_dataset import cli as haystack_cli
from haystack_fixtures import GOLDEN_ANNOTATION, GOLDEN_ROWS
from hoi_bench import cli
from hoi_bench.plugins import Registry


@pytest.fixture()
def run(monkeypatch):
    registry = Registry()
    haystack_cli.register(registry)
    monkeypatch.setattr(cli, "load_registry", lambda: registry)
    return lambda *argv: cli.main([str(a) for a in argv])


@pytest.fixture()
def golden_files(tmp_path):
    annotation = tmp_path / "annotation.json"
    annotation.write_text(json.dumps(GOLDEN_ANNOTATION))
    predictions = tmp_path / "output.npy"
    np.save(predictions, GOLDEN_ROWS)
    return annotation, predictions


def test_evaluate_haystack_writes_the_report_and_prints_a_table(run, golden_files, tmp_path, capsys):
    annotation, predictions = golden_files
    out = tmp_path / "metrics.json"
    assert run("evaluate", "haystack", "--annotations", annotation, "--predictions", predictions,
               "--rank-mode", "official", "--output", out) == 0
    report = json.loads(out.read_text())
    assert set(report) >= {"rank_mode", "per_predicate", "mean"} and report["rank_mode"] == "official"
    assert set(report["per_predicate"]["on"]) == {"p_auc", "pdd", "pdo", "positives", "negatives"}
    assert report["mean"]["pdo"] == pytest.approx(0.305556, abs=1e-6)
    printed = capsys.readouterr().out
    assert "predicate" in printed and "on " in printed and "mean" in printed


def test_evaluate_haystack_bad_predictions_exit_2_with_the_reason(run, golden_files, tmp_path, capsys):
    annotation, _ = golden_files
    bad = tmp_path / "bad.npy"
    rows = GOLDEN_ROWS.copy()
    rows[1, 4] = np.nan
    np.save(bad, rows)
    assert run("evaluate", "haystack", "--annotations", annotation, "--predictions", bad) == 2
    assert "row 1, column 4" in capsys.readouterr().err


def test_show_haystack_draws_a_png(run, golden_files, tmp_path):
    annotation, predictions = golden_files
    metrics = tmp_path / "metrics.json"
    run("evaluate", "haystack", "--annotations", annotation, "--predictions", predictions, "--min-positives", "1",
        "--output", metrics)
    plot = tmp_path / "plot.png"
    assert run("show", "haystack", "--metrics", metrics, "--out", plot) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stats_counts_positives_negatives_and_placeholders(run, golden_files, capsys):
    annotation, _ = golden_files
    assert run("stats", "haystack", "--annotations", annotation) == 0
    out = capsys.readouterr().out
    for pattern in (r"positive relations\s+6\n", r"negative relations\s+5\n", r"predicate -1\s+1\n", r"on\s+4\s+3\n"):
        assert re.search(pattern, out), pattern


def test_demo_steps_build_score_and_report(sample, tmp_path, capsys):
    registry = Registry()
    haystack_cli.register(registry)
    assert cli.run_demo(registry, tmp_path) == 0
    out = capsys.readouterr().out
    for metric in ("P-AUC", "PDD", "PDO", "R@20", "mR@20", "R@100"):
        assert metric in out
    report = json.loads((tmp_path / "haystack" / "frequency_prior_haystack_metrics.json").read_text())
    assert report["rank_mode"] == "paper" and report["per_predicate"]
    recall_json = tmp_path / "haystack" / "frequency_prior_psg_test.json"
    assert run_recall(tmp_path / "haystack" / "native" / "psg" / "psg.json", recall_json) == 0


def run_recall(annotations, predictions):
    registry = Registry()
    haystack_cli.register(registry)
    args = cli.build_parser(registry).parse_args(["evaluate", "sg_recall", "--annotations", str(annotations),
                                                  "--predictions", str(predictions)])
    return args.handler(args)


def test_build_refuses_an_incomplete_copy_naming_the_missing_file(run, tmp_path, capsys):
    assert run("build", "haystack", "--data-dir", tmp_path, "--out", tmp_path / "hub", "--config", "haystack") == 2
    assert "haystack/annotation_v1.json" in capsys.readouterr().err
