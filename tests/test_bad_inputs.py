"""Broken inputs to every command end in one clear line and exit 2 (Ctrl-C: exit 130), never a traceback, and leave
the files and folders a user gave exactly as they were.

The shared cases, run against every registered command they apply to: an output path that is a folder, under a
regular file or in an unwritable folder; an input that is a folder; deeply nested JSON; a gzip bomb (the read
limit is lowered for the test); ``--num-proc 0``; every way ``push`` fails; Ctrl-C during a command.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from hoi_bench import cli, files
from hoi_bench.plugins import FILE_OUTPUTS, FILE_OUTPUTS_BY_VERB, positive_int
from tests.cli_inputs import strict_json, write_command_inputs

REPO = Path(__file__).resolve().parents[1]

JSON_INPUTS = [  # (command, option) pairs whose file is JSON
    ("evaluate hoi_map", "--predictions"), ("evaluate hoi_map", "--references"),
    ("evaluate vcoco_map", "--predictions"), ("evaluate vcoco_map", "--references"),
    ("evaluate sg_recall", "--predictions"), ("evaluate sg_recall", "--annotations"),
    ("evaluate haystack", "--annotations"), ("evaluate bongard", "--predictions"),
    ("evaluate vcoco_role_map", "--vsrl"), ("evaluate vcoco_role_map", "--instances"),
    ("show haystack", "--metrics"), ("stats hoi_sg", "--split-file"),
]
FILE_INPUTS = JSON_INPUTS + [  # every input that must be a file
    ("evaluate hhi", "--references"), ("evaluate hhi", "--predictions"),
    ("evaluate hhi", "--action-list"), ("evaluate vcoco_role_map", "--detections"),
    ("evaluate vcoco_role_map", "--image-ids"),
]
GZIP_INPUTS = [("evaluate hoi_map", "--predictions"), ("evaluate sg_recall", "--predictions"),
               ("evaluate bongard", "--predictions"), ("evaluate haystack", "--annotations")]


# ----------------------------------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return write_command_inputs(tmp_path_factory.mktemp("inputs"))


def snapshot(root: Path) -> dict[str, str]:
    """Every file (content hash, mode) and folder (mode) under ``root``, hidden entries included."""
    state = {}
    for path in sorted(root.rglob("*")):
        mode = oct(path.lstat().st_mode)
        key = str(path.relative_to(root))
        state[key] = f"{mode} {hashlib.sha256(path.read_bytes()).hexdigest()}" if path.is_file() else mode
    return state


def one_line_error(code: int, err: str, *names: str | Path) -> str:
    """Check exit code 2 and a single ``hoi-bench: error:`` line naming each of ``names``; return the line."""
    assert "Traceback" not in err, err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("hoi-bench: error: "), err
    for name in names:
        assert str(name) in err, err
    return err


def run(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().err


def replaced(argv: list[str], option: str, value: str | Path) -> list[str]:
    argv = list(argv)
    argv[argv.index(option) + 1] = str(value)
    return argv


def leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(command words, parser) of every runnable command under ``parser``."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        yield words, parser
        return
    for name, sub in subcommands[0].choices.items():
        yield from leaves(sub, (*words, name))


def minimal_argv(words: tuple[str, ...], parser: argparse.ArgumentParser, placeholder: Path) -> list[str]:
    """``words`` plus a value for every required argument: enough for argparse, never read (outputs are checked
    before a command runs, so a bad output must be reported whatever the inputs)."""
    argv = list(words)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or (action.option_strings and not action.required):
            continue
        if action.choices:
            value = str(next(iter(action.choices)))
        elif action.type in (int, positive_int):
            value = "1"
        elif action.type is float:
            value = "0.5"
        else:
            value = str(placeholder)
        count = action.nargs if isinstance(action.nargs, int) else 1
        argv += [*action.option_strings[-1:], *[value] * count]
    return argv


def file_output_options():
    """(command words, option, argv) for every file output of every registered command."""
    parser = cli.build_parser(cli.load_registry())
    placeholder = Path(tempfile.gettempdir()) / "hoi-bench-never-read-input"
    found = []
    for words, leaf in leaves(parser):
        outputs = FILE_OUTPUTS + FILE_OUTPUTS_BY_VERB.get(words[0], ())
        for action in leaf._actions:
            if action.dest in outputs and action.option_strings:
                found.append((" ".join(words), action.option_strings[-1], minimal_argv(words, leaf, placeholder)))
    return found


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder where creating a file fails: mode 0500 for a normal user; for root, sysfs (if it refuses)."""
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir(mode=0o500)
        return folder
    try:
        handle, probe = tempfile.mkstemp(dir="/sys")
    except OSError:
        return Path("/sys")
    os.close(handle)
    os.unlink(probe)
    pytest.skip("running as root and /sys accepts files: no unwritable folder to test with")


