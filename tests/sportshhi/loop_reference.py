"""Clean-room loop reference of the SportsHHI metric, written from the official ``hhi_eval`` description
(reference notes B.5 and their Corrections block) with plain Python loops and no code shared with
``sportshhi.evaluation``.

Official mode follows the corrected notes: predicted boxes and scores are float32 before any IoU (the IoU of a
float32 detection and a float64 GT box, detection area in float32), a class's detections are ranked with
``np.argsort(float32 scores)[::-1]`` over the keyframes in GT order, and a detection tries its GT in the order
of ``np.argsort(min-IoU row)[::-1]``. Default mode: float64 IoU, ties in input order (earlier first).

Used by the property tests (it must agree with the vectorised metric on random data) and by
``benchmarks/sportshhi_metric_speed.py`` (the speed baseline). Slow on purpose: one detection at a time.
"""

from __future__ import annotations

import math

import numpy as np

EVALUATED = [i for i in range(1, 35) if i not in (1, 4, 7, 12, 20, 30)]


def box_iou(a, b) -> float:
    """IoU of two xyxy boxes in continuous coordinates (no +1)."""
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def voc_ap(flags, num_gt) -> float:
    """All-point VOC AP of TP flags already in ranking order."""
    precisions, recalls, tp = [], [], 0
    for i, flag in enumerate(flags, start=1):
        tp += flag
        precisions.append(tp / i)
        recalls.append(tp / num_gt)
    recalls = [0.0] + recalls + [1.0]
    precisions = [0.0] + precisions + [0.0]
    for i in range(len(precisions) - 2, -1, -1):
        precisions[i] = max(precisions[i], precisions[i + 1])
    return sum((recalls[i] - recalls[i - 1]) * precisions[i] for i in range(1, len(recalls))
               if recalls[i] != recalls[i - 1])


def official_box_iou(detected, gt) -> float:
    """IoU as the released code computes it: detection rounded to float32, its area a float32 product."""
    d = [np.float32(v) for v in detected]
    detected_area = float((d[2] - d[0]) * (d[3] - d[1]))
    d = [float(v) for v in d]
    height = max(0.0, min(d[3], gt[3]) - max(d[1], gt[1]))
    width = max(0.0, min(d[2], gt[2]) - max(d[0], gt[0]))
    inter = height * width
    union = (detected_area + (gt[2] - gt[0]) * (gt[3] - gt[1])) - inter
    return inter / union if union != 0 else math.nan


def _frames(keys, subjects, objects, labels, scores, whitelist, k):
    """{frame: [(score, order, subject, object, label)]}, whitelisted, top-k per frame when k is set."""
    frames = {}
    for i in range(len(keys)):
        if labels[i] in whitelist:
            entry = (scores[i], i, list(subjects[i]), list(objects[i]), labels[i])
            frames.setdefault(keys[i], []).append(entry)
    for entries in frames.values():
        entries.sort(key=lambda e: (-e[0], e[1]))
        if k is not None:
            del entries[k:]
    return frames


def _evaluate(gt, pred, whitelist, threshold, k, official):
    gt_frames = _frames(gt[0], gt[1], gt[2], gt[3], [1.0] * len(gt[0]), whitelist, k if official else None)
    pred_frames = _frames(*pred, whitelist, k)
    gt_count = {c: 0 for c in whitelist}
    for entries in gt_frames.values():
        for entry in entries:
            gt_count[entry[4]] += 1
    iou = official_box_iou if official else box_iou
    detections = {c: [] for c in whitelist}  # class -> [(score, input order, is_tp)], keyframes in GT order
    for key, gt_entries in gt_frames.items():
        preds = pred_frames.get(key, [])
        for cls in sorted({p[4] for p in preds}):
            gts = [g for g in gt_entries if g[4] == cls]
            taken = [False] * len(gts)
            for score, order, subject, obj, _ in [p for p in preds if p[4] == cls]:  # already score-sorted
                subject_iou = [iou(subject, g[2]) for g in gts]
                object_iou = [iou(obj, g[3]) for g in gts]
                row = [math.nan if math.isnan(a) or math.isnan(b) else min(a, b)
                       for a, b in zip(subject_iou, object_iou)]
                if official:
                    ranked = [int(j) for j in np.argsort(np.array(row, dtype=np.float64))[::-1]]
                else:
                    ranked = sorted(range(len(gts)), key=lambda j: (-row[j], j))
                hit = False
                for j in ranked:
                    if not taken[j] and subject_iou[j] >= threshold and object_iou[j] >= threshold:
                        taken[j] = hit = True
                        break
                detections[cls].append((score, order, hit))
    return gt_count, detections


def _ranked_flags(detections, official):
    """TP flags in ranking order: the released ``np.argsort`` of float32 scores, or score then input order."""
    if official:
        scores = np.array([d[0] for d in detections], dtype=np.float32)
        return [detections[int(i)][2] for i in np.argsort(scores)[::-1]]
    return [d[2] for d in sorted(detections, key=lambda d: (-d[0], d[1]))]


def loop_hhi_metrics(gt, pred, *, iou_threshold=None, official=False, whitelist=EVALUATED,
                     ks=(20, 50, 100, 150)):
    """``gt = (keys, subject_boxes, object_boxes, labels)``; ``pred`` adds ``scores`` after ``labels``.

    Returns the same keys as ``sportshhi.evaluation.hhi_metrics``.
    """
    if iou_threshold is None:
        iou_threshold = 0.9 if official else 0.5
    whitelist = sorted(set(whitelist))
    gt_count, detections = _evaluate(gt, pred, whitelist, iou_threshold, None, official)
    ap = {}
    for cls in whitelist:
        ranked = _ranked_flags(detections[cls], official)
        if gt_count[cls] == 0 or (official and not ranked):
            ap[str(cls)] = None
        else:
            ap[str(cls)] = voc_ap(ranked, gt_count[cls]) if ranked else 0.0
    values = [v for v in ap.values() if v is not None]
    result = {"mAP": sum(values) / len(values) if values else None, "ap_per_class": ap}
    for k in ks:
        counts, dets = _evaluate(gt, pred, whitelist, iou_threshold, k, official)
        used = [c for c in whitelist if dets[c]] if official else whitelist
        total = sum(counts[c] for c in used)
        hits = sum(d[2] for c in used for d in dets[c])
        result[f"recall@{k}"] = hits / total if total else None
    return result
