"""Clean-room loop reference of the HOI mAP protocols, written from the prose of the upstream evaluators.

Written independently of ``hoi_sg_dataset.evaluation`` from ``shared/reference/hoi_sg.md`` (its Corrections
block, then §3-§4: QPIC ``hico_eval.py`` / ``vcoco_eval.py`` and the ho-rcnn MATLAB rules): plain Python loops
over per-image records in the PPDM/QPIC layout, image by image, prediction by prediction, GT by GT. Slow on purpose; the property
tests check that the vectorized implementation gives exactly the same numbers, and the speed benchmark
measures against it.

GT record: ``{"annotations": [{"bbox", "category_id"}], "hoi_annotation": [{"subject_id", "object_id",
"category_id"}]}``; prediction record: ``{"predictions": [...], "hoi_prediction": [{..., "score"}]}``; the two
lists are aligned by position.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

THESIS = [0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 27, 28]


def iou_qpic(gt: dict, pred: dict) -> float:
    """QPIC ``compute_IOU``: 0 across categories, +1 areas, 0 when the edges touch or do not overlap."""
    if gt["category_id"] != pred["category_id"]:
        return 0
    a, b = gt["bbox"], pred["bbox"]
    area_a = (a[2] - a[0] + 1) * (a[3] - a[1] + 1)
    area_b = (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
    top, bottom = max(a[1], b[1]), min(a[3], b[3])
    left, right = max(a[0], b[0]), min(a[2], b[2])
    if top >= bottom or left >= right:
        return 0
    inter = (bottom - top + 1) * (right - left + 1)
    return inter / (area_a + area_b - inter)


def iou_matlab(gt_box, det_box) -> float:
    """ho-rcnn ``VOCevaldet_bboxpair.m``: iw = min(x2) - max(x1) + 1 must be > 0, no category."""
    iw = min(gt_box[2], det_box[2]) - max(gt_box[0], det_box[0]) + 1
    ih = min(gt_box[3], det_box[3]) - max(gt_box[1], det_box[1]) + 1
    if iw <= 0 or ih <= 0:
        return 0
    union = (
        (det_box[2] - det_box[0] + 1) * (det_box[3] - det_box[1] + 1)
        + (gt_box[2] - gt_box[0] + 1) * (gt_box[3] - gt_box[1] + 1)
        - iw * ih
    )
    return iw * ih / union


def iou_matlab_single(gt_box, det_box) -> float:
    """``iou_matlab`` as MATLAB evaluates it when the detection is single and the GT double: every operation with
    a single operand is single (the double converted first), the GT's own area stays double until it meets the
    detection's in the union."""
    f = np.float32
    d = [f(v) for v in det_box]
    g = [f(v) for v in gt_box]
    iw = (min(d[2], g[2]) - max(d[0], g[0])) + f(1)
    ih = (min(d[3], g[3]) - max(d[1], g[1])) + f(1)
    if iw <= 0 or ih <= 0:
        return 0
    area_gt = f((gt_box[2] - gt_box[0] + 1) * (gt_box[3] - gt_box[1] + 1))
    union = (d[2] - d[0] + f(1)) * (d[3] - d[1] + f(1)) + area_gt - iw * ih
    return float(iw * ih / union)


def voc_ap_11(rec, prec, thresholds) -> float:
    ap = 0.0
    for t in thresholds:
        p = 0 if np.sum(rec >= t) == 0 else np.max(prec[rec >= t])
        ap = ap + p / 11.0
    return ap


def _top(hois: list[dict], top_k):
    ranked = sorted(hois, key=lambda h: h["score"], reverse=True)
    return ranked if top_k is None else ranked[:top_k]