# ---------------------------------------------------------------------------------------------- output paths

OUTPUTS = file_output_options()


def test_every_evaluate_and_show_command_has_its_outputs_checked():
    covered = {command.split()[0] for command, _, _ in OUTPUTS}
    assert {"evaluate", "show"} <= covered
    assert {"evaluate hoi_map", "evaluate hhi", "show haystack"} <= {command for command, _, _ in OUTPUTS}


@pytest.mark.parametrize(("command", "option", "argv"), OUTPUTS, ids=[f"{c} {o}" for c, o, _ in OUTPUTS])
@pytest.mark.parametrize("layout", ["folder", "under a file", "unwritable folder"])
def test_output_that_cannot_be_written_is_one_line_and_changes_nothing(command, option, argv, layout, tmp_path,
                                                                        capsys):
    given = tmp_path / "given"
    (given / "results").mkdir(parents=True)
    (given / "results" / ".hidden").write_text("keep")
    (given / "notes.txt").write_text("keep")
    target = {"folder": lambda: given / "results",
              "under a file": lambda: given / "notes.txt" / "out.json",
              "unwritable folder": lambda: unwritable_folder(tmp_path) / "out.json"}[layout]()
    before = snapshot(given)
    argv = [*argv, option, str(target)] if option not in argv else replaced(argv, option, target)
    code, err = run(argv, capsys)
    one_line_error(code, err, option, target)
    assert snapshot(given) == before


# ------------------------------------------------------------------------------------------------------ inputs


@pytest.mark.parametrize(("command", "option"), FILE_INPUTS, ids=[" ".join(c) for c in FILE_INPUTS])
def test_an_input_that_is_a_folder_is_one_line(commands, command, option, tmp_path, capsys):
    folder = tmp_path / "a folder"
    folder.mkdir()
    (folder / "inside.json").write_text("[]")
    before = snapshot(tmp_path)
    code, err = run(replaced(commands[command], option, folder), capsys)
    one_line_error(code, err, folder)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("command", "option"), JSON_INPUTS, ids=[" ".join(c) for c in JSON_INPUTS])
def test_deeply_nested_json_is_one_line_naming_the_file(commands, command, option, tmp_path, capsys):
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    out = tmp_path / "out.json"
    argv = replaced(commands[command], option, nested)
    code, err = run(argv + (["--output", str(out)] if command.startswith("evaluate") else []), capsys)
    one_line_error(code, err, nested)
    assert not out.exists()


@pytest.mark.parametrize(("command", "option"), GZIP_INPUTS, ids=[" ".join(c) for c in GZIP_INPUTS])
def test_a_gzip_bomb_stops_at_the_read_limit(commands, command, option, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(files, "MAX_DECOMPRESSED_BYTES", 64 * 1024)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b"0," * 500_000 + b"0]"))  # 1 MB of JSON in about 1 KB
    assert bomb.stat().st_size < 8 * 1024
    code, err = run(replaced(commands[command], option, bomb), capsys)
    assert "too large" in one_line_error(code, err, bomb)


def test_unreadable_input_is_one_line(commands, tmp_path, capsys, monkeypatch):
    import builtins
    import errno
    import io

    locked = tmp_path / "pred.json"
    locked.write_text("[]")
    locked.chmod(0)
    real_open = builtins.open

    def open_denied(file, *args, **kwargs):  # root reads files whatever their mode: deny as the kernel would
        if isinstance(file, (str, os.PathLike)) and Path(file) == locked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_denied)
    monkeypatch.setattr(io, "open", open_denied)
    code, err = run(replaced(commands["evaluate hoi_map"], "--predictions", locked), capsys)
    one_line_error(code, err, locked)


def test_num_proc_zero_is_refused_by_every_command_that_takes_it(capsys):
    parser = cli.build_parser(cli.load_registry())
    placeholder = Path(tempfile.gettempdir()) / "hoi-bench-never-read-input"
    with_num_proc = [(words, leaf) for words, leaf in leaves(parser)
                     if any("--num-proc" in a.option_strings for a in leaf._actions)]
    assert {"build hoi_sg", "build haystack", "build sportshhi"} <= {" ".join(w) for w, _ in with_num_proc}
    for words, leaf in with_num_proc:
        with pytest.raises(SystemExit) as exit_info:
            cli.main([*minimal_argv(words, leaf, placeholder), "--num-proc", "0"])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and "Traceback" not in err
        assert err.rstrip().splitlines()[-1].endswith("argument --num-proc: expected a positive integer, found '0'")


# -------------------------------------------------------------------------------------------------- JSON output


