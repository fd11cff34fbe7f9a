"""Test helpers for V-COCO's official role AP: the official files built from a few lines, and a loop reference.

``reference_role_ap`` follows ``../shared/reference/vcoco_role_ap.md`` step by step, one detection at a time as
the official ``vsrl_eval.py`` loops (per image: its detections in file order, ``argsort()[::-1]``, the person
of largest IoU, ``covered`` per image), so the vectorized ``role_ap`` can be checked against it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from hoi_sg_dataset.role_ap import (
    ACTION_ROLE_NAMES,
    ACTION_ROLES,
    ACTIONS,
    ROLES,
    VcocoDetections,
    VcocoGroundTruth,
)

PERSON, BALL = 1, 37
CATEGORIES = [{"id": PERSON, "name": "person"}, {"id": BALL, "name": "sports ball"}]


def vsrl_json(persons: list[dict]) -> list[dict]:
    """A VSRL file: ``persons`` are {"image_id", "ann_id", "labels": {action: [role object ids]}} (0 = none)."""
    out = []
    for action in ACTIONS:
        role_names = ["agent", *ROLES[action]]
        columns: list[list[int]] = [[] for _ in role_names]
        for person in persons:
            roles = person["labels"].get(action)
            ids = [0] * len(role_names) if roles is None else [person["ann_id"], *roles]
            for column, value in zip(columns, ids, strict=True):
                column.append(value)
        out.append(
            {
                "action_name": action,
                "role_name": role_names,
                "image_id": [p["image_id"] for p in persons],
                "ann_id": [p["ann_id"] for p in persons],
                "label": [int(action in p["labels"]) for p in persons],
                "role_object_id": [v for column in columns for v in column],
                "include": [],
            }
        )
    return out


def annotation(ann_id: int, image_id: int, bbox: list[float], category: int = PERSON, **extra) -> dict:
    """A COCO annotation with ``area`` = w * h (``extra``: iscrowd, ignore, area...)."""
    return {
        "id": ann_id,
        "image_id": image_id,
        "category_id": category,
        "bbox": bbox,
        "area": bbox[2] * bbox[3],
        "iscrowd": 0,
        **extra,
    }


def instances_json(annotations: list[dict], sizes: dict[int, tuple[int, int]]) -> dict:
    """A COCO instances file of images ``sizes`` ({id: (width, height)}) and ``annotations``."""
    images = [
        {"id": i, "width": w, "height": h, "file_name": f"COCO_val2014_{i:012d}.jpg"}
        for i, (w, h) in sizes.items()
    ]
    return {"images": images, "annotations": annotations, "categories": CATEGORIES}


def detection(image_id: int, person_box: list, agents: dict | None = None, roles: dict | None = None) -> dict:
    """A detection in the official structure: unnamed agent scores and role lists are null (not ranked)."""
    agents, roles = agents or {}, roles or {}
    out: dict = {"image_id": image_id, "person_box": person_box}
    out.update({f"{a}_agent": agents.get(a) for a in ACTIONS})
    out.update({name: roles.get(name, [None] * 5) for name in ACTION_ROLE_NAMES})
    return out


def write_inputs(
    folder: Path,
    persons: list[dict],
    annotations: list[dict],
    sizes: dict,
    detections: list[dict],
    ids: list[int] | None = None,
) -> dict[str, Path]:
    """The four input files in ``folder``; ``ids`` defaults to the images of ``sizes``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / name for name in ("vsrl.json", "instances.json", "ids.txt", "detections.json")}
    paths["vsrl.json"].write_text(json.dumps(vsrl_json(persons)))
    paths["instances.json"].write_text(json.dumps(instances_json(annotations, sizes)))
    paths["ids.txt"].write_text("".join(f"{i}\n" for i in (ids if ids is not None else sorted(sizes))))
    paths["detections.json"].write_text(json.dumps(detections))
    return paths