def _greedy(gt_record, pred_record, top_k, *, vcoco: bool):
    """Yield (prediction, is_tp) in processing order for one image (QPIC matching, on GT boxes held as float32
    as QPIC's data loaders hold them; predictions as given)."""
    gt_boxes = [dict(b, bbox=[float(np.float32(v)) for v in b["bbox"]]) for b in gt_record["annotations"]]
    pred_boxes = pred_record["predictions"]
    gt_hois = gt_record["hoi_annotation"]
    preds = _top(pred_record["hoi_prediction"], top_k)
    if not gt_boxes:
        # hoi_sg.md Corrections: QPIC's HICO evaluator skips every prediction of such an image (neither TP nor
        # FP); its V-COCO evaluator counts them as FPs.
        if vcoco:
            for p in preds:
                yield p, False
        return
    matches: dict[int, dict[int, float]] = {}
    for j, pb in enumerate(pred_boxes):
        for i, gb in enumerate(gt_boxes):
            overlap = iou_qpic(gb, pb)
            if overlap >= 0.5:
                matches.setdefault(j, {})[i] = overlap
    used = [False] * len(gt_hois)
    for p in preds:
        best, best_gt, found = 0, None, False
        sub = matches.get(p["subject_id"])
        obj = matches.get(p["object_id"]) if p["object_id"] >= 0 else None
        if sub is not None:
            for g in gt_hois:
                if g["category_id"] != p["category_id"] or g["subject_id"] not in sub:
                    continue
                if vcoco and g["object_id"] == -1:
                    o = sub[g["subject_id"]]
                elif obj is not None and g["object_id"] in obj:
                    o = min(sub[g["subject_id"]], obj[g["object_id"]])
                else:
                    continue
                found = True
                if o > best:
                    best, best_gt = o, g
        if found:
            first_equal = next(
                k
                for k, g in enumerate(gt_hois)
                if (g["subject_id"], g["object_id"], g["category_id"])
                == (best_gt["subject_id"], best_gt["object_id"], best_gt["category_id"])
            )
        if found and not used[first_equal]:
            used[first_equal] = True
            yield p, True
        else:
            yield p, False


def qpic_hico(
    gts: list[dict], preds: list[dict], train: list[dict] | None = None, top_k: int | None = 100
) -> dict:
    """QPIC hico_eval.py numbers: mAP, rare/non-rare (None when empty), mean max recall, AP per triplet."""
    gt_triplets, sum_gts = [], defaultdict(int)
    for record in gts:
        boxes = record["annotations"]
        for h in record["hoi_annotation"]:
            t = (
                boxes[h["subject_id"]]["category_id"],
                boxes[h["object_id"]]["category_id"],
                h["category_id"],
            )
            if t not in gt_triplets:
                gt_triplets.append(t)
            sum_gts[t] += 1
    tp, score = defaultdict(list), defaultdict(list)
    for gt_record, pred_record in zip(gts, preds, strict=True):
        boxes = pred_record["predictions"]
        for p, hit in _greedy(gt_record, pred_record, top_k, vcoco=False):
            t = (
                boxes[p["subject_id"]]["category_id"],
                boxes[p["object_id"]]["category_id"],
                p["category_id"],
            )
            if t not in gt_triplets:
                continue
            tp[t].append(1 if hit else 0)
            score[t].append(p["score"])
    counts = None
    if train is not None:
        counts = defaultdict(int)
        for record in train:
            boxes = record["annotations"]
            for h in record["hoi_annotation"]:
                counts[
                    (
                        boxes[h["subject_id"]]["category_id"],
                        boxes[h["object_id"]]["category_id"],
                        h["category_id"],
                    )
                ] += 1
    ap, max_recall, rare, non_rare = {}, {}, {}, {}
    for t in gt_triplets:
        if not tp[t]:
            ap[t], max_recall[t] = 0, 0
        else:
            order = np.argsort(-np.array(score[t]))
            hits = np.array(tp[t])[order]
            tps, fps = np.cumsum(hits), np.cumsum(1 - hits)
            rec, prec = tps / sum_gts[t], tps / (fps + tps)
            ap[t] = voc_ap_11(rec, prec, np.arange(0.0, 1.1, 0.1))
            max_recall[t] = np.amax(rec)
        if counts is not None and t in counts:
            (rare if counts[t] < 10 else non_rare)[t] = ap[t]
    return {
        "mAP": float(np.mean(list(ap.values()))) if ap else None,
        "mAP_rare": float(np.mean(list(rare.values()))) if rare else None,
        "mAP_non_rare": float(np.mean(list(non_rare.values()))) if non_rare else None,
        "mean_max_recall": float(np.mean(list(max_recall.values()))) if max_recall else None,
        "ap_per_triplet": {"_".join(map(str, t)): float(v) for t, v in ap.items()},
    }


