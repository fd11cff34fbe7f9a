"""Prediction files for ``hoi-bench evaluate bongard_accuracy`` and the episode counts they are checked against.

A prediction file is a JSON list of ``{"split", "episode", "query": "positive"|"negative", "prediction"}`` where
``prediction`` is ``"positive"``/``"negative"`` (the side the query is judged to belong to) or
``[score of the positive set, score of the negative set]``. ``episode`` is the 0-based index in the split's file.
For every split that appears, every episode must have both queries, exactly once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bongard_hoi.evaluation import SIDES, bongard_accuracy, decisions_from_scores
from bongard_hoi.formats import SPLITS, count_episodes, split_of_file
from hoi_bench.errors import ConfigError, FormatError, MissingFilesError, PredictionError
from hoi_bench.files import read_bytes, read_json


def read_prediction_file(path: str | os.PathLike) -> list:
    path = Path(path)
    data = read_json(path, what="prediction file")
    if not isinstance(data, list):
        raise FormatError(str(path), "a prediction file is a JSON list of query predictions", expected="list",
                          found=type(data).__name__)
    return data


def episode_counts(references: str | os.PathLike) -> dict[str, int]:
    """``{split: number of episodes}`` from official episode files in a folder, or from a built Hub folder.

    A built folder is recognised by its ``README.md``; its parquet row counts are read without loading images.
    """
    root = Path(references)
    if root.is_file():
        return {split_of_file(root): count_episodes(root)}
    if (root / "README.md").is_file() and (root / "episodes").is_dir():
        import pyarrow.parquet as pq

        counts: dict[str, int] = {}
        for shard in sorted((root / "episodes").glob("*.parquet")):
            split = shard.name.split("-")[0]
            counts[split] = counts.get(split, 0) + pq.ParquetFile(shard).metadata.num_rows
        return counts
    files = sorted(root.glob("bongard_hoi_*.json"))
    if not files:
        raise MissingFilesError(str(root), [("bongard_hoi_<split>.json (or a Hub folder with README.md and "
                                             "episodes/*.parquet)")], what="reference files")
    return {split_of_file(f): count_episodes(f) for f in files}


def prediction_arrays(records: list, counts: Mapping[str, int], file: str = "<predictions>"):
    """``(predicted, references, splits, episodes)`` arrays from prediction records, fully validated."""
    seen: set[tuple[str, int, str]] = set()
    predicted, reference, splits, episodes = [], [], [], []
    for index, record in enumerate(records):
        split, episode, query, decision = _parse_record(record, index, file, counts)
        key = (split, episode, query)
        if key in seen:
            raise PredictionError(f"{file}: record {index}: duplicate prediction for split {split!r}, episode "
                                  f"{episode}, {query} query")
        seen.add(key)
        predicted.append(decision)
        reference.append(SIDES.index(query))
        splits.append(split)
        episodes.append(episode)
    for split in sorted({s for s, _, _ in seen}, key=SPLITS.index):
        for episode in range(counts[split]):
            for query in SIDES:
                if (split, episode, query) not in seen:
                    raise PredictionError(f"{file}: split {split!r}, episode {episode}: the {query} query has no "
                                          f"prediction (every episode of a predicted split needs both queries)")
    return np.array(predicted, dtype=np.int64), np.array(reference, dtype=np.int64), splits, np.array(episodes)


def _parse_record(record, index: int, file: str, counts: Mapping[str, int]):
    if not isinstance(record, dict):
        raise FormatError(file, "a query prediction is an object", record=index, expected="dict", found=record)
    for key in ("split", "episode", "query", "prediction"):
        if key not in record:
            raise FormatError(file, "missing key", record=index, field=key,
                              expected='{"split", "episode", "query", "prediction"}', found=sorted(record))
    split, episode, query, prediction = (record[k] for k in ("split", "episode", "query", "prediction"))
    if split not in counts:
        if split in SPLITS:
            raise PredictionError(f"{file}: record {index}: split {split!r} is not among the references "
                                  f"({', '.join(counts)})")
        raise ConfigError("Bongard-HOI split", split, list(counts))
    if isinstance(episode, bool) or not isinstance(episode, int) or not 0 <= episode < counts[split]:
        raise PredictionError(f"{file}: record {index}: episode {episode!r} is out of range for split {split!r} "
                              f"(expected 0..{counts[split] - 1})")
    if query not in SIDES:
        raise FormatError(file, "bad query", record=index, field="query", expected='"positive" or "negative"',
                          found=query)
    if prediction in SIDES:
        decision = SIDES.index(prediction)
    elif (isinstance(prediction, list) and len(prediction) == 2
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in prediction)):
        try:
            decision = int(decisions_from_scores([prediction])[0])
        except PredictionError as error:
            raise FormatError(file, str(error), record=index, field="prediction") from error
    else:
        raise FormatError(file, "bad prediction", record=index, field="prediction",
                          expected='"positive", "negative" or [positive-set score, negative-set score]',
                          found=prediction)
    return split, episode, query, decision


def evaluate_prediction_file(predictions: str | os.PathLike, references: str | os.PathLike) -> dict:
    """Score a prediction file against reference episodes: the ``evaluate bongard_accuracy`` output dict.

    The file is decoded by msgspec into typed records and checked with numpy
    (:func:`typed_prediction_arrays`); a file failing any check is read again by :func:`prediction_arrays`,
    which names the offending record.
    """
    counts = episode_counts(references)
    arrays = typed_prediction_arrays(read_bytes(predictions, "prediction file"), counts)
    if arrays is None:
        arrays = prediction_arrays(read_prediction_file(predictions), counts, file=str(predictions))
    return bongard_accuracy(*arrays)


def typed_prediction_arrays(data: bytes, counts: Mapping[str, int]):
    """:func:`prediction_arrays` of a prediction file's bytes; ``None`` when any record would need an error.

    The record types (a split name, an integer episode, a side, a side or two numbers) are checked in
    compiled code by msgspec; ranges, duplicates and completeness are checked on numpy arrays.
    """
    import msgspec

    try:
        records = _prediction_decoder().decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    split_names = [record.split for record in records]
    present = sorted(set(split_names), key=lambda name: SPLITS.index(name) if name in SPLITS else len(SPLITS))
    if any(name not in counts for name in present):
        return None
    split_index = {name: i for i, name in enumerate(present)}
    split_of = np.array([split_index[name] for name in split_names], dtype=np.int64)
    episodes = np.array([record.episode for record in records], dtype=np.int64)
    limit = np.array([counts[name] for name in present], dtype=np.int64)
    if len(records) and ((episodes < 0) | (episodes >= limit[split_of])).any():
        return None
    reference = np.array([SIDES.index(record.query) for record in records], dtype=np.int64)
    keys = (np.cumsum(np.r_[0, 2 * limit])[split_of] + 2 * episodes + reference) if len(records) else episodes
    if len(np.unique(keys)) != len(keys) or len(keys) != 2 * int(limit.sum()):
        return None  # a duplicate, or an episode of a predicted split without both queries
    predicted = np.empty(len(records), dtype=np.int64)
    for i, record in enumerate(records):
        prediction = record.prediction
        if isinstance(prediction, str):
            predicted[i] = SIDES.index(prediction)
        else:  # argmax of [positive set, negative set]; a tie picks the positive set
            predicted[i] = int(prediction[1] > prediction[0])
    return predicted, reference, split_names, episodes


@functools.lru_cache(maxsize=1)
def _prediction_decoder():
    from typing import Literal

    import msgspec

    side = Literal["positive", "negative"]
    record = msgspec.defstruct("QueryPrediction", [("split", str), ("episode", int), ("query", side),
                                                   ("prediction", side | tuple[float, float])], gc=False)
    return msgspec.json.Decoder(list[record])
