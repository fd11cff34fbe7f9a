"""Speed of the HOI mAP array API against the clean-room loop reference, and of the evaluate-module route.

HICO scale: the largest SG test file (``test_hico_sg1.json``, 8,515 images) as GT and 100 predicted triplets
per image (the GT HOIs on jittered boxes, plus random pairs and verbs, random scores). Prints seconds and
ratios measured in this run, and checks that every route gives the same numbers. Targets: array API >= 20x
faster than the loop reference; evaluate module (fast route: ``HoiSet`` arrays as keyword arguments) <= 3x the
array API.

    python benchmarks/hoi_sg_map_speed.py [--references test_hico_sg1.json] [--per-image 100]
    [--feature-route]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GT = ROOT.parent / "shared" / "anchors" / "hoi_sg" / "test_hico_sg1.json"


def load_reference_module():
    path = ROOT / "tests" / "hoi_sg_dataset" / "reference_hoi_map.py"
    spec = importlib.util.spec_from_file_location("reference_hoi_map", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic_predictions(records, per_image: int, seed: int = 0) -> list[dict]:
    """PPDM/QPIC prediction entries: GT HOIs on jittered boxes, then random pairs up to ``per_image``."""
    rng = np.random.default_rng(seed)
    verbs = sorted({h.category_id for r in records for h in r.hoi_annotation})
    entries = []
    for record in records:
        boxes = record.boxes + rng.normal(0, 4, size=record.boxes.shape)
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1)
        labels = record.box_labels.tolist()
        hois = [(h.subject_id, h.object_id, h.category_id) for h in record.hoi_annotation][:per_image]
        n = len(labels)
        while len(hois) < per_image:
            hois.append((int(rng.integers(n)), int(rng.integers(n)), int(rng.choice(verbs))))
        scores = rng.random(len(hois))
        entries.append(
            {
                "file_name": record.file_name,
                "predictions": [
                    {"bbox": box.tolist(), "category_id": label}
                    for box, label in zip(boxes, labels, strict=True)
                ],
                "hoi_prediction": [
                    {"subject_id": s, "object_id": o, "category_id": v, "score": float(p)}
                    for (s, o, v), p in zip(hois, scores, strict=True)
                ],
            }
        )
    return entries


def timed(function, repeat: int = 1):
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--references", type=Path, default=DEFAULT_GT)
    parser.add_argument("--per-image", type=int, default=100)
    parser.add_argument(
        "--feature-route",
        action="store_true",
        help="also time evaluate with per-image features (Arrow round trip; slow)",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
    os.environ.setdefault("HF_UPDATE_DOWNLOAD_COUNTS", "0")

    import evaluate

    from hoi_bench import metric_path
    from hoi_sg_dataset.evaluation import hoi_map
    from hoi_sg_dataset.formats import read_annotations
    from hoi_sg_dataset.predictions import parse_predictions, prediction_set, reference_set

    reference = load_reference_module()
    records = read_annotations(args.references, "hico")
    entries = synthetic_predictions(records, args.per_image)
    gt_json = [
        {
            "annotations": [{"bbox": b.bbox, "category_id": b.category_id} for b in r.annotations],
            "hoi_annotation": [
                {"subject_id": h.subject_id, "object_id": h.object_id, "category_id": h.category_id}
                for h in r.hoi_annotation
            ],
        }
        for r in records
    ]
    print(
        f"GT {args.references.name}: {len(records)} images, "
        f"{sum(len(g['hoi_annotation']) for g in gt_json)} HOIs; "
        f"predictions: {sum(len(e['hoi_prediction']) for e in entries)} triplets"
    )

    t_convert, (gt, pred) = timed(
        lambda: (reference_set(records), prediction_set(records, parse_predictions(entries, "hico")))
    )
    t_loop, expected = timed(lambda: reference.qpic_hico(gt_json, entries))
    t_array, result = timed(lambda: hoi_map(gt, pred), repeat=5)
    metric = evaluate.load(metric_path("hoi_map"))
    rows = list(range(gt.num_images))
    t_module, from_module = timed(
        lambda: metric.compute(predictions=rows, references=rows, prediction_set=pred, reference_set=gt),
        repeat=5,
    )
    for key in ("mAP", "mean_max_recall", "ap_per_triplet"):
        assert result[key] == expected[key] == from_module[key], key
    print(f"mAP {result['mAP']:.6f} (identical through loop reference, array API and evaluate module)")
    print(f"{'route':<44} {'seconds':>8} {'ratio':>10}")
    print(f"{'loop reference (tests/.../reference_hoi_map)':<44} {t_loop:8.3f} {'1.0x':>10}")
    print(
        f"{'array API hoi_map(HoiSet, HoiSet)':<44} {t_array:8.3f} {t_loop / t_array:9.1f}x  faster "
        "(target >= 20x)"
    )
    print(
        f"{'evaluate module, HoiSet kwargs':<44} {t_module:8.3f} {t_module / t_array:9.2f}x  of array API "
        "(target <= 3x)"
    )
    print(f"{'(records -> HoiSet conversion, once)':<44} {t_convert:8.3f}")
    if args.feature_route:

        def images(hoi_set, scores):
            out = []
            for i in range(hoi_set.num_images):
                b, h = slice(*hoi_set.box_offsets[i : i + 2]), slice(*hoi_set.hoi_offsets[i : i + 2])
                image = {
                    "boxes": hoi_set.boxes[b].tolist(),
                    "box_labels": hoi_set.box_labels[b].tolist(),
                    "hois": hoi_set.hois[h].tolist(),
                }
                if scores:
                    image["scores"] = hoi_set.scores[h].tolist()
                out.append(image)
            return out

        t_features, from_features = timed(
            lambda: metric.compute(predictions=images(pred, True), references=images(gt, False))
        )
        assert from_features["mAP"] == result["mAP"]
        print(
            f"{'evaluate module, per-image features':<44} {t_features:8.3f} "
            f"{t_features / t_array:9.2f}x  of array API"
        )


if __name__ == "__main__":
    main()
