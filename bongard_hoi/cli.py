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
