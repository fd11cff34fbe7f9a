"""`hoi-bench report`: mean and sample standard deviation (ddof=1) of every metric over result files, by group,
as JSON, Markdown, LaTeX and a PNG; values checked against hand computation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hoi_bench.cli import main
from hoi_bench.errors import FormatError
from hoi_bench.results_report import ReportError, build_report, metric_values


def hoi_map_result(m_ap: float, mean_max_recall: float | None, rare: float | None = None) -> dict:
    """A result file as `hoi-bench evaluate hoi_map --output` writes it (same keys and nesting)."""
    return {"mAP": m_ap, "mAP_rare": rare, "mAP_non_rare": None, "mean_max_recall": mean_max_recall,
            "ap_per_triplet": {"1_47_37": m_ap}, "protocol": "qpic", "num_classes": 5,
            "reasons": {"mAP_non_rare": "no test triplet has >= 10 training instances"}}


@pytest.fixture
def sg_files(tmp_path) -> list[Path]:
    results = [hoi_map_result(0.2, 0.5), hoi_map_result(0.4, None), hoi_map_result(0.9, 0.8),
               hoi_map_result(0.7, 0.9)]
    paths = []
    for i, result in enumerate(results):
        path = tmp_path / f"split{i}.json"
        path.write_text(json.dumps(result))
        paths.append(path)
    return paths


def test_three_hoi_map_results_give_mean_and_sample_std_by_hand(sg_files):
    report = build_report(sg_files[:3]).to_json()
    m_ap = report["metrics"]["mAP"]
    # (0.2 + 0.4 + 0.9) / 3 = 0.5; squared deviations .09 + .01 + .16 = .26, / (3 - 1) = .13
    assert m_ap["mean"] == pytest.approx(0.5)
    assert m_ap["std"] == pytest.approx(math.sqrt(0.13))
    assert m_ap["values"] == [0.2, 0.4, 0.9] and m_ap["n"] == 3
    # an undefined value is listed as null and left out: (0.5 + 0.8) / 2, std of two values
    recall = report["metrics"]["mean_max_recall"]
    assert recall["values"] == [0.5, None, 0.8]
    assert recall["mean"] == pytest.approx(0.65) and recall["std"] == pytest.approx(math.sqrt(0.045))
    assert report["metrics"]["mAP_rare"] == {"mean": None, "std": None, "n": 0, "values": [None, None, None]}
    assert report["metrics"]["num_classes"]["values"] == [5, 5, 5]
    # per-class tables and strings are not summarised
    assert sorted(report["metrics"]) == ["mAP", "mAP_non_rare", "mAP_rare", "mean_max_recall", "num_classes"]


def test_groups_by_label_and_null_is_undefined(sg_files):
    report = build_report(sg_files, ["SG", "SG", "SG", "original"]).to_json()
    assert list(report["groups"]) == ["SG", "original"]
    assert report["groups"]["SG"]["metrics"]["mAP"]["mean"] == pytest.approx(0.5)
    original = report["groups"]["original"]["metrics"]
    assert original["mAP"] == {"mean": 0.7, "std": None, "n": 1, "values": [0.7]}
    assert original["mAP_rare"]["values"] == [None]
    assert "metrics" not in report  # two groups: no pooled top level


def test_cli_writes_strict_json_markdown_latex_and_png(sg_files, tmp_path, capsys):
    out = {suffix: tmp_path / f"report.{suffix}" for suffix in ("json", "md", "tex", "png")}
    argv = ["report", *map(str, sg_files), "--labels", "SG", "SG", "SG", "original",
            "--output", str(out["json"]), "--markdown", str(out["md"]), "--latex", str(out["tex"]),
            "--plot", str(out["png"])]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "0.5000 ± 0.3606" in printed and "SG (n=3)" in printed and "original (n=1)" in printed

    def no_constants(token):
        raise AssertionError(f"non-strict JSON token {token}")

    data = json.loads(out["json"].read_text(), parse_constant=no_constants)
    assert data["groups"]["SG"]["metrics"]["mAP"]["std"] == pytest.approx(math.sqrt(0.13))
    markdown = out["md"].read_text()
    assert "| mAP | 0.5000 ± 0.3606 | 0.7000 |" in markdown
    assert "| mAP_rare | n/a | n/a |" in markdown
    latex = out["tex"].read_text()
    assert r"mAP & 0.5000 $\pm$ 0.3606 & 0.7000 \\" in latex and r"mAP\_rare" in latex
    assert latex.startswith(r"\begin{tabular}{lrr}")
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_benchmark_result_shape_yields_its_metrics():
    bongard = {"accuracy": {"test_seen_obj_seen_act": 1.0}, "test_mean": 0.75,
               "episode_accuracy": {"test_seen_obj_seen_act": 1.0}, "num_queries": {"test_seen_obj_seen_act": 8}}
    assert metric_values(bongard) == {"accuracy/test_seen_obj_seen_act": 1.0, "test_mean": 0.75,
                                      "episode_accuracy/test_seen_obj_seen_act": 1.0,
                                      "num_queries/test_seen_obj_seen_act": 8}
    haystack = {"rank_mode": "paper", "min_positives": 4, "warnings": [],
                "per_predicate": {"beside": {"p_auc": 0.5, "pdd": 0.0}},
                "mean": {"p_auc": 0.7, "pdd": 0.006, "pdo": 0.57}}
    assert metric_values(haystack) == {"min_positives": 4, "mean/p_auc": 0.7, "mean/pdd": 0.006, "mean/pdo": 0.57}
    assert metric_values(haystack, per_class=True)["per_predicate/beside/p_auc"] == 0.5
    sportshhi = {"settings": {"iou_threshold": 0.5, "official": False, "ks": [20]}, "mAP": 0.31,
                 "ap_per_class": {"2": 0.2, "8": None}, "recall@20": 0.38}
    assert metric_values(sportshhi) == {"mAP": 0.31, "recall@20": 0.38}
    assert metric_values({"R@20": 0.8, "mR@20": 0.1, "images": 8}) == {"R@20": 0.8, "mR@20": 0.1, "images": 8}


def test_labels_must_match_the_files(sg_files, capsys):
    assert main(["report", *map(str, sg_files[:2]), "--labels", "SG"]) == 2
    assert capsys.readouterr().err.strip() == ("hoi-bench: error: 1 labels for 2 result files: "
                                              "give one label per file")
    with pytest.raises(ReportError, match="no result files"):
        build_report([])


def test_a_file_without_metrics_is_named(tmp_path):
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps([{"image_id": 1}]))
    with pytest.raises(FormatError, match="predictions.json: not a result file"):
        build_report([path])
    path.write_text(json.dumps({"protocol": "qpic"}))
    with pytest.raises(FormatError, match="no numeric metric"):
        build_report([path])


def test_plotting_an_unreported_metric_is_refused(sg_files, tmp_path, capsys):
    assert main(["report", str(sg_files[0]), "--plot", str(tmp_path / "x.png"), "--plot-metric", "R@20"]) == 2
    assert "cannot plot 'R@20'" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
