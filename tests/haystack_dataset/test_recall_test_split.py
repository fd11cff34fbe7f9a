"""``sg_recall`` of an annotation file with ``test_image_ids`` evaluates only those images, as OpenPSG's test dataset
does (issue 19, part 1), and counts the predictions it leaves out.

Worked example: a train image whose one relation is hit (R@20 = 1) and a test image whose one relation is missed
(R@20 = 0). Every annotated image with a prediction would give R@20 = (1 + 0) / 2 = 0.5 over 2 images; OpenPSG
gives 0.0 over the 1 test image.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_dataset.formats import SceneGraphAnnotation, SceneGraphImage, read_annotation
from haystack_dataset.predictions import RecallPrediction, write_recall_predictions
from haystack_dataset.recall import RecallGroundTruth, psg_recall
from hoi_bench import cli
from hoi_bench.input_warnings import InputWarning
from tests.haystack_dataset.test_recall import N, recall_cases


@pytest.fixture
def two_images(sample, tmp_path):
    """The sample's psg.json cut to one train and one test image with one relation each."""
    raw = json.loads(sample.psg_file.read_text())
    test = set(raw["test_image_ids"])
    train_record = next(r for r in raw["data"] if r["image_id"] not in test and r["relations"])
    test_record = next(r for r in raw["data"] if r["image_id"] in test and r["relations"])
    for record in (train_record, test_record):
        record["relations"] = record["relations"][:1]
    raw["data"] = [train_record, test_record]
    raw["test_image_ids"] = [test_record["image_id"]]
    path = tmp_path / "psg.json"
    path.write_text(json.dumps(raw))
    return path, train_record, test_record, len(raw["predicate_classes"])


def prediction(record, num_predicates, *, hit: bool) -> RecallPrediction:
    subject, obj, predicate = record["relations"][0]
    scores = np.full((1, num_predicates + 1), 0.01)
    scores[0, 1 + (predicate if hit else (predicate + 1) % num_predicates)] = 0.9
    return RecallPrediction(record["image_id"], np.array([[subject, obj]]), scores)


def test_only_test_image_ids_are_evaluated(two_images):
    path, train_record, test_record, n = two_images
    annotation = read_annotation(path)
    predictions = [prediction(train_record, n, hit=True), prediction(test_record, n, hit=False)]
    with pytest.warns(InputWarning, match="1 prediction entries are for annotated images outside test_image_ids"):
        result = psg_recall(annotation, predictions)
    assert result["R@20"] == 0.0 and result["images"] == 1
    assert len(result["warnings"]) == 1 and repr(train_record["image_id"]) in result["warnings"][0]
    annotation.test_image_ids = []  # a file that names no test split: every annotated image is evaluated
    everything = psg_recall(annotation, predictions)
    assert everything["R@20"] == 0.5 and everything["images"] == 2 and everything["warnings"] == []


def test_cli_prints_the_official_recall_and_one_warning_line(two_images, tmp_path, capsys):
    path, train_record, test_record, n = two_images
    predictions = write_recall_predictions(
        tmp_path / "recall.json", [prediction(train_record, n, hit=True), prediction(test_record, n, hit=False)])
    out = tmp_path / "out.json"
    argv = ["evaluate", "sg_recall", "--annotations", str(path), "--predictions", str(predictions),
            "--output", str(out)]
    assert cli.main(argv) == 0
    printed = capsys.readouterr()
    warning_lines = [line for line in printed.out.splitlines() if line.startswith("warning:")]
    assert len(warning_lines) == 1 and "outside test_image_ids" in warning_lines[0]
    assert "InputWarning" not in printed.err
    written = json.loads(out.read_text())
    assert written["R@20"] == 0.0 and written["images"] == 1 and len(written["warnings"]) == 1


@settings(max_examples=60, deadline=None)
@given(recall_cases(), st.data())
def test_psg_recall_of_a_file_with_a_test_split_is_the_reference_on_its_test_images(images, data):
    """Random images, some of them outside ``test_image_ids``, all with predictions: psg_recall equals the
    OpenPSG loop reference run on the test images alone."""
    from recall_reference import reference_recall

    test_keys = data.draw(st.sets(st.sampled_from([i["key"] for i in images]), min_size=1))
    records, predictions, reference_images = [], [], []
    for image in images:
        truth = RecallGroundTruth.from_relations(image["key"], image["gt_boxes"], image["gt_labels"],
                                                 image["gt_rels"])
        records.append(SceneGraphImage(
            image["key"], f"{image['key']}.jpg", 100, 100, f"{image['key']}.png", [{} for _ in image["gt_boxes"]],
            np.array(image["gt_boxes"], dtype=np.float64), np.array(image["gt_labels"], dtype=np.int64),
            np.array(image["gt_rels"], dtype=np.int64).reshape(-1, 3), np.zeros((0, 3), dtype=np.int64)))
        predictions.append(RecallPrediction(
            image["key"], np.array(image["pairs"], dtype=np.int64).reshape(-1, 2),
            np.array(image["scores"], dtype=np.float64).reshape(-1, N + 1),
            None if image["boxes"] is None else np.array(image["boxes"], dtype=np.float64),
            None if image["labels"] is None else np.array(image["labels"]),
            None if image["object_scores"] is None else np.array(image["object_scores"])))
        if image["key"] in test_keys:
            reference_images.append(dict(image, gt_rels=truth.relations.tolist()))
    annotation = SceneGraphAnnotation(["a", "b"], [], [f"p{k}" for k in range(N)], records,
                                      test_image_ids=sorted(test_keys))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        result = psg_recall(annotation, predictions, ks=(1, 3))
    expected = reference_recall(reference_images, N, ks=(1, 3))
    for key, value in expected.items():
        assert np.isnan(result[key]) if value is None else result[key] == value, (key, result[key], value)
    assert bool(result["warnings"]) == (len(test_keys) < len(images))
