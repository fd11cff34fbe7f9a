"""The publishing commands of ``hoi-bench``: ``push-metric`` (a metric folder as an evaluate Space) and ``report``
(mean ± standard deviation over result files, as a paper reports them).

Only argument parsing and printing live here; the work is in ``hoi_bench.spaces`` and ``hoi_bench.results_report``,
imported when a command runs so that ``hoi-bench --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_publish_commands(verbs: argparse._SubParsersAction) -> None:
    """Add ``push-metric`` and ``report`` to the ``hoi-bench`` sub-commands."""
    push = verbs.add_parser("push-metric", help="upload a metrics/<name>/ folder as an evaluate metric Space",
                            description="Upload metrics/NAME/ (module, app.py, card, examples, requirements.txt) "
                                        "as a gradio Space, with a hoi-bench wheel built from this checkout that "
                                        "its requirements.txt installs; afterwards the Space scores uploaded files "
                                        "and evaluate.load('ORG/NAME') works for everyone. Nothing is built or "
                                        "uploaded while a placeholder is left, offline, or without a token.")
    push.add_argument("name", help="metric name, e.g. p_auc")
    push.add_argument("--repo-id", required=True, help="ORG/NAME of the Space")
    push.add_argument("--private", action="store_true",
                      help="create the Space as private (needs --requirement: a private Space cannot download "
                           "its own wheel while it builds)")
    source = push.add_mutually_exclusive_group()
    source.add_argument("--requirement", help="requirement line that installs hoi-bench on the Space instead of "
                                              "an uploaded wheel (e.g. a public fork's git+https URL)")
    source.add_argument("--wheel", type=Path, help="hoi-bench wheel to upload (default: built from this checkout)")
    push.add_argument("--message", help="commit message")
    push.set_defaults(handler=_run_push_metric)

    report = verbs.add_parser("report", help="mean ± sample std of every metric over result files",
                              description="Read result JSON files written by `hoi-bench evaluate ... --output`, "
                                          "group them by label and print mean ± sample standard deviation "
                                          "(ddof=1) of every numeric top-level metric.")
    report.add_argument("results", nargs="+", type=Path, help="result JSON files")
    report.add_argument("--labels", nargs="+",
                        help="one group label per file, e.g. SG SG SG original, or MODEL:GROUP to compare models "
                             "(default: one group)")
    report.add_argument("--output", type=Path, help="write the report as JSON here")
    report.add_argument("--markdown", type=Path, help="write a Markdown table here")
    report.add_argument("--latex", type=Path, help="write a LaTeX table here")
    report.add_argument("--plot", type=Path,
                        help="draw the groups side by side here; the extension picks the format (.png at 300 dpi, "
                             ".pdf, .svg)")
    report.add_argument("--metrics", "--plot-metric", nargs="+", dest="plot_metrics", metavar="METRIC",
                        help="metrics to plot, one panel each (default: mAP when reported, else the first)")
    report.add_argument("--per-class", action="store_true",
                        help="also summarise per-class breakdowns (ap_per_*, per_*)")
    report.set_defaults(handler=_run_report)


def _run_push_metric(args: argparse.Namespace) -> int:
    from hoi_bench.spaces import push_metric

    info = push_metric(args.name, args.repo_id, private=args.private, requirement=args.requirement,
                       wheel=args.wheel, commit_message=args.message)
    print(f"pushed metric {args.name} to Space {args.repo_id}: {getattr(info, 'commit_url', info)}")
    print(f'Load with: evaluate.load("{args.repo_id}")')
    return 0


def _run_report(args: argparse.Namespace) -> int:
    from hoi_bench import results_report

    if args.plot is not None:
        results_report.plot_format(args.plot)
    report = results_report.build_report(args.results, args.labels, per_class=args.per_class)
    print(results_report.format_text(report))
    written = results_report.write_outputs(report, output=args.output, markdown=args.markdown, latex=args.latex,
                                           plot=args.plot, plot_metric_names=args.plot_metrics)
    for path in written:
        print(f"wrote {path}")
    return 0
