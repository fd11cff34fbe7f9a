"""The ``hoi-bench`` command line: built-in commands plus those the benchmark packages register."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hoi_bench.errors import HoiBenchError
from hoi_bench.plugins import VERBS, DemoContext, Registry, load_registry
from hoi_bench.report import format_table

logger = logging.getLogger("hoi_bench")


def build_parser(registry: Registry) -> argparse.ArgumentParser:
    """The full argument parser: one sub-command per verb, one sub-sub-command per benchmark or metric."""
    parser = argparse.ArgumentParser(prog="hoi-bench", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="COMMAND")

    by_verb: dict[str, list] = {}
    for (verb, _name), command in registry.commands.items():
        by_verb.setdefault(verb, []).append(command)
    for verb, commands in sorted(by_verb.items()):
        unnamed = [c for c in commands if c.name is None]
        if unnamed:
            sub = verbs.add_parser(verb, help=unnamed[0].help, description=unnamed[0].help)
            unnamed[0].configure(sub)
            sub.set_defaults(handler=unnamed[0].run)
            continue
        sub = verbs.add_parser(verb, help=VERBS[verb], description=VERBS[verb])
        names = sub.add_subparsers(dest="name", required=True, metavar="NAME")
        for command in sorted(commands, key=lambda c: c.name):
            leaf = names.add_parser(command.name, help=command.help, description=command.help)
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
        step.run(context)
        print(f"  ({time.perf_counter() - started:.1f} s)", flush=True)
    if context.artifacts:
        print("\n== Files")
        print(format_table(["what", "where"], [[k, str(v)] for k, v in context.artifacts.items()]))
    print("\n== Results")
    rows = [[r.benchmark, r.split, r.metric, r.value] for r in context.rows]
    print(format_table(["benchmark", "split", "metric", "value"], rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hoi-bench`` console script."""
    registry = load_registry()
    parser = build_parser(registry)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return int(args.handler(args) or 0)
    except HoiBenchError as error:
        print(f"hoi-bench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
