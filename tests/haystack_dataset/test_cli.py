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


@pytest.mark.slow
def test_demo_steps_build_score_and_report(sample, tmp_path, capsys):
    registry = Registry()
    haystack_cli.register(registry)
    assert cli.run_demo(registry, tmp_path) == 0
    out = capsys.readouterr().out
    for metric in ("P-AUC", "PDD", "PDO", "R@20", "mR@20", "R@100"):
        assert metric in out
    work = tmp_path / "work" / "haystack"  # the Hub folder itself is tmp_path / "haystack"
    report = json.loads((work / "frequency_prior_haystack_metrics.json").read_text())
    assert report["rank_mode"] == "paper" and report["per_predicate"]
    recall_json = work / "frequency_prior_psg_test.json"
    assert run_recall(work / "native" / "psg" / "psg.json", recall_json) == 0


def run_recall(annotations, predictions):
    registry = Registry()
    haystack_cli.register(registry)
    args = cli.build_parser(registry).parse_args(["evaluate", "sg_recall", "--annotations", str(annotations),
                                                  "--predictions", str(predictions)])
    return args.handler(args)


def test_build_refuses_an_incomplete_copy_naming_the_missing_file(run, tmp_path, capsys):
    assert run("build", "haystack", "--data-dir", tmp_path, "--out", tmp_path / "hub", "--config", "haystack") == 2
    assert "haystack/annotation_v1.json" in capsys.readouterr().err


def test_evaluate_sg_recall_reads_json_and_the_converted_npz_alike(run, sample, tmp_path, capsys):
    from haystack_dataset.predictions import RecallPrediction, write_recall_predictions

    predictions = [RecallPrediction(key, np.array([[0, 1], [1, 0]]), np.full((2, 57), 1 / 57))
                   for key in sorted(sample.test_image_ids)]
    predictions[0] = RecallPrediction(predictions[0].image_id, np.zeros((0, 2), dtype=int), np.zeros((0, 57)))
    source = write_recall_predictions(tmp_path / "pred.json", predictions)
    columnar = tmp_path / "pred.npz"
    assert run("convert", "recall-predictions", "--predictions", source, "--out", columnar) == 0
    assert f"{len(predictions)} images" in capsys.readouterr().out
    outputs = []
    for path in (source, columnar):
        out = tmp_path / f"{path.suffix[1:]}.json"
        assert run("evaluate", "sg_recall", "--annotations", sample.psg_file, "--predictions", path,
                   "--output", out) == 0
        outputs.append(json.loads(out.read_text()))
    assert outputs[0] == outputs[1] and outputs[0]["images"] == len(predictions) - 1   # the empty entry is skipped


def test_evaluate_sg_recall_writes_null_for_undefined_recall(run, sample, tmp_path):
    empty = tmp_path / "none.json"
    empty.write_text("[]")
    out = tmp_path / "out.json"
    assert run("evaluate", "sg_recall", "--annotations", sample.psg_file, "--predictions", empty,
               "--output", out) == 0
    result = json.loads(out.read_text(), parse_constant=lambda token: pytest.fail(f"bare {token} in the output"))
    assert result["R@20"] is None and result["mR@20"] == 0.0 and result["images"] == 0


def test_unusable_output_rows_are_a_warning_in_the_table_and_the_json(run, golden_files, tmp_path, capsys):
    annotation, _ = golden_files
    rows = np.vstack([GOLDEN_ROWS, [[7, 1, 1, .1, .2, .3, .4], [7, 0, 9, .1, .2, .3, .4]]])
    predictions = tmp_path / "rows.npy"
    np.save(predictions, rows)
    out = tmp_path / "metrics.json"
    assert run("evaluate", "haystack", "--annotations", annotation, "--predictions", predictions,
               "--rank-mode", "official", "--output", out) == 0
    printed = capsys.readouterr().out
    assert "warning: " in printed and "2 output rows of annotated images can match no annotation" in printed
    report = json.loads(out.read_text())
    assert any("can match no annotation" in note for note in report["warnings"])
    assert report["mean"]["pdd"] == pytest.approx(0.25)


@pytest.mark.parametrize(("content", "message"), [
    (b"", "empty file"),
    ("npz", "an .npz archive where a .npy array is expected"),
    (b"not numpy at all", "not a .npy file"),
])
def test_bad_npy_files_are_one_line_errors(run, golden_files, tmp_path, capsys, content, message):
    annotation, _ = golden_files
    bad = tmp_path / "bad.npy"
    if content == "npz":
        with open(bad, "wb") as handle:
            np.savez(handle, rows=GOLDEN_ROWS)
    else:
        bad.write_bytes(content)
    assert run("evaluate", "haystack", "--annotations", annotation, "--predictions", bad) == 2
    err = capsys.readouterr().err
    assert message in err and "bad.npy" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["haystack", "sg_recall"])
def test_deeply_nested_json_is_a_one_line_error(run, golden_files, tmp_path, capsys, command):
    annotation, predictions = golden_files
    deep = tmp_path / "deep.json"
    deep.write_text('{"junk": ' + "[" * 100_000 + "]" * 100_000 + "}" if command == "haystack" else
                    "[" * 100_000 + "]" * 100_000)
    args = ["--annotations", deep, "--predictions", predictions] if command == "haystack" else \
        ["--annotations", annotation, "--predictions", deep]
    assert run("evaluate", command, *args) == 2
    err = capsys.readouterr().err
    assert "deep.json" in err and "nesting too deep" in err and len(err.strip().splitlines()) == 1


def test_build_psg_without_test_image_ids_exits_2(run, sample, tmp_path, capsys):
    import shutil

    copy = tmp_path / "native"
    shutil.copytree(sample.root, copy)
    raw = json.loads(sample.psg_file.read_text())
    del raw["test_image_ids"]
    (copy / "psg" / "psg.json").write_text(json.dumps(raw))
    assert run("build", "haystack", "--data-dir", copy, "--out", tmp_path / "hub", "--config", "psg") == 2
    err = capsys.readouterr().err
    assert "test_image_ids" in err and len(err.strip().splitlines()) == 1