def qpic_vcoco(gts: list[dict], preds: list[dict], top_k: int | None = 100) -> dict:
    """QPIC vcoco_eval.py numbers: AP per verb, mAP_all over verbs with GT, mAP_thesis (absent verbs 0)."""
    sum_gts = defaultdict(int)
    for record in gts:
        for h in record["hoi_annotation"]:
            sum_gts[h["category_id"]] += 1
    tp, score = defaultdict(list), defaultdict(list)
    for gt_record, pred_record in zip(gts, preds, strict=True):
        for p, hit in _greedy(gt_record, pred_record, top_k, vcoco=True):
            tp[p["category_id"]].append(1 if hit else 0)
            score[p["category_id"]].append(p["score"])
    ap = defaultdict(lambda: 0)
    for verb in sorted(sum_gts):
        if not tp[verb]:
            ap[verb] = 0
            continue
        order = np.argsort(-np.array(score[verb]))
        hits = np.array(tp[verb])[order]
        tps, fps = np.cumsum(hits), np.cumsum(1 - hits)
        ap[verb] = voc_ap_11(tps / sum_gts[verb], tps / (fps + tps), np.arange(0.0, 1.1, 0.1))
    m_all = float(np.mean(list(ap.values()))) if ap else None
    per_verb = {str(v): float(a) for v, a in ap.items()}
    thesis = float(np.mean([ap[v] for v in THESIS]))
    return {"mAP_all": m_all, "mAP_thesis": thesis, "ap_per_verb": per_verb}


def ho_rcnn(
    gts: list[dict],
    preds: list[dict],
    hoi_classes: list[tuple[int, int]],
    train: list[dict] | None = None,
    known_object: bool = False,
    single: bool = False,
) -> dict:
    """Official MATLAB rules, class by class; ``hoi_classes``: (verb, object category) in HOI-id order;
    ``single``: the detections are single precision (a single-precision ``.mat`` cache, boxes already + 1)."""
    iou_matlab_ = iou_matlab_single if single else iou_matlab
    thresholds = [0.0, 0.1, 0.2, 0.1 * 3, 0.4, 0.5, 1 - 0.1 * 4, 1 - 0.1 * 3, 1 - 0.1 * 2, 1 - 0.1, 1.0]
    aps, recalls, per_class, rare, non_rare = [], [], {}, [], []
    train_counts = defaultdict(int)
    for record in train or []:
        for h in record["hoi_annotation"]:
            train_counts[(h["category_id"], record["annotations"][h["object_id"]]["category_id"])] += 1
    for verb, obj in hoi_classes:
        detections, npos, gt_pairs = [], 0, []
        for image, (gt_record, pred_record) in enumerate(zip(gts, preds, strict=True)):
            boxes = gt_record["annotations"]
            pairs = [
                (boxes[h["subject_id"]]["bbox"], boxes[h["object_id"]]["bbox"])
                for h in gt_record["hoi_annotation"]
                if h["category_id"] == verb and boxes[h["object_id"]]["category_id"] == obj
            ]
            gt_pairs.append(pairs)
            npos += len(pairs)
            objects = {boxes[h["object_id"]]["category_id"] for h in gt_record["hoi_annotation"]}
            if known_object and obj not in objects:
                continue
            pboxes = pred_record["predictions"]
            for p in pred_record["hoi_prediction"]:
                if p["category_id"] == verb and pboxes[p["object_id"]]["category_id"] == obj:
                    detections.append(
                        (image, pboxes[p["subject_id"]]["bbox"], pboxes[p["object_id"]]["bbox"], p["score"])
                    )
        order = sorted(range(len(detections)), key=lambda k: -detections[k][3])  # stable, like MATLAB sort
        detected = [[False] * len(pairs) for pairs in gt_pairs]
        hits = []
        for k in order:
            image, hbox, obox, _ = detections[k]
            best, best_j = -np.inf, None
            for j, (gh, go) in enumerate(gt_pairs[image]):
                if iou_matlab_(gh, hbox) > 0 and iou_matlab_(go, obox) > 0:
                    o = min(iou_matlab_(gh, hbox), iou_matlab_(go, obox))
                    if o > best:
                        best, best_j = o, j
            if best >= 0.5 and not detected[image][best_j]:
                detected[image][best_j] = True
                hits.append(1)
            else:
                hits.append(0)
        if hits:
            hits = np.array(hits)
            tps, fps = np.cumsum(hits), np.cumsum(1 - hits)
            with np.errstate(invalid="ignore"):
                rec, prec = tps / npos, tps / (fps + tps)  # npos 0: rec = 0/0 = NaN (hoi_sg.md Corrections)
            ap, recall = voc_ap_11(rec, prec, thresholds), float(rec[-1])
        else:
            ap, recall = 0.0, 0.0
        aps.append(ap)
        recalls.append(recall)
        per_class[f"1_{obj}_{verb}"] = float(ap)
        if train is not None:
            (rare if train_counts[(verb, obj)] < 10 else non_rare).append(ap)
    return {
        "mAP": float(np.mean(aps)),
        "mAP_rare": float(np.mean(rare)) if rare else None,
        "mAP_non_rare": float(np.mean(non_rare)) if non_rare else None,
        "mean_max_recall": float(np.mean(recalls)),
        "ap_per_triplet": per_class,
    }
