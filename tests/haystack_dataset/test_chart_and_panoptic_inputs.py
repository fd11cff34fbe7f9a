"""`show haystack` and `build haystack` on values and files they cannot use: one line, exit 2, nothing written.

A metrics JSON with a non-numeric value ("p_auc": "high") used to end in a ``TypeError`` traceback while
sorting the bars; a panoptic PNG whose header claims 900 megapixels was decoded without the pixel limit every
other image gets (the image checks skipped panoptic files), ending in Pillow's ``DecompressionBombError``.
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from hoi_bench import cli
from hoi_bench.images import MAX_IMAGE_PIXELS
from tests.cli_inputs import write_command_inputs
from tests.test_bad_inputs import one_line_error, replaced, run, snapshot


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return write_command_inputs(tmp_path_factory.mktemp("inputs"))


def metrics_with(commands, tmp_path, change) -> tuple[list[str], str]:
    argv = commands["show haystack"]
    report = json.loads(Path(argv[argv.index("--metrics") + 1]).read_text())
    change(report)
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(report))
    return replaced(replaced(argv, "--metrics", path), "--out", tmp_path / "chart.png"), str(path)


def first(report) -> str:
    return next(iter(report["per_predicate"]))


@pytest.mark.parametrize(("case", "change", "field"), [
    ("string p_auc", lambda r: r["per_predicate"][first(r)].update(p_auc="high"), "p_auc"),
    ("list pdd", lambda r: r["per_predicate"][first(r)].update(pdd=[0.1]), "pdd"),
    ("boolean pdo", lambda r: r["per_predicate"][first(r)].update(pdo=True), "pdo"),
    ("string mean", lambda r: r["mean"].update(p_auc="0.5"), "mean.p_auc"),
    ("entry not an object", lambda r: r["per_predicate"].update({first(r): 0.5}), "per_predicate."),
])
def test_a_non_numeric_metric_value_is_one_line(commands, tmp_path, case, change, field, capsys):
    argv, metrics = metrics_with(commands, tmp_path, change)
    before = snapshot(tmp_path)
    code, err = run(argv, capsys)
    line = one_line_error(code, err, metrics, field)
    assert "not" in line
    assert snapshot(tmp_path) == before


def test_null_values_are_still_drawn_as_blanks(commands, tmp_path, capsys):
    argv, _ = metrics_with(commands, tmp_path, lambda r: r["per_predicate"][first(r)].update(p_auc=None))
    assert run(argv, capsys)[0] == 0
    assert (tmp_path / "chart.png").read_bytes().startswith(b"\x89PNG")


def png_claiming(width: int, height: int) -> bytes:
    """A 100-byte PNG whose header claims ``width`` x ``height`` pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def test_a_900_megapixel_panoptic_png_stops_the_build(tmp_path, capsys):
    from haystack_dataset.samples import write_sample

    layout = write_sample(tmp_path / "native")
    panoptic = min(layout.image_root.rglob("panoptic_*/*.png"))
    panoptic.write_bytes(png_claiming(30_000, 30_000))
    assert 30_000 * 30_000 > MAX_IMAGE_PIXELS
    before = snapshot(tmp_path)
    out = tmp_path / "hub"
    capsys.readouterr()
    code = cli.main(["build", "haystack", "--data-dir", str(layout.root), "--out", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err and code == 2, err
    line = err.rstrip().splitlines()[-1]
    assert line.startswith("hoi-bench: error: ") and str(panoptic) in line
    assert "too large to decode safely" in line
    assert not out.exists() and snapshot(tmp_path) == before


def test_a_panoptic_png_that_is_not_an_image_names_the_file(tmp_path, capsys):
    from haystack_dataset.samples import write_sample

    layout = write_sample(tmp_path / "native")
    panoptic = min(layout.image_root.rglob("panoptic_*/*.png"))
    shutil.copyfile(layout.haystack_file, panoptic)
    capsys.readouterr()
    assert cli.main(["build", "haystack", "--data-dir", str(layout.root), "--out", str(tmp_path / "hub")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(panoptic) in err.rstrip().splitlines()[-1]
