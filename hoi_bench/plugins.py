"""How benchmark packages plug commands and demo steps into ``hoi-bench`` without ``hoi_bench`` importing them.

Each benchmark package exposes ``register(registry)`` under the ``hoi_bench.plugins`` entry-point group
(declared in ``setup.cfg``); the CLI discovers them at start-up, so a package's ``cli`` module and whatever it
imports at module level are loaded for every command, ``--help`` included: keep heavy imports (numpy, datasets,
pyarrow, matplotlib, torch, evaluate, huggingface_hub) inside the handlers, or register :func:`deferred`
functions. Only the command being run is configured (see ``hoi_bench.cli.build_parser``).

Conventions the CLI enforces for every command (see ``hoi_bench.cli``): an argument whose destination is one of
:data:`FILE_OUTPUTS` (or :data:`FILE_OUTPUTS_BY_VERB` for that verb) names a file the command writes, and is
checked before the command runs; counts such as ``--num-proc`` take :func:`positive_int` (or
:func:`non_negative_int` where 0 means none).
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any

VERBS = {
    "build": "build a benchmark's native files into a Hub dataset folder",
    "stats": "print statistics of a benchmark file",
    "evaluate": "score predictions with a benchmark metric",
    "episodes": "sample few-shot episodes",
    "show": "draw an example or a result as a PNG",
    "train": "train and evaluate a baseline",
    "splits": "generate systematic-generalization splits",
    "convert": "convert predictions between a benchmark's file formats",
}


FILE_OUTPUTS = ("output", "markdown", "latex", "plot")
"""Argument destinations that name one output file, whatever the command (``--output REPORT.json``)."""

FILE_OUTPUTS_BY_VERB = {"show": ("out",), "convert": ("out",)}
"""Verbs whose ``--out`` is a file (a PNG, a converted prediction file); elsewhere ``--out`` is a folder."""


def add_num_proc_argument(parser: argparse.ArgumentParser) -> None:
    """``--num-proc`` of the commands that read a large JSON prediction file (see ``hoi_bench.forked``)."""
    parser.add_argument("--num-proc", type=positive_int, default=None,
                        help="processes that decode a large JSON prediction file (16 MB or more) at once (Linux; "
                        "default: the CPUs available, at most 4; 1 = this process only)")


def positive_int(text: str) -> int:
    """argparse type of a count that must be at least 1 (``--num-proc``, ``--num-episodes``).

    >>> positive_int("4")
    4
    >>> positive_int("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a positive integer, found '0'
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type of a count that may be 0 but not negative (``--clip-len``, ``--top``).

    >>> non_negative_int("0")
    0
    >>> non_negative_int("-3")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected an integer >= 0, found '-3'
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, found {text!r}")
    return value


def deferred(target: str) -> Callable[..., Any]:
    """``"package.module:function"`` as a function that imports its module only when first called.

    ``register`` runs for every ``hoi-bench`` command, ``--help`` included; a command whose code imports numpy,
    torch or datasets at module level registers ``deferred(...)`` functions (with its help text kept in the
    plugin's ``cli`` module) so that cost is paid only when the command itself runs.

    >>> dumps = deferred("json:dumps")
    >>> dumps([1])
    '[1]'
    """
    module, _, name = target.partition(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = target
    return call


@dataclass(frozen=True)
class Command:
    """One CLI command: ``hoi-bench <verb> <name> ...`` (or ``hoi-bench <verb> ...`` when ``name`` is None)."""

    verb: str
    name: str | None
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int | None]
    #: other names the command answers to (e.g. a metric command's earlier name)
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemoRow:
    """One line of the demo's closing results table."""

    benchmark: str
    split: str
    metric: str
    value: int | float | None


@dataclass
class DemoContext:
    """What a demo step gets: its output folder, a way to say what it did, and where to put results."""

    out_dir: Path
    say: Callable[[str], None]
    rows: list[DemoRow] = field(default_factory=list)
    artifacts: dict[str, Path] = field(default_factory=dict)
    next_commands: list[str] = field(default_factory=list)

    def result(self, benchmark: str, split: str, metric: str, value: float | None) -> None:
        """Add a row to the closing results table; counts stay integers (``355``, not ``355.0``)."""
        if value is not None:
            value = int(value) if isinstance(value, Integral) else float(value)
        self.rows.append(DemoRow(benchmark, split, metric, value))

    def suggest(self, *command: str | os.PathLike) -> None:
        """Offer a command a user can run next on what this step wrote; the demo ends with the first few.

        Pass the words of the command; paths (``Path`` objects) are shown by :func:`display_path`.
        """
        self.next_commands.append(shell_command(command))


def display_path(path: str | os.PathLike) -> str:
    """``path`` as a user would type it: relative to the working directory when inside it, else absolute.

    >>> display_path(Path.cwd() / "demo-output" / "hoi_sg")
    'demo-output/hoi_sg'
    """
    path = Path(path).absolute()
    cwd = Path.cwd()
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) and path != cwd else str(path)


def shell_command(words: Sequence[str | os.PathLike]) -> str:
    """One shell line from command words, quoting where needed, paths shown by :func:`display_path`.

    >>> shell_command(["hoi-bench", "show", "haystack", "--metrics", Path("a b.json")])
    "hoi-bench show haystack --metrics 'a b.json'"
    """
    import shlex

    return " ".join(shlex.quote(display_path(w) if isinstance(w, os.PathLike) else str(w)) for w in words)


@dataclass(frozen=True)
class DemoStep:
    """A piece of ``hoi-bench demo``; steps run in ascending ``order`` (builds before training before scoring)."""

    name: str
    order: int
    run: Callable[[DemoContext], None]


@dataclass
class Registry:
    """Commands and demo steps contributed by the installed benchmark packages."""

    commands: dict[tuple[str, str | None], Command] = field(default_factory=dict)
    demo_steps: list[DemoStep] = field(default_factory=list)

    def add_command(self, command: Command) -> None:
        if command.verb not in VERBS:
            raise ValueError(f"unknown verb {command.verb!r}; known: {', '.join(VERBS)}")
        key = (command.verb, command.name)
        if key in self.commands:
            raise ValueError(f"command {' '.join(filter(None, key))!r} registered twice")
        self.commands[key] = command

    def add_demo_step(self, step: DemoStep) -> None:
        self.demo_steps.append(step)


def load_registry() -> Registry:
    """Collect every installed plugin's commands and demo steps."""
    from importlib.metadata import entry_points

    registry = Registry()
    for entry in sorted(entry_points(group="hoi_bench.plugins"), key=lambda e: e.name):
        entry.load()(registry)
    return registry
