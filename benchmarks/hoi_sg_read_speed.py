"""Reading speed and memory of `hoi-bench evaluate hoi_map / vcoco_map` on full-size QPIC prediction files.

Run: ``python benchmarks/hoi_sg_read_speed.py [--anchors-dir ../shared/anchors] [--repeats 3] [--cache DIR]``.

Inputs (generated once, cached): the GT ``test_hico_sg1.json`` (8,515 images) and ``test_vcoco_sg3.json``
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
import sys
import time
from pathlib import Path

import msgspec
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ANCHORS = ROOT.parent / "shared" / "anchors"
DEFAULT_CACHE = ROOT / "benchmarks" / ".cache" / "hoi_sg_read_speed"
CONFIGS = {
    "hico": ("test_hico_sg1.json", "hoi_map", 2.1, 1864),
    "vcoco": ("test_vcoco_sg3.json", "vcoco_map", 0.95, 870),
}


def make_predictions(gt: list[dict], seed: int = 0, hois: int = 100, boxes: int = 200) -> list[dict]:
    """QPIC-style entries: ``boxes - hois`` person boxes, then an object box per HOI; GT HOIs first."""
    rng = np.random.default_rng(seed)
    pairs = sorted({(h["category_id"], g["annotations"][h["object_id"]]["category_id"])
                    for g in gt for h in g["hoi_annotation"] if h["object_id"] >= 0})
    pairs = np.array(pairs)
    people = boxes - hois
    out = []
    for image in gt:
        chosen = pairs[rng.integers(0, len(pairs), hois)]
        xy = rng.uniform(0, 500, (boxes, 2))
        xyxy = np.concatenate([xy, xy + rng.uniform(10, 200, (boxes, 2))], 1)
        labels = np.concatenate([np.ones(people, dtype=np.int64), chosen[:, 1]])
        subjects, scores = rng.integers(0, people, hois), rng.random(hois)
        known = [h for h in image["hoi_annotation"] if h["object_id"] >= 0][:hois]
        for k, h in enumerate(known):
            xyxy[k] = np.array(image["annotations"][h["subject_id"]]["bbox"]) + rng.normal(0, 2, 4)
            xyxy[people + k] = np.array(image["annotations"][h["object_id"]]["bbox"]) + rng.normal(0, 2, 4)
            labels[people + k] = image["annotations"][h["object_id"]]["category_id"]
            chosen[k, 0], subjects[k], scores[k] = h["category_id"], k, 0.5 + 0.5 * scores[k]
        xyxy[:, 2:] = np.maximum(xyxy[:, 2:], xyxy[:, :2])
        out.append({
            "file_name": image["file_name"],
            "predictions": [{"bbox": b, "category_id": c}
                            for b, c in zip(np.round(xyxy, 2).tolist(), labels.tolist())],
            "hoi_prediction": [{"subject_id": s, "object_id": people + k, "category_id": v, "score": p}
                               for k, (s, v, p) in enumerate(zip(subjects.tolist(), chosen[:, 0].tolist(),
                                                                 np.round(scores, 6).tolist()))],
        })
    return out


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


def fresh(command: list[str], env: dict) -> tuple[float, float, float]:
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(command)} failed: {child.stderr.read().decode(errors='replace')}")
    child.stderr.close()
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchors-dir", type=Path, default=DEFAULT_ANCHORS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = parser.parse_args()
    from hoi_sg_dataset.predictions import load_hoi_sets, load_sets

    args.cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "HF_UPDATE_DOWNLOAD_COUNTS": "0"}
    hoi_bench = [sys.executable, "-m", "hoi_bench.cli"]
    inputs = {}
    for name in args.configs:
        gt = args.anchors_dir / "hoi_sg" / CONFIGS[name][0]
        if not gt.is_file():
            raise SystemExit(f"anchor file not found: {gt} (pass --anchors-dir)")
        pred = args.cache / f"{name}_predictions.json"
        if not pred.is_file():
            pred.write_bytes(msgspec.json.encode(make_predictions(json.loads(gt.read_bytes()))))
        inputs[name] = gt, pred
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (figures scale with it)")
    # fresh processes first: a forked child's peak RSS includes the parent's pages, so keep the parent small
    for name, (gt, pred) in inputs.items():
        _, verb, target_s, target_mib = CONFIGS[name]
        columnar = pred.with_suffix(".npz")
        if not columnar.is_file():
            subprocess.run([*hoi_bench, "convert", "hoi-predictions", "--predictions", str(pred), "--out",
                            str(columnar)], env=env, check=True, stdout=subprocess.DEVNULL)
        for source in (pred, columnar):
            command = [*hoi_bench, "evaluate", verb, "--references", str(gt), "--predictions", str(source),
                       "--output", str(args.cache / f"{name}_result{source.suffix}")]
            runs = [fresh(command, env) for _ in range(args.repeats)]
            wall = [s for s, _, _ in runs]
            rss = max(r for _, r, _ in runs)
            cpu = min(c for _, _, c in runs)
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
