"""hoi_bench.detection on cases computed by hand: QPIC's matching costs, losses, post-processing and ranking.

Every expected number below is derived in the comment next to it from the formulas of QPIC's
``models/matcher.py`` and ``models/hoi.py`` (``docs/baselines.md`` repeats them), not read off the code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hoi_bench.detection import (
    HungarianMatcherHOI,
    PostProcessHOI,
    SetCriterionHOI,
    focal_verb_loss,
    rank_triplets,
    weight_dict,
)
from hoi_bench.errors import HoiBenchError

LOSSES = ["obj_labels", "verb_labels", "sub_obj_boxes", "obj_cardinality"]
QPIC_COSTS = {"cost_obj_class": 1, "cost_verb_class": 1, "cost_bbox": 2.5, "cost_giou": 1}


def outputs(obj_logits, verb_logits, sub_boxes, obj_boxes) -> dict:
    return {"pred_obj_logits": torch.tensor(obj_logits, dtype=torch.float64),
            "pred_verb_logits": torch.tensor(verb_logits, dtype=torch.float64),
            "pred_sub_boxes": torch.tensor(sub_boxes, dtype=torch.float64),
            "pred_obj_boxes": torch.tensor(obj_boxes, dtype=torch.float64)}


def target(labels, verbs, sub, obj) -> dict:
    return {"obj_labels": torch.tensor(labels, dtype=torch.int64),
            "verb_labels": torch.tensor(verbs, dtype=torch.float64).reshape(len(labels), -1),
            "sub_boxes": torch.tensor(sub, dtype=torch.float64).reshape(-1, 4),
            "obj_boxes": torch.tensor(obj, dtype=torch.float64).reshape(-1, 4)}


def no_target(verbs: int) -> dict:
    return {"obj_labels": torch.zeros(0, dtype=torch.int64), "verb_labels": torch.zeros(0, verbs),
            "sub_boxes": torch.zeros(0, 4), "obj_boxes": torch.zeros(0, 4)}


# One image, two queries, one object class (+ "no object"), two verbs, one target:
# query 0 sits on the target (its subject box taller by 0.2), query 1 is far away.
IMAGE = outputs(obj_logits=[[[1.0, 0.0], [0.0, math.log(3)]]],
                verb_logits=[[[math.log(3), 0.0], [0.0, 0.0]]],
                sub_boxes=[[[0.5, 0.5, 0.2, 0.2], [0.2, 0.8, 0.2, 0.2]]],
                obj_boxes=[[[0.3, 0.3, 0.2, 0.2], [0.8, 0.2, 0.2, 0.2]]])
TARGET = target([0], [[1.0, 0.0]], [0.5, 0.5, 0.2, 0.4], [0.3, 0.3, 0.2, 0.2])
P0 = math.e / (math.e + 1)  # softmax([1, 0])[0] = 0.7310585...


def test_matching_cost_of_a_query_is_qpics_weighted_sum_of_its_four_terms():
    cost = HungarianMatcherHOI(**QPIC_COSTS).cost_matrix(IMAGE, [TARGET])
    # query 0: class -p(class 0) = -e/(e+1); verbs: p = (0.75, 0.5), t = (1, 0):
    #   -(0.75 / (1 + 1e-4) + 0.5 / (1 + 1e-4)) / 2; L1: subject h 0.2 vs 0.4 -> 0.2, object exact -> 0, max 0.2;
    #   GIoU: subject [.4,.4,.6,.6] vs [.4,.3,.6,.7] -> IoU 0.04/0.08, hull = target -> 0.5; object 1; max(-0.5, -1)
    expected = -P0 - 1.25 / 1.0001 / 2 + 2.5 * 0.2 - 0.5
    assert cost[0, 0, 0].item() == pytest.approx(expected, abs=1e-12)
    # query 1: class -1/4 (softmax([0, ln 3])); verbs p = (0.5, 0.5) -> -(0.5 + 0.5) / 1.0001 / 2;
    #   L1 subject |0.2-0.5| + |0.8-0.5| + 0 + |0.2-0.4| = 0.8, object 0.5 + 0.1 = 0.6 -> 0.8;
    #   GIoU subject [.1,.7,.3,.9] vs [.4,.3,.6,.7]: no overlap, hull [.1,.3,.6,.9] = 0.3, union 0.12 -> -0.6;
    #   object [.7,.1,.9,.3] vs [.2,.2,.4,.4]: hull [.2,.1,.9,.4] = 0.21, union 0.08 -> -13/21; max(0.6, 13/21)
    expected = -0.25 - 1.0 / 1.0001 / 2 + 2.5 * 0.8 + 13 / 21
    assert cost[0, 1, 0].item() == pytest.approx(expected, abs=1e-12)
    assert HungarianMatcherHOI(**QPIC_COSTS)(IMAGE, [TARGET]) == [(torch.tensor([0]), torch.tensor([0]))]


def test_a_pair_without_object_is_matched_on_its_subject_box_alone():
    # V-COCO: the target's object box is [0, 0, 0, 0]. The object L1 is multiplied by 0, and the object GIoU
    # cost becomes -GIoU(object, zero box) - GIoU(subject): for query 0 (subject exact, object [.2,.2,.4,.4])
    # GIoU with the zero box at the origin is 0 - (0.16 - 0.04) / 0.16 = -0.75, so max(-1, 0.75 - 1) = -0.25.
    pair = outputs(obj_logits=[[[0.0, 0.0, 0.0]]], verb_logits=[[[0.0]]],
                   sub_boxes=[[[0.5, 0.5, 0.2, 0.2]]], obj_boxes=[[[0.3, 0.3, 0.2, 0.2]]])
    no_object = target([1], [[1.0]], [0.5, 0.5, 0.2, 0.2], [0.0, 0.0, 0.0, 0.0])
    cost = HungarianMatcherHOI(cost_obj_class=0, cost_verb_class=0, cost_bbox=1, cost_giou=1).cost_matrix(
        pair, [no_object])
    assert cost.item() == pytest.approx(0.0 + (0.75 - 1.0), abs=1e-12)


def test_matching_is_per_image_and_an_image_without_targets_gets_empty_indices():
    batch = {key: torch.cat([value, value.flip(1)]) for key, value in IMAGE.items()}
    indices = HungarianMatcherHOI(**QPIC_COSTS)(batch, [TARGET, no_target(2)])
    assert [tuple(map(torch.Tensor.tolist, pair)) for pair in indices] == [([0], [0]), ([], [])]
    flipped = HungarianMatcherHOI(**QPIC_COSTS)(batch, [no_target(2), TARGET])
    assert [tuple(map(torch.Tensor.tolist, pair)) for pair in flipped] == [([], []), ([1], [0])]
    for queries, found in indices:
        assert queries.dtype == found.dtype == torch.int64


def test_matcher_refuses_all_zero_costs():
    with pytest.raises(HoiBenchError, match="non-zero"):
        HungarianMatcherHOI(0, 0, 0, 0)


def criterion(verb_loss_type: str = "focal", *, classes: int = 1, verbs: int = 2, queries: int = 2,
              aux_layers: int = 0) -> SetCriterionHOI:
    return SetCriterionHOI(classes, queries, verbs, HungarianMatcherHOI(**QPIC_COSTS),
                           weight_dict(aux_layers=aux_layers), 0.1, LOSSES, verb_loss_type)


def test_losses_of_one_matched_query_with_focal_verbs():
    losses = criterion("focal")(IMAGE, [TARGET])
    # loss_obj_ce: query 0 -> class 0, -log(e/(e+1)) at weight 1; query 1 -> "no object", -log(3/4) at eos 0.1
    assert losses["loss_obj_ce"].item() == pytest.approx((-math.log(P0) + 0.1 * -math.log(0.75)) / 1.1)
    assert losses["obj_class_error"].item() == 0.0  # query 0's argmax is class 0
    assert losses["obj_cardinality_error"].item() == 0.0  # one query predicts an object, one target
    # focal: positive (query 0, verb 0) p = 0.75 -> log(0.75) * 0.25^2; three negatives at p = 0.5 -> log(0.5)/4
    expected_focal = -(math.log(0.75) * 0.0625 + 3 * math.log(0.5) * 0.25) / 1
    assert losses["loss_verb_ce"].item() == pytest.approx(expected_focal)
    # boxes: subject L1 0.2 and 1 - GIoU 0.5 over one interaction; the object box is exact
    assert losses["loss_sub_bbox"].item() == pytest.approx(0.2)
    assert losses["loss_sub_giou"].item() == pytest.approx(0.5)
    assert losses["loss_obj_bbox"].item() == pytest.approx(0.0, abs=1e-12)
    assert losses["loss_obj_giou"].item() == pytest.approx(0.0, abs=1e-12)
    total = criterion("focal").total(losses).item()
    assert total == pytest.approx(losses["loss_obj_ce"].item() + expected_focal + 2.5 * 0.2 + 0.5)


def test_bce_verb_loss_is_the_mean_over_every_query_and_verb():
    losses = criterion("bce")(IMAGE, [TARGET])
    # -log(0.75) for the positive, -log(0.5) for the three zeros, averaged over 2 queries x 2 verbs
    assert losses["loss_verb_ce"].item() == pytest.approx((-math.log(0.75) - 3 * math.log(0.5)) / 4)


def test_focal_loss_without_positives_is_the_negative_sum():
    probabilities = torch.tensor([[0.2, 0.6]], dtype=torch.float64)
    expected = -(math.log(0.8) * 0.04 + math.log(0.4) * 0.36)
    assert focal_verb_loss(probabilities, torch.zeros(1, 2)).item() == pytest.approx(expected)


def test_object_box_losses_skip_pairs_without_object_and_divide_by_the_objects_present():
    # Two targets: the subject/object of IMAGE's target, and a V-COCO "no object" pair for query 1
    # (class 1 of 2 + "no object"), whose subject box is query 1's exactly.
    image = outputs(obj_logits=[[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], verb_logits=[[[math.log(3), 0.0], [0.0, 0.0]]],
                    sub_boxes=IMAGE["pred_sub_boxes"].tolist(), obj_boxes=IMAGE["pred_obj_boxes"].tolist())
    both = target([0, 1], [[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5, 0.2, 0.4], [0.2, 0.8, 0.2, 0.2]],
                  [[0.3, 0.3, 0.2, 0.2], [0.0, 0.0, 0.0, 0.0]])
    losses = criterion(classes=2)(image, [both])
    assert losses["loss_sub_bbox"].item() == pytest.approx(0.2 / 2)  # L1 0.2 + 0, two interactions
    assert losses["loss_sub_giou"].item() == pytest.approx(0.5 / 2)
    # query 1's object box [0.8, 0.2, 0.2, 0.2] against [0, 0, 0, 0] is not counted: one object, + 1e-4
    assert losses["loss_obj_bbox"].item() == pytest.approx(0.0, abs=1e-12)
    assert losses["loss_obj_giou"].item() == pytest.approx(0.0, abs=1e-12)


def test_auxiliary_layers_add_suffixed_losses_with_their_own_matching():
    aux = {key: value.flip(1) for key, value in IMAGE.items()}  # the earlier layer has the queries swapped
    losses = criterion(aux_layers=1)({**IMAGE, "aux_outputs": [aux]}, [TARGET])
    last = criterion()(IMAGE, [TARGET])
    assert "obj_class_error_0" not in losses and "obj_cardinality_error_0" in losses
    for name in ("loss_obj_ce", "loss_verb_ce", "loss_sub_bbox", "loss_sub_giou"):
        # its own matching puts the target on query 1 there, so the aux terms equal the last layer's
        assert losses[f"{name}_0"].item() == pytest.approx(last[name].item())
    weights = weight_dict(aux_layers=1)
    assert weights["loss_sub_bbox_0"] == 2.5 and weights["loss_obj_giou_0"] == 1
    assert criterion(aux_layers=1).total(losses).item() == pytest.approx(2 * criterion().total(last).item())


def test_a_batch_without_any_target_has_zero_box_losses_and_all_queries_target_no_object():
    losses = criterion()(IMAGE, [no_target(2)])
    for name in ("loss_sub_bbox", "loss_obj_bbox", "loss_sub_giou", "loss_obj_giou"):
        assert losses[name].item() == 0.0
    # both queries target "no object" (weight 0.1 each): the weighted mean is the plain mean of their CE
    expected = (-math.log(1 - P0) - math.log(0.75)) / 2
    assert losses["loss_obj_ce"].item() == pytest.approx(expected)
    assert losses["obj_class_error"].item() == 100.0
    assert losses["obj_cardinality_error"].item() == 1.0  # query 0 predicts an object, no target


def test_num_interactions_counts_targets_of_every_image_and_is_at_least_one():
    assert SetCriterionHOI.num_interactions([TARGET, TARGET, no_target(2)], torch.device("cpu")) == 2.0
    assert SetCriterionHOI.num_interactions([no_target(2)], torch.device("cpu")) == 1.0


def test_postprocess_scales_boxes_to_the_original_size_and_weights_verbs_by_the_object_score():
    out = outputs(obj_logits=[[[math.log(2), 0.0, 0.0]]], verb_logits=[[[0.0, math.log(3)]]],
                  sub_boxes=[[[0.5, 0.5, 0.2, 0.4]]], obj_boxes=[[[0.25, 0.25, 0.5, 0.5]]])
    (result,) = PostProcessHOI(subject_category_id=7)(out, torch.tensor([[100.0, 200.0]]))
    # softmax([ln 2, 0, 0]) = (1/2, 1/4, 1/4); the last slot is excluded: object class 0 at 0.5
    assert result["labels"].tolist() == [7, 0]
    assert result["verb_scores"][0].tolist() == pytest.approx([0.5 * 0.5, 0.75 * 0.5])
    # (cx, cy, w, h) -> corners, times (w, h, w, h) = (200, 100, 200, 100)
    assert result["boxes"].flatten().tolist() == pytest.approx([80, 30, 120, 70, 0, 0, 100, 50])
    assert result["sub_ids"].tolist() == [0] and result["obj_ids"].tolist() == [1]


def test_ranking_masks_invalid_combinations_sorts_stably_and_keeps_the_top():
    result = {"labels": torch.tensor([0, 0, 0, 1]), "sub_ids": torch.tensor([0, 1]), "obj_ids": torch.tensor([2, 3]),
              "verb_scores": torch.tensor([[0.5, 0.9, 0.5], [0.5, 0.9, 0.7]])}
    mask = np.array([[1, 1], [1, 0], [1, 1]])  # verb 1 never goes with object class 1
    ranked = rank_triplets(result, mask, max_hois=4)
    # candidates (query, verb): (0,0) .5, (0,1) .9, (0,2) .5, (1,0) .5, (1,1) .9 * 0, (1,2) .7
    assert list(zip(ranked.subject_ids.tolist(), ranked.verbs.tolist())) == [(0, 1), (1, 2), (0, 0), (0, 2)]
    assert ranked.object_ids.tolist() == [2, 3, 2, 2]
    assert ranked.scores.tolist() == pytest.approx([0.9, 0.7, 0.5, 0.5])
