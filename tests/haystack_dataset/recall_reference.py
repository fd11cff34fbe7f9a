"""Clean-room loop reference of OpenPSG's recall (``sgg_eval.py`` / ``sgg_metrics.py``, bbox mode), per the notes.

One image at a time, one ground-truth relation at a time, as the upstream evaluator is organised: triplets
(subject label, predicate, object label); per GT triplet the predicted triplets with equal labels, then IoU of both
boxes on float32 copies with mmdet's ``bbox_overlaps`` formula; ``reduce(np.union1d, pred_to_gt[:k])`` per k;
no-graph-constraint candidates ordered by the same two numpy calls OpenPSG makes; object scores replaced by ones in
PredCls; images without GT relations or without pairs skipped; mR's per-class lists averaged and summed over all
n predicates (0.0 for an empty list). Written from the reference notes, not from ``haystack_dataset.recall``.
"""

from __future__ import annotations

from functools import reduce

import numpy as np


def _iou_float32(gt_box, boxes) -> np.ndarray:
    gt = np.asarray(gt_box, dtype=np.float32)
    out = []
    for box in np.asarray(boxes, dtype=np.float32).reshape(-1, 4):
        area_gt = (gt[2] - gt[0]) * (gt[3] - gt[1])
        area_box = (box[2] - box[0]) * (box[3] - box[1])
        width = max(min(gt[2], box[2]) - max(gt[0], box[0]), np.float32(0))
        height = max(min(gt[3], box[3]) - max(gt[1], box[1]), np.float32(0))
        overlap = width * height
        union = max(area_gt + area_box - overlap, np.float32(1e-6))
        out.append(overlap / union)
    return np.array(out, dtype=np.float32)


def _pred_to_gt(gt_rels, gt_labels, gt_boxes, pred_rels, pred_labels, pred_boxes, iou):
    pred_to_gt = [[] for _ in range(len(pred_rels))]
    for g, (gs, go, gp) in enumerate(gt_rels):
        for i, (ps, po, pp) in enumerate(pred_rels):
            if (pred_labels[ps], pp, pred_labels[po]) != (gt_labels[gs], gp, gt_labels[go]):
                continue
            if _iou_float32(gt_boxes[gs], [pred_boxes[ps]])[0] >= iou and \
                    _iou_float32(gt_boxes[go], [pred_boxes[po]])[0] >= iou:
                pred_to_gt[i].append(g)
    return pred_to_gt


def reference_recall(images: list[dict], num_predicates: int, ks=(20, 50, 100), iou: float = 0.5) -> dict:
    """``images``: {"gt_rels" (deduplicated), "gt_labels", "gt_boxes", "pairs", "scores" (P, n + 1),
    optional "boxes"/"labels" (SGDet) and "object_scores"}."""
    recall = {k: [] for k in ks}
    free = {k: [] for k in ks}
    per_class = {k: [[] for _ in range(num_predicates)] for k in ks}
    for image in images:
        gt_rels = np.asarray(image["gt_rels"]).reshape(-1, 3)
        pairs = np.asarray(image["pairs"]).reshape(-1, 2)
        if len(gt_rels) == 0 or len(pairs) == 0:
            continue
        scores = np.asarray(image["scores"], dtype=np.float64)
        predcls = image.get("boxes") is None
        boxes = image["gt_boxes"] if predcls else image["boxes"]
        labels = image["gt_labels"] if predcls else image["labels"]
        object_scores = np.ones(len(boxes)) if predcls or image.get("object_scores") is None \
            else np.asarray(image["object_scores"])
        graph_rels = [(int(s), int(o), int(np.argmax(row[1:]))) for (s, o), row in zip(pairs, scores)]
        graph = _pred_to_gt(gt_rels, image["gt_labels"], image["gt_boxes"], graph_rels, labels, boxes, iou)
        overall = object_scores[pairs].prod(1)[:, None] * scores[:, 1:]
        sorted_inds = np.argsort(overall, axis=-1)[:, ::-1]
        sorted_scores = np.sort(overall, axis=-1)[:, ::-1]
        order = np.column_stack(np.unravel_index(np.argsort(-sorted_scores.ravel()), sorted_scores.shape))
        free_rels = [(int(pairs[r][0]), int(pairs[r][1]), int(sorted_inds[r, c])) for r, c in order]
        free_matches = _pred_to_gt(gt_rels, image["gt_labels"], image["gt_boxes"], free_rels, labels, boxes,
                                   iou)[:100]
        for k in ks:
            match = reduce(np.union1d, graph[:k])
            recall[k].append(len(match) / len(gt_rels))
            free[k].append(len(reduce(np.union1d, free_matches[:k])) / len(gt_rels))
            hit = [0] * num_predicates
            count = [0] * num_predicates
            for _, _, p in gt_rels:
                count[p] += 1
            for g in match:
                hit[gt_rels[int(g)][2]] += 1
            for p in range(num_predicates):
                if count[p]:
                    per_class[k][p].append(hit[p] / count[p])
    out = {}
    for k in ks:
        out[f"R@{k}"] = float(np.mean(recall[k])) if recall[k] else None
        sum_recall = 0.0  # OpenPSG's loop: one class after the other
        for values in per_class[k]:
            sum_recall += float(np.mean(values)) if values else 0.0
        out[f"mR@{k}"] = sum_recall / num_predicates
        out[f"ngR@{k}"] = float(np.mean(free[k])) if free[k] else None
    out["images"] = len(recall[ks[0]])
    return out