def test_a_nan_in_a_result_is_written_as_null(commands, tmp_path, monkeypatch):
    """The evaluate commands write through the strict writer: an undefined value becomes null, never NaN."""
    import numpy as np

    from hoi_sg_dataset import predictions

    real = predictions.hoi_map_files

    def with_undefined_values(*args, **kwargs):
        result = real(*args, **kwargs)
        return {**result, "mean_max_recall": float("nan"), "mAP": np.float32(result["mAP"]), "extra": np.inf}

    monkeypatch.setattr(predictions, "hoi_map_files", with_undefined_values)
    out = tmp_path / "out.json"
    assert cli.main([*commands["evaluate hoi_map"], "--output", str(out)]) == 0
    result = strict_json(out.read_text())
    assert result["mean_max_recall"] is None and result["extra"] is None
    assert result["mAP"] == pytest.approx(1.0)


# -------------------------------------------------------------------------------------------------------- push


def hoi_bench_subprocess(argv: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    return subprocess.run([sys.executable, "-m", "hoi_bench.cli", *argv], check=False, env={**base, **env},
                          cwd=REPO, capture_output=True, text=True, timeout=120, **kwargs)


PUSH_FAILURES = {
    "offline": ({"HF_HUB_OFFLINE": "1", "HF_TOKEN": "hf_unused"}, "org/x", "offline mode is on"),
    "no token": ({"HF_HUB_OFFLINE": "0"}, "org/x", "no Hugging Face token"),
    "bad repo id": ({"HF_HUB_OFFLINE": "0", "HF_TOKEN": "hf_unused"}, "not a/valid/id", "bad repository id"),
    "network error": ({"HF_HUB_OFFLINE": "0", "HF_TOKEN": "hf_unused", "HF_ENDPOINT": "http://127.0.0.1:9"},
                      "org/x", "Connect"),
}


@pytest.mark.parametrize("case", PUSH_FAILURES)
def test_every_push_failure_is_one_line_exit_2(case, tmp_path):
    env, repo_id, reason = PUSH_FAILURES[case]
    folder = tmp_path / "hub"
    folder.mkdir()
    (folder / "README.md").write_text("---\nconfigs: []\n---\n")
    before = snapshot(folder)
    done = hoi_bench_subprocess(["push", str(folder), "--repo-id", repo_id],
                                {"HF_HOME": str(tmp_path / "hf-home"), **env})
    assert reason in one_line_error(done.returncode, done.stderr, folder, repo_id)
    assert snapshot(folder) == before


# ------------------------------------------------------------------------------------------------------ Ctrl-C

RUNNING_EVALUATION = textwrap.dedent("""
    import sys, time
    from hoi_bench import cli
    from hoi_sg_dataset import evaluation

    real_ap = evaluation._eleven_point_ap

    def first_ap_then_wait(*args, **kwargs):  # the files are read and matched: say so, then stay in the loop
        ap = real_ap(*args, **kwargs)
        print("ready", flush=True)
        time.sleep(60)
        return ap

    evaluation._eleven_point_ap = first_ap_then_wait
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_sigint_during_a_running_evaluation_is_one_line_exit_130_and_keeps_the_output(commands, tmp_path):
    """Ctrl-C while `hoi-bench evaluate hoi_map` is computing APs (held at its first class, so the signal
    lands inside the evaluation, not before or after it)."""
    out = tmp_path / "out.json"
    out.write_text('{"old": 1}')
    before = snapshot(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", RUNNING_EVALUATION, *commands["evaluate hoi_map"],
                              "--output", str(out)],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n", child.stderr.read()
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130 and err == "hoi-bench: interrupted\n"
    assert snapshot(tmp_path) == before


def test_interrupt_inside_a_real_evaluation_keeps_the_previous_result(commands, tmp_path, capsys, monkeypatch):
    from hoi_sg_dataset import predictions

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    out = tmp_path / "out.json"
    assert cli.main([*commands["evaluate hoi_map"], "--output", str(out)]) == 0
    before = snapshot(tmp_path)
    monkeypatch.setattr(predictions, "hoi_map_files", interrupted)
    capsys.readouterr()
    assert cli.main([*commands["evaluate hoi_map"], "--output", str(out)]) == 130
    assert capsys.readouterr().err == "hoi-bench: interrupted\n"
    assert snapshot(tmp_path) == before and json.loads(out.read_text())["mAP"] == pytest.approx(1.0)


LONG_OUTPUT = textwrap.dedent("""
    import sys
    from hoi_bench import cli
    from hoi_bench.plugins import Command, Registry

    def run(args):
        for number in range(1_000_000):
            print("line", number)

    registry = Registry()
    registry.add_command(Command("stats", "long", "prints a million lines", lambda parser: None, run))
    cli.load_registry = lambda: registry
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_a_closed_stdout_ends_quietly():
    """`hoi-bench stats ... | head -1`: the reader leaves, the command stops without an error or a traceback."""
    child = subprocess.Popen([sys.executable, "-c", LONG_OUTPUT, "stats", "long"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout.readline() == b"line 0\n"
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141 and err == ""
