"""Option values that cannot mean anything are refused while parsing, with one line and exit 2, never reinterpreted.

``show sportshhi --top -2`` dropped the last two predictions instead of drawing the top ones, ``build sportshhi
--clip-len -3`` built as ``--clip-len 0``, ``--frame-interval 0`` stacked the same frame, and ``show haystack --out
chart.xyz`` wrote a PNG under any name. Each is refused before anything is read or written.
"""

from __future__ import annotations

import pytest

from hoi_bench import cli
from tests.cli_inputs import write_command_inputs
from tests.test_bad_inputs import one_line_error, replaced, run, snapshot


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return write_command_inputs(tmp_path_factory.mktemp("inputs"))


def refused_by_argparse(argv: list[str], capsys) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "Traceback" not in err, err
    return err.rstrip().splitlines()[-1]


@pytest.mark.parametrize(("argv", "message"), [
    (["show", "sportshhi", "--data-dir", "D", "--keyframe", "v,0001", "--out", "k.png", "--top", "-2"],
     "argument --top: expected an integer >= 0, found '-2'"),
    (["build", "sportshhi", "--data-dir", "D", "--out", "H", "--clip-len", "-3"],
     "argument --clip-len: expected an integer >= 0, found '-3'"),
    (["build", "sportshhi", "--data-dir", "D", "--out", "H", "--frame-interval", "0"],
     "argument --frame-interval: expected a positive integer, found '0'"),
])
def test_negative_counts_are_refused_while_parsing(tmp_path, monkeypatch, argv, message, capsys):
    monkeypatch.chdir(tmp_path)
    assert refused_by_argparse(argv, capsys).endswith(message)
    assert list(tmp_path.iterdir()) == []


def test_zero_context_frames_and_zero_predictions_stay_allowed(capsys):
    parser = cli.build_parser(cli.load_registry())
    build = parser.parse_args(["build", "sportshhi", "--data-dir", "D", "--out", "H", "--clip-len", "0"])
    show = parser.parse_args(["show", "sportshhi", "--data-dir", "D", "--keyframe", "v,1", "--out", "k.png",
                              "--top", "0"])
    assert (build.clip_len, build.frame_interval, show.top) == (0, 2, 0)


@pytest.mark.parametrize("name", ["chart.xyz", "chart"])
def test_show_haystack_refuses_a_chart_name_matplotlib_cannot_write(commands, name, tmp_path, capsys):
    out = tmp_path / name
    argv = replaced(commands["show haystack"], "--out", out)
    before = snapshot(tmp_path)
    code, err = run(argv, capsys)
    line = one_line_error(code, err, "--out", out)
    assert "unknown image format" in line and ".png" in line and ".pdf" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("name", "magic"), [("chart.pdf", b"%PDF"), ("chart.svg", b"<?xml"),
                                             ("chart.PNG", b"\x89PNG")])
def test_show_haystack_writes_the_format_its_extension_names(commands, name, magic, tmp_path, capsys):
    out = tmp_path / name
    code, err = run(replaced(commands["show haystack"], "--out", out), capsys)
    assert code == 0, err
    assert out.read_bytes().startswith(magic)
    assert [p.name for p in tmp_path.iterdir()] == [name]


@pytest.mark.parametrize("argv", [["show", "sportshhi", "--data-dir", "D", "--keyframe", "v,0001"],
                                  ["show", "bongard_hoi", "--data", "D", "--split", "s", "--episode", "0"]],
                         ids=["sportshhi", "bongard_hoi"])
@pytest.mark.parametrize("name", ["frame.jpg", "frame"])
def test_drawings_written_as_png_refuse_another_name(argv, name, tmp_path, capsys):
    out = tmp_path / name
    code, err = run([*argv, "--out", out], capsys)
    assert "name ends in" in one_line_error(code, err, "--out", out, ".png")
    assert list(tmp_path.iterdir()) == []
