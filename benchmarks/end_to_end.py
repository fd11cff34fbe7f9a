"""What a researcher waits for: `hoi-bench evaluate ...` in a fresh process, files in, JSON report out.

Run: ``python benchmarks/end_to_end.py [--configs hico vcoco psg psg_columnar haystack_25k haystack_100k hhi]
[--repeats 3] [--cache benchmarks/.cache/end_to_end] [--anchors-dir ../shared/anchors]``.

Generates each input at the full benchmark's size once (cached in ``--cache``, keyed by the generator's
version), then runs the CLI as a fresh subprocess ``--repeats`` times per config and prints wall time (min and
median), the child's peak RSS, and the ratio to the official evaluator's figures measured for issue #11 on this
machine type (unmodified upstream code, numpy 2.4; they vary about ±12 % between days). Next to them it prints a
simple reference measured in the same run: a fresh ``python`` that only reads the same prediction file with the
standard library (``json.load``, ``np.load``, ``csv.reader``), which shows how much of the time is the machine.

| config | input |
|---|---|
| hico | GT ``test_hico_sg1.json`` (8,515 images, the anchor); QPIC predictions, 100 HOIs + 200 boxes per image |
| vcoco | GT ``test_vcoco_sg3.json`` (3,888 images, the anchor); same density |
| psg | PSG-format annotations, 2,177 test images of 4-20 segments; PredCls recall JSON scoring every ordered pair x 57 |
| psg_columnar | the same predictions converted once with ``hoi-bench convert recall-predictions`` |
| haystack_25k / haystack_100k | Haystack annotations with 25,000 / 100,000 entries on 2,000 / 8,000 images; NPY of every ordered pair |
| hhi | SportsHHI GT CSV, 2,679 keyframes and 12,126 rows; 535,800 prediction rows (200 per keyframe); ``--official`` |
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fresh_process import HOI_BENCH, ROOT, heavy_imports, offline_env, run_fresh

DEFAULT_ANCHORS = ROOT.parent / "shared" / "anchors"
DEFAULT_CACHE = ROOT / "benchmarks" / ".cache" / "end_to_end"
GENERATOR_VERSION = 1


@dataclass(frozen=True)
class Official:
    """The official evaluator's load + eval on the same input, and the issue's target for hoi-bench."""

    seconds: float
    rss_mib: float
    target_seconds: float


OFFICIAL = {
    "hico": Official(21.0, 1864, 2.1),
    "vcoco": Official(9.5, 870, 0.95),
    "psg": Official(39.9, 646, 4.0),
    "psg_columnar": Official(39.9, 646, 2.0),
    "haystack_25k": Official(13.4, 314, 0.45),
    "haystack_100k": Official(75.5, 830, 1.5),
    "hhi": Official(36.4, 1011, 1.2),
}


@dataclass
class Case:
    """One config: the command to time and the stdlib-only read of its prediction file (the simple reference)."""

    command: list[str]
    reference: str


# ---------------------------------------------------------------- inputs


def _write_json(path: Path, payload) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, separators=(",", ":"))
    os.replace(temporary, path)


def hoi_predictions(gt: list[dict], rng: np.random.Generator, hois: int = 100, boxes: int = 200) -> list[dict]:
    """QPIC-style predictions: half person boxes, half object boxes; the GT's own HOIs come first, jittered."""
    triplets = sorted({(h["category_id"], gt_image["annotations"][h["object_id"]]["category_id"])
                       for gt_image in gt for h in gt_image["hoi_annotation"] if h["object_id"] >= 0})
    triplets = np.array(triplets)
    people = boxes - hois
    out = []
    for image in gt:
        anchor = np.array([a["bbox"] for a in image["annotations"]], dtype=np.float64).reshape(-1, 4)
        chosen = triplets[rng.integers(0, len(triplets), hois)]
        centre = rng.uniform(0, 500, (boxes, 2))
        size = rng.uniform(10, 200, (boxes, 2))
        xyxy = np.concatenate([centre, centre + size], 1)
        categories = np.concatenate([np.ones(people, dtype=np.int64), chosen[:, 1]])
        subjects = rng.integers(0, people, hois)
        objects = people + np.arange(hois)
        scores = rng.random(hois)
        for k, hoi in enumerate(image["hoi_annotation"][:hois]):
            if hoi["object_id"] < 0:
                continue
            subject_box = anchor[hoi["subject_id"]]
            object_box = anchor[hoi["object_id"]]
            xyxy[k] = subject_box + rng.normal(0, 2, 4)
            xyxy[people + k] = object_box + rng.normal(0, 2, 4)
            categories[people + k] = image["annotations"][hoi["object_id"]]["category_id"]
            chosen[k, 0] = hoi["category_id"]
            subjects[k] = k
            scores[k] = 0.5 + 0.5 * scores[k]
        xyxy[:, 2:] = np.maximum(xyxy[:, 2:], xyxy[:, :2])
        xyxy = np.round(xyxy, 2).tolist()
        out.append({
            "file_name": image["file_name"],
            "predictions": [{"bbox": b, "category_id": int(c)} for b, c in zip(xyxy, categories.tolist())],
            "hoi_prediction": [{"subject_id": int(s), "object_id": int(o), "category_id": int(v), "score": float(p)}
                               for s, o, v, p in zip(subjects, objects, chosen[:, 0], np.round(scores, 6))],
        })
    return out


