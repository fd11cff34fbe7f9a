"""HOI mAP protocols: the upstream rules and quirks each one must reproduce, one behaviour per test."""

from __future__ import annotations

import numpy as np
import pytest

from hoi_bench.errors import ConfigError, PredictionError
from hoi_sg_dataset.evaluation import (
    HoiSet,
    hoi_map,
    match_predictions,
    pair_iou,
    rank_predictions,
    vcoco_map,
)
from hoi_sg_dataset.vocabulary import hico_hoi_classes
from tests.hoi_sg_dataset import reference_hoi_map as reference

PERSON, CUP, BICYCLE = 1, 47, 2
HOLD, CARRY = 37, 9


def one_image(boxes, labels, hois, scores=None) -> HoiSet:
    return HoiSet.from_images(
        boxes=[boxes], box_labels=[labels], hois=[hois], scores=None if scores is None else [scores]
    )


def eleven_point_sum(values) -> float:
    """The sequential ``ap = ap + p / 11.`` of the upstream scripts."""
    ap = 0.0
    for p in values:
        ap = ap + p / 11.0
    return ap


PERFECT = eleven_point_sum([1.0] * 11)
GT_BOXES = [[10, 10, 50, 90], [40, 40, 80, 80], [100, 10, 140, 90], [120, 40, 160, 80]]
GT_LABELS = [PERSON, CUP, PERSON, CUP]


def test_perfect_predictions_score_one_under_every_protocol():
    gt = HoiSet.from_images(
        boxes=[GT_BOXES, GT_BOXES[:2]],
        box_labels=[GT_LABELS, GT_LABELS[:2]],
        hois=[[[0, 1, HOLD], [2, 3, CARRY]], [[0, 1, CARRY]]],
    )
    pred = HoiSet.from_images(
        boxes=[GT_BOXES, GT_BOXES[:2]],
        box_labels=[GT_LABELS, GT_LABELS[:2]],
        hois=[[[0, 1, HOLD], [2, 3, CARRY]], [[0, 1, CARRY]]],
        scores=[[0.9, 0.8], [0.7]],
    )
    qpic = hoi_map(gt, pred)
    assert qpic["mAP"] == PERFECT == pytest.approx(1.0, abs=1e-12)
    assert qpic["mean_max_recall"] == 1.0
    assert qpic["ap_per_triplet"] == {f"{PERSON}_{CUP}_{HOLD}": PERFECT, f"{PERSON}_{CUP}_{CARRY}": PERFECT}
    ho_rcnn = hoi_map(gt, pred, protocol="ho-rcnn")
    assert ho_rcnn["num_classes"] == 600
    assert ho_rcnn["ap_per_triplet"][f"{PERSON}_{CUP}_{HOLD}"] == PERFECT
    assert ho_rcnn["mAP"] == pytest.approx(2 / 600)  # the other 598 classes have no GT: AP 0, as MATLAB
    assert vcoco_map(gt, pred)["mAP_all"] == PERFECT


def test_no_fallback_to_the_second_best_gt():
    """The second prediction's best GT is taken, so it is an FP although another GT would fit it."""
    gt = one_image(
        [[0, 0, 40, 40], [0, 0, 40, 40], [2, 0, 42, 40]], [PERSON, CUP, CUP], [[0, 1, HOLD], [0, 2, HOLD]]
    )
    pred = one_image(
        [[0, 0, 40, 40], [0, 0, 40, 40]], [PERSON, CUP], [[0, 1, HOLD], [0, 1, HOLD]], [0.9, 0.8]
    )
    is_tp, best = match_predictions(gt, pred, rank_predictions(pred, None))
    assert is_tp.tolist() == [True, False]
    assert best.tolist() == [0, 0]


def test_duplicated_gt_hoi_can_match_only_once_but_counts_twice():
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD], [0, 1, HOLD]])
    pred = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD], [0, 1, HOLD]], [0.9, 0.8])
    result = hoi_map(gt, pred)
    assert result["mean_max_recall"] == 0.5
    assert result["mAP"] == eleven_point_sum([1.0] * 6)


