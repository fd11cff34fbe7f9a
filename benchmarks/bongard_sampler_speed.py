"""How long the Bongard-HOI episode sampler takes for 1,000 episodes from the largest HICO-DET-SG / V-COCO-SG file.

Target (issue 5): under 10 s for reading the file and sampling 1,000 episodes. The reference measured in the
same run is a bare ``json.load`` of the same file, so the ratios travel across machines.

    .venv/bin/python benchmarks/bongard_sampler_speed.py [--anchors ../shared/anchors/hoi_sg] [--episodes 1000]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from bongard_hoi.episodes import instances_from_annotations, sample_episodes
from hoi_bench.report import format_table
from hoi_sg_dataset.formats import read_annotations

TARGET_SECONDS = 10.0


def _timed(function):
    started = time.perf_counter()
    value = function()
    return value, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--anchors", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "anchors" / "hoi_sg")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    largest = max(args.anchors.glob("*.json"), key=lambda p: p.stat().st_size)
    _, reference = _timed(lambda: json.loads(largest.read_bytes()))
    records, read = _timed(lambda: read_annotations(largest))
    instances, convert = _timed(lambda: instances_from_annotations(records))
    rows = []
    for role in ("train", "test"):
        sampled, sample = _timed(lambda role=role: sample_episodes(instances, args.episodes, role=role,
                                                                   seed=args.seed))
        total = read + convert + sample
        rows.append([role, len(sampled), f"{sample:.2f}", f"{total:.2f}", f"{total / reference:.1f}x",
                     "yes" if total < TARGET_SECONDS else "NO"])
    print(f"file: {largest.name} ({largest.stat().st_size / 1e6:.1f} MB, {len(records)} images, "
          f"{len(instances)} HOI instances)")
    print(f"reference json.load: {reference:.3f} s; validated read {read:.2f} s; instances {convert:.2f} s\n")
    print(format_table(["role (tau)", "episodes", "sample s", "read+sample s", "vs json.load",
                        f"< {TARGET_SECONDS:.0f} s"], rows))


if __name__ == "__main__":
    main()