def make_hoi(cache: Path, anchors: Path, config: str) -> Case:
    gt_name, verb = {"hico": ("test_hico_sg1.json", "hoi_map"), "vcoco": ("test_vcoco_sg3.json", "vcoco_map")}[config]
    references = anchors / "hoi_sg" / gt_name
    if not references.is_file():
        raise SystemExit(f"anchor file not found: {references} (pass --anchors-dir)")
    predictions = cache / f"{config}_predictions.json"
    if not predictions.is_file():
        gt = json.loads(references.read_text())
        _write_json(predictions, hoi_predictions(gt, np.random.default_rng(0)))
    return Case([*HOI_BENCH, "evaluate", verb, "--references", str(references), "--predictions", str(predictions)],
                f"import json; json.load(open({str(predictions)!r}, 'rb'))")


def _psg_classes() -> dict[str, list[str]]:
    return json.loads((ROOT / "haystack_dataset" / "data" / "psg_classes.json").read_text())


def _scene_graph_images(rng: np.random.Generator, images: int, segments: tuple[int, int], entries: int,
                        negatives: bool) -> tuple[list[dict], list[int]]:
    """PSG-format image records; ``entries`` relations (and, for Haystack, negative relations) in total."""
    classes = _psg_classes()
    num_objects = len(classes["thing_classes"]) + len(classes["stuff_classes"])
    num_predicates = len(classes["predicate_classes"])
    counts = rng.integers(segments[0], segments[1] + 1, images)
    per_image = rng.multinomial(entries, np.full(images, 1 / images))
    data = []
    for number, (n, k) in enumerate(zip(counts.tolist(), per_image.tolist())):
        category = rng.integers(0, num_objects, n)
        xy = rng.uniform(0, 400, (n, 2))
        box = np.round(np.concatenate([xy, xy + rng.uniform(5, 200, (n, 2))], 1), 1).tolist()
        pairs = rng.integers(0, n, (k, 2))
        pairs[:, 1] = (pairs[:, 0] + rng.integers(1, n, k)) % n
        triplets = np.column_stack([pairs, rng.integers(0, num_predicates, k)]).tolist()
        split = (k * 2) // 5 if negatives else k
        record = {
            "file_name": f"val2017/{number:012d}.jpg", "height": 600, "width": 600, "image_id": str(number),
            "pan_seg_file_name": f"panoptic_val2017/{number:012d}.png",
            "segments_info": [{"id": i + 1, "category_id": int(c), "iscrowd": 0, "isthing": int(c < 80), "area": 100}
                              for i, c in enumerate(category.tolist())],
            "annotations": [{"bbox": b, "bbox_mode": 0, "category_id": int(c)} for b, c in zip(box, category.tolist())],
            "relations": triplets[:split],
        }
        if negatives:
            record["neg_relations"] = triplets[split:]
        data.append(record)
    return data, counts.tolist()


