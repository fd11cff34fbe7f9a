"""Prediction files for `hoi-bench evaluate bongard`: scoring against episode files or a built folder, and errors."""

from __future__ import annotations

import json

import pytest

from bongard_hoi.formats import episode_file_name, parse_episodes, write_episode_file
from bongard_hoi.predictions import episode_counts, evaluate_prediction_file
from hoi_bench.cli import main
from hoi_bench.errors import ConfigError, FormatError, MissingFilesError, PredictionError

TESTS = ("test_seen_obj_seen_act", "test_seen_obj_unseen_act", "test_unseen_obj_seen_act",
         "test_unseen_obj_unseen_act")


def _image(act):
    return {"im_path": "./hake_images_20190730/a.jpg", "crop_bbox": [0, 0, 10, 10], "sub_bbox": [0, 0, 5, 5],
            "obj_bbox": [5, 5, 9, 9], "sub_class": "person", "obj_class": "orange", "act_class": act,
            "obj_id": 33, "sub_id": 1, "act_id": 17}


@pytest.fixture
def references(tmp_path):
    """Four test files with 2 episodes each, and a train file with 1."""
    episode = [[_image("eat")] * 7, [_image("peel")] * 7, "eat++orange"]
    for split, count in [(s, 2) for s in TESTS] + [("train", 1)]:
        write_episode_file(tmp_path / "refs" / episode_file_name(split), parse_episodes([episode] * count))
    return tmp_path / "refs"


def _all_right(splits, counts):
    return [{"split": s, "episode": e, "query": q, "prediction": q} for s in splits for e in range(counts[s])
            for q in ("positive", "negative")]


def _write(tmp_path, records):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(records))
    return path


def test_labels_and_scores_score_as_hand_computed(tmp_path, references):
    records = _all_right(TESTS, dict.fromkeys(TESTS, 2))
    records[0]["prediction"] = "negative"  # test_seen_obj_seen_act: 3/4
    records[4]["prediction"] = [0.2, 0.8]  # test_seen_obj_unseen_act episode 0 positive query wrong: 3/4
    records[5]["prediction"] = [0.1, 0.3]  # negative query right by scores
    result = evaluate_prediction_file(_write(tmp_path, records), references)
    assert result["accuracy"] == dict(zip(TESTS, [0.75, 0.75, 1.0, 1.0]))
    assert result["test_mean"] == pytest.approx(0.875)
    assert result["episode_accuracy"] == dict(zip(TESTS, [0.5, 0.5, 1.0, 1.0]))


def test_a_subset_of_splits_gives_no_test_mean(tmp_path, references):
    result = evaluate_prediction_file(_write(tmp_path, _all_right(["train"], {"train": 1})), references)
    assert result["accuracy"] == {"train": 1.0} and result["test_mean"] is None


@pytest.mark.parametrize(("change", "error", "message"), [
    (lambda r: r.append(dict(r[0], split="test_seen")), ConfigError, "unknown Bongard-HOI split 'test_seen'"),
    (lambda r: r.append(dict(r[0], split="val_seen_obj_seen_act")), PredictionError, "not among the references"),
    (lambda r: r.append(dict(r[0], episode=2)), PredictionError, r"episode 2 is out of range .* \(expected 0..1\)"),
    (lambda r: r.append(dict(r[0])), PredictionError, "record 4: duplicate prediction .* episode 0, positive query"),
    (lambda r: r.pop(3), PredictionError, "episode 1: the negative query has no prediction"),
    (lambda r: r[0].update(prediction="maybe"), FormatError, "record 0: field 'prediction'"),
    (lambda r: r[1].update(query="other"), FormatError, "record 1: field 'query'"),
    (lambda r: r[2].pop("episode"), FormatError, "record 2: field 'episode': missing key"),
])
def test_bad_prediction_files_get_clear_errors(tmp_path, references, change, error, message):
    records = _all_right(TESTS[:1], {TESTS[0]: 2})
    change(records)
    with pytest.raises(error, match=message):
        evaluate_prediction_file(_write(tmp_path, records), references)


def test_reference_folder_without_episode_files_is_reported(tmp_path):
    with pytest.raises(MissingFilesError, match="bongard_hoi_<split>.json"):
        episode_counts(tmp_path)


def test_cli_prints_and_writes_the_result(tmp_path, references, capsys):
    predictions = _write(tmp_path, _all_right(TESTS, dict.fromkeys(TESTS, 2)))
    code = main(["evaluate", "bongard", "--predictions", str(predictions), "--references", str(references),
                 "--output", str(tmp_path / "out.json")])
    assert code == 0
    assert "test mean (official)" in capsys.readouterr().out
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["test_mean"] == 1.0 and set(written["accuracy"]) == set(TESTS)
    bad = _write(tmp_path, [{"split": "nope", "episode": 0, "query": "positive", "prediction": "positive"}])
    assert main(["evaluate", "bongard", "--predictions", str(bad), "--references", str(references)]) == 2
    assert "unknown Bongard-HOI split 'nope'" in capsys.readouterr().err


def test_typed_route_gives_the_same_arrays_and_leaves_every_error_to_the_record_reader(tmp_path, references):
    import numpy as np

    from bongard_hoi.predictions import episode_counts, prediction_arrays, typed_prediction_arrays

    counts = episode_counts(references)
    records = _all_right(TESTS, dict.fromkeys(TESTS, 2))
    records[0]["prediction"] = [0.2, 0.8]  # scores, a tie (positive wins, as argmax), integers
    records[5]["prediction"], records[6]["prediction"] = [3, 3], [1, 0.5]
    typed = typed_prediction_arrays(json.dumps(records).encode(), counts)
    expected = prediction_arrays(records, counts)
    assert typed is not None and typed[2] == expected[2]
    assert all(np.array_equal(a, b) for a, b in zip(typed[:2] + typed[3:], expected[:2] + expected[3:]))
    broken = [lambda r: r.append(dict(r[0])), lambda r: r.pop(3), lambda r: r[2].update(episode=2),
              lambda r: r[2].update(episode=True), lambda r: r[1].update(query="other"),
              lambda r: r[1].update(split="nope"), lambda r: r[1].update(prediction="maybe"),
              lambda r: r[0].update(prediction=[True, 0.5]), lambda r: r[0].pop("split")]
    for change in broken:
        records = _all_right(TESTS[:1], {TESTS[0]: 2})
        change(records)
        assert typed_prediction_arrays(json.dumps(records).encode(), counts) is None
