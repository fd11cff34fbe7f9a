"""The CLI wires plugin commands and demo steps; user errors end in one line and exit 2, Ctrl-C in exit 130."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pytest

from hoi_bench import cli
from hoi_bench.errors import FormatError
from hoi_bench.files import write_json_atomic
from hoi_bench.plugins import Command, DemoStep, Registry, deferred, load_registry, positive_int


def strict_loads(text: str):
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def _registry() -> Registry:
    registry = Registry()

    def configure(parser):
        parser.add_argument("--x", type=int, required=True)

    def run(args):
        if args.x < 0:
            raise FormatError("f.json", "negative", record=0, field="x", expected=">= 0", found=args.x)
        print(f"x={args.x}")

    registry.add_command(Command("stats", "toy", "toy stats", configure, run))

    def step(context):
        context.say("built toy")
        context.result("toy", "test", "mAP", 0.25)
        context.artifacts["toy folder"] = context.out_dir / "toy"

    registry.add_demo_step(DemoStep("toy", 10, step))
    return registry


def test_plugin_command_runs(capsys):
    args = cli.build_parser(_registry()).parse_args(["stats", "toy", "--x", "3"])
    assert args.handler(args) is None
    assert capsys.readouterr().out == "x=3\n"


def test_hoi_bench_error_becomes_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(cli, "load_registry", _registry)
    assert cli.main(["stats", "toy", "--x", "-1"]) == 2
    assert "f.json: record 0: field 'x': negative (expected >= 0, found -1)" in capsys.readouterr().err


def test_demo_prints_results_table(tmp_path, capsys):
    assert cli.run_demo(_registry(), tmp_path) == 0
    out = capsys.readouterr().out
    assert "built toy" in out
    assert "toy        test   mAP     0.2500" in out
    assert str(tmp_path / "toy") in out
    assert out.rstrip().endswith("toy        test   mAP     0.2500")  # the results table comes last


def test_every_installed_plugin_registers_cleanly():
    registry = load_registry()
    cli.build_parser(registry)
    assert len({s.name for s in registry.demo_steps}) == len(registry.demo_steps)


def _writer_registry(calls: list) -> Registry:
    """One `evaluate toy` command that writes --output; ``calls`` records that the handler ran."""
    registry = Registry()

    def configure(parser):
        parser.add_argument("--output", type=Path)
        parser.add_argument("--fail", choices=["interrupt", "oserror", "recursion", "latin-1"])

    def run(args):
        calls.append(args)
        if args.fail == "interrupt":
            raise KeyboardInterrupt
        if args.fail == "oserror":
            open(args.output.parent / "missing" / "x.json")  # noqa: SIM115 - the OSError is the point
        if args.fail == "recursion":
            raise RecursionError("maximum recursion depth exceeded")
        if args.fail == "latin-1":
            "café".encode("latin-1").decode("utf-8")
        write_json_atomic(args.output, {"mAP": float("nan")})

    registry.add_command(Command("evaluate", "toy", "toy evaluate", configure, run))
    return registry


@pytest.mark.parametrize("layout", ["folder", "under a file"])
def test_output_that_cannot_be_written_is_refused_before_the_command_runs(monkeypatch, tmp_path, capsys, layout):
    calls = []
    monkeypatch.setattr(cli, "load_registry", lambda: _writer_registry(calls))
    (tmp_path / "file.txt").write_text("keep")
    output = tmp_path if layout == "folder" else tmp_path / "file.txt" / "out.json"
    assert cli.main(["evaluate", "toy", "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hoi-bench: error: --output ") and err.count("\n") == 1 and str(output) in err
    assert calls == [] and (tmp_path / "file.txt").read_text() == "keep"


def test_interrupt_exits_130_with_one_line_and_keeps_the_old_output(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "load_registry", lambda: _writer_registry([]))
    out = tmp_path / "out.json"
    out.write_text('{"old": 1}')
    assert cli.main(["evaluate", "toy", "--output", str(out), "--fail", "interrupt"]) == 130
    assert capsys.readouterr().err == "hoi-bench: interrupted\n"
    assert out.read_text() == '{"old": 1}' and [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_unexpected_os_recursion_and_decoding_errors_are_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "load_registry", lambda: _writer_registry([]))
    out = tmp_path / "out.json"
    assert cli.main(["evaluate", "toy", "--output", str(out), "--fail", "oserror"]) == 2
    err = capsys.readouterr().err
    assert err == f"hoi-bench: error: {tmp_path / 'missing' / 'x.json'}: No such file or directory\n"
    assert cli.main(["evaluate", "toy", "--output", str(out), "--fail", "recursion"]) == 2
    assert capsys.readouterr().err.startswith("hoi-bench: error: input nested too deeply")
    assert cli.main(["evaluate", "toy", "--output", str(out), "--fail", "latin-1"]) == 2
    assert capsys.readouterr().err == ("hoi-bench: error: an input is not UTF-8 text (unexpected end of data: "
                                       "byte b'\\xe9' at offset 3)\n")


def test_verbose_errors_add_the_traceback(monkeypatch, tmp_path, capsys, caplog):
    monkeypatch.setattr(cli, "load_registry", lambda: _writer_registry([]))
    assert cli.main(["-v", "evaluate", "toy", "--output", str(tmp_path / "o.json"), "--fail", "oserror"]) == 2
    assert "Traceback" in caplog.text and "FileNotFoundError" in caplog.text
    assert capsys.readouterr().err.startswith("hoi-bench: error: ")


def test_evaluate_output_is_strict_json(monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "load_registry", lambda: _writer_registry([]))
    assert cli.main(["evaluate", "toy", "--output", str(tmp_path / "o.json")]) == 0
    assert strict_loads((tmp_path / "o.json").read_text()) == {"mAP": None}


def test_positive_int_refuses_zero_in_the_parser(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--num-proc", type=positive_int)
    assert parser.parse_args(["--num-proc", "2"]).num_proc == 2
    for bad in ("0", "-1", "two"):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(["--num-proc", bad])
        assert exit_info.value.code == 2
        assert f"argument --num-proc: expected a positive integer, found '{bad}'" in capsys.readouterr().err


def test_demo_prints_counts_as_integers_and_ends_with_commands_to_try(tmp_path, capsys, monkeypatch):
    registry = Registry()
    monkeypatch.chdir(tmp_path)

    def step(context):
        context.result("toy", "train", "images", 355)
        context.result("toy", "test", "mAP", 0.5)
        context.suggest("hoi-bench", "show", "toy", "--metrics", context.out_dir / "m.json")
        for number in range(5):
            context.suggest("echo", str(number))

    registry.add_demo_step(DemoStep("toy", 10, step))
    assert cli.run_demo(registry, tmp_path / "demo") == 0
    out = capsys.readouterr().out
    assert "toy        train  images  355\n" in out and "toy        test   mAP     0.5000" in out
    tail = out.rstrip().split("== Try next\n")[1].splitlines()
    assert tail == ["  hoi-bench show toy --metrics demo/m.json", "  echo 0", "  echo 1", "  echo 2"]


def test_demo_logs_only_warnings_unless_verbose(monkeypatch, tmp_path, capsys):
    registry = Registry()

    def step(context):
        logging.getLogger("hoi_bench.toy").info("building config x")
        logging.getLogger("hoi_bench.toy").warning("something odd")

    registry.add_demo_step(DemoStep("toy", 10, step))
    monkeypatch.setattr(cli, "load_registry", lambda: registry)
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # let main's basicConfig install its handler for this test
    monkeypatch.setattr(root, "level", logging.WARNING)
    assert cli.main(["demo", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "something odd" in err and "building config x" not in err


def test_only_the_command_being_run_is_configured(capsys):
    configured = []
    registry = Registry()
    for name in ("first", "second"):
        registry.add_command(Command("evaluate", name, f"{name} metric",
                                     lambda parser, name=name: configured.append(name), lambda args: 0))
    parser = cli.build_parser(registry, ["-v", "evaluate", "second", "--x"])
    assert configured == ["second"]
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "--help"])
    listing = capsys.readouterr().out
    assert "first metric" in listing and "second metric" in listing
    cli.build_parser(registry)
    assert configured == ["second", "first", "second"]


def test_deferred_functions_import_their_module_when_called():
    import sys

    sys.modules.pop("colorsys", None)
    to_hls = deferred("colorsys:rgb_to_hls")
    assert "colorsys" not in sys.modules
    assert to_hls(1.0, 0.0, 0.0) == (0.0, 0.5, 1.0) and "colorsys" in sys.modules


HEAVY_MODULES = ("numpy", "datasets", "pyarrow", "matplotlib", "torch", "evaluate", "huggingface_hub", "PIL",
                 "transformers", "accelerate", "scipy", "pandas")


@pytest.mark.parametrize("argv", [["--help"], ["evaluate", "hoi_map", "--help"], ["evaluate", "haystack", "--help"],
                                  ["evaluate", "hhi", "--help"], ["show", "haystack", "--help"]])
def test_help_imports_no_heavy_library(argv):
    """Start-up stays fast: listing or describing a command loads no numerical, Hub or plotting library
    (the time itself is measured by benchmarks/startup.py, never asserted)."""
    import subprocess
    import sys

    probe = ("import sys\nfrom hoi_bench import cli\ntry:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             f"print(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe, *argv], check=False, capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.rstrip().splitlines()[-1] == "[]", done.stdout + done.stderr
