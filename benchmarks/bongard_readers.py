"""Reading Bongard-HOI episode files at full size: the typed (msgspec) route vs ``json`` plus Python checks.

Writes four synthetic test files of 3,500 episodes each (14 images per episode, the size of the official test
split, about 53 MB), then prints the CPU time of ``read_episode_file`` (records for build, stats, show), of
``count_episodes`` (what ``evaluate bongard`` needs from the references) and of the former route
(``parse_episodes(read_json(...))``), and the wall time and peak RSS of a fresh ``hoi-bench evaluate bongard``
on 28,000 query predictions against them.
Run: ``python benchmarks/bongard_readers.py [--episodes 3500] [--cache DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = ROOT / "benchmarks" / ".cache" / "bongard"
TEST_SPLITS = ("test_seen_obj_seen_act", "test_seen_obj_unseen_act", "test_unseen_obj_seen_act",
               "test_unseen_obj_unseen_act")


def _image(number: int, action: str) -> dict:
    return {"im_path": f"./hico_20160224_det/images/test2015/HICO_test2015_{number:08d}.jpg",
            "crop_bbox": [12, 30, 480 + number % 50, 400], "sub_bbox": [3, 4, 200, 350],
            "obj_bbox": [150, 90, 300, 330], "sub_class": "person", "obj_class": "orange",
            "act_class": action, "obj_id": 33, "sub_id": 1, "act_id": 17 if action == "eat" else -1}


def write_inputs(folder: Path, episodes: int) -> tuple[Path, Path]:
    """Four test episode files and a prediction file scoring every query (written once)."""
    references, predictions = folder / "references", folder / "predictions.json"
    if predictions.is_file():
        return references, predictions
    references.mkdir(parents=True, exist_ok=True)
    records = []
    for split in TEST_SPLITS:
        data = [[[_image(7 * e + i, "eat") for i in range(7)], [_image(7 * e + i, "peel") for i in range(7)],
                 "eat++orange"] for e in range(episodes)]
        (references / f"bongard_hoi_{split}.json").write_text(json.dumps(data))
        records += [{"split": split, "episode": e, "query": q,
                     "prediction": [0.6, 0.4] if e % 3 else "negative"}
                    for e in range(episodes) for q in ("positive", "negative")]
    predictions.write_text(json.dumps(records))
    return references, predictions


def _cpu(step) -> float:
    started = time.process_time()
    step()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3_500, help="episodes per test file")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    from bongard_hoi.formats import count_episodes, parse_episodes, read_episode_file
    from hoi_bench.files import read_json

    references, predictions = write_inputs(args.cache / f"{args.episodes}", args.episodes)
    files = sorted(references.glob("bongard_hoi_*.json"))
    size = sum(f.stat().st_size for f in files) / 2**20
    print(f"input: {len(files)} episode files, {args.episodes:,} episodes each ({size:.0f} MiB)")
    typed = sum(_cpu(lambda f=f: read_episode_file(f)) for f in files)
    counted = sum(_cpu(lambda f=f: count_episodes(f)) for f in files)
    former = sum(_cpu(lambda f=f: parse_episodes(read_json(f, what="episode file"), f)) for f in files)
    print(f"read_episode_file (typed): {typed:6.2f} s CPU")
    print(f"count_episodes:            {counted:6.2f} s CPU")
    print(f"json + Python checks:      {former:6.2f} s CPU ({former / typed:.1f}x / {former / counted:.1f}x)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "hoi_bench.cli", "evaluate", "bongard", "--predictions",
               str(predictions), "--references", str(references)]
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.stderr.close()
    print(f"fresh `hoi-bench evaluate bongard` ({4 * 2 * args.episodes:,} queries): {seconds:.2f} s wall, "
          f"{usage.ru_utime + usage.ru_stime:.2f} s CPU, peak RSS {usage.ru_maxrss / 1024:.0f} MiB, "
          f"exit {os.waitstatus_to_exitcode(status)} (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
