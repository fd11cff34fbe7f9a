"""Bongard-HOI accuracy: per-query accuracy per split, the official mean of the four test splits, episode accuracy.

Official semantics (NVlabs ``train_meta_image_dist_bbox.py``): every episode yields two queries, the positive one
(label 0, "belongs to the positive set") and the negative one (label 1). A query is right when the argmax of its
two scores is its label; a split's accuracy is the mean over its ``2 x episodes`` queries, and ``--test_only``
reports the unweighted mean of the four test splits. The share of episodes with both queries right is an extra,
not an official number. Pure numpy: the metric module and the CLI both call ``bongard_accuracy``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bongard_hoi.formats import SPLITS, TEST_SPLITS
from hoi_bench.errors import ConfigError, PredictionError

POSITIVE, NEGATIVE = 0, 1
SIDES = ("positive", "negative")


def decisions_from_scores(scores: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Side chosen for each query from ``[score of the positive set, score of the negative set]`` rows.

    The argmax, as the official ``compute_acc``; a tie picks the positive set (``argmax`` takes the first).

    >>> decisions_from_scores([[0.9, 0.1], [0.2, 0.7], [0.5, 0.5]]).tolist()
    [0, 1, 0]
    """
    array = np.asarray(scores, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 2:
        raise PredictionError(f"scores must be N x 2 ([positive set, negative set] per query), found shape "
                              f"{array.shape}")
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if bad.size:
        raise PredictionError(f"query {bad[0]}: scores must be finite, found {array[bad[0]].tolist()}")
    return np.argmax(array, axis=1).astype(np.int64)


def _check_labels(values, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise PredictionError(f"{what} must be one label per query, found shape {array.shape}")
    if array.size and not np.isin(array, (POSITIVE, NEGATIVE)).all():
        index = int(np.flatnonzero(~np.isin(array, (POSITIVE, NEGATIVE)))[0])
        raise PredictionError(f"{what}[{index}]: expected 0 (positive set) or 1 (negative set), found {array[index].item()!r}")
    return array.astype(np.int64)


def bongard_accuracy(
    predictions: Sequence[int] | np.ndarray,
    references: Sequence[int] | np.ndarray,
    splits: Sequence[str],
    episodes: Sequence[int] | np.ndarray | None = None,
) -> dict:
    """Accuracy per split, ``test_mean`` and (given ``episodes``) the both-queries-right rate per split.

    ``predictions`` are chosen sides per query (0 positive set, 1 negative set; see ``decisions_from_scores``),
    ``references`` the true sides, ``splits`` each query's split name, ``episodes`` its episode index. Returns
    ``{"accuracy": {split: float}, "test_mean": float | None, "episode_accuracy": {split: float} | None,
    "num_queries": {split: int}}``; ``test_mean`` is None unless all four test splits are present.

    >>> result = bongard_accuracy([0, 1, 1, 1], [0, 1, 0, 1], ["train"] * 4, episodes=[0, 0, 1, 1])
    >>> result["accuracy"], result["episode_accuracy"], result["test_mean"]
    ({'train': 0.75}, {'train': 0.5}, None)
    """
    predicted = _check_labels(predictions, "predictions")
    reference = _check_labels(references, "references")
    split_names = np.asarray(list(splits), dtype=object)
    if not (len(predicted) == len(reference) == len(split_names)):
        raise PredictionError(f"predictions, references and splits differ in length: {len(predicted)}, "
                              f"{len(reference)}, {len(split_names)}")
    unknown = sorted(set(split_names.tolist()) - set(SPLITS))
    if unknown:
        raise ConfigError("Bongard-HOI split", unknown[0], SPLITS)
    present = [s for s in SPLITS if s in set(split_names.tolist())]
    correct = predicted == reference
    accuracy = {s: float(correct[split_names == s].mean()) for s in present}
    num_queries = {s: int((split_names == s).sum()) for s in present}
    test_mean = float(np.mean([accuracy[s] for s in TEST_SPLITS])) if all(s in accuracy for s in TEST_SPLITS) else None
    episode_accuracy = None
    if episodes is not None:
        episode_ids = np.asarray(episodes)
        if len(episode_ids) != len(predicted):
            raise PredictionError(f"episodes has {len(episode_ids)} entries for {len(predicted)} queries")
        episode_accuracy = {s: _both_right_rate(correct, reference, episode_ids, split_names, s) for s in present}
    return {"accuracy": accuracy, "test_mean": test_mean, "episode_accuracy": episode_accuracy,
            "num_queries": num_queries}


def _both_right_rate(correct, reference, episode_ids, split_names, split: str) -> float:
    """Share of the split's episodes whose two queries are both right; each episode needs exactly both queries."""
    mask = split_names == split
    keys = episode_ids[mask].astype(np.int64) * 2 + reference[mask]
    unique, counts = np.unique(keys, return_counts=True)
    if (counts > 1).any():
        key = int(unique[counts > 1][0])
        raise PredictionError(f"split {split!r}: episode {key // 2}: the {SIDES[key % 2]} query appears "
                              f"{int(counts[counts > 1][0])} times")
    episodes_seen, per_episode = np.unique(unique // 2, return_counts=True)
    if (per_episode != 2).any():
        episode = int(episodes_seen[per_episode != 2][0])
        have = SIDES[int(unique[unique // 2 == episode][0] % 2)]
        raise PredictionError(f"split {split!r}: episode {episode}: only the {have} query is given; both are needed")
    order = np.argsort(keys, kind="stable")
    both = correct[mask][order].reshape(-1, 2).all(axis=1)
    return float(both.mean())


def summary_rows(result: Mapping) -> list[list]:
    """``[split, accuracy, episode accuracy]`` rows for a results table, test mean last."""
    episode = result.get("episode_accuracy") or {}
    rows = [[split, value, episode.get(split)] for split, value in result["accuracy"].items()]
    if result.get("test_mean") is not None:
        rows.append(["test mean (official)", result["test_mean"], None])
    return rows
