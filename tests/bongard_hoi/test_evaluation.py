"""Accuracy math against hand-computed values, and clear errors for bad inputs."""

from __future__ import annotations

import pytest

from bongard_hoi.evaluation import bongard_accuracy, decisions_from_scores
from bongard_hoi.formats import TEST_SPLITS
from hoi_bench.errors import ConfigError, PredictionError


def test_split_accuracy_is_per_query_and_test_mean_is_unweighted():
    # test splits with 1, 2, 1, 2 episodes: accuracies 1/2, 3/4, 2/2, 0/4
    splits, predictions, references = [], [], []
    for split, decisions in zip(TEST_SPLITS, ([0, 0], [0, 1, 0, 0], [0, 1], [1, 0, 1, 0])):
        splits += [split] * len(decisions)
        predictions += decisions
        references += [0, 1] * (len(decisions) // 2)
    result = bongard_accuracy(predictions, references, splits)
    assert result["accuracy"] == dict(zip(TEST_SPLITS, [0.5, 0.75, 1.0, 0.0]))
    assert result["test_mean"] == pytest.approx((0.5 + 0.75 + 1.0 + 0.0) / 4)  # pooled would be 6/12
    assert result["num_queries"] == dict(zip(TEST_SPLITS, [2, 4, 2, 4]))
    assert result["episode_accuracy"] is None


def test_test_mean_needs_all_four_test_splits():
    result = bongard_accuracy([0, 1], [0, 1], [TEST_SPLITS[0], TEST_SPLITS[1]])
    assert result["test_mean"] is None


def test_episode_accuracy_counts_episodes_with_both_queries_right():
    # episodes 0 (both right), 1 (positive wrong), 2 (both right), listed out of order
    result = bongard_accuracy([0, 1, 0, 1, 0, 1], [0, 1, 1, 0, 0, 1], ["train"] * 6, episodes=[2, 2, 1, 1, 0, 0])
    assert result["accuracy"]["train"] == pytest.approx(4 / 6)
    assert result["episode_accuracy"]["train"] == pytest.approx(2 / 3)


def test_scores_are_reduced_by_argmax_with_ties_to_the_positive_set():
    assert decisions_from_scores([[0.1, 0.9], [3, -1], [0.5, 0.5]]).tolist() == [1, 0, 0]
    with pytest.raises(PredictionError, match=r"query 1: scores must be finite"):
        decisions_from_scores([[0.1, 0.9], [float("nan"), 0]])
    with pytest.raises(PredictionError, match=r"N x 2"):
        decisions_from_scores([0.1, 0.9])


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"splits": ["test_seen"] * 2}, ConfigError, "unknown Bongard-HOI split 'test_seen'"),
    ({"predictions": [0, 2]}, PredictionError, r"predictions\[1\]: expected 0 .* found 2"),
    ({"references": [0]}, PredictionError, "differ in length: 2, 1, 2"),
    ({"episodes": [0, 0], "references": [0, 0]}, PredictionError, "episode 0: the positive query appears 2 times"),
    ({"episodes": [0, 1]}, PredictionError, "episode 0: only the positive query is given"),
])
def test_bad_inputs_are_named(kwargs, error, message):
    arguments = {"predictions": [0, 1], "references": [0, 1], "splits": ["train"] * 2, **kwargs}
    with pytest.raises(error, match=message):
        bongard_accuracy(**arguments)
