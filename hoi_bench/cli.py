"""The ``hoi-bench`` command line: built-in commands plus those the benchmark packages register.

Whatever a user types, a run ends in one of three ways: the command's output and exit 0; one line
``hoi-bench: error: ...`` naming the file and what was expected, exit 2 (bad input, an output path that cannot be
written, a refused upload); or ``hoi-bench: interrupted``, exit 130, after Ctrl-C. Outputs are written atomically,
so an error or an interrupt leaves every file as it was. ``-v`` adds the traceback to an error.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from hoi_bench import __version__
from hoi_bench.errors import HoiBenchError
from hoi_bench.files import check_output_file, refuse_overwriting_inputs
from hoi_bench.flags import FlagParser
from hoi_bench.plugins import FILE_OUTPUTS, FILE_OUTPUTS_BY_VERB, VERBS, DemoContext, Registry, load_registry
from hoi_bench.publish_cli import add_publish_commands
from hoi_bench.report import format_table

logger = logging.getLogger("hoi_bench")

DESCRIPTION = "Build, evaluate, draw and train human-interaction benchmarks with Hugging Face datasets and evaluate."

NEXT_COMMANDS_SHOWN = 4
"""How many of the demo steps' suggested commands the demo ends with."""


def build_parser(registry: Registry, argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: one sub-command per verb, one sub-sub-command per benchmark or metric.

    With ``argv``, only the command it names gets its arguments (``configure`` runs for it alone): every other
    command is listed with its help line, so ``--help`` and a run cost one command's set-up, not all of them.
    Without ``argv`` every command is configured.
    """
    parser = argparse.ArgumentParser(prog="hoi-bench", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages, show error tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="COMMAND")
    words = None if argv is None else [word for word in argv if not word.startswith("-")][:2]

    def wanted(verb: str, name: str | None, aliases: Sequence[str] = ()) -> bool:
        return words is None or words[:1] == [verb] and (name is None or words[1:2] in (
            [[name]] + [[alias] for alias in aliases]))

    by_verb: dict[str, list] = {}
    for (verb, _name), command in registry.commands.items():
        by_verb.setdefault(verb, []).append(command)
    for verb, commands in sorted(by_verb.items()):
        unnamed = [c for c in commands if c.name is None]
        if unnamed:
            sub = verbs.add_parser(verb, help=unnamed[0].help, description=unnamed[0].help)
            if wanted(verb, None):
                unnamed[0].configure(sub)
            sub.set_defaults(handler=unnamed[0].run)
            continue
        sub = verbs.add_parser(verb, help=VERBS[verb], description=VERBS[verb])
        # training flags follow transformers' scripts: --max_steps as well as --max-steps, a JSON/YAML flags file
        names = sub.add_subparsers(dest="name", required=True, metavar="NAME",
                                   parser_class=FlagParser if verb == "train" else argparse.ArgumentParser)
        for command in sorted(commands, key=lambda c: c.name):
            leaf = names.add_parser(command.name, help=command.help, description=command.help,
                                    aliases=list(command.aliases))
            if wanted(verb, command.name, command.aliases):
                command.configure(leaf)
            leaf.set_defaults(handler=command.run)

    demo = verbs.add_parser("demo", help="run every capability end to end on the embedded samples")
    demo.add_argument("--out", type=Path, default=Path("demo-output"), help="folder for everything the demo writes")
    demo.set_defaults(handler=lambda args: run_demo(registry, args.out))

    push = verbs.add_parser("push", help="upload a Hub dataset folder to the Hugging Face Hub")
    push.add_argument("folder", type=Path, help="folder written by `hoi-bench build`")
    push.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repository")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--message", help="commit message")
    push.set_defaults(handler=_run_push)

    install = verbs.add_parser("install-metrics", help="make evaluate.load(NAME) find hoi-bench metrics offline")
    install.add_argument("names", nargs="*", help="metric names (default: all)")
    install.set_defaults(handler=_run_install_metrics)
    add_publish_commands(verbs)
    return parser


def _run_push(args: argparse.Namespace) -> int:
    from hoi_bench.push import push_hub_folder

    info = push_hub_folder(args.folder, args.repo_id, private=args.private, commit_message=args.message)
    print(f"pushed {args.folder} to dataset repo {args.repo_id}: {getattr(info, 'commit_url', info)}")
    return 0


def _run_install_metrics(args: argparse.Namespace) -> int:
    from hoi_bench.metric_modules import install_metrics

    installed = install_metrics(args.names or None)
    print(format_table(["metric", "installed at"], sorted(installed.items())))
    print('\nLoad with: evaluate.load("<metric>")  (set HF_EVALUATE_OFFLINE=1 to skip Hub look-ups)')
    return 0


def run_demo(registry: Registry, out_dir: Path) -> int:
    """Run every registered demo step on the embedded samples and print one results table."""
    out_dir = out_dir.absolute()
    out_dir.mkdir(parents=True, exist_ok=True)
    context = DemoContext(out_dir=out_dir, say=lambda text: print(f"  {text}", flush=True))
    steps = sorted(registry.demo_steps, key=lambda s: (s.order, s.name))
    for step in steps:
        print(f"== {step.name}", flush=True)
        started = time.perf_counter()
        with _quiet_progress_bars():  # per step: a step may switch the bars back on when it ends
            step.run(context)
        print(f"  ({time.perf_counter() - started:.1f} s)", flush=True)
    if context.artifacts:
        print("\n== Files")
        print(format_table(["what", "where"], [[k, str(v)] for k, v in context.artifacts.items()]))
    print("\n== Results")
    rows = [[r.benchmark, r.split, r.metric, r.value] for r in context.rows]
    print(format_table(["benchmark", "split", "metric", "value"], rows))
    if context.next_commands:
        print("\n== Try next")
        for command in context.next_commands[:NEXT_COMMANDS_SHOWN]:
            print(f"  {command}")
    return 0


@contextlib.contextmanager
def _quiet_progress_bars() -> Iterator[None]:
    """Turn off the progress bars of datasets and huggingface_hub while the demo runs, then restore them.

    The training harness follows datasets' switch too, so the demo prints its summary and nothing else.
    """
    import datasets
    import huggingface_hub.utils as hub_utils

    restore = []
    if datasets.is_progress_bar_enabled():
        datasets.disable_progress_bars()
        restore.append(datasets.enable_progress_bars)
    if not hub_utils.are_progress_bars_disabled():
        hub_utils.disable_progress_bars()
        restore.append(hub_utils.enable_progress_bars)
    try:
        yield
    finally:
        for undo in restore:
            undo()


def check_file_outputs(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> None:
    """Refuse, before any work, an output file that cannot be written (a folder, under a file, no permission) or
    that is one of the command's own input files (see :func:`hoi_bench.files.refuse_overwriting_inputs`).

    Which arguments are output files is the convention of :data:`hoi_bench.plugins.FILE_OUTPUTS`; every other
    argument naming an existing file counts as an input. ``parser`` (the whole command line's) lets messages
    name arguments as typed (``--predictions``, ``RESULTS``).
    """
    names = _argument_names(parser, args) if parser is not None else {}
    destinations = FILE_OUTPUTS + FILE_OUTPUTS_BY_VERB.get(getattr(args, "verb", None), ())
    outputs = {}
    for dest in destinations:
        value = getattr(args, dest, None)
        if isinstance(value, (str, os.PathLike)):
            name = names.get(dest, "--" + dest.replace("_", "-"))
            outputs[name] = check_output_file(value, name)
    inputs = {names.get(dest, dest): value for dest, value in vars(args).items()
              if dest not in destinations and dest not in ("verb", "name")}  # command words, not paths
    refuse_overwriting_inputs(outputs, inputs)


def _argument_names(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """``dest -> name as typed`` of the arguments of the command ``args`` ran (its last option string, or the
    metavar of a positional argument)."""
    for word in (getattr(args, "verb", None), getattr(args, "name", None)):
        commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not commands or word not in commands[0].choices:
            break
        parser = commands[0].choices[word]
    return {action.dest: action.option_strings[-1] if action.option_strings else action.metavar or action.dest.upper()
            for action in parser._actions}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hoi-bench`` console script."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("hoi-bench: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    registry = load_registry()
    parser = build_parser(registry, argv)
    if not argv:  # a bare `hoi-bench`: what it can do, not an error
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)  # a training flags file is read while parsing
    except HoiBenchError as error:
        return _fail(str(error), "-v" in argv or "--verbose" in argv)
    if args.verb == "train":
        from hoi_bench.run_command import cli_command

        args.launch_command = cli_command(argv)
    level = logging.DEBUG if args.verbose else logging.WARNING if args.verb == "demo" else logging.INFO
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        check_file_outputs(args, parser)
        return int(args.handler(args) or 0)
    except HoiBenchError as error:
        return _fail(str(error), args.verbose)
    except BrokenPipeError:  # the reader of stdout went away (`| head`): stop quietly, as a shell tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except OSError as error:  # a user-given path the command did not expect to fail (permission, a folder, ...)
        where = " -> ".join(str(f) for f in (error.filename, error.filename2) if f is not None)
        reason = error.strerror or str(error) or type(error).__name__
        return _fail(f"{where}: {reason}" if where else reason, args.verbose)
    except RecursionError:
        return _fail("input nested too deeply to read (a JSON file with thousands of nested levels?)", args.verbose)
    except UnicodeDecodeError as error:  # a reader that did not name its file; still no traceback
        return _fail(f"an input is not UTF-8 text ({error.reason}: byte {error.object[error.start:error.start + 1]!r} "
                     f"at offset {error.start})", args.verbose)


def _fail(message: str, verbose: bool) -> int:
    if verbose:
        logger.exception("traceback of the error below")
    print(f"hoi-bench: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
