"""``hoi_bench.forked``: a JSON list decoded in pieces by forked workers gives exactly the one-piece result, and
every way a piece can go wrong (a cut that is not between two elements, a piece that does not decode, a worker
that dies, a failure in this process's own piece) raises ``PieceFailed`` with no worker left behind, so the
caller can read the whole list in one piece instead."""

from __future__ import annotations

import json
import os
import sys
import threading
import warnings

import msgspec
import numpy as np
import pytest

from hoi_bench import forked

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked decoding runs only on Linux")


class Item(msgspec.Struct):
    file_name: str
    values: list[float]


def items(n: int) -> list[dict]:
    return [{"file_name": f"img_{i:04d}.jpg", "values": [i, i / 4, -i]} for i in range(n)]


def columns(piece: bytes | bytearray | memoryview) -> forked.Columns:
    decoded = msgspec.json.decode(piece, type=list[Item])
    return [d.file_name for d in decoded], {
        "values": np.array([d.values for d in decoded], dtype=np.float64).reshape(-1, 3),
        "counts": np.array([len(d.values) for d in decoded], dtype=np.int32),
    }


def split_by_process(here, in_workers):
    """A decode function that runs ``here`` in this process and ``in_workers`` in the forked workers."""
    parent = os.getpid()
    return lambda piece: here(piece) if os.getpid() == parent else in_workers(piece)


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(forked, "MIN_PIECE_BYTES", 64)


def no_worker_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("parts", [2, 3, 5])
def test_pieces_decode_to_exactly_the_whole_list(small_pieces, parts, indent):
    data = bytearray(json.dumps(items(40), indent=indent).encode())
    cuts = forked.list_cuts(data, parts, b"file_name")
    assert len(cuts) == parts - 1
    assert all(data[cut : cut + 1] == b"," for cut in cuts)
    before = bytes(data)
    names, arrays = forked.decode_in_pieces(data, cuts, columns)
    assert data == before
    whole_names, whole = columns(data)
    assert names == whole_names
    for key in whole:
        assert np.array_equal(arrays[key], whole[key]) and arrays[key].dtype == whole[key].dtype
    assert no_worker_left()


def test_a_piece_without_rows_joins_whatever_its_trailing_shape(small_pieces):
    def empty(piece: bytes) -> forked.Columns:
        return columns(piece)[0], {"values": np.zeros((0, 7)), "counts": np.zeros(0, dtype=np.int32)}

    data = bytearray(json.dumps(items(40)).encode())
    names, arrays = forked.decode_in_pieces(data, forked.list_cuts(data, 2, b"file_name"),
                                            split_by_process(columns, empty))
    assert len(names) == 40 and arrays["values"].shape == (len(arrays["counts"]), 3)


def chunked(piece: bytes) -> forked.Columns:
    """``columns`` with each array handed over as per-item chunks, plus an empty chunk of another width."""
    names, arrays = columns(piece)
    return names, {"values": [np.zeros((0, 5)), *np.split(arrays["values"], len(names))],
                   "counts": list(np.split(arrays["counts"], len(names)))}


def test_arrays_given_as_chunks_join_like_whole_arrays(small_pieces):
    data = bytearray(json.dumps(items(40)).encode())
    cuts = forked.list_cuts(data, 3, b"file_name")
    names, arrays = forked.decode_in_pieces(data, cuts, chunked)
    whole_names, whole = columns(data)
    assert names == whole_names
    assert all(np.array_equal(arrays[key], whole[key]) and arrays[key].dtype == whole[key].dtype for key in whole)


@pytest.mark.parametrize("chunks", [[], [np.zeros((2, 3)), np.zeros((2, 3), dtype=np.float32)],
                                    [np.zeros((2, 3)), np.zeros((2, 2))]], ids=["none", "dtypes", "widths"])
def test_chunks_that_do_not_make_one_array_fail(small_pieces, chunks):
    data = bytearray(json.dumps(items(40)).encode())
    with pytest.raises(forked.PieceFailed):
        forked.decode_in_pieces(data, forked.list_cuts(data, 2, b"file_name"),
                                lambda piece: (columns(piece)[0], {"values": chunks}))
    assert no_worker_left()


