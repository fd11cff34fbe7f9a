"""The evaluate modules give the same numbers as the library functions (record form and array form)."""

from __future__ import annotations

import evaluate
import numpy as np
import pytest

from haystack_dataset.evaluation import (
    annotated_relations,
    haystack_scores,
    relation_scores,
)
from haystack_dataset.formats import parse_annotation
from haystack_fixtures import GOLDEN_ANNOTATION, GOLDEN_ROWS
from hoi_bench import metric_path


@pytest.fixture(scope="module")
def golden_inputs():
    annotation = parse_annotation(GOLDEN_ANNOTATION)
    relations = annotated_relations(annotation)
    scores, present = relation_scores(relations, GOLDEN_ROWS, 4)
    return annotation, relations, scores, present


@pytest.mark.parametrize("name", ["p_auc", "pdd", "pdo"])
def test_predicate_metric_modules_match_the_official_numbers_in_both_input_forms(name, golden_inputs):
    annotation, relations, scores, present = golden_inputs
    expected = haystack_scores(annotation, GOLDEN_ROWS, rank_mode="official")["mean"][name]
    metric = evaluate.load(metric_path(name))
    records = metric.compute(
        predictions=[row.tolist() if keep else [] for row, keep in zip(scores, present)],
        references=[{"predicate": int(p), "label": int(l)} for p, l in zip(relations.predicate, relations.label)],
        rank_mode="official", predicate_names=annotation.predicate_classes)
    arrays = metric.compute(predictions=[], references=[], scores=scores, predicates=relations.predicate,
                            labels=relations.label, present=present, rank_mode="official",
                            predicate_names=annotation.predicate_classes)
    assert records[name] == pytest.approx(expected) and arrays[name] == pytest.approx(expected)
    assert list(records["per_predicate"]) == ["on"] and records["rank_mode"] == "official"


def test_sg_recall_module_matches_psg_recall(sample):
    from haystack_dataset.formats import read_annotation
    from haystack_dataset.frequency_prior import FrequencyPrior
    from haystack_dataset.recall import psg_recall

    annotation = read_annotation(sample.psg_file)
    rows = [{"image_id": i.key, "segments": [{"category": int(c)} for c in i.categories],
             "relations": [{"subject": s, "object": o, "predicate": p} for s, o, p in i.relations.tolist()]}
            for i in annotation.images]
    prior = FrequencyPrior.fit(rows, 133, 56)
    test_images = [i for i in annotation.images if i.key in sample.test_image_ids]
    predictions = prior.recall_predictions([r for r in rows if r["image_id"] in sample.test_image_ids])
    expected = psg_recall(annotation, predictions)
    metric = evaluate.load(metric_path("sg_recall"))
    result = metric.compute(
        predictions=[{"image_id": p.key, "pairs": p.pairs.tolist(), "predicate_scores": p.predicate_scores.tolist(),
                      "boxes": [], "labels": [], "object_scores": []} for p in predictions],
        references=[{"image_id": i.key, "boxes": i.boxes.tolist(), "labels": i.categories.tolist(),
                     "relations": i.relations.tolist()} for i in test_images])
    assert result.pop("warnings") == expected.pop("warnings") == []
    assert result == pytest.approx(expected)
    assert np.isfinite(result["mR@50"])