def make_psg(cache: Path, columnar: bool) -> Case:
    annotations = cache / "psg_annotations.json"
    predictions = cache / "psg_predictions.json"
    if not (annotations.is_file() and predictions.is_file()):
        rng = np.random.default_rng(1)
        data, counts = _scene_graph_images(rng, 2_177, (4, 20), 2_177 * 6, negatives=False)
        classes = _psg_classes()
        _write_json(annotations, {**classes, "data": data, "test_image_ids": [r["image_id"] for r in data]})
        columns = len(classes["predicate_classes"]) + 1
        entries = []
        for record, n in zip(data, counts):
            s, o = np.nonzero(~np.eye(n, dtype=bool))
            scores = rng.dirichlet(np.ones(columns), len(s))
            order = np.argsort(-scores[:, 1:].max(1), kind="stable")
            entries.append({"image_id": record["image_id"], "pairs": np.column_stack([s, o])[order].tolist(),
                            "predicate_scores": np.round(scores[order], 7).tolist()})
        _write_json(predictions, entries)
    if not columnar:
        return Case([*HOI_BENCH, "evaluate", "sg_recall", "--annotations", str(annotations),
                     "--predictions", str(predictions)],
                    f"import json; json.load(open({str(predictions)!r}, 'rb'))")
    converted = cache / "psg_predictions.npz"
    if not converted.is_file():
        subprocess.run([*HOI_BENCH, "convert", "recall-predictions", "--predictions", str(predictions),
                        "--out", str(converted)], check=True)
    return Case([*HOI_BENCH, "evaluate", "sg_recall", "--annotations", str(annotations),
                 "--predictions", str(converted)],
                f"import numpy as np; f = np.load({str(converted)!r}); [f[k] for k in f.files]")


def make_haystack(cache: Path, entries: int, images: int) -> Case:
    stem = f"haystack_{entries // 1000}k"
    annotations = cache / f"{stem}_annotations.json"
    predictions = cache / f"{stem}_predictions.npy"
    if not (annotations.is_file() and predictions.is_file()):
        rng = np.random.default_rng(2)
        data, counts = _scene_graph_images(rng, images, (8, 18), entries, negatives=True)
        _write_json(annotations, {**_psg_classes(), "data": data})
        num_predicates = len(_psg_classes()["predicate_classes"])
        rows = []
        for number, n in enumerate(counts):
            s, o = np.nonzero(~np.eye(n, dtype=bool))
            head = np.column_stack([np.full(len(s), number), s, o]).astype(np.float64)
            rows.append(np.concatenate([head, rng.random((len(s), num_predicates))], 1))
        np.save(predictions, np.concatenate(rows))
    return Case([*HOI_BENCH, "evaluate", "haystack", "--annotations", str(annotations),
                 "--predictions", str(predictions)],
                f"import numpy as np; np.load({str(predictions)!r})")


def make_hhi(cache: Path) -> Case:
    references = cache / "hhi_references.csv"
    predictions = cache / "hhi_predictions.csv"
    action_list = ROOT / "sportshhi" / "data" / "sample_action_list.pbtxt"
    if not (references.is_file() and predictions.is_file()):
        rng = np.random.default_rng(3)
        keyframes, interactions, per_keyframe = 2_679, 12_126, 200
        labels = np.arange(1, 35)
        videos = [f"v_bench{t // 100:03d}_c{t % 7:03d}" for t in range(keyframes)]
        frame = np.sort(np.r_[np.arange(keyframes), rng.integers(0, keyframes, interactions - keyframes)])
        people = [np.clip(np.concatenate([xy, xy + rng.uniform([0.04, 0.15], [0.12, 0.35], (len(xy), 2))], 1), 0, 1)
                  for xy in (rng.uniform(0, 0.85, (int(n), 2)) for n in rng.integers(5, 9, keyframes))]
        gt_rows, by_frame, used = [], {}, set()
        for f in frame.tolist():
            s, o = rng.choice(len(people[f]), 2, replace=False)
            while (f, s, o) in used:   # one label per ordered pair, as the official training loader requires
                s, o = rng.choice(len(people[f]), 2, replace=False)
            used.add((f, s, o))
            label = int(rng.choice(labels))
            by_frame.setdefault(f, []).append((people[f][s], people[f][o], label))
            gt_rows.append([videos[f], (f % 100) * 5, *np.round(people[f][s], 4), *np.round(people[f][o], 4),
                            label, int(s), int(o)])
        pred_rows = []
        for f in range(keyframes):
            boxes = np.clip(people[f] + rng.normal(0, 0.01, people[f].shape), 0, 1)
            boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
            pairs = rng.integers(0, len(boxes), (per_keyframe, 2))
            classes = rng.choice(labels, per_keyframe)
            scores = rng.random(per_keyframe)
            for j, (subject, obj, label) in enumerate(by_frame.get(f, [])):
                pairs[j] = np.abs(people[f] - subject).sum(1).argmin(), np.abs(people[f] - obj).sum(1).argmin()
                classes[j] = label
            for (s, o), label, score in zip(pairs.tolist(), classes.tolist(), np.round(scores, 6).tolist()):
                pred_rows.append([videos[f], f % 100, *np.round(boxes[s], 4), *np.round(boxes[o], 4), label, score])
        for path, rows in ((references, gt_rows), (predictions, pred_rows)):
            with open(path, "w", newline="", encoding="utf-8") as handle:
                csv.writer(handle).writerows(rows)
    return Case([*HOI_BENCH, "evaluate", "hhi", "--references", str(references), "--predictions", str(predictions),
                 "--action-list", str(action_list), "--official"],
                f"import csv; list(csv.reader(open({str(predictions)!r}, newline='')))")