def test_prediction_of_a_triplet_absent_from_gt_is_ignored_not_false_positive():
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD]])
    pred = one_image(
        GT_BOXES[:2] + [[0, 0, 5, 5]],
        GT_LABELS[:2] + [BICYCLE],
        [[0, 2, HOLD], [0, 1, CARRY], [0, 1, HOLD]],
        [0.9, 0.8, 0.1],
    )
    assert hoi_map(gt, pred)["mAP"] == PERFECT
    wrong_place = one_image(
        [[0, 0, 5, 5]] + GT_BOXES[:2], [CUP] + GT_LABELS[:2], [[1, 0, HOLD], [1, 2, HOLD]], [0.9, 0.1]
    )
    assert hoi_map(gt, wrong_place)["mAP"] == eleven_point_sum([0.5] * 11)


def test_predicted_labels_decide_the_triplet_and_iou_is_zero_across_categories():
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD]])
    pred = one_image(GT_BOXES[:2], [PERSON, BICYCLE], [[0, 1, HOLD]], [0.9])
    result = hoi_map(gt, pred)
    assert result["mAP"] == 0.0
    assert result["mean_max_recall"] == 0.0


def test_images_without_gt_boxes_skip_predictions_in_qpic_hico_but_count_fps_in_vcoco():
    """hoi_sg.md Corrections, worked example: image A has one GT HOI predicted at 0.5; image B has no GT boxes
    and a prediction of the same triplet at 0.9. QPIC hico_eval.py skips B's prediction (mAP
    1.0000000000000002); vcoco_eval.py counts it as an FP (0.5); ho-rcnn counts it as an FP too."""
    gt = HoiSet.from_images(
        boxes=[GT_BOXES[:2], []], box_labels=[GT_LABELS[:2], []], hois=[[[0, 1, HOLD]], []]
    )
    pred = HoiSet.from_images(
        boxes=[GT_BOXES[:2], GT_BOXES[:2]],
        box_labels=[GT_LABELS[:2], GT_LABELS[:2]],
        hois=[[[0, 1, HOLD]], [[0, 1, HOLD]]],
        scores=[[0.5], [0.9]],
    )
    assert hoi_map(gt, pred)["mAP"] == 1.0000000000000002 == PERFECT
    assert vcoco_map(gt, pred)["mAP_all"] == eleven_point_sum([0.5] * 11)
    ho_rcnn = hoi_map(gt, pred, protocol="ho-rcnn")
    assert ho_rcnn["ap_per_triplet"][f"{PERSON}_{CUP}_{HOLD}"] == eleven_point_sum([0.5] * 11)


def test_image_with_gt_boxes_but_no_gt_hoi_still_counts_fps_in_qpic_hico():
    """Only an image without GT *boxes* takes upstream's skipping branch; boxes without HOIs do not."""
    gt = HoiSet.from_images(
        boxes=[GT_BOXES[:2], GT_BOXES[2:]],
        box_labels=[GT_LABELS[:2], GT_LABELS[2:]],
        hois=[[[0, 1, HOLD]], []],
    )
    pred = HoiSet.from_images(
        boxes=[GT_BOXES[:2], GT_BOXES[2:]],
        box_labels=[GT_LABELS[:2], GT_LABELS[2:]],
        hois=[[[0, 1, HOLD]], [[0, 1, HOLD]]],
        scores=[[0.5], [0.9]],
    )
    assert hoi_map(gt, pred)["mAP"] == eleven_point_sum([0.5] * 11)


def test_ho_rcnn_class_with_detections_but_no_gt_makes_the_mean_recall_nan():
    """hoi_sg.md Corrections: VOCevaldet_bboxpair.m computes rec = tp/npos = 0/0 = NaN for such a class and
    eval_one.m prints mean(REC) = NaN; the class's AP is 0. Without that detection the mean is defined."""
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD]])
    pred = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD], [0, 1, CARRY]], [0.9, 0.8])
    result = hoi_map(gt, pred, protocol="ho-rcnn")
    assert np.isnan(result["mean_max_recall"])
    assert "no test GT" in result["reasons"]["mean_max_recall"]
    assert result["ap_per_triplet"][f"{PERSON}_{CUP}_{CARRY}"] == 0.0
    assert result["mAP"] == PERFECT / 600
    defined = hoi_map(gt, one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD]], [0.9]), protocol="ho-rcnn")
    assert defined["mean_max_recall"] == 1 / 600
    assert "mean_max_recall" not in defined["reasons"]


