"""Reading speed and memory of `hoi-bench evaluate hoi_map / vcoco_map` on full-size QPIC prediction files.

Run: ``python benchmarks/hoi_sg_read_speed.py [--anchors-dir ../shared/anchors] [--repeats 3] [--cache DIR]``.

Inputs (generated once by `end_to_end.py` and cached with its inputs): the GT ``test_hico_sg1.json`` (8,515 images) and ``test_vcoco_sg3.json``
(3,888) of the anchors, and for each a QPIC-style prediction file with 100 HOIs and 200 boxes per image (the
GT's own HOIs first, jittered; the rest random). Printed, in one run so the figures share the machine's load:

- in-process reading of the prediction + GT files, best of ``--repeats`` (CPU seconds): the standard library's
  ``json.loads`` alone (a floor for any reader building Python objects), the Python validators
  (``predictions.load_sets``), the typed readers (``predictions.load_hoi_sets``), and the design the typed
  readers did not take: ``msgspec.Raw`` spans of the box lists joined and parsed by ``np.fromstring``;
- fresh-process ``hoi-bench evaluate`` wall time (min and median of ``--repeats``), CPU time (user + sys,
  less sensitive to a shared machine's load) and peak RSS, from the JSON file and from its columnar ``.npz``
  (``hoi-bench convert hoi-predictions``), against the issue-11 targets (HICO <= 2.1 s and 1,864 MiB,
  V-COCO <= 0.95 s and 870 MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

import msgspec
import numpy as np
from end_to_end import DEFAULT_ANCHORS, DEFAULT_CACHE, GENERATOR_VERSION, make_hoi
from fresh_process import HOI_BENCH, offline_env, run_fresh

CONFIGS = {
    "hico": ("hoi_map", 2.1, 1864),
    "vcoco": ("vcoco_map", 0.95, 870),
}


class _RawEntry(msgspec.Struct, gc=False):
    file_name: str
    predictions: msgspec.Raw
    hoi_prediction: msgspec.Raw


def raw_spans_parsed_by_numpy(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The rejected design, numbers only: raw JSON spans of each list joined, keys and brackets blanked, one
    numpy parse per list (it would still need a check that every object has exactly the expected keys)."""
    entries = msgspec.json.decode(data, type=list[_RawEntry])
    blank = bytes.maketrans(b"[]{},:", b"      ")
    boxes = b"".join(bytes(e.predictions) for e in entries)
    boxes = boxes.replace(b'"bbox"', b"").replace(b'"category_id"', b"").translate(blank)
    hois = b"".join(bytes(e.hoi_prediction) for e in entries)
    for key in (b'"subject_id"', b'"object_id"', b'"category_id"', b'"score"'):
        hois = hois.replace(key, b"")
    return (np.fromstring(boxes, dtype=np.float64, sep=" ").reshape(-1, 5),
            np.fromstring(hois.translate(blank), dtype=np.float64, sep=" ").reshape(-1, 4))


def cpu_best(repeats: int, function) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchors-dir", type=Path, default=DEFAULT_ANCHORS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = parser.parse_args()
    from hoi_sg_dataset.predictions import load_hoi_sets, load_sets

    cache = args.cache / f"v{GENERATOR_VERSION}"
    cache.mkdir(parents=True, exist_ok=True)
    env = offline_env()
    inputs = {}
    for name in args.configs:
        command = make_hoi(cache, args.anchors_dir, name).command
        inputs[name] = tuple(Path(command[command.index(flag) + 1]) for flag in ("--references", "--predictions"))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (figures scale with it)")
    # fresh processes first: a forked child's peak RSS includes the parent's pages, so keep the parent small
    for name, (gt, pred) in inputs.items():
        verb, target_s, target_mib = CONFIGS[name]
        columnar = pred.with_suffix(".npz")
        if not columnar.is_file():
            subprocess.run([*HOI_BENCH, "convert", "hoi-predictions", "--predictions", str(pred), "--out",
                            str(columnar)], env=env, check=True, stdout=subprocess.DEVNULL)
        for source in (pred, columnar):
            command = [*HOI_BENCH, "evaluate", verb, "--references", str(gt), "--predictions", str(source),
                       "--output", str(cache / f"{name}_result{source.suffix}")]
            runs = [run_fresh(command, env) for _ in range(args.repeats)]
            if any(run.exit_code for run in runs):
                raise SystemExit(f"{' '.join(command)} failed: {next(r.stderr for r in runs if r.exit_code)}")
            wall = [run.wall for run in runs]
            rss = max(run.rss_mib for run in runs)
            cpu = min(run.cpu for run in runs)
            verdict = "met" if min(wall) <= target_s and rss <= target_mib else "NOT met"
            print(f"{name} {source.suffix}: fresh `hoi-bench evaluate {verb}`: wall min {min(wall):.2f} s, "
                  f"median {statistics.median(wall):.2f} s (target {target_s} s), CPU (user + sys) min "
                  f"{cpu:.2f} s, peak RSS {rss:.0f} MiB (target {target_mib}): {verdict}")
    for name, (gt, pred) in inputs.items():
        dataset = "hico" if name == "hico" else "vcoco"
        data = pred.read_bytes()
        print(f"\n{name}: {gt.name} + {pred.name} ({len(data) / 1e6:.0f} MB), CPU s, best of {args.repeats}")
        floor = cpu_best(args.repeats, lambda data=data: json.loads(data))
        rows = [
            ("json.loads of the predictions (floor)", floor),
            ("Python validators (load_sets)",
             cpu_best(args.repeats, lambda gt=gt, pred=pred, d=dataset: load_sets(gt, pred, d))),
            ("typed readers (load_hoi_sets)",
             cpu_best(args.repeats, lambda gt=gt, pred=pred, d=dataset: load_hoi_sets(gt, pred, d))),
            ("rejected: msgspec.Raw + np.fromstring, numbers only",
             cpu_best(args.repeats, lambda data=data: raw_spans_parsed_by_numpy(data))),
        ]
        for label, seconds in rows:
            print(f"  {label:<52} {seconds:6.2f}  ({seconds / floor:4.2f} x json.loads)")


if __name__ == "__main__":
    main()
