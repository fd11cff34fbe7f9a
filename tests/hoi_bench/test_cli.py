"""The CLI wires plugin commands and demo steps, and turns hoi-bench errors into exit code 2."""

from __future__ import annotations

from hoi_bench import cli
from hoi_bench.errors import FormatError
from hoi_bench.plugins import Command, DemoStep, Registry, load_registry


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