def test_one_pixel_touch_is_no_overlap_for_qpic_but_overlap_for_matlab():
    line = np.array([[5.0, 0, 5, 9]])
    assert pair_iou(line, line).tolist() == [0.0]
    assert pair_iou(line, line, rule="matlab").tolist() == [1.0]


def test_top_k_cut_keeps_file_order_among_equal_scores():
    pred = one_image(
        GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD], [0, 1, CARRY], [0, 1, HOLD]], [0.5, 0.5, 0.5]
    )
    assert rank_predictions(pred, 1).tolist() == [0]
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, CARRY]])
    assert hoi_map(gt, pred, top_k=1)["mAP"] == 0.0
    assert hoi_map(gt, pred, top_k=2)["mAP"] == PERFECT  # the hold predictions are ignored: not a GT triplet


def test_recall_exactly_point_seven_differs_between_np_arange_and_matlab_thresholds():
    """7 of 10 GT found with precision 1: np.arange's 0.7000000000000001 misses it, MATLAB's 0.7 does not."""
    boxes = [[100 * k, 0, 100 * k + 40, 40] for k in range(20)]
    labels = [PERSON, CUP] * 10
    hois = [[2 * k, 2 * k + 1, HOLD] for k in range(10)]
    gt = one_image(boxes, labels, hois)
    pred = one_image(boxes, labels, hois[:7], [0.9] * 7)
    assert hoi_map(gt, pred)["mAP"] == eleven_point_sum([1.0] * 7)
    assert hoi_map(gt, pred, protocol="ho-rcnn")["ap_per_triplet"][
        f"{PERSON}_{CUP}_{HOLD}"
    ] == eleven_point_sum([1.0] * 8)


def test_score_ties_in_a_large_class_resolve_as_upstream_argsort():
    """Past 16 detections numpy's default argsort is not stable; the result must still equal the reference."""
    rng = np.random.default_rng(7)
    gts, preds = [], []
    for _ in range(12):
        gts.append(
            {
                "annotations": [
                    {"bbox": GT_BOXES[0], "category_id": PERSON},
                    {"bbox": GT_BOXES[1], "category_id": CUP},
                ],
                "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": HOLD}],
            }
        )
        hois = [
            {"subject_id": 0, "object_id": 1, "category_id": HOLD, "score": float(rng.choice([0.3, 0.6]))}
            for _ in range(3)
        ]
        preds.append({"predictions": gts[-1]["annotations"], "hoi_prediction": hois})
    expected = reference.qpic_hico(gts, preds)
    gt = HoiSet.from_images(
        boxes=[GT_BOXES[:2]] * 12, box_labels=[GT_LABELS[:2]] * 12, hois=[[[0, 1, HOLD]]] * 12
    )
    pred = HoiSet.from_images(
        boxes=[GT_BOXES[:2]] * 12,
        box_labels=[GT_LABELS[:2]] * 12,
        hois=[[[0, 1, HOLD]] * 3] * 12,
        scores=[[h["score"] for h in p["hoi_prediction"]] for p in preds],
    )
    assert hoi_map(gt, pred)["mAP"] == expected["mAP"]


def test_rare_and_non_rare_come_from_training_counts():
    gt = one_image(GT_BOXES, GT_LABELS, [[0, 1, HOLD], [2, 3, CARRY]])
    pred = one_image(GT_BOXES, GT_LABELS, [[0, 1, HOLD]], [0.9])
    train = HoiSet.from_images(
        boxes=[GT_BOXES] * 10,
        box_labels=[GT_LABELS] * 10,
        hois=[[[0, 1, HOLD], [2, 3, CARRY]]] + [[[0, 1, HOLD]]] * 9,
    )
    result = hoi_map(gt, pred, train_references=train)
    assert result["mAP_non_rare"] == PERFECT  # hold cup: 10 training instances
    assert result["mAP_rare"] == 0.0  # carry cup: 1 training instance
    assert result["reasons"] == {}


