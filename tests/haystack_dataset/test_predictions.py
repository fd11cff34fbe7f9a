"""The prediction readers: recall JSON (typed decoding), the columnar recall NPZ and its round trip, NPY blocks."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from haystack_dataset.predictions import (
    NpyRows,
    RecallPrediction,
    read_recall_predictions,
    write_recall_npz,
    write_recall_predictions,
)
from hoi_bench.errors import FormatError, PredictionError

ENTRY = {"image_id": "7", "pairs": [[0, 1], [1, 0]], "predicate_scores": [[0.5, 0.2, 0.3], [0.1, 0.8, 0.1]]}


def _write(tmp_path, entries, name="pred.json"):
    path = tmp_path / name
    path.write_text(json.dumps(entries))
    return path


@pytest.mark.parametrize(("change", "pattern"), [
    ({"predicate_scores": [[0.5, "x", 0.3], [0.1, 0.8, 0.1]]},
     r"pred.json: record 1: field 'predicate_scores\[0\]\[1\]': wrong shape or type \(expected rows of numbers, "
     r"found 'str'\)"),
    ({"pairs": [[0, 1, 2], [1, 0]]}, r"record 1: field 'pairs\[0\]': wrong shape or type"),
    ({"pairs": [[0, True], [1, 0]]}, r"record 1: field 'pairs\[0\]\[1\]': wrong shape or type"),
    ({"predicate_scores": [[0.5, 0.2, 0.3]]}, r"record 1: field 'predicate_scores': wrong shape \(expected 2 rows"),
    ({"predicate_scores": [[0.5, 0.2, 0.3], [0.1]]}, r"rows \(one per pair\) of equal length, found '2 rows "
                                                      r"of lengths \[1, 3\]'"),
    ({"boxes": [[0, 0, 1, 1]]}, r"record 1: field 'boxes/labels': boxes and labels go together"),
    ({"boxes": [[0, 0, 1, 1]], "labels": [0, 1]}, r"record 1: field 'labels': wrong shape"),
    ({"image_id": "7"}, r"record 1: field 'image_id': duplicate image"),
    ({"image_id": None}, r"record 1: field 'image_id': wrong type"),
])
def test_recall_json_errors_name_the_entry_and_field(tmp_path, change, pattern):
    path = _write(tmp_path, [ENTRY, dict(ENTRY, image_id="8") | change])
    with pytest.raises(FormatError, match=pattern):
        read_recall_predictions(path)


def test_recall_json_missing_key_and_wrong_top_level(tmp_path):
    with pytest.raises(FormatError, match=r"record 0: field 'pairs': missing key"):
        read_recall_predictions(_write(tmp_path, [{"image_id": 1, "predicate_scores": []}]))
    with pytest.raises(FormatError, match="must be a JSON list of per-image objects"):
        read_recall_predictions(_write(tmp_path, {"image_id": 1}))


def test_recall_json_with_nan_tokens_is_refused_as_before(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text('[{"image_id": 1, "pairs": [[0, 1]], "predicate_scores": [[0.1, NaN]]}]')
    with pytest.raises(PredictionError, match=r"entry 0: field 'predicate_scores': expected finite numbers"):
        read_recall_predictions(path)


def test_recall_json_gz_reads_like_json(tmp_path):
    plain = read_recall_predictions(_write(tmp_path, [ENTRY]))
    packed = tmp_path / "pred.json.gz"
    packed.write_bytes(gzip.compress(json.dumps([ENTRY]).encode()))
    again = read_recall_predictions(packed)
    assert np.array_equal(plain[0].predicate_scores, again[0].predicate_scores)


def _predictions():
    return [
        RecallPrediction("1", np.array([[0, 1], [1, 0]]), np.array([[0.5, 0.25, 0.25], [0.1, 0.3, 0.6]])),
        RecallPrediction(2, np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3))),
        RecallPrediction("3", np.array([[1, 2]]), np.array([[0.2, 0.2, 0.6]]),
                         boxes=np.array([[0, 0, 1, 1], [1, 1, 2, 2.5], [0, 0, 3, 3]]), labels=np.array([4, 0, 2]),
                         object_scores=np.array([0.9, 0.8, 0.7])),
        RecallPrediction("4", np.array([[0, 1]]), np.array([[0.2, 0.2, 0.6]]), object_scores=np.array([0.5, 1.0])),
    ]


@pytest.mark.parametrize("via", ["npz", "json then npz"])
def test_columnar_npz_round_trip_keeps_every_array(tmp_path, via):
    predictions = _predictions()
    if via == "npz":
        path = write_recall_npz(tmp_path / "p.npz", predictions)
    else:
        source = read_recall_predictions(write_recall_predictions(tmp_path / "p.json", predictions))
        path = write_recall_predictions(tmp_path / "p.npz", source)
    again = read_recall_predictions(path)
    assert [p.key for p in again] == [p.key for p in predictions]
    for before, after in zip(predictions, again):
        for name in ("pairs", "predicate_scores", "boxes", "labels", "object_scores"):
            first, second = getattr(before, name), getattr(after, name)
            assert (first is None) == (second is None), name
            if first is not None:
                assert np.array_equal(np.asarray(first).reshape(np.shape(second)), second), name


def _many_entries(n: int) -> list[dict]:
    """PredCls, SGDet and empty entries with string and integer image ids, as a recall JSON list."""
    entries = []
    for i in range(n):
        entry = _predictions()[i % 4].to_json()
        entry["image_id"] = i if i % 3 else str(i)
        entries.append(entry)
    return entries


def test_reading_in_forked_pieces_gives_the_one_process_entries(tmp_path, forked_pieces):
    path = _write(tmp_path, _many_entries(40))
    pieces = read_recall_predictions(path, workers=3)
    assert forked_pieces == [(3, "decoded")]
    whole = read_recall_predictions(path)
    assert [(p.image_id, type(p.image_id)) for p in pieces] == [(p.image_id, type(p.image_id)) for p in whole]
    for a, b in zip(pieces, whole):
        assert a.to_json() == b.to_json()
        for name in ("pairs", "predicate_scores", "boxes", "labels", "object_scores"):
            first, second = getattr(a, name), getattr(b, name)
            assert (first is None) == (second is None) and (first is None or first.dtype == second.dtype), name


@pytest.mark.parametrize(("where", "change"), [
    ("an image listed in two pieces", {"image_id": "0"}),
    ("a bad entry in a worker's piece", {"pairs": [[0, True]]}),
])
def test_a_problem_found_in_pieces_gets_the_one_process_message(tmp_path, forked_pieces, where, change):
    entries = _many_entries(40)
    entries[39] |= change
    path = _write(tmp_path, entries)
    with pytest.raises(FormatError) as one_process:
        read_recall_predictions(path)
    with pytest.raises(FormatError) as in_pieces:
        read_recall_predictions(path, workers=3)
    assert forked_pieces == [(3, "decoded" if "two pieces" in where else "failed")]
    assert str(in_pieces.value) == str(one_process.value) and in_pieces.value.record == 39


def test_npz_errors_name_the_array(tmp_path):
    path = write_recall_npz(tmp_path / "p.npz", _predictions())
    with np.load(path) as archive:
        arrays = dict(archive)
    broken = dict(arrays, pair_counts=arrays["pair_counts"] + 1)
    np.savez(tmp_path / "counts.npz", **broken)
    with pytest.raises(FormatError, match=r"counts.npz: field 'pair_counts': counts do not add up"):
        read_recall_predictions(tmp_path / "counts.npz")
    np.savez(tmp_path / "foreign.npz", rows=np.zeros(3))
    with pytest.raises(FormatError, match=r"foreign.npz: field 'format': not a hoi-bench recall NPZ"):
        read_recall_predictions(tmp_path / "foreign.npz")
    scores = arrays["predicate_scores"].copy()
    scores[0, 1] = np.inf
    np.savez(tmp_path / "inf.npz", **dict(arrays, predicate_scores=scores))
    with pytest.raises(PredictionError, match=r"inf.npz: array 'predicate_scores': expected finite numbers"):
        read_recall_predictions(tmp_path / "inf.npz")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(FormatError, match=r"junk.npz: unreadable .npz file"):
        read_recall_predictions(tmp_path / "junk.npz")


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_npy_blocks_cover_the_file_in_order(tmp_path, order, dtype):
    rows = np.asarray(np.random.default_rng(0).random((10, 6)), dtype=dtype, order=order)
    np.save(tmp_path / "rows.npy", rows)
    reader = NpyRows(tmp_path / "rows.npy")
    assert reader.shape == (10, 6) and reader.dtype == dtype
    blocks = [(start, block.copy()) for start, block in reader.blocks(4)]
    assert [start for start, _ in blocks] == [0, 4, 8]
    assert np.array_equal(np.concatenate([b for _, b in blocks]), rows)


def test_npy_header_problems_are_named(tmp_path):
    np.save(tmp_path / "flat.npy", np.zeros(5))
    with pytest.raises(FormatError, match=r"flat.npy: wrong array shape"):
        NpyRows(tmp_path / "flat.npy")
    np.save(tmp_path / "text.npy", np.array([["a", "b", "c", "d"]]))
    with pytest.raises(FormatError, match=r"text.npy: the array does not hold numbers"):
        NpyRows(tmp_path / "text.npy")
    np.save(tmp_path / "cut.npy", np.zeros((100, 5)))
    data = (tmp_path / "cut.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-80])
    with pytest.raises(FormatError, match=r"cut.npy: truncated .npy file"):
        NpyRows(tmp_path / "cut.npy")
