"""Commands and demo steps this package adds to `hoi-bench` (entry point `hoi_bench.plugins`).

``build bongard_hoi``, ``stats bongard_hoi``, ``episodes``, ``show bongard_hoi``, ``evaluate bongard``; demo steps
12 (build the sample, load it, draw a sheet) and 32 (accuracy of a simple rule).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.plugins import Command, Registry

BENCHMARK = "bongard_hoi"


def register(registry: Registry) -> None:
    """Add this package's commands and demo steps to ``registry``."""
    registry.add_command(Command("build", BENCHMARK, "build the Bongard-HOI episode files into a Hub dataset folder",
                                 _configure_build, _run_build))
    registry.add_command(Command("evaluate", "bongard", "Bongard-HOI query accuracy per split and the test mean",
                                 _configure_evaluate, _run_evaluate))


def _configure_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="folder holding bongard_hoi_release/ (episode files) and images/ (the HAKE image tar)")
    parser.add_argument("--out", type=Path, required=True, help="Hub dataset folder to write (config 'episodes')")
    parser.add_argument("--no-crop", dest="crop", action="store_false",
                        help="embed whole original images, boxes in image pixels (default: official crops)")
    parser.add_argument("--splits", nargs="+", help="build only these splits (default: all nine)")
    parser.add_argument("--annotation-dir", default="bongard_hoi_release",
                        help="episode-file folder, absolute or relative to --data-dir")
    parser.add_argument("--image-dir", default="images", help="image root, absolute or relative to --data-dir")


def _run_build(args: argparse.Namespace) -> int:
    from bongard_hoi.builder import build_hub

    out = build_hub(args.data_dir, args.out, crop=args.crop, splits=args.splits, annotation_dir=args.annotation_dir,
                    image_dir=args.image_dir)
    print(f"wrote {out}; load with datasets.load_dataset({str(out)!r}, 'episodes')")
    return 0


def _configure_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", type=Path, required=True,
                        help='JSON list of {"split", "episode", "query": "positive"|"negative", "prediction": '
                             '"positive"|"negative" or [positive-set score, negative-set score]}')
    parser.add_argument("--references", type=Path, required=True,
                        help="folder of official episode files (bongard_hoi_<split>.json) or a built dataset folder")
    parser.add_argument("--output", type=Path, help="write the result JSON here")


def _run_evaluate(args: argparse.Namespace) -> int:
    from bongard_hoi.evaluation import summary_rows
    from bongard_hoi.predictions import evaluate_prediction_file
    from hoi_bench.report import format_table

    result = evaluate_prediction_file(args.predictions, args.references)
    print(format_table(["split", "accuracy", "episode accuracy (not official)"], summary_rows(result)))
    if args.output:
        _write_json(args.output, result)
        print(f"\nwrote {args.output}")
    return 0


def _write_json(path: Path, data) -> None:
    """Write ``data`` as JSON; the file appears only when complete."""
    import json
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.partial-", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(data, stream, indent=2)
    os.replace(temp, path)