def test_sg_split_reports_null_with_a_reason_when_no_test_triplet_occurs_in_training():
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD]])
    pred = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD]], [0.9])
    train = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, CARRY]])
    result = hoi_map(gt, pred, train_references=train)
    assert result["mAP"] == PERFECT
    assert result["mAP_rare"] is None and result["mAP_non_rare"] is None
    assert "1 of 1 test triplets never occur in training" in result["reasons"]["mAP_rare"]


def test_vcoco_gt_without_object_is_matched_on_the_subject_alone():
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, -1, 1], [0, 1, 0]])
    pred = one_image(
        GT_BOXES[:2] + [[200, 200, 210, 210]], GT_LABELS[:2] + [BICYCLE], [[0, 2, 1], [0, 1, 0]], [0.9, 0.8]
    )
    result = vcoco_map(gt, pred)
    assert result["ap_per_verb"] == {"0": PERFECT, "1": PERFECT}
    assert result["mAP_thesis"] == np.mean(
        [PERFECT] + [0] * 23
    )  # stand (1) is no thesis verb; 23 absent as 0
    assert result["mAP_thesis_present"] == PERFECT


def test_ho_rcnn_ignores_combinations_outside_the_600_classes_and_filters_known_objects():
    sit_on_cup = 88
    assert (sit_on_cup, CUP) not in {(c.verb_id, c.object_id) for c in hico_hoi_classes()}
    gt = HoiSet.from_images(
        boxes=[GT_BOXES[:2], GT_BOXES[:2]],
        box_labels=[GT_LABELS[:2], [PERSON, BICYCLE]],
        hois=[[[0, 1, HOLD]], [[0, 1, HOLD]]],
    )
    pred = HoiSet.from_images(
        boxes=[GT_BOXES[:2], GT_BOXES[:2]],
        box_labels=[GT_LABELS[:2], GT_LABELS[:2]],
        hois=[[[0, 1, HOLD], [0, 1, sit_on_cup]], [[0, 1, HOLD]]],
        scores=[[0.5, 0.9], [0.9]],
    )
    default = hoi_map(gt, pred, protocol="ho-rcnn")["ap_per_triplet"][f"{PERSON}_{CUP}_{HOLD}"]
    known = hoi_map(gt, pred, protocol="ho-rcnn", known_object=True)["ap_per_triplet"][
        f"{PERSON}_{CUP}_{HOLD}"
    ]
    assert default == eleven_point_sum([0.5] * 11)  # the image-2 cup prediction is an FP ranked first
    assert known == PERFECT  # image 2 has no cup in its GT: not scored


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(scores=[[float("nan")]]), "field 'scores[0]': score must be finite"),
        (dict(hois=[[[0, 2, HOLD]]]), "field 'hois[0].object': index outside the image's box list"),
        (dict(hois=[[[-1, 1, HOLD]]]), "field 'hois[0].subject'"),
        (
            dict(boxes=[[[0, 0, float("inf"), 1], [0, 0, 1, 1]]]),
            "field 'boxes[0]': coordinates must be finite",
        ),
        (dict(box_labels=[[1, -3]]), "field 'box_labels[1]': unknown category"),
        (dict(boxes=[[[0, 0, 1e39, 1], [0, 0, 1, 1]]]), "field 'boxes[0]': coordinate out of range"),
        (dict(scores=[[-1e39]]), "field 'scores[0]': score out of range"),
    ],
)
def test_bad_prediction_arrays_name_image_field_and_value(bad, message):
    fields = dict(boxes=[GT_BOXES[:2]], box_labels=[GT_LABELS[:2]], hois=[[[0, 1, HOLD]]], scores=[[0.5]])
    fields.update(bad)
    with pytest.raises(PredictionError, match="image 0") as error:
        HoiSet.from_images(**fields)
    assert message in str(error.value)


