"""The vectorized HOI mAP equals the clean-room loop reference on random GT / prediction sets.

Boxes come from a small integer grid and scores mostly from a handful of values, so the examples are full of
the cases where evaluators disagree: score ties, duplicate GT HOIs, exact-threshold IoUs, one-pixel touches,
predictions with the wrong category, images without GT boxes that still have predictions, images without
predictions, triplets absent from the GT, HOI classes with detections but no GT (ho-rcnn recall NaN). GT
coordinates are sometimes moved by less than a float32 step (7.0000002 is 7 in float32, as QPIC loads GT), which
makes IoUs exactly 0.5 only in float32, and sometimes inverts a box by a hair.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoi_bench.input_warnings import InputWarning
from hoi_sg_dataset.evaluation import HoiSet, hoi_map, kept_rows, rank_predictions, vcoco_map
from hoi_sg_dataset.predictions import hoi_map_files
from hoi_sg_dataset.vocabulary import hico_hoi_classes
from tests.hoi_sg_dataset import reference_hoi_map as reference

# person, bicycle, cup; verbs carry (9), hold (37), sit_on (88): (88, cup) is none of the 600 HICO classes.
LABELS = (1, 2, 47)
VERBS = (9, 37, 88)
SCORES = (0.1, 0.5, 0.5, 0.9, 0.25)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@st.composite
def box(draw, near=None):
    """A box on a small grid (zero width allowed), or ``near`` moved by at most one pixel per edge."""
    if near is not None:
        shift = draw(st.lists(st.sampled_from([0, 0, 0, -1, 1]), min_size=4, max_size=4))
        x1, y1 = near[0] + shift[0], near[1] + shift[1]
        return [x1, y1, max(x1, near[2] + shift[2]), max(y1, near[3] + shift[3])]
    x1, y1 = draw(st.integers(0, 10)), draw(st.integers(0, 10))
    return [x1, y1, x1 + draw(st.integers(0, 6)), y1 + draw(st.integers(0, 6))]


@st.composite
def hairy_box(draw):
    """A grid box whose coordinates are sometimes off the grid by less than (or about) one float32 step."""
    hairs = st.sampled_from([0, 0, 0, 0, 2e-7, -2e-7, 3e-7, -1e-7])
    return [v + draw(hairs) for v in draw(box())]


@st.composite
def image(draw, no_object: bool):
    """One (GT record, prediction record) pair in the PPDM/QPIC layout; predictions are mostly near the GT."""
    gt_boxes = [
        {"bbox": draw(hairy_box()), "category_id": draw(st.sampled_from(LABELS))}
        for _ in range(draw(st.integers(0, 4)))
    ]
    low = -1 if no_object else 0
    gt_hois = []
    if gt_boxes:
        for _ in range(draw(st.integers(0, 4))):
            gt_hois.append(
                {
                    "subject_id": draw(st.integers(0, len(gt_boxes) - 1)),
                    "object_id": draw(st.integers(low, len(gt_boxes) - 1)),
                    "category_id": draw(st.sampled_from(VERBS)),
                }
            )
        gt_hois += draw(st.lists(st.sampled_from(gt_hois), max_size=2)) if gt_hois else []
    pred_boxes, copies = [], {}
    for k, gt_box in enumerate(gt_boxes):
        for _ in range(draw(st.integers(0, 2))):
            copies.setdefault(k, []).append(len(pred_boxes))
            label = gt_box["category_id"] if draw(st.integers(0, 4)) else draw(st.sampled_from(LABELS))
            pred_boxes.append({"bbox": draw(box(gt_box["bbox"])), "category_id": label})
    for _ in range(draw(st.integers(0, 2))):
        pred_boxes.append({"bbox": draw(box()), "category_id": draw(st.sampled_from(LABELS))})
    few_values = st.sampled_from(SCORES)
    score = draw(st.sampled_from([few_values, few_values, st.one_of(few_values, st.floats(0, 1))]))
    pred_hois = []
    for g in gt_hois:
        for _ in range(draw(st.integers(0, 2))):
            if g["subject_id"] in copies and (g["object_id"] in copies or g["object_id"] == -1):
                obj = -1 if g["object_id"] == -1 else draw(st.sampled_from(copies[g["object_id"]]))
                if no_object and draw(st.booleans()):
                    obj = draw(st.integers(-1, len(pred_boxes) - 1))
                verb = g["category_id"] if draw(st.integers(0, 3)) else draw(st.sampled_from(VERBS))
                pred_hois.append(
                    {
                        "subject_id": draw(st.sampled_from(copies[g["subject_id"]])),
                        "object_id": obj,
                        "category_id": verb,
                        "score": draw(score),
                    }
                )
    if pred_boxes:
        for _ in range(draw(st.integers(0, 3))):
            pred_hois.append(
                {
                    "subject_id": draw(st.integers(0, len(pred_boxes) - 1)),
                    "object_id": draw(st.integers(low, len(pred_boxes) - 1)),
                    "category_id": draw(st.sampled_from(VERBS)),
                    "score": draw(score),
                }
            )
    pred_hois = draw(st.permutations(pred_hois))
    if not draw(st.integers(0, 4)):
        # the GT of this image loses its boxes, its predictions stay (QPIC HICO skips them, V-COCO counts FPs)
        gt_boxes, gt_hois = [], []
    return (
        {"annotations": gt_boxes, "hoi_annotation": gt_hois},
        {"predictions": pred_boxes, "hoi_prediction": pred_hois},
    )


def image_lists(no_object: bool = False):
    return st.lists(image(no_object), min_size=0, max_size=5)


def as_set(records: list[dict], predictions: bool) -> HoiSet:
    boxes_key, hois_key = (
        ("predictions", "hoi_prediction") if predictions else ("annotations", "hoi_annotation")
    )
    return HoiSet.from_images(
        boxes=[[b["bbox"] for b in r[boxes_key]] for r in records],
        box_labels=[[b["category_id"] for b in r[boxes_key]] for r in records],
        hois=[[[h["subject_id"], h["object_id"], h["category_id"]] for h in r[hois_key]] for r in records],
        scores=[[h["score"] for h in r[hois_key]] for r in records] if predictions else None,
    )


def same_numbers(ours: dict, theirs: dict) -> None:
    for key, value in theirs.items():
        both_nan = isinstance(value, float) and np.isnan(value) and np.isnan(ours[key])
        assert both_nan or ours[key] == value, key


@pytest.mark.slow
@settings(max_examples=120, **SETTINGS)
@given(images=image_lists(), train=image_lists(), top_k=st.sampled_from([None, 1, 3, 100]))
def test_qpic_hico_equals_loop_reference(images, train, top_k):
    gts, preds = [g for g, _ in images], [p for _, p in images]
    train_gts = [g for g, _ in train] * 4
    expected = reference.qpic_hico(gts, preds, train=train_gts, top_k=top_k)
    result = hoi_map(
        as_set(gts, False), as_set(preds, True), train_references=as_set(train_gts, False), top_k=top_k
    )
    same_numbers(result, expected)


@pytest.mark.slow
@settings(max_examples=120, **SETTINGS)
@given(images=image_lists(no_object=True), top_k=st.sampled_from([None, 2, 100]))
def test_qpic_vcoco_equals_loop_reference(images, top_k):
    gts, preds = [g for g, _ in images], [p for _, p in images]
    expected = reference.qpic_vcoco(gts, preds, top_k=top_k)
    result = vcoco_map(as_set(gts, False), as_set(preds, True), top_k=top_k)
    same_numbers(result, expected)


@settings(max_examples=40, **SETTINGS)
@given(images=image_lists(), train=image_lists(), known_object=st.booleans())
def test_ho_rcnn_equals_loop_reference(images, train, known_object):
    gts, preds = [g for g, _ in images], [p for _, p in images]
    train_gts = [g for g, _ in train] * 5
    classes = [(c.verb_id, c.object_id) for c in hico_hoi_classes()]
    expected = reference.ho_rcnn(gts, preds, classes, train=train_gts, known_object=known_object)
    result = hoi_map(
        as_set(gts, False),
        as_set(preds, True),
        protocol="ho-rcnn",
        train_references=as_set(train_gts, False),
        known_object=known_object,
    )
    same_numbers(result, expected)


@settings(max_examples=60, **SETTINGS)
@given(images=image_lists())
def test_permuting_images_changes_nothing_without_ties(images):
    """With distinct scores the result cannot depend on image order (guards the offset bookkeeping)."""
    gts, preds = [g for g, _ in images], [p for _, p in images]
    counter = iter(np.linspace(0.01, 0.99, 1 + sum(len(p["hoi_prediction"]) for p in preds)))
    for p in preds:
        for h in p["hoi_prediction"]:
            h["score"] = float(next(counter))
    forward = hoi_map(as_set(gts, False), as_set(preds, True))
    backward = hoi_map(as_set(gts[::-1], False), as_set(preds[::-1], True))
    assert forward["ap_per_triplet"].keys() == backward["ap_per_triplet"].keys()
    for key, value in forward["ap_per_triplet"].items():
        assert value == backward["ap_per_triplet"][key]


@settings(max_examples=60, **SETTINGS)
@given(images=image_lists(), top_k=st.sampled_from([None, 1, 2, 4]))
def test_kept_rows_is_the_set_rank_predictions_keeps(images, top_k):
    pred = as_set([p for _, p in images], True)
    assert kept_rows(pred, top_k).tolist() == sorted(rank_predictions(pred, top_k).tolist())


@settings(max_examples=25, **SETTINGS)
@given(images=image_lists(), known_object=st.booleans())
def test_single_precision_mat_cache_equals_the_single_precision_loop_reference(tmp_path_factory, images,
                                                                                known_object):
    """The same random detections written as a single-precision ``.mat`` cache (0-based, as exporters write it)
    and scored by ``hoi_map_files``: equal to the loop reference with MATLAB's single-precision arithmetic."""
    scipy_io = pytest.importorskip("scipy.io", reason="the MATLAB layout needs scipy (hoi-bench[matlab])")
    classes = [(c.verb_id, c.object_id) for c in hico_hoi_classes()]
    class_of = {pair: k for k, pair in enumerate(classes)}
    gts = [dict(g, file_name=f"HICO_test2015_{j + 1:08d}.jpg") for j, (g, _) in enumerate(images)]
    gts = [dict(g, hoi_annotation=[h for h in g["hoi_annotation"] if h["object_id"] >= 0]) for g in gts]
    cells = np.empty((len(classes), max(len(images), 1)), dtype=object)
    cells.fill(np.zeros((0, 0)))
    single_preds = []
    for j, (_, pred) in enumerate(images):
        boxes, rows, hois = pred["predictions"], {}, []
        for h in pred["hoi_prediction"]:
            c = class_of.get((h["category_id"], boxes[h["object_id"]]["category_id"]))
            if c is None or h["object_id"] < 0:
                continue
            zero_based = np.float32([*boxes[h["subject_id"]]["bbox"], *boxes[h["object_id"]]["bbox"]]) - np.float32(1)
            rows.setdefault(c, []).append([*zero_based, np.float32(h["score"])])
            one_based = (zero_based + np.float32(1)).tolist()  # what MATLAB holds after det_bb + 1, in single
            hois.append((one_based, c, float(np.float32(h["score"]))))
        for c, matrix in rows.items():
            cells[c, j] = np.array(matrix, dtype=np.float32)
        single_preds.append({
            "predictions": [b for box, c, _ in hois for b in ({"bbox": box[:4], "category_id": 1},
                                                              {"bbox": box[4:], "category_id": classes[c][1]})],
            "hoi_prediction": [{"subject_id": 2 * k, "object_id": 2 * k + 1, "category_id": classes[c][0],
                                "score": s} for k, (_, c, s) in enumerate(hois)]})
    folder = tmp_path_factory.mktemp("single")
    scipy_io.savemat(folder / "detections.mat", {"all_boxes": cells})
    (folder / "gt.json").write_text(json.dumps(gts))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        result = hoi_map_files(folder / "gt.json", folder / "detections.mat", protocol="ho-rcnn",
                               known_object=known_object)
    expected = reference.ho_rcnn(gts, single_preds, classes, known_object=known_object, single=True)
    same_numbers(result, expected)