@pytest.mark.parametrize("change", ["dtype", "trailing shape", "names"])
def test_pieces_whose_arrays_disagree_fail(small_pieces, change):
    def different(piece: bytes) -> forked.Columns:
        names, arrays = columns(piece)
        return names, {"dtype": {**arrays, "counts": arrays["counts"].astype(np.int64)},
                       "trailing shape": {**arrays, "values": arrays["values"][:, :2]},
                       "names": {"values": arrays["values"]}}[change]

    data = bytearray(json.dumps(items(40)).encode())
    with pytest.raises(forked.PieceFailed):
        forked.decode_in_pieces(data, forked.list_cuts(data, 2, b"file_name"), split_by_process(columns, different))
    assert no_worker_left()


def test_no_cut_below_the_minimum_piece_size_or_without_the_first_key(small_pieces, monkeypatch):
    data = json.dumps(items(40)).encode()
    assert forked.list_cuts(data, 4, b"image_id") == []
    monkeypatch.setattr(forked, "MIN_PIECE_BYTES", len(data) // 2)
    assert len(forked.list_cuts(data, 4, b"file_name")) == 1
    monkeypatch.setattr(forked, "MIN_PIECE_BYTES", len(data) + 1)
    assert forked.list_cuts(data, 4, b"file_name") == []


@pytest.mark.parametrize("where", ["inside a string", "inside a nested list"])
def test_a_cut_not_between_two_elements_fails_instead_of_splitting_one(small_pieces, where):
    """The piece before such a cut leaves a string or a bracket open, so it cannot decode."""
    entries = items(40)
    entries[20]["file_name"] = "a,b"
    data = bytearray(json.dumps(entries).encode())
    cut = data.index(b"a,b") + 1 if where == "inside a string" else data.index(b",", data.index(b"[20, 5.0"))
    before = bytes(data)
    with pytest.raises(forked.PieceFailed):
        forked.decode_in_pieces(data, [cut], columns)
    assert no_worker_left() and data == before


def test_the_first_key_inside_a_string_is_escaped_so_never_a_cut(small_pieces):
    entries = items(40)
    entries[20]["file_name"] = 'a,{"file_name": "b'
    data = bytearray(json.dumps(entries).encode())
    cuts = forked.list_cuts(data, 2, b"file_name")
    assert cuts and all(data[:cut].endswith(b"]}") and data[cut:].startswith(b', {"file_name": "img_') for cut in cuts)
    assert forked.decode_in_pieces(data, cuts, columns)[0] == columns(data)[0]


def test_a_piece_that_does_not_decode_in_a_worker_fails(small_pieces):
    entries = items(40)
    entries[-1]["values"] = ["not a number"]
    data = bytearray(json.dumps(entries).encode())
    with pytest.raises(forked.PieceFailed):
        forked.decode_in_pieces(data, forked.list_cuts(data, 3, b"file_name"), columns)
    assert no_worker_left()


def test_a_worker_that_dies_fails_and_is_reaped(small_pieces):
    data = bytearray(json.dumps(items(40)).encode())
    with pytest.raises(forked.PieceFailed):
        forked.decode_in_pieces(data, forked.list_cuts(data, 3, b"file_name"),
                                split_by_process(columns, lambda piece: os._exit(7)))
    assert no_worker_left()


def test_a_failure_in_this_process_stops_the_workers(small_pieces):
    def fails(piece: bytes) -> forked.Columns:
        raise ValueError("bad first piece")

    data = bytearray(json.dumps(items(40)).encode())
    before = bytes(data)
    with pytest.raises(forked.PieceFailed) as failure:
        forked.decode_in_pieces(data, forked.list_cuts(data, 3, b"file_name"), split_by_process(fails, columns))
    assert isinstance(failure.value.__cause__, ValueError)
    assert no_worker_left() and data == before


def test_the_fork_warning_of_python_3_12_does_not_strand_a_worker(small_pieces, monkeypatch):
    """CPython 3.12+ warns after fork when native threads (OpenBLAS's) exist; as an error it must not escape."""
    real_fork = os.fork

    def warning_fork() -> int:
        pid = real_fork()
        if pid:
            warnings.warn(f"This process (pid={os.getpid()}) is multi-threaded, use of fork() may lead to "
                          "deadlocks in the child.", DeprecationWarning, stacklevel=2)
        return pid

    monkeypatch.setattr(os, "fork", warning_fork)
    data = bytearray(json.dumps(items(40)).encode())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        names, _ = forked.decode_in_pieces(data, forked.list_cuts(data, 3, b"file_name"), columns)
    assert names == columns(data)[0] and no_worker_left()


def test_no_fork_while_another_thread_runs():
    assert forked.can_fork(), f"a test left threads running: {[t.name for t in threading.enumerate()]}"
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not forked.can_fork()
    finally:
        stop.set()
        thread.join()
    assert forked.can_fork()
