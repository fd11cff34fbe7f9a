"""Commands and demo steps this package adds to `hoi-bench` (entry point `hoi_bench.plugins`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.plugins import Command, Registry


def register(registry: Registry) -> None:
    """Add this package's commands and demo steps to ``registry``."""
    registry.add_command(Command("build", "sportshhi", "build SportsHHI keyframes (config hhi) into a Hub folder",
                                 _configure_build, _run_build))


def _configure_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="release folder holding annotations/ and frames/ (see docs/sportshhi.md)")
    parser.add_argument("--out", type=Path, required=True, help="Hub folder to write (load_dataset(OUT, 'hhi'))")
    parser.add_argument("--clip-len", type=int, default=4, help="context frames per keyframe (0: none)")
    parser.add_argument("--frame-interval", type=int, default=2, help="frames between context frames")
    parser.add_argument("--num-proc", type=int, default=None, help="worker processes for the build")


def _run_build(args: argparse.Namespace) -> int:
    from sportshhi.builder import build_sportshhi_folder

    folder = build_sportshhi_folder(args.data_dir, args.out, num_proc=args.num_proc, clip_len=args.clip_len,
                                    frame_interval=args.frame_interval)
    print(f"wrote {folder}\nload with: datasets.load_dataset({str(folder)!r}, 'hhi')")
    return 0
