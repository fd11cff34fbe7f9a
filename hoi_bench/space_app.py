"""The page every metric Space serves: the ``hoi-bench evaluate`` command of the metric as a gradio form.

A Space's ``app.py`` names its metric and the command that scores it (``evaluate haystack`` for ``p_auc``) and
calls :func:`launch`. The form is read from that command's own argument parser, so a Space offers exactly the
CLI's options: a file upload for each file argument (GT, predictions, train file; several files where the
command takes several or a folder), a selector for each choice (``--protocol``, ``--rank-mode``), a checkbox for
each switch and a box for each number. Pressing *Evaluate* runs the command itself (:func:`hoi_bench.cli.main`)
on the uploaded files, so the numbers are the CLI's; the page shows them as a table, as the JSON that
``--output`` writes, and the equivalent command line, above the metric card (``README.md`` without its front
matter). *Score the example files* fills the form with the files shipped in ``examples/`` next to ``app.py``
(one file per option, named after it: ``examples/references.json`` for ``--references``; a folder of that name
for an option that takes several files) and scores them.

gradio is imported only by :func:`build_page` and :func:`launch`: the Space brings it (``sdk_version`` in the
card), in a checkout ``pip install -e '.[space]'``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoi_bench.errors import HoiBenchError

NOT_ON_THE_FORM = ("help", "output", "markdown", "latex", "plot", "per_class", "num_proc", "verbose")
"""Arguments a Space sets itself or that change only what the terminal shows (the JSON is always written)."""

TABLE_MAX_ENTRIES = 12
"""A nested result dict with at most this many numbers (``mean`` of Haystack) goes into the table; bigger ones
(per class, per predicate) only into the JSON."""

_FRONT_MATTER = re.compile(r"\A---\r?\n.*?\r?\n---\r?\n", re.DOTALL)


class SpaceInputError(HoiBenchError):
    """A form value the command cannot take: a required file not given, a folder option without files."""


@dataclass(frozen=True)
class FormField:
    """One input of a Space's form, made from one argument of its command.

    ``kind`` is ``file``, ``files`` (several, or the files of a folder when ``folder``), ``choice``, ``switch``,
    ``integer``, ``number`` or ``text``.
    """

    dest: str
    flag: str
    kind: str
    label: str
    help: str
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()
    folder: bool = False


@dataclass(frozen=True)
class MetricForm:
    """A metric Space's form: the command it runs and one field per option, in the command's order."""

    metric: str
    command: tuple[str, ...]
    fields: tuple[FormField, ...]
    examples: Mapping[str, Any] = field(default_factory=dict)


def command_parser(command: Sequence[str]) -> argparse.ArgumentParser:
    """The argument parser of ``hoi-bench <command>`` (e.g. ``["evaluate", "hoi_map"]``), as the CLI builds it."""
    from hoi_bench.cli import build_parser
    from hoi_bench.plugins import load_registry

    parser = build_parser(load_registry(), list(command))
    for word in command:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers or word not in subparsers[0].choices:
            raise SpaceInputError(f"hoi-bench has no command {' '.join(command)!r}")
        parser = subparsers[0].choices[word]
    return parser


def metric_form(metric: str, command: Sequence[str], folders: Sequence[str] = (),
                examples: str | os.PathLike | None = None) -> MetricForm:
    """The form of ``metric``'s Space, read from the parser of ``hoi-bench <command>``.

    ``folders`` names the options that take a folder (uploaded as its files); ``examples`` is the folder of
    example files (``None``: no examples).
    """
    fields = []
    for action in command_parser(command)._actions:
        if action.dest in NOT_ON_THE_FORM or not action.option_strings:
            continue
        fields.append(_field(action, action.dest in folders))
    unknown = set(folders) - {f.dest for f in fields}
    if unknown:
        raise SpaceInputError(f"hoi-bench {' '.join(command)} has no option {sorted(unknown)[0]!r}")
    form = MetricForm(metric, tuple(command), tuple(fields))
    if examples is not None:
        form = MetricForm(metric, tuple(command), tuple(fields), example_values(form, examples))
    return form


def _field(action: argparse.Action, folder: bool) -> FormField:
    flag = max(action.option_strings, key=len)
    label = flag.lstrip("-").replace("-", " ")
    common = {"dest": action.dest, "flag": flag, "label": label, "help": action.help or "",
              "required": bool(action.required)}
    if isinstance(action, argparse._StoreTrueAction):
        return FormField(kind="switch", default=False, **common)
    if action.type is Path:
        several = folder or action.nargs in ("+", "*")
        return FormField(kind="files" if several else "file", folder=folder, **common)
    if action.choices:
        return FormField(kind="choice", choices=tuple(str(c) for c in action.choices), default=action.default,
                         **common)
    if action.type is int:
        return FormField(kind="integer", default=action.default, **common)
    if action.type is float:
        return FormField(kind="number", default=action.default, **common)
    default = "" if action.default is None else str(action.default)
    return FormField(kind="text", default=default, **common)


def example_values(form: MetricForm, folder: str | os.PathLike) -> dict[str, Any]:
    """The example files shipped in ``folder``: ``{dest: path or [paths]}`` for each file option with a file
    ``<dest>.<ext>`` (or a folder ``<dest>/``); the other options keep their defaults."""
    root = Path(folder)
    if not root.is_dir():
        return {}
    entries = {p.name.split(".", 1)[0]: p for p in sorted(root.iterdir()) if not p.name.startswith(".")}
    values: dict[str, Any] = {}
    for spec in form.fields:
        path = entries.get(spec.dest)
        if path is None or spec.kind not in ("file", "files"):
            continue
        files = sorted(str(p) for p in path.iterdir() if p.is_file()) if path.is_dir() else [str(path)]
        values[spec.dest] = files if spec.kind == "files" else files[0]
    return values


def command_line(form: MetricForm, values: Mapping[str, Any], staging: str | os.PathLike) -> list[str]:
    """The ``hoi-bench`` arguments for the form ``values`` (``{dest: value}``, files as paths).

    The files of a folder option are copied into the folder ``staging/<dest>``; an empty value or the default
    leaves its option out, so the command's default applies.
    """
    argv = list(form.command)
    for spec in form.fields:
        value = values.get(spec.dest)
        if spec.kind in ("file", "files"):
            paths = [str(p) for p in ([] if value is None else [value] if isinstance(value, (str, os.PathLike))
                                      else value)]
            if not paths:
                if spec.required:
                    raise SpaceInputError(f"{spec.label}: required (no file uploaded)")
                continue
            if spec.folder:
                target = Path(staging) / spec.dest  # shown as the folder's name in the command line
                target.mkdir()
                for path in paths:
                    shutil.copy(path, target / Path(path).name)
                paths = [str(target)]
            argv += [spec.flag, *(paths if spec.kind == "files" else paths[:1])]
        elif spec.kind == "switch":
            argv += [spec.flag] if value else []
        elif value is None or (isinstance(value, str) and not value.strip()) or value == spec.default:
            if spec.required and value is None:
                raise SpaceInputError(f"{spec.label}: required")
        elif spec.kind == "integer" and isinstance(value, float) and value.is_integer():
            argv += [spec.flag, str(int(value))]
        else:
            argv += [spec.flag, str(value).strip()]
    return argv


def run_command(argv: Sequence[str], staging: str | os.PathLike) -> dict[str, Any]:
    """Run ``hoi-bench ARGV --output JSON`` in this process and return the JSON it wrote (what it prints is the
    terminal's table, dropped: the page draws its own).

    A refused input raises ``SpaceInputError`` with the CLI's one-line error (``hoi-bench: error: ...``).
    """
    from hoi_bench.cli import main

    output = Path(staging) / "result.json"
    printed, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
        try:
            status = main([*argv, "--output", str(output)])
        except SystemExit as stop:  # argparse refusing a value (a --top-k that is not a number)
            status = stop.code if isinstance(stop.code, int) else 2
    if status != 0 or not output.is_file():
        lines = [line for line in errors.getvalue().splitlines() if line.strip()]
        raise SpaceInputError(lines[-1] if lines else f"hoi-bench {' '.join(argv[:2])} stopped (exit {status})")
    return json.loads(output.read_text(encoding="utf-8"))


def result_rows(result: Mapping[str, Any]) -> list[list[Any]]:
    """``[name, value]`` rows of a result: its top-level values, then the numbers of nested dicts of at most
    :data:`TABLE_MAX_ENTRIES` numbers (``mean/p_auc``); bigger or deeper breakdowns stay in the JSON.

    >>> result_rows({"mAP": 0.5, "protocol": "qpic", "mean": {"pdd": 0.25}, "per_predicate": {"on": {"pdd": 0.1}}})
    [['mAP', 0.5], ['protocol', 'qpic'], ['mean/pdd', 0.25]]
    """
    rows: list[list[Any]] = []
    nested = []
    for key, value in result.items():
        if isinstance(value, Mapping):
            nested.append((key, value))
        elif isinstance(value, (int, float, str)) or value is None:
            rows.append([key, value])
    for key, value in nested:
        numbers = [(k, v) for k, v in value.items() if isinstance(v, (int, float)) or v is None]
        if numbers and len(numbers) == len(value) and len(numbers) <= TABLE_MAX_ENTRIES:
            rows += [[f"{key}/{k}", v] for k, v in numbers]
    return rows


def table_rows(result: Mapping[str, Any]) -> list[list[str]]:
    """The page's results table: :func:`result_rows` rounded as the CLI prints them, with the result's reason
    for a value it could not compute (``reasons`` of hoi_map and vcoco_map).

    >>> table_rows({"mAP": 0.123456, "mAP_rare": None, "reasons": {"mAP_rare": "no rare triplet"}})
    [['mAP', '0.1235', ''], ['mAP_rare', 'n/a', 'no rare triplet']]
    """
    from hoi_bench.report import format_value

    reasons = result.get("reasons") if isinstance(result.get("reasons"), Mapping) else {}
    return [[key, format_value(value), str(reasons.get(key, ""))] for key, value in result_rows(result)]


def metric_card(readme: str | os.PathLike) -> str:
    """The body of a metric card: ``README.md`` without its YAML front matter."""
    return _FRONT_MATTER.sub("", Path(readme).read_text(encoding="utf-8"), count=1)


def build_page(form: MetricForm, card: str = "", title: str | None = None) -> Any:
    """The gradio ``Blocks`` of a metric Space: the form, *Evaluate*, the example button, results, the card.

    ``title`` heads the page (default: the metric's name).
    """
    import gradio as gr

    def evaluate(*values: Any) -> tuple[list[list[str]], dict[str, Any], str]:
        given = dict(zip([f.dest for f in form.fields], values, strict=True))
        with tempfile.TemporaryDirectory(prefix=f"hoi-bench-space-{form.metric}-") as staging:
            try:
                argv = command_line(form, given, staging)
                result = run_command(argv, staging)
            except SpaceInputError as error:
                raise gr.Error(str(error)) from None
        return table_rows(result), result, _shown_command(argv)

    def fill_examples() -> list[Any]:
        return [form.examples.get(f.dest, f.default if f.kind != "files" else None) for f in form.fields]

    with gr.Blocks(title=title or form.metric, analytics_enabled=False) as page:
        gr.Markdown(f"# {title or form.metric}\nThe `{form.metric}` metric of hoi-bench: upload your files and "
                    f"press *Evaluate*, or press *Score the example files*. The numbers are those of "
                    f"`hoi-bench {' '.join(form.command)}` on the same files.")
        with gr.Row():
            with gr.Column():
                inputs = [_component(gr, spec) for spec in form.fields]
            with gr.Column():
                with gr.Row():
                    run = gr.Button("Evaluate", variant="primary")
                    example = gr.Button("Score the example files", visible=bool(form.examples))
                table = gr.Dataframe(headers=["metric", "value", "note"], label="Results", interactive=False,
                                     wrap=True)
                command = gr.Textbox(label="The same numbers from the command line", interactive=False,
                                     lines=2)
                data = gr.JSON(label="Result JSON (what --output writes)")
        gr.Markdown(card)
        run.click(evaluate, inputs=inputs, outputs=[table, data, command], api_name="evaluate")
        example.click(fill_examples, outputs=inputs, api_name=False).then(
            evaluate, inputs=inputs, outputs=[table, data, command], api_name=False)
    return page


FILE_BOX_HEIGHT = 140
"""Pixels of a file upload box: a page with five of them still shows its results without scrolling."""


def _component(gr: Any, spec: FormField) -> Any:
    label = spec.label
    if spec.kind in ("file", "files"):
        what = re.split(r";| \(|: ", spec.help, maxsplit=1)[0].strip().rstrip(",:")
        what = what if len(what) <= 60 else what[:60].rsplit(" ", 1)[0] + " ..."
        label += " (its files)" if spec.folder else ""
        label += (f": {what}" if what else "") + ("" if spec.required else " (optional)")
        return gr.File(label=label, file_count="multiple" if spec.kind == "files" else "single",
                       type="filepath", height=FILE_BOX_HEIGHT)
    if spec.kind == "switch":
        return gr.Checkbox(label=label, info=spec.help, value=False)
    if spec.kind == "choice":
        return gr.Radio(list(spec.choices), label=label, info=spec.help, value=spec.default)
    if spec.kind in ("integer", "number"):
        return gr.Number(label=label, info=spec.help, value=spec.default,
                         precision=0 if spec.kind == "integer" else None)
    return gr.Textbox(label=label, info=spec.help, value=spec.default)


def _shown_command(argv: Sequence[str]) -> str:
    """The command line a visitor would type: uploaded files by their own names."""
    words = [Path(word).name if os.path.isabs(word) else word for word in argv]
    return "hoi-bench " + " ".join(words) + " --output result.json"


def launch(app_file: str | os.PathLike, command: Sequence[str], folders: Sequence[str] = (),
           **launch_options: Any) -> None:
    """Serve the Space whose ``app.py`` is ``app_file``: its metric is the folder's name (on a Space the folder
    holds ``<metric>.py``), its examples ``examples/``, its card ``README.md``. ``GRADIO_SERVER_NAME`` and
    ``GRADIO_SERVER_PORT`` choose the address, as on Spaces."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("hoi_bench").setLevel(logging.INFO)
    folder = Path(app_file).resolve().parent
    from hoi_bench.spaces import front_matter

    modules = sorted(p.stem for p in folder.glob("*.py") if p.name != "app.py")
    metric = modules[0] if len(modules) == 1 else folder.name
    form = metric_form(metric, command, folders, folder / "examples")
    title = front_matter(folder / "README.md").get("title")
    launch_options.setdefault("allowed_paths", [str(folder / "examples")])  # served from any working directory
    build_page(form, metric_card(folder / "README.md"), title).launch(**launch_options)
