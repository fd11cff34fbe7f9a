"""R@k / mR@k / ngR@k with OpenPSG's semantics: matching rules, averaging, skipped images, bad inputs, monotonicity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_dataset.predictions import RecallPrediction, parse_recall_predictions
from haystack_dataset.recall import RecallGroundTruth, psg_recall, sg_recall
from hoi_bench.errors import PredictionError
from hoi_bench.input_warnings import InputWarning

N = 3  # predicates


def truth(key="1", boxes=((0, 0, 10, 10), (20, 0, 30, 10), (40, 0, 50, 10)), labels=(0, 0, 1),
          relations=((0, 2, 1),)):
    return RecallGroundTruth.from_relations(key, boxes, labels, relations)


def scores_for(*predicates, width=N + 1):
    """One score row per pair whose best non-background predicate is the given one (background column high)."""
    rows = np.full((len(predicates), width), 0.05)
    rows[:, 0] = 0.9
    for row, predicate in zip(rows, predicates):
        row[predicate + 1] = 0.5
    return rows


def test_graph_constraint_takes_the_argmax_over_non_background_predicates_in_given_order():
    gt = {"1": truth(relations=((0, 2, 1), (1, 2, 2)))}
    prediction = RecallPrediction("1", np.array([[1, 2], [0, 2]]), scores_for(2, 1))
    result = sg_recall(gt, [prediction], N, ks=(1, 2))
    assert result["R@1"] == 0.5 and result["R@2"] == 1.0
    assert result["mR@1"] == pytest.approx((0 + 0 + 1) / 3)   # predicate 0 never occurs: counts 0


def test_pair_with_two_gt_predicates_scores_one_hit_under_graph_constraint_but_two_without():
    gt = {"1": truth(relations=((0, 2, 1), (0, 2, 2)))}
    rows = np.array([[0.1, 0.0, 0.6, 0.5]])
    result = sg_recall(gt, [RecallPrediction("1", np.array([[0, 2]]), rows)], N, ks=(2,))
    assert result["R@2"] == 0.5 and result["ngR@2"] == 1.0


def test_predcls_pair_can_match_the_relation_of_an_overlapping_same_class_pair():
    boxes = ((0, 0, 10, 10), (0, 0, 10, 11), (40, 0, 50, 10))         # segments 0 and 1: same class, IoU 10/11
    gt = {"1": truth(boxes=boxes, relations=((0, 2, 1),))}
    result = sg_recall(gt, [RecallPrediction("1", np.array([[1, 2]]), scores_for(1))], N, ks=(1,))
    assert result["R@1"] == 1.0


def test_duplicate_gt_triplets_are_removed_and_images_are_macro_averaged():
    gt = {"1": truth(relations=((0, 2, 1), (0, 2, 1), (1, 2, 0))), "2": truth("2", relations=((0, 1, 2),))}
    predictions = [RecallPrediction("1", np.array([[0, 2]]), scores_for(1)),
                   RecallPrediction("2", np.array([[1, 0]]), scores_for(2))]
    result = sg_recall(gt, predictions, N, ks=(1,))
    assert result["R@1"] == pytest.approx((1 / 2 + 0) / 2) and result["images"] == 2


def test_images_without_relations_or_pairs_are_skipped_and_unknown_ids_are_ignored_and_counted():
    gt = {"1": truth()}
    empty = RecallPrediction("1", np.zeros((0, 2), dtype=int), np.zeros((0, N + 1)))
    no_relations = RecallPrediction("5", np.array([[0, 1]]), scores_for(0))
    result = sg_recall(gt, [empty, no_relations], N, annotated=["1", "5"], ks=(1,))
    assert result["images"] == 0 and np.isnan(result["R@1"]) and result["warnings"] == []
    hit = RecallPrediction("1", np.array([[0, 2]]), scores_for(1))
    strangers = [RecallPrediction(key, np.array([[0, 1]]), scores_for(0)) for key in ("nope", "later")]
    with pytest.warns(InputWarning, match="2 prediction entries are for images the annotations do not have"):
        result = sg_recall(gt, [strangers[0], hit, strangers[1]], N, ks=(1,))
    assert result["images"] == 1 and result["R@1"] == 1.0
    assert len(result["warnings"]) == 1 and "'nope'" in result["warnings"][0]


def test_bad_prediction_rows_are_errors():
    gt = {"1": truth()}
    with pytest.raises(PredictionError, match=r"score row of the wrong width: expected 4 columns.*found 3"):
        sg_recall(gt, [RecallPrediction("1", np.array([[0, 2]]), scores_for(1, width=N))], N)
    with pytest.raises(PredictionError, match=r"pair 0 \[0, 7\] indexes past the 3 objects"):
        sg_recall(gt, [RecallPrediction("1", np.array([[0, 7]]), scores_for(1))], N)
    with pytest.raises(PredictionError, match="NaN"):
        parse_recall_predictions([{"image_id": 1, "pairs": [[0, 1]], "predicate_scores": [[0.1, float("nan")]]}])


def test_sgdet_boxes_are_matched_by_iou_and_label():
    gt = {"1": truth()}
    prediction = RecallPrediction("1", np.array([[0, 1]]), scores_for(1),
                                  boxes=np.array([[1, 0, 11, 10], [40, 0, 50, 10]], dtype=float),
                                  labels=np.array([0, 1]))
    assert sg_recall(gt, [prediction], N, ks=(1,))["R@1"] == 1.0
    far = RecallPrediction("1", np.array([[0, 1]]), scores_for(1),
                           boxes=np.array([[6, 0, 16, 10], [40, 0, 50, 10]], dtype=float), labels=np.array([0, 1]))
    assert sg_recall(gt, [far], N, ks=(1,))["R@1"] == 0.0               # IoU 4/16 < 0.5


@st.composite
def recall_image(draw, image: int) -> tuple[RecallGroundTruth, RecallPrediction]:
    """One image: 2-6 boxes of 8x8 px, up to 4 GT relations, every ordered pair predicted in a drawn order with
    drawn scores (background column first)."""
    count = draw(st.integers(2, 6))
    corners = np.array(draw(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=count,
                                     max_size=count)))
    boxes = np.column_stack([corners, corners + 8])
    labels = np.array(draw(st.lists(st.integers(0, 2), min_size=count, max_size=count)))
    s, o = np.nonzero(~np.eye(count, dtype=bool))
    chosen = draw(st.lists(st.integers(0, len(s) - 1), min_size=1, max_size=4, unique=True))
    predicates = draw(st.lists(st.integers(0, N - 1), min_size=len(chosen), max_size=len(chosen)))
    relations = np.column_stack([s[chosen], o[chosen], predicates])
    order = np.array(draw(st.permutations(range(len(s)))))
    scores = np.array(draw(st.lists(st.floats(0, 1), min_size=len(s) * (N + 1), max_size=len(s) * (N + 1))))
    return (RecallGroundTruth.from_relations(image, boxes, labels, relations),
            RecallPrediction(image, np.column_stack([s, o])[order], scores.reshape(len(s), N + 1)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**16), min_size=1, max_size=3, unique=True).flatmap(
    lambda ids: st.tuples(*[recall_image(image) for image in ids])))
def test_recall_is_monotone_in_k(images):
    gt = {str(prediction.image_id): truth for truth, prediction in images}
    predictions = [prediction for _, prediction in images]
    result = sg_recall(gt, predictions, N, ks=(1, 2, 5, 20, 50, 100))
    for prefix in ("R", "mR", "ngR"):
        values = [result[f"{prefix}@{k}"] for k in (1, 2, 5, 20, 50, 100)]
        assert values == sorted(values) and 0.0 <= values[0] and values[-1] <= 1.0


def test_frequency_prior_recall_on_the_sample_psg_test_split(sample):
    from haystack_dataset.formats import psg_classes, read_annotation
    from haystack_dataset.frequency_prior import FrequencyPrior

    annotation = read_annotation(sample.psg_file)
    rows = [{"image_id": i.key, "segments": [{"category": int(c)} for c in i.categories],
             "relations": [{"subject": s, "object": o, "predicate": p} for s, o, p in i.relations.tolist()]}
            for i in annotation.images]
    test = [r for r in rows if r["image_id"] in sample.test_image_ids]
    classes = psg_classes()
    prior = FrequencyPrior.fit([r for r in rows if r not in test], 133, len(classes["predicate_classes"]))
    result = psg_recall(annotation, prior.recall_predictions(test))
    assert result["images"] == len(sample.test_image_ids)
    assert 0.3 < result["R@20"] <= result["R@50"] <= result["R@100"] <= 1.0   # the prior carries real signal
    assert result["ngR@100"] >= result["R@100"]


# ------------------------------------------------------------------ OpenPSG's behaviours (reference notes' Corrections)


def test_an_entry_with_no_pairs_is_skipped_not_refused(tmp_path):
    import json

    from haystack_dataset.predictions import read_recall_predictions

    path = tmp_path / "pred.json"
    path.write_text(json.dumps([{"image_id": "1", "pairs": [], "predicate_scores": []},
                                {"image_id": "2", "pairs": [[1, 0]], "predicate_scores": [[0.9, 0.05, 0.05, 0.0]]}]))
    predictions = read_recall_predictions(path)
    assert predictions[0].pairs.shape == (0, 2)
    gt = {"1": truth(), "2": truth("2", relations=((1, 0, 0),))}
    result = sg_recall(gt, predictions, N, ks=(1,))
    assert result["images"] == 1 and result["R@1"] == 1.0


def test_object_scores_of_a_predcls_entry_are_ignored():
    gt = {"1": truth(relations=((0, 2, 1), (1, 2, 0)))}
    rows = np.array([[0.0, 0.1, 0.6, 0.0], [0.0, 0.5, 0.0, 0.0]])
    plain = RecallPrediction("1", np.array([[0, 2], [1, 2]]), rows)
    carrying = RecallPrediction("1", np.array([[0, 2], [1, 2]]), rows, object_scores=np.array([0.1, 1.0, 1.0]))
    # with the object scores multiplied in, (1, 2, p0) = 0.5 would outrank (0, 2, p1) = 0.06 at k = 1
    assert sg_recall(gt, [carrying], N, ks=(1,)) == sg_recall(gt, [plain], N, ks=(1,))
    assert sg_recall(gt, [carrying], N, ks=(1,))["ngR@1"] == 0.5


def test_no_image_evaluated_gives_mean_recall_zero_and_undefined_recall():
    result = sg_recall({"1": truth()}, [], N, ks=(20,))
    assert result["mR@20"] == 0.0 and np.isnan(result["R@20"]) and np.isnan(result["ngR@20"])
    assert result["images"] == 0


def test_equal_scores_straddling_k_follow_openpsgs_numpy_order():
    # pair (0, 2) scores predicates 0 and 1 equally; k = 1 takes one of them: OpenPSG's per-pair argsort,
    # reversed, puts the higher predicate first, so predicate 1 (the GT one) is in the top 1
    gt = {"1": truth(relations=((0, 2, 1),))}
    rows = np.array([[0.0, 0.4, 0.4, 0.1]])
    result = sg_recall(gt, [RecallPrediction("1", np.array([[0, 2]]), rows)], N, ks=(1, 2))
    assert result["ngR@1"] == 1.0
    gt_low = {"1": truth(relations=((0, 2, 0),))}
    assert sg_recall(gt_low, [RecallPrediction("1", np.array([[0, 2]]), rows)], N, ks=(1,))["ngR@1"] == 0.0


def test_iou_at_half_in_float32_is_a_match_worked_example():
    # predicted box [0, 0, 10, 20.000001] against GT [0, 0, 10, 10]: IoU 0.5 in float32, 0.49999998 in float64
    from haystack_dataset.recall import float32_iou

    assert float32_iou(np.array([[0, 0, 10, 20.000001]]), np.array([[0, 0, 10, 10]]))[0, 0] == 0.5
    gt = {"1": truth(boxes=((0, 0, 10, 10), (40, 0, 50, 10)), labels=(0, 1), relations=((0, 1, 1),))}
    prediction = RecallPrediction("1", np.array([[0, 1]]), scores_for(1),
                                  boxes=np.array([[0, 0, 10, 20.000001], [40, 0, 50, 10]]), labels=np.array([0, 1]))
    assert sg_recall(gt, [prediction], N, ks=(1,))["R@1"] == 1.0


_BOUNDARY_BOXES = ((0, 0, 10, 10), (0, 0, 10, 20.000001), (0, 0, 10, 19.99999), (5, 0, 15, 10), (0, 0, 20, 10))


@st.composite
def recall_cases(draw):
    """Small images with ties (scores from a few values), empty pair lists, boxes at float32 IoU boundaries, PredCls
    entries that carry object scores and SGDet entries with their own boxes."""
    images = []
    for index in range(draw(st.integers(1, 4))):
        count = draw(st.integers(2, 4))
        gt_boxes = [draw(st.sampled_from(_BOUNDARY_BOXES)) for _ in range(count)]
        gt_labels = [draw(st.integers(0, 1)) for _ in range(count)]
        ordered = [(s, o) for s in range(count) for o in range(count) if s != o]
        gt_rels = draw(st.lists(st.sampled_from(ordered).flatmap(
            lambda pair: st.integers(0, N - 1).map(lambda p, pair=pair: (*pair, p))), min_size=0, max_size=4))
        sgdet = draw(st.booleans())
        boxes = [draw(st.sampled_from(_BOUNDARY_BOXES)) for _ in range(count)] if sgdet else None
        labels = [draw(st.integers(0, 1)) for _ in range(count)] if sgdet else None
        pairs = draw(st.lists(st.sampled_from(ordered), max_size=len(ordered), unique=True))
        levels = draw(st.sampled_from([2, 3, 10]))
        scores = [[draw(st.integers(0, levels)) / levels for _ in range(N + 1)] for _ in pairs]
        object_scores = [draw(st.sampled_from([0.5, 1.0])) for _ in range(count)] if draw(st.booleans()) else None
        images.append({"key": str(index), "gt_boxes": gt_boxes, "gt_labels": gt_labels, "gt_rels": gt_rels,
                       "pairs": pairs, "scores": scores, "boxes": boxes, "labels": labels,
                       "object_scores": object_scores})
    return images


@settings(max_examples=80, deadline=None)
@given(recall_cases(), st.sampled_from([(1, 2, 5), (1, 3, 20)]))
def test_recall_equals_the_openpsg_loop_reference(images, ks):
    from recall_reference import reference_recall

    gt, predictions, reference_images = {}, [], []
    for image in images:
        truth_ = RecallGroundTruth.from_relations(image["key"], image["gt_boxes"], image["gt_labels"],
                                                  image["gt_rels"])
        if len(truth_.relations):
            gt[image["key"]] = truth_
        predictions.append(RecallPrediction(
            image["key"], np.array(image["pairs"], dtype=np.int64).reshape(-1, 2),
            np.array(image["scores"], dtype=np.float64).reshape(-1, N + 1),
            None if image["boxes"] is None else np.array(image["boxes"], dtype=np.float64),
            None if image["labels"] is None else np.array(image["labels"]),
            None if image["object_scores"] is None else np.array(image["object_scores"])))
        reference_images.append(dict(image, gt_rels=truth_.relations.tolist()))
    result = sg_recall(gt, predictions, N, annotated=[i["key"] for i in images], ks=ks)
    expected = reference_recall(reference_images, N, ks=ks)
    for key, value in expected.items():
        if value is None:
            assert np.isnan(result[key]), key
        else:
            assert result[key] == value, (key, result[key], value)
