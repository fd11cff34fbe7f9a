"""The command lines a training run records (``log.json``, the model card): the one that was run, and the one that
repeats every setting.

A baseline starts three ways — ``python -m <package>.baseline``, ``accelerate launch -m <package>.baseline`` and
``hoi-bench train <benchmark>`` — and the module that builds the run sees none of them (under ``python -m`` it is
even called ``__main__``). So each entry point says what it is (``python -m MODULE`` or ``hoi-bench``), and the
launcher is read from the environment ``accelerate launch`` gives every process it starts.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

#: set by ``accelerate launch`` in every process it starts (with the launcher's --mixed_precision)
ACCELERATE_LAUNCHED = "ACCELERATE_MIXED_PRECISION"


def launcher(environ: Mapping[str, str] | None = None) -> list[str]:
    """``["accelerate", "launch", ...]`` when this process was started by ``accelerate launch`` (with
    ``--num_processes N`` when it started more than one), else ``[]``.

    >>> launcher({"ACCELERATE_MIXED_PRECISION": "no", "WORLD_SIZE": "2"})
    ['accelerate', 'launch', '--num_processes', '2']
    >>> launcher({})
    []
    """
    environ = os.environ if environ is None else environ
    if ACCELERATE_LAUNCHED not in environ:
        return []
    processes = int(environ.get("WORLD_SIZE", "1") or 1)
    return ["accelerate", "launch", *(["--num_processes", str(processes)] if processes > 1 else [])]


def module_command(module: str, argv: Sequence[str], environ: Mapping[str, str] | None = None) -> str:
    """How ``python -m MODULE ARGV`` was started: as typed, or under ``accelerate launch -m MODULE``.

    >>> module_command("hoi_sg_dataset.baseline", ["--data", "my hub"], {})
    "python -m hoi_sg_dataset.baseline --data 'my hub'"
    """
    words = launcher(environ)
    return shlex.join([*(words or ["python"]), "-m", main_module(module), *argv])


def cli_command(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> str:
    """How ``hoi-bench ARGV`` was started (``accelerate launch -m hoi_bench.cli ARGV`` under accelerate).

    >>> cli_command(["train", "hoi_sg", "--max-steps", "5"], {})
    'hoi-bench train hoi_sg --max-steps 5'
    """
    words = launcher(environ)
    return shlex.join([*words, "-m", "hoi_bench.cli", *argv] if words else ["hoi-bench", *argv])


def script_command(environ: Mapping[str, str] | None = None) -> str:
    """How this process was started, from ``sys.argv``, for a script that is not a baseline module (e.g. a
    file passed to ``accelerate launch``)."""
    program = main_module(None)
    words = launcher(environ) or ["python"]
    head = ["-m", program] if program else [sys.argv[0]]
    return shlex.join([*words, *head, *sys.argv[1:]])


def main_module(module: str | None) -> str | None:
    """``module``, or when it is ``__main__`` (or None) the dotted name ``python -m`` ran it under (None for a
    script file).

    >>> main_module("hoi_sg_dataset.baseline")
    'hoi_sg_dataset.baseline'
    """
    if module not in (None, "__main__"):
        return module
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(spec, "name", None)
    return name.removesuffix(".__main__") if name else None


def settings_command(module: str, settings: Mapping[str, Any]) -> str:
    """``python -m MODULE`` with every setting spelled out as a flag (``None`` and ``False`` left out, lists as
    several words): the same run again, whichever way it was started.

    >>> settings_command("pkg.baseline", {"output_dir": "out", "cpu": True, "resume": None, "splits": ["a", "b"]})
    'python -m pkg.baseline --output-dir out --cpu --splits a b'
    """
    words = ["python", "-m", module]
    for key, value in settings.items():
        if value is None or value is False:
            continue
        words.append("--" + key.replace("_", "-"))
        if isinstance(value, (list, tuple)):
            words += [str(item) for item in value]
        elif value is not True:
            words.append(str(value))
    return shlex.join(words)