# ---------------------------------------------------------------- measuring


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=list(OFFICIAL), choices=list(OFFICIAL))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--anchors-dir", type=Path, default=DEFAULT_ANCHORS)
    args = parser.parse_args()
    cache = args.cache / f"v{GENERATOR_VERSION}"
    cache.mkdir(parents=True, exist_ok=True)
    makers: dict[str, Callable[[], Case]] = {
        "hico": lambda: make_hoi(cache, args.anchors_dir, "hico"),
        "vcoco": lambda: make_hoi(cache, args.anchors_dir, "vcoco"),
        "psg": lambda: make_psg(cache, columnar=False),
        "psg_columnar": lambda: make_psg(cache, columnar=True),
        "haystack_25k": lambda: make_haystack(cache, 25_000, 2_000),
        "haystack_100k": lambda: make_haystack(cache, 100_000, 8_000),
        "hhi": lambda: make_hhi(cache),
    }
    env = offline_env()
    print(f"fresh-process `hoi-bench evaluate` (best of {args.repeats}); inputs cached in {cache}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs when started (wall times grow with it)")
    print(f"{'config':<14} {'min s':>7} {'median s':>9} {'CPU s':>6} {'target s':>9} {'official s':>11} "
          f"{'x official':>11} {'peak MiB':>9} {'official MiB':>13} {'stdlib read s':>14}  verdict")
    for name in args.configs:
        case = makers[name]()
        runs = [run_fresh(case.command + ["--output", str(cache / f"{name}_result.json")], env)
                for _ in range(args.repeats)]
        failed = [run for run in runs if run.exit_code]
        if failed:
            sys.stderr.write(failed[0].stderr)
        reference = min(run_fresh([sys.executable, "-c", case.reference], env).wall for _ in range(args.repeats))
        official = OFFICIAL[name]
        fastest = min(run.wall for run in runs)
        rss = max(run.rss_mib for run in runs)
        verdict = (f"FAILED (exit {failed[0].exit_code})" if failed else
                   "met" if fastest <= official.target_seconds and rss <= official.rss_mib else
                   "time NOT met" if rss <= official.rss_mib else
                   "memory NOT met" if fastest <= official.target_seconds else "time and memory NOT met")
        print(f"{name:<14} {fastest:7.2f} {statistics.median(run.wall for run in runs):9.2f} "
              f"{min(run.cpu for run in runs):6.2f} {official.target_seconds:9.2f} {official.seconds:11.1f} "
              f"{official.seconds / fastest:10.1f}x {rss:9.0f} {official.rss_mib:13.0f} {reference:14.2f}  {verdict}",
              flush=True)
    heavy = {name: heavy_imports(makers[name]().command, env) for name in args.configs}
    print("heavy modules imported: " + "; ".join(f"{name}: {', '.join(mods) or 'none'}" for name, mods in heavy.items()))


if __name__ == "__main__":
    main()
