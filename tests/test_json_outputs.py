"""Every JSON a command writes (``--output`` of each `evaluate`, `stats hoi_sg --json`) parses with a strict parser.

Python's ``json`` would happily write and read a bare ``NaN``; JavaScript, jq, Go and Rust parsers refuse it. The docs
promise ``null`` for an undefined value, so each command's real output is parsed with ``strict_json``.
"""

from __future__ import annotations

import pytest

from hoi_bench import cli
from hoi_bench.plugins import FILE_OUTPUTS, load_registry
from tests.cli_inputs import strict_json, write_command_inputs

EVALUATE_COMMANDS = ("evaluate hoi_map", "evaluate vcoco_map", "evaluate vcoco_role_map", "evaluate haystack",
                     "evaluate sg_recall", "evaluate hhi", "evaluate bongard")


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return write_command_inputs(tmp_path_factory.mktemp("inputs"))


@pytest.mark.parametrize("command", EVALUATE_COMMANDS)
def test_evaluate_output_is_strict_json(commands, command, tmp_path, capsys):
    out = tmp_path / "result.json"
    assert cli.main([*commands[command], "--output", str(out)]) == 0, capsys.readouterr().err
    result = strict_json(out.read_text())
    assert isinstance(result, dict) and result


def test_undefined_values_are_null_in_the_output(commands, tmp_path, capsys):
    out = tmp_path / "result.json"
    assert cli.main([*commands["evaluate hhi"], "--output", str(out)]) == 0, capsys.readouterr().err
    per_class = strict_json(out.read_text())["ap_per_class"]
    assert None in per_class.values()  # classes without GT in the tiny sample: undefined AP, written as null


def test_stats_json_on_stdout_is_strict(commands, capsys):
    assert cli.main(commands["stats hoi_sg"]) == 0
    assert strict_json(capsys.readouterr().out)["images"] == 1


def test_every_command_with_a_json_output_is_covered():
    """A new `evaluate` command must join EVALUATE_COMMANDS (and write_command_inputs) to be checked here."""
    parser = cli.build_parser(load_registry())
    verbs = next(a for a in parser._actions if hasattr(a, "choices") and a.choices and "evaluate" in a.choices)
    names = next(a for a in verbs.choices["evaluate"]._actions if hasattr(a, "choices") and a.choices)
    spellings: dict[int, set[str]] = {}  # a command and its aliases share one parser
    for name, leaf in names.choices.items():
        if any(action.dest in FILE_OUTPUTS for action in leaf._actions):
            spellings.setdefault(id(leaf), set()).add(f"evaluate {name}")
    assert [sorted(words) for words in spellings.values() if not words & set(EVALUATE_COMMANDS)] == []


def test_report_output_is_strict_json(commands, tmp_path, capsys):
    """A report over one result file has an undefined sample std: it must still parse strictly."""
    result = tmp_path / "result.json"
    assert cli.main([*commands["evaluate hoi_map"], "--output", str(result)]) == 0
    report = tmp_path / "report.json"
    assert cli.main(["report", str(result), "--output", str(report)]) == 0, capsys.readouterr().err
    assert strict_json(report.read_text())["metrics"]