def test_bad_calls_raise_clear_errors():
    gt = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, 1, HOLD]])
    pred = one_image(GT_BOXES[:2], GT_LABELS[:2], [[0, -1, HOLD]], [0.5])
    with pytest.raises(PredictionError, match="-1 is V-COCO's 'no object', use vcoco_map"):
        hoi_map(gt, pred)
    two = HoiSet.from_images(boxes=[[], []], box_labels=[[], []], hois=[[], []], scores=[[], []])
    with pytest.raises(PredictionError, match="predictions cover 2 images but references 1"):
        hoi_map(gt, two)
    with pytest.raises(ConfigError, match="unknown protocol 'matlab'"):
        hoi_map(gt, gt, protocol="matlab")
    with pytest.raises(ConfigError, match="top_k"):
        vcoco_map(gt, pred, top_k=0)
    with pytest.raises(PredictionError, match="need scores"):
        vcoco_map(gt, gt)


@pytest.mark.slow
@pytest.mark.anchors
@pytest.mark.parametrize("name, dataset", [("test_hico_sg3.json", "hico"), ("test_vcoco_sg2.json", "vcoco")])
def test_real_sg_test_file_with_noisy_predictions_equals_the_loop_reference(anchors_dir, name, dataset):
    """An official SG test file as GT, 12 predictions per image (GT HOIs on jittered boxes, random pairs, tied
    scores): every number equals the clean-room loop reference."""
    from hoi_sg_dataset.formats import read_annotations
    from hoi_sg_dataset.predictions import parse_predictions, prediction_set, reference_set

    records = read_annotations(anchors_dir / "hoi_sg" / name, dataset)
    rng = np.random.default_rng(3)
    verbs = sorted({h.category_id for r in records for h in r.hoi_annotation})
    entries, gt_json = [], []
    for r in records:
        boxes = r.boxes + rng.integers(-6, 7, size=r.boxes.shape)
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
        hois = [(h.subject_id, h.object_id, h.category_id) for h in r.hoi_annotation]
        while len(hois) < 12 and len(boxes):
            hois.append(
                (int(rng.integers(len(boxes))), int(rng.integers(len(boxes))), int(rng.choice(verbs)))
            )
        entries.append(
            {
                "file_name": r.file_name,
                "predictions": [
                    {"bbox": b.tolist(), "category_id": int(c)}
                    for b, c in zip(boxes, r.box_labels, strict=True)
                ],
                "hoi_prediction": [
                    {
                        "subject_id": s,
                        "object_id": o,
                        "category_id": v,
                        "score": float(rng.choice([0.25, 0.5, 0.75])),
                    }
                    for s, o, v in hois[:12]
                ],
            }
        )
        gt_json.append(
            {
                "annotations": [{"bbox": b.bbox, "category_id": b.category_id} for b in r.annotations],
                "hoi_annotation": [
                    {"subject_id": h.subject_id, "object_id": h.object_id, "category_id": h.category_id}
                    for h in r.hoi_annotation
                ],
            }
        )
    gt, pred = reference_set(records), prediction_set(records, parse_predictions(entries, dataset))
    if dataset == "hico":
        expected, result = reference.qpic_hico(gt_json, entries, top_k=10), hoi_map(gt, pred, top_k=10)
    else:
        expected, result = reference.qpic_vcoco(gt_json, entries, top_k=10), vcoco_map(gt, pred, top_k=10)
    for key, value in expected.items():
        assert result[key] == value, key


def test_matching_a_subset_of_rows_keeps_results_aligned_with_the_rows():
    """Two predictions of one GT triplicated: 6 candidate pairs, as many as the set's HOIs (a former bug)."""
    gt = HoiSet.from_images(
        boxes=[[], [[0, 0, 1, 1]]], box_labels=[[], [PERSON]], hois=[[], [[0, 0, CARRY]] * 3]
    )
    pred = HoiSet.from_images(
        boxes=[[[0, 0, 1, 1]], [[0, 0, 1, 1]]],
        box_labels=[[PERSON], [PERSON]],
        hois=[[[0, 0, CARRY]] * 4, [[0, 0, CARRY]] * 2],
        scores=[[0.1] * 4, [0.1] * 2],
    )
    is_tp, best = match_predictions(gt, pred, np.array([0, 1, 4, 5]))
    assert is_tp.tolist() == [False, False, True, False]
    assert best.tolist() == [-1, -1, 0, 0]
