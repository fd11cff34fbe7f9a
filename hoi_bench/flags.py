"""Command-line flags of the training scripts, the way transformers' example scripts take them.

Flags that a dataclass declares (the loop's :class:`hoi_bench.training.TrainingArguments`, or a baseline's own)
are made by ``transformers.HfArgumentParser``: each field is ``--field-name`` and ``--field_name``, its type,
default and help (field metadata) come from the dataclass. :class:`FlagParser` — the parser of ``python -m
<package>.baseline`` and of each ``hoi-bench train <benchmark>`` — also takes the underscore form of every other
flag (``--cache_dir``), and a lone ``.json``/``.yaml``/``.yml`` argument as the file of all flags
(``python -m hoi_sg_dataset.baseline run.yaml``), as transformers' scripts do with ``parse_json_file``.

A baseline adds its own flags as a dataclass::

    @dataclass
    class DetrArguments:
        _argument_group_name = "DETR"
        num_queries: int = field(default=100, metadata={"help": "object queries per image"})

    def configure_parser(parser):
        add_baseline_arguments(parser, config="hico_split1")
        add_dataclass_flags(parser, DetrArguments)

    # in the Baseline: self.detr = flags_from_args(DetrArguments, args)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from hoi_bench.errors import HoiBenchError

FLAG_FILES = (".json", ".yaml", ".yml")
Flags = TypeVar("Flags")


def add_dataclass_flags(parser: argparse.ArgumentParser, dataclass_type: type, **defaults: Any) -> None:
    """Add the flags ``HfArgumentParser`` makes of ``dataclass_type``'s fields to ``parser`` (in the group its
    ``_argument_group_name`` names); ``defaults`` overrides field defaults (a required field given a default is
    no longer required)."""
    from transformers import HfArgumentParser

    flags = HfArgumentParser(dataclass_type, add_help=False)
    for action in flags._actions:
        if action.dest in defaults:
            action.default = defaults[action.dest]
            action.required = False
    # what argparse does for ArgumentParser(parents=[flags]), here for a parser that already exists
    parser._add_container_actions(flags)


def flags_from_args(dataclass_type: type[Flags], args: argparse.Namespace) -> Flags:
    """The ``dataclass_type`` instance of parsed ``args`` (its init fields, by name)."""
    names = [spec.name for spec in dataclasses.fields(dataclass_type) if spec.init]
    return dataclass_type(**{name: getattr(args, name) for name in names if hasattr(args, name)})


def flag_file_argv(path: str | Path) -> list[str]:
    """The flags a JSON or YAML file of ``{flag name: value}`` stands for (``--name value``; ``true`` → the bare
    flag, ``false`` and ``null`` left out, a list → several values).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write('{"output_dir": "runs/a", "max-steps": 5, "cpu": true, "resume": null, '
    ...                 '"eval_splits": ["test"]}')
    >>> flag_file_argv(f.name)
    ['--output-dir', 'runs/a', '--max-steps', '5', '--cpu', '--eval-splits', 'test']
    >>> os.unlink(f.name)
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        values = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as error:
        reason = " ".join(str(error).split())
        raise HoiBenchError(f"{path}: cannot read the flags file ({reason})") from error
    if not isinstance(values, dict):
        raise HoiBenchError(f"{path}: expected a mapping of flag names to values, found {type(values).__name__}")
    words: list[str] = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        words.append("--" + str(name).lstrip("-").replace("_", "-"))
        if isinstance(value, list):
            words += [str(item) for item in value]
        elif value is not True:
            words.append(str(value))
    return words


class FlagParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that takes ``--name_with_underscores`` for every ``--name-with-underscores`` flag,
    and a lone JSON/YAML file as the file of all flags (see the module docstring)."""

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None):
        args = list(sys.argv[1:] if args is None else args)
        if len(args) == 1 and args[0].endswith(FLAG_FILES) and Path(args[0]).is_file():
            args = flag_file_argv(args[0])
        return super().parse_known_args(self._dashed(args), namespace)

    def _dashed(self, args: list[str]) -> list[str]:
        known = self._option_string_actions
        out = []
        for word in args:
            name, sep, value = word.partition("=")
            if name.startswith("--") and name not in known and "_" in name:
                dashed = "--" + name[2:].replace("_", "-")
                if dashed in known:
                    word = dashed + sep + value
            out.append(word)
        return out