def _get_overlap(boxes: np.ndarray, ref_box: np.ndarray) -> np.ndarray:
    ixmin = np.maximum(boxes[:, 0], ref_box[0])
    iymin = np.maximum(boxes[:, 1], ref_box[1])
    ixmax = np.minimum(boxes[:, 2], ref_box[2])
    iymax = np.minimum(boxes[:, 3], ref_box[3])
    iw = np.maximum(ixmax - ixmin + 1.0, 0.0)
    ih = np.maximum(iymax - iymin + 1.0, 0.0)
    inters = iw * ih
    uni = (
        (ref_box[2] - ref_box[0] + 1.0) * (ref_box[3] - ref_box[1] + 1.0)
        + (boxes[:, 2] - boxes[:, 0] + 1.0) * (boxes[:, 3] - boxes[:, 1] + 1.0)
        - inters
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return inters / uni


def _voc_ap(rec: np.ndarray, prec: np.ndarray) -> float:
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(mpre.size - 1, 0, -1):
        mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
    i = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


def _class_ap(
    gt: VcocoGroundTruth,
    det: VcocoDetections,
    scores_all: np.ndarray,
    action: int,
    role: int | None,
    scenario: int,
) -> float:
    tp, fp, sc = [], [], []
    npos = 0
    for i in range(len(gt.image_ids)):
        p0, p1 = gt.person_offsets[i], gt.person_offsets[i + 1]
        boxes, actions = gt.person_boxes[p0:p1], gt.actions[p0:p1]
        ignore = np.any(actions == -1, axis=1)
        npos += int(np.sum(actions[:, action] == 1))
        mine = np.flatnonzero(det.image_index == i)
        scores = scores_all[mine]
        valid = np.where(np.isnan(scores) == False)[0]  # upstream's spelling
        scores, mine = scores[valid], mine[valid]
        covered = np.zeros(len(boxes), dtype=bool)
        for j in scores.argsort()[::-1]:
            d = mine[j]
            overlaps = _get_overlap(boxes, det.person_boxes[d])
            jmax, ovmax = overlaps.argmax(), overlaps.max()
            if ignore[jmax]:
                continue
            ov_role = 1.0
            if role is not None:
                gt_role, predicted = gt.role_boxes[p0 + jmax, role], det.role_boxes[d, role]
                if np.all(gt_role == -1):
                    if scenario == 1:
                        empty = np.all(predicted == 0.0) or np.all(np.isnan(predicted))
                        ov_role = 1.0 if empty else 0.0
                else:
                    ov_role = _get_overlap(gt_role.reshape((1, 4)), predicted)[0]
            sc.append(scores[j])
            if actions[jmax, action] == 1 and ovmax >= 0.5 and ov_role >= 0.5 and not covered[jmax]:
                tp.append(1)
                fp.append(0)
                covered[jmax] = True
            else:
                tp.append(0)
                fp.append(1)
    if npos == 0 or not sc:
        return math.nan
    a_sc = np.array(sc, dtype=np.float32)
    idx = a_sc.argsort()[::-1]
    a_tp = np.cumsum(np.array(tp, dtype=np.float32)[idx])
    a_fp = np.cumsum(np.array(fp, dtype=np.float32)[idx])
    rec = a_tp / float(npos)
    prec = a_tp / np.maximum(a_tp + a_fp, np.finfo(np.float64).eps)
    return float(np.float32(_voc_ap(rec, prec)))


def reference_role_ap(gt: VcocoGroundTruth, det: VcocoDetections) -> dict[str, list[float]]:
    """Role APs per scenario and agent APs from the one-detection-at-a-time loop (NaN where undefined)."""
    out = {"agent": [_class_ap(gt, det, det.agent_scores[:, a], a, None, 1) for a in range(len(ACTIONS))]}
    for scenario in (1, 2):
        out[f"scenario_{scenario}"] = [
            _class_ap(gt, det, det.role_scores[:, r], a, r, scenario) for r, (a, _) in enumerate(ACTION_ROLES)
        ]
    return out


def random_case(rng: np.random.Generator, per_person: int = 4) -> tuple[VcocoGroundTruth, VcocoDetections]:
    """A small random V-COCO case built to hit the corners: boxes on a coarse grid (IoU ties, exactly 0.5),
    identical GT boxes, ignored persons, role boxes -1 / real, scores from a few values (ties, exact 0, NaN),
    predicted role boxes that are the GT object, [0, 0, 0, 0], NaN or half NaN. Up to ``per_person``
    detections per GT person: past 16 per image numpy's argsort is no longer an insertion sort."""
    n_images = int(rng.integers(1, 5))
    grid = np.array([[0, 0, 9, 9], [0, 0, 9, 4], [5, 0, 14, 9], [0, 0, 19, 19], [10, 10, 19, 19]], np.float32)
    counts = rng.integers(1, 4, size=n_images)
    n = int(counts.sum())
    person_boxes = grid[rng.integers(0, len(grid), size=n)]
    actions = rng.integers(0, 2, size=(n, len(ACTIONS))).astype(np.int8)
    actions[rng.random(n) < 0.2] = -1
    objects = grid[rng.integers(0, len(grid), size=(n, len(ACTION_ROLES)))]
    no_role = (rng.random((n, len(ACTION_ROLES))) < 0.4) | (actions[:, [a for a, _ in ACTION_ROLES]] != 1)
    role_boxes = np.where(no_role[..., None], np.float32(-1), objects).astype(np.float32)
    d = int(rng.integers(1, per_person * n + 1))
    image_index = np.sort(rng.integers(0, n_images, size=d))
    rng.shuffle(image_index)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    source = offsets[image_index] + rng.integers(0, 3, size=d) % counts[image_index]
    det_person = np.where(
        (rng.random(d) < 0.8)[:, None], person_boxes[source], grid[rng.integers(0, 5, size=d)]
    )
    values = np.array([0.0, 0.25, 0.5, 0.5, 0.75, 0.9, np.nan], dtype=np.float32)
    agent_scores = values[rng.integers(0, len(values), size=(d, len(ACTIONS)))]
    role_scores = values[rng.integers(0, len(values), size=(d, len(ACTION_ROLES)))]
    kinds = rng.integers(0, 5, size=(d, len(ACTION_ROLES)))
    truth = np.where(role_boxes[source] == -1, grid[0], role_boxes[source])
    det_roles = np.select(
        [kinds[..., None] == 0, kinds[..., None] == 1, kinds[..., None] == 2, kinds[..., None] == 3],
        [
            truth,
            np.zeros_like(truth),
            np.full_like(truth, np.nan),
            np.array([np.nan, 0, np.nan, 0], np.float32),
        ],
        grid[rng.integers(0, len(grid), size=(d, len(ACTION_ROLES)))],
    ).astype(np.float32)
    gt = VcocoGroundTruth(
        np.arange(100, 100 + n_images), offsets.astype(np.int64), person_boxes, actions, role_boxes
    )
    det = VcocoDetections(
        image_index.astype(np.int64),
        np.arange(d),
        det_person.astype(np.float32),
        agent_scores,
        det_roles,
        role_scores,
    )
    return gt, det
