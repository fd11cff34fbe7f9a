"""`hoi-bench report` on training `results.json` files, with groups kept apart, figures by extension, and the
inputs it refuses (non-finite values, overflowing sums, mixed metric sets, an output onto an input): one line,
exit 2, every input file byte-identical afterwards."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hoi_bench.cli import main
from hoi_bench.results_report import ReportError, Summary, build_report, draw_figure


def training_results(m_ap: float, *, steps: int = 40, best: float = 0.9) -> dict:
    """A ``results.json`` as ``hoi_bench.training.run_training`` writes it (same keys and nesting)."""
    return {"baseline": "hico_split1-pair", "steps": steps, "train_seconds": 12.5,
            "splits": {"test": {"predictions": "runs/x/predictions/test.json", "examples": 8,
                                "metrics": {"mAP": m_ap, "mAP_rare": None, "protocol": "qpic"}}},
            "overall": {}, "best": {"metric": "test/mAP", "value": best, "step": 20, "model": "runs/x/best"},
            "model": "runs/x/model"}


def write(tmp_path: Path, name: str, payload) -> Path:
    path = tmp_path / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


def refused(argv: list[str], capsys, inputs: list[Path]) -> str:
    """Run ``hoi-bench ARGV``, expect exit 2 with one error line, the inputs unchanged; return the line."""
    before = {path: path.read_bytes() for path in inputs}
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hoi-bench: error: "), captured.err
    assert "Traceback" not in captured.err
    assert {path: path.read_bytes() for path in inputs} == before
    return lines[0]


def test_three_training_results_give_their_test_map_mean_and_std(tmp_path, capsys):
    paths = [write(tmp_path, f"run{i}.json", training_results(m_ap, steps=40 + i))
             for i, m_ap in enumerate((0.2, 0.4, 0.9))]
    report = build_report(paths).to_json()
    assert sorted(report["metrics"]) == ["mAP", "mAP_rare"]  # not steps, train_seconds or best/value
    assert report["metrics"]["mAP"]["mean"] == pytest.approx(0.5)
    assert report["metrics"]["mAP"]["std"] == pytest.approx(math.sqrt(0.13))
    assert main(["report", *map(str, paths)]) == 0
    assert "0.5000 ± 0.3606" in capsys.readouterr().out


def test_a_run_with_several_splits_names_each_split():
    result = training_results(0.5)
    result["splits"]["validation"] = {"metrics": {"mAP": 0.25}}
    result["overall"] = {"test_mean": 0.7}
    from hoi_bench.results_report import metric_values

    assert metric_values(result) == {"test/mAP": 0.5, "test/mAP_rare": None, "validation/mAP": 0.25,
                                     "test_mean": 0.7}


def test_output_keeps_groups_apart_and_pools_only_one_group(tmp_path):
    paths = [write(tmp_path, f"r{i}.json", {"mAP": value}) for i, value in enumerate((0.1, 0.3, 0.8))]
    grouped = build_report(paths, ["SG", "SG", "original"]).to_json()
    assert "metrics" not in grouped
    assert grouped["groups"]["SG"]["metrics"]["mAP"]["mean"] == pytest.approx(0.2)
    assert grouped["groups"]["original"]["metrics"]["mAP"]["values"] == [0.8]
    single = build_report(paths).to_json()
    assert single["metrics"]["mAP"]["mean"] == pytest.approx(0.4)


def test_undefined_values_show_how_many_files_were_averaged(tmp_path, capsys):
    paths = [write(tmp_path, "a.json", {"mAP": 0.5, "mAP_rare": 0.2}),
             write(tmp_path, "b.json", {"mAP": 0.7, "mAP_rare": None})]
    assert main(["report", *map(str, paths)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("mAP_rare"))
    assert "0.2000 (n=1)" in row


@pytest.mark.parametrize("token, found", [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf")])
def test_a_non_finite_metric_is_refused_not_dropped_or_printed(tmp_path, capsys, token, found):
    good = write(tmp_path, "good.json", {"mAP": 0.5})
    bad = write(tmp_path, "bad.json", f'{{"mAP": {token}}}')
    line = refused(["report", str(good), str(bad)], capsys, [good, bad])
    assert f"bad.json: mAP is {found}; expected a finite number" in line


def test_values_whose_sum_overflows_give_their_mean(tmp_path, capsys):
    paths = [write(tmp_path, f"big{i}.json", {"score": 1e308}) for i in range(2)]
    assert build_report(paths).metrics["score"].mean == 1e308
    assert build_report(paths).metrics["score"].std == 0.0
    assert main(["report", *map(str, paths)]) == 0
    assert "1.0000e+308 ± 0.0000" in capsys.readouterr().out
    assert Summary([1e308, -1e308, 1e308]).std == pytest.approx(1e308 * (2 / math.sqrt(3)))


def test_a_standard_deviation_beyond_float_range_is_refused(tmp_path, capsys):
    paths = [write(tmp_path, "a.json", {"score": 1.7e308}), write(tmp_path, "b.json", {"score": -1.7e308})]
    line = refused(["report", *map(str, paths)], capsys, paths)
    assert "standard deviation of score exceeds float range" in line


def test_an_integer_beyond_float_range_is_refused(tmp_path, capsys):
    good = write(tmp_path, "good.json", {"images": 3})
    huge = write(tmp_path, "huge.json", '{"images": 1' + "0" * 400 + "}")
    line = refused(["report", str(good), str(huge)], capsys, [good, huge])
    assert "huge.json: images is an integer of 401 digits" in line


def test_files_of_one_group_with_different_metrics_are_refused(tmp_path, capsys):
    hoi = write(tmp_path, "hoi.json", {"mAP": 0.5, "mean_max_recall": 0.9})
    hhi = write(tmp_path, "hhi.json", {"mAP": 0.3, "recall@20": 0.4})
    line = refused(["report", str(hoi), str(hhi)], capsys, [hoi, hhi])
    assert "hhi.json: reports other metrics than" in line and "lacks mean_max_recall; adds recall@20" in line
    # apart, in groups of their own, they are fine
    assert main(["report", str(hoi), str(hhi), "--labels", "hoi", "hhi"]) == 0


@pytest.mark.parametrize("option", ["--output", "--markdown", "--latex", "--plot"])
def test_an_output_naming_an_input_is_refused_before_any_work(tmp_path, capsys, option):
    first = write(tmp_path, "a.png" if option == "--plot" else "a.json", {"mAP": 0.5})
    second = write(tmp_path, "b.json", {"mAP": 0.7})
    line = refused(["report", str(first), str(second), option, str(tmp_path / "." / first.name)], capsys,
                   [first, second])
    assert f"{option} " in line and "writing it would replace that input" in line


@pytest.mark.slow
def test_plot_format_follows_the_extension(tmp_path, capsys):
    paths = [write(tmp_path, f"r{i}.json", {"mAP": v, "recall": 1 - v}) for i, v in enumerate((0.1, 0.3))]
    magic = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}
    for suffix, start in magic.items():
        out = tmp_path / f"figure.{suffix}"
        assert main(["report", *map(str, paths), "--plot", str(out), "--metrics", "mAP", "recall"]) == 0
        assert out.read_bytes().startswith(start), suffix
    line = refused(["report", *map(str, paths), "--plot", str(tmp_path / "figure.jpg")], capsys, paths)
    assert "unknown figure format '.jpg'" in line
    assert not (tmp_path / "figure.jpg").exists()


def test_png_is_300_dpi_with_one_panel_per_metric(tmp_path):
    from PIL import Image

    paths = [write(tmp_path, f"r{i}.json", {"mAP": v, "recall": v / 2}) for i, v in enumerate((0.1, 0.3))]
    report = build_report(paths)
    one, two = (tmp_path / "one.png", tmp_path / "two.png")
    one.write_bytes(draw_figure(report, ["mAP"]))
    two.write_bytes(draw_figure(report, ["mAP", "recall"]))
    with Image.open(one) as a, Image.open(two) as b:
        assert round(a.info["dpi"][0]) == 300
        assert b.width > 1.6 * a.width  # a second panel beside the first
    with pytest.raises(ReportError, match="cannot plot 'R@20'"):
        draw_figure(report, ["R@20"])


def _svg_figure(folder: Path, values: dict[str, list[float]]) -> str:
    folder.mkdir()
    paths, labels = [], []
    for label, numbers in values.items():
        for i, value in enumerate(numbers):
            paths.append(write(folder, f"{label}{i}.json", {"mAP": value}))
            labels.append(label)
    return draw_figure(build_report(paths, labels), ["mAP"], "svg").decode()


def test_one_file_gets_no_error_bar_and_two_get_one(tmp_path):
    import re

    single = _svg_figure(tmp_path / "one", {"qpic": [0.7]})
    pair = _svg_figure(tmp_path / "two", {"qpic": [0.6, 0.8]})
    # matplotlib draws an error bar's stem as a LineCollection, id "LineCollection_N" in the SVG
    assert not re.search(r'id="LineCollection_\d+"', single)
    assert re.search(r'id="LineCollection_\d+"', pair)


def test_a_zero_mean_is_drawn_not_hidden(tmp_path):
    import io

    import matplotlib
    import numpy as np
    from PIL import Image

    paths = [write(tmp_path, "zero.json", {"mAP": 0.0}), write(tmp_path, "half.json", {"mAP": 0.5})]
    png = draw_figure(build_report(paths, ["zero", "half"]), ["mAP"])
    first = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][0]  # the zero group's colour
    target = np.array([round(255 * c) for c in matplotlib.colors.to_rgb(first)])
    with Image.open(io.BytesIO(png)) as image:
        pixels = np.asarray(image.convert("RGB")).astype(int)
    assert (np.abs(pixels - target).sum(axis=-1) < 30).sum() > 100, "the zero bar left (almost) no pixel"
