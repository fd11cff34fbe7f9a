"""Full-scale Haystack / PSG inputs, and fresh-process `hoi-bench evaluate` runs on them (time and peak RSS).

Run: ``python benchmarks/haystack_end_to_end.py [--cache DIR] [--repeats 3] [--only psg-json,psg-npz,haystack-25k,
haystack-100k]``. Generates (once, cached in ``--cache``, default ``~/.cache/hoi-bench/haystack-benchmark``):

- ``psg``: a ``psg.json`` of 2,177 test images with 4-20 segments each and 1-12 relations, and a PredCls recall
  prediction file in which every ordered pair is scored over 57 columns (no-relation + 56): 341,850 pairs, about
  225 MB of JSON, plus the same predictions as the columnar ``.npz`` (``hoi-bench convert recall-predictions``);
- ``haystack-25k`` / ``haystack-100k``: Haystack annotation files with 25,000 / 100,000 labelled (pair, predicate)
  entries on 2,000 / 8,000 images (about 12 segments each) and an NPY scoring every ordered pair (310k / 1.26M
  rows x 59 columns).

Each config is run as ``hoi-bench evaluate ...`` in a fresh subprocess ``--repeats`` times; the script prints the
minimum and median wall time, the minimum CPU time (user + system: what the wall time is on an idle machine, since
the evaluation is single-threaded) and the peak RSS of the child (from ``os.wait4``), next to the issue's targets
and the official evaluators' figures measured on this machine type (issue 11). Wall times vary with the machine's
load.
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

import numpy as np

NUM_PREDICATES = 56
NUM_OBJECT_CLASSES = 133
# config: (target seconds, target peak RSS MiB, official load + eval seconds, official peak RSS MiB)
TARGETS = {
    "psg-json": (4.0, 646, 39.9, 646),
    "psg-npz": (2.0, 646, 39.9, 646),
    "haystack-25k": (0.45, 314, 13.4, 314),
    "haystack-100k": (1.5, 830, 75.5, 830),
}


def _classes() -> dict[str, list[str]]:
    from haystack_dataset.formats import psg_classes

    return psg_classes()


def _image_record(rng: np.random.Generator, image_id, segments: int) -> dict:
    x1 = rng.uniform(0, 500, segments).round(1)
    y1 = rng.uniform(0, 400, segments).round(1)
    x2 = (x1 + rng.uniform(10, 140, segments)).round(1)
    y2 = (y1 + rng.uniform(10, 240, segments)).round(1)
    categories = rng.integers(0, NUM_OBJECT_CLASSES, segments).tolist()
    return {
        "file_name": f"val2017/{int(image_id):012d}.jpg", "height": 640, "width": 640, "image_id": image_id,
        "pan_seg_file_name": f"panoptic_val2017/{int(image_id):012d}.png",
        "segments_info": [{"id": i + 1, "category_id": c, "iscrowd": 0, "isthing": int(c < 80), "area": 100}
                          for i, c in enumerate(categories)],
        "annotations": [{"bbox": [a, b, c, d], "bbox_mode": 0, "category_id": k}
                        for a, b, c, d, k in zip(x1.tolist(), y1.tolist(), x2.tolist(), y2.tolist(), categories)],
    }


def _pairs(segments: int) -> np.ndarray:
    s, o = np.nonzero(~np.eye(segments, dtype=bool))
    return np.column_stack([s, o])


def make_psg(folder: Path, images: int = 2177, seed: int = 0) -> dict[str, Path]:
    """psg.json + recall JSON + npz (see the module docstring); reused when already there."""
    from haystack_dataset.predictions import read_recall_predictions, write_recall_npz

    files = {"annotations": folder / "psg.json", "json": folder / "psg_predcls.json",
             "npz": folder / "psg_predcls.npz"}
    if all(path.is_file() for path in files.values()):
        return files
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    classes = _classes()
    data, predictions = [], []
    for index in range(images):
        image_id = str(200000 + index)
        segments = int(rng.integers(4, 21))
        record = _image_record(rng, image_id, segments)
        pairs = _pairs(segments)
        chosen = rng.choice(len(pairs), size=int(rng.integers(1, 13)), replace=True)
        record["relations"] = [[int(s), int(o), int(p)] for (s, o), p in
                               zip(pairs[chosen], rng.integers(0, NUM_PREDICATES, len(chosen)))]
        data.append(record)
        logits = rng.normal(size=(len(pairs), NUM_PREDICATES + 1))
        scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        order = np.argsort(-scores[:, 1:].max(axis=1), kind="stable")
        predictions.append({"image_id": image_id, "pairs": pairs[order].tolist(),
                            "predicate_scores": np.round(scores[order], 8).tolist()})
    files["annotations"].write_text(json.dumps({**classes, "data": data,
                                                "test_image_ids": [r["image_id"] for r in data]}))
    with open(files["json"], "w") as out:  # written image by image: the whole text never sits in memory
        out.write("[")
        for index, entry in enumerate(predictions):
            out.write(("," if index else "") + json.dumps(entry, separators=(",", ":")))
        out.write("]")
    write_recall_npz(files["npz"], read_recall_predictions(files["json"]))
    return files


def make_haystack(folder: Path, images: int, entries: int, seed: int = 0) -> dict[str, Path]:
    """Haystack annotation + NPY of every ordered pair (see the module docstring); reused when already there."""
    files = {"annotations": folder / "annotation.json", "npy": folder / "output.npy"}
    if all(path.is_file() for path in files.values()):
        return files
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    classes = _classes()
    per_image = np.bincount(rng.integers(0, images, entries), minlength=images)
    data, blocks = [], []
    for index in range(images):
        segments = int(rng.integers(9, 18))
        record = _image_record(rng, index + 1, segments)
        pairs = _pairs(segments)
        chosen = pairs[rng.integers(0, len(pairs), per_image[index])]
        predicate = np.minimum(rng.zipf(1.6, len(chosen)) - 1, NUM_PREDICATES - 2)   # long tail, never the last
        positive = rng.random(len(chosen)) < 0.3
        triplets = np.column_stack([chosen, predicate]).tolist()
        record["relations"] = [t for t, p in zip(triplets, positive) if p]
        record["neg_relations"] = [t for t, p in zip(triplets, positive) if not p]
        data.append(record)
        logits = rng.normal(size=(len(pairs), NUM_PREDICATES))
        scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        blocks.append(np.column_stack([np.full(len(pairs), index + 1), pairs, scores]))
    files["annotations"].write_text(json.dumps({**classes, "data": data}))
    np.save(files["npy"], np.concatenate(blocks))
    return files


def run_fresh(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one fresh ``command`` process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed: {process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "hoi-bench" / "haystack-benchmark",
                        help="folder for the generated inputs (reused between runs)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=",".join(TARGETS), help="comma-separated configs")
    args = parser.parse_args()
    cli = str(Path(sys.executable).with_name("hoi-bench"))
    configs = {}
    wanted = args.only.split(",")
    if {"psg-json", "psg-npz"} & set(wanted):
        psg = make_psg(args.cache / "psg")
        configs["psg-json"] = ["evaluate", "sg_recall", "--annotations", psg["annotations"], "--predictions",
                               psg["json"]]
        configs["psg-npz"] = ["evaluate", "sg_recall", "--annotations", psg["annotations"], "--predictions",
                              psg["npz"]]
    for name, images, entries in (("haystack-25k", 2000, 25_000), ("haystack-100k", 8000, 100_000)):
        if name in wanted:
            files = make_haystack(args.cache / name, images, entries)
            configs[name] = ["evaluate", "haystack", "--annotations", files["annotations"], "--predictions",
                             files["npy"], "--rank-mode", "official"]
    print(f"{'config':<15}{'min s':>8}{'median s':>10}{'min CPU s':>11}{'target s':>10}{'vs official':>13}"
          f"{'peak RSS MiB':>14}{'target':>8}")
    for name in wanted:
        command = [cli] + [str(a) for a in configs[name]]
        runs = [run_fresh(command) for _ in range(args.repeats)]
        walls = [w for w, _, _ in runs]
        cpu = min(c for _, c, _ in runs)
        rss = max(r for _, _, r in runs)
        target_s, target_rss, official_s, _ = TARGETS[name]
        print(f"{name:<15}{min(walls):>8.2f}{statistics.median(walls):>10.2f}{cpu:>11.2f}{target_s:>10.2f}"
              f"{official_s / min(walls):>12.1f}x{rss:>14.0f}{target_rss:>8}")


if __name__ == "__main__":
    main()
