"""Speed of the SportsHHI metric (mAP + Recall@{20,50,100,150}) on validation-sized input vs a loop reference.

Input shaped like the SportsHHI validation set scored by an HHIDet-like model: 2,700 keyframes, 12,000 GT
interactions, 200 predictions per keyframe (ordered pairs of human boxes jittered by about 1% of the frame,
each with a class and a score; so most pairs pass IoU 0.5 but few pass the official 0.9).
Both implementations run in this process on the same arrays, and the script checks that they agree before
printing the times and their ratio (target: at least 20×).
Run: ``python benchmarks/sportshhi_metric_speed.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from pathlib import Path

import numpy as np

from sportshhi.evaluation import EVALUATED_LABEL_IDS, hhi_metrics

ROOT = Path(__file__).resolve().parents[1]


def _loop_reference():
    path = ROOT / "tests" / "sportshhi" / "loop_reference.py"
    spec = importlib.util.spec_from_file_location("loop_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.loop_hhi_metrics


def validation_sized_input(keyframes: int = 2_700, interactions: int = 12_000, per_keyframe: int = 200,
                           seed: int = 0):
    """Synthetic GT and predictions with the sizes of the SportsHHI validation set."""
    rng = np.random.default_rng(seed)
    labels = np.array(EVALUATED_LABEL_IDS)
    keys = [f"v_bench{t // 100:03d}_c001,{t % 100:04d}" for t in range(keyframes)]
    gt_frame = np.sort(np.r_[np.arange(keyframes), rng.integers(0, keyframes, interactions - keyframes)])
    humans = []
    for _ in range(keyframes):
        n = int(rng.integers(5, 9))
        xy = rng.uniform(0.0, 0.85, (n, 2))
        size = rng.uniform([0.04, 0.15], [0.12, 0.35], (n, 2))
        humans.append(np.concatenate([xy, xy + size], 1).clip(0, 1))
    gt = {"keys": [], "subject": [], "object": [], "labels": []}
    for f in gt_frame:
        s, o = rng.choice(len(humans[f]), 2, replace=False)
        gt["keys"].append(keys[f])
        gt["subject"].append(humans[f][s])
        gt["object"].append(humans[f][o])
        gt["labels"].append(int(rng.choice(labels)))
    gt_by_frame = {}
    for i, f in enumerate(gt_frame):
        gt_by_frame.setdefault(int(f), []).append(i)
    pred = {"keys": [], "subject": [], "object": [], "labels": [], "scores": []}
    for f in range(keyframes):
        boxes = humans[f] + rng.normal(0.0, 0.01, humans[f].shape)
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
        pairs = rng.integers(0, len(boxes), (per_keyframe, 2))
        classes = rng.choice(labels, per_keyframe)
        scores = rng.random(per_keyframe) * 0.6
        for j, i in enumerate(gt_by_frame.get(f, [])[:per_keyframe // 4]):
            if rng.random() < 0.7:  # a hit: the GT pair with its class, scored higher on average
                hit = np.flatnonzero(np.abs(humans[f] - gt["subject"][i]).sum(1) == 0)[0]
                obj = np.flatnonzero(np.abs(humans[f] - gt["object"][i]).sum(1) == 0)[0]
                pairs[j] = hit, obj
                classes[j] = gt["labels"][i]
                scores[j] = 0.3 + 0.7 * rng.random()
        pred["keys"] += [keys[f]] * per_keyframe
        pred["subject"].append(boxes[pairs[:, 0]].clip(0, 1))
        pred["object"].append(boxes[pairs[:, 1]].clip(0, 1))
        pred["labels"].append(classes)
        pred["scores"].append(scores)
    gt_arrays = (gt["keys"], np.array(gt["subject"]), np.array(gt["object"]), np.array(gt["labels"]))
    pred_arrays = (pred["keys"], np.concatenate(pred["subject"]), np.concatenate(pred["object"]),
                   np.concatenate(pred["labels"]), np.concatenate(pred["scores"]))
    return gt_arrays, pred_arrays


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of the vectorised metric (best is kept)")
    parser.add_argument("--official", action="store_true", help="time official=True, not the default")
    args = parser.parse_args()
    gt, pred = validation_sized_input()
    print(f"input: {len(set(gt[0])):,} keyframes, {len(gt[0]):,} GT interactions, "
          f"{len(pred[0]):,} predictions")
    loop = _loop_reference()
    started = time.perf_counter()
    expected = loop(gt, pred, official=args.official)
    loop_seconds = time.perf_counter() - started
    fast_seconds = math.inf
    for _ in range(args.repeats):
        started = time.perf_counter()
        result = hhi_metrics(*gt, *pred, official=args.official)
        fast_seconds = min(fast_seconds, time.perf_counter() - started)
    settings = result.pop("settings")
    if not _same(result, expected):
        raise SystemExit("the vectorised metric and the loop reference disagree")
    print(f"mode: {'official' if settings['official'] else 'default'}, IoU >= {settings['iou_threshold']}")
    recalls = "  ".join(f"R@{k} {result[f'recall@{k}']:.4f}" for k in settings["ks"])
    print(f"mAP {result['mAP']:.4f}  {recalls}")
    print(f"loop reference: {loop_seconds:.2f} s")
    print(f"hhi_metrics:    {fast_seconds:.3f} s (best of {args.repeats})")
    print(f"speed-up:       {loop_seconds / fast_seconds:.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
