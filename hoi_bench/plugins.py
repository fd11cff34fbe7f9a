"""How benchmark packages plug commands and demo steps into ``hoi-bench`` without ``hoi_bench`` importing them.

Each benchmark package exposes ``register(registry)`` under the ``hoi_bench.plugins`` entry-point group
(declared in ``setup.cfg``); the CLI discovers them at start-up.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

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


@dataclass(frozen=True)
class Command:
    """One CLI command: ``hoi-bench <verb> <name> ...`` (or ``hoi-bench <verb> ...`` when ``name`` is None)."""

    verb: str
    name: str | None
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int | None]


@dataclass(frozen=True)
class DemoRow:
    """One line of the demo's closing results table."""

    benchmark: str
    split: str
    metric: str
    value: float | None


@dataclass
class DemoContext:
    """What a demo step gets: its output folder, a way to say what it did, and where to put results."""

    out_dir: Path
    say: Callable[[str], None]
    rows: list[DemoRow] = field(default_factory=list)
    artifacts: dict[str, Path] = field(default_factory=dict)

    def result(self, benchmark: str, split: str, metric: str, value: float | None) -> None:
        self.rows.append(DemoRow(benchmark, split, metric, None if value is None else float(value)))


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
    registry = Registry()
    for entry in sorted(entry_points(group="hoi_bench.plugins"), key=lambda e: e.name):
        entry.load()(registry)
    return registry
