"""An output file that is one of the command's own inputs is refused before any work, and the input is untouched.

``--output DETS.json`` onto ``--detections DETS.json`` used to replace the detections with the result;
``convert ... --out`` onto its predictions or references replaced them with the converted file. The check is
``hoi_bench.files.refuse_overwriting_inputs``, which the CLI runs for every file output of every command
(``hoi_bench.cli.check_file_outputs``); the same file reached by another spelling, a symlink or a hard link counts.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from hoi_bench import cli
from hoi_bench.errors import OutputPathError
from hoi_bench.files import refuse_overwriting_inputs
from tests.cli_inputs import write_command_inputs
from tests.test_bad_inputs import one_line_error, replaced, run, snapshot


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return write_command_inputs(tmp_path_factory.mktemp("inputs"))


def output_option(command: str) -> str:
    return "--out" if command.startswith("show") else "--output"


def file_arguments(argv: list[str]) -> list[tuple[str, str]]:
    """(option, value) of every argument of ``argv`` that names an existing file."""
    return [(argv[i - 1], value) for i, value in enumerate(argv) if i and Path(value).is_file()]


WRITING = ["evaluate hoi_map", "evaluate vcoco_map", "evaluate haystack", "evaluate sg_recall", "evaluate hhi",
           "evaluate bongard", "evaluate vcoco_role_map", "show haystack"]


@pytest.mark.parametrize("command", WRITING)
def test_an_output_onto_any_input_file_is_refused_and_the_input_kept(commands, command, tmp_path, capsys):
    argv = commands[command]
    inputs = file_arguments(argv)
    assert inputs, argv
    option = output_option(command)
    root = Path(os.path.commonpath([Path(path).parent for _, path in inputs]))  # the folder of this command's inputs
    for input_option, path in inputs:
        before = snapshot(root)
        with_output = replaced(argv, option, path) if option in argv else [*argv, option, path]
        code, err = run(with_output, capsys)
        line = one_line_error(code, err, option, input_option, path)
        assert "would replace that input" in line
        assert snapshot(root) == before


def test_vcoco_role_map_output_onto_its_detections(commands, tmp_path, capsys):
    """The case of the issue: the result JSON must not replace the detection list it was computed from."""
    argv = commands["evaluate vcoco_role_map"]
    detections = Path(argv[argv.index("--detections") + 1])
    content = detections.read_bytes()
    code, err = run([*argv, "--output", detections], capsys)
    one_line_error(code, err, "--output", "--detections", detections)
    assert detections.read_bytes() == content


@pytest.mark.parametrize("option", ["--predictions", "--references"])
def test_convert_vcoco_detections_out_onto_its_inputs(commands, option, capsys):
    vcoco = commands["evaluate vcoco_map"]
    predictions, references = (vcoco[vcoco.index(o) + 1] for o in ("--predictions", "--references"))
    target = Path(predictions if option == "--predictions" else references)
    before = snapshot(target.parent)
    code, err = run(["convert", "vcoco-detections", "--predictions", predictions, "--references", references,
                     "--out", target], capsys)
    one_line_error(code, err, "--out", option, target)
    assert snapshot(target.parent) == before


@pytest.mark.parametrize(("command", "source"), [("hoi-predictions", "evaluate hoi_map"),
                                                  ("recall-predictions", "evaluate sg_recall")])
def test_convert_predictions_out_onto_the_predictions(commands, command, source, capsys):
    predictions = Path(commands[source][commands[source].index("--predictions") + 1])
    before = snapshot(predictions.parent)
    code, err = run(["convert", command, "--predictions", predictions, "--out", predictions], capsys)
    one_line_error(code, err, "--out", "--predictions", predictions)
    assert snapshot(predictions.parent) == before


@pytest.mark.parametrize("option", ["--output", "--markdown", "--latex", "--plot"])
def test_report_outputs_onto_a_result_file(tmp_path, option, capsys):
    results = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in results:
        path.write_text('{"mAP": 0.5}')
    before = snapshot(tmp_path)
    code, err = run(["report", *results, option, results[1]], capsys)
    one_line_error(code, err, option, "RESULTS", results[1])
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("spelling", ["dot-dot", "symlink", "hard link"])
def test_the_same_file_under_another_name_is_caught(commands, spelling, tmp_path, capsys):
    argv = commands["evaluate hoi_map"]
    predictions = Path(argv[argv.index("--predictions") + 1])
    other = {"dot-dot": lambda: predictions.parent / ".." / predictions.parent.name / predictions.name,
             "symlink": lambda: _link(os.symlink, predictions, tmp_path / "link.json"),
             "hard link": lambda: _link(os.link, predictions, tmp_path / "hard.json")}[spelling]()
    before = snapshot(predictions.parent)
    code, err = run([*argv, "--output", other], capsys)
    one_line_error(code, err, "--output", "--predictions", other)
    assert snapshot(predictions.parent) == before


def _link(make, target: Path, link: Path) -> Path:
    make(target, link)
    return link


def test_a_new_or_unrelated_output_passes(tmp_path):
    source = tmp_path / "dets.json"
    source.write_text("[]")
    unrelated = tmp_path / "old_result.json"
    unrelated.write_text("{}")
    refuse_overwriting_inputs({"--output": tmp_path / "new.json"}, {"--detections": source})
    refuse_overwriting_inputs({"--output": unrelated}, {"--detections": source, "--top": 3, "--vsrl": [source]})
    refuse_overwriting_inputs({"--output": None}, {"--detections": source})
    with pytest.raises(OutputPathError, match="--vsrl"):
        refuse_overwriting_inputs({"--output": source}, {"--top": 3, "--vsrl": [unrelated, source]})


def test_the_check_runs_before_the_command(commands, monkeypatch, capsys):
    """Refused before any work: the command's handler is never called."""
    called = []
    argv = commands["evaluate hhi"]
    predictions = argv[argv.index("--predictions") + 1]
    registry = cli.load_registry()
    command = registry.commands[("evaluate", "hhi_map")]  # `evaluate hhi` is its earlier name, still accepted
    registry.commands[("evaluate", "hhi_map")] = dataclasses.replace(command, run=lambda args: called.append(args))
    monkeypatch.setattr(cli, "load_registry", lambda: registry)
    code, err = run([*argv, "--output", predictions], capsys)
    one_line_error(code, err, predictions)
    assert called == []


def test_an_output_named_like_the_command_words_is_not_an_input(commands, tmp_path, monkeypatch, capsys):
    """`evaluate hoi_map --output hoi_map` in a folder holding a file `hoi_map`: the command words are no inputs."""
    monkeypatch.chdir(tmp_path)
    Path("hoi_map").write_text("old result")
    code, err = run([*commands["evaluate hoi_map"], "--output", "hoi_map"], capsys)
    assert code == 0, err
    assert '"mAP"' in Path("hoi_map").read_text()
