"""Test-wide settings: offline Hugging Face libraries with a throw-away cache, and the shared anchors."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

for _name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("HF_UPDATE_DOWNLOAD_COUNTS", "0")
if "HF_HOME" not in os.environ:
    os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="hoi-bench-test-hf-home-")

# imported only now: the environment above must be set before datasets/evaluate are imported
import pytest
import tqdm
from hypothesis import settings

# tqdm's monitor thread would outlive the first progress bar for the whole session; hoi_bench.forked does not fork
# while a second Python thread runs, so it would turn the forked-reading tests that follow into one-process reads
tqdm.tqdm.monitor_interval = 0

# CI replays the same examples on every run (a red build always reproduces); developers get fresh examples.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("dev", database=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ANCHORS = Path(__file__).resolve().parents[1].parent / "shared" / "anchors"


@pytest.fixture(scope="session")
def anchors_dir() -> Path:
    """``../shared/anchors``; tests using it skip, naming the path, in a clone without ``../shared``."""
    if not ANCHORS.is_dir():
        pytest.skip(f"anchor files not found at {ANCHORS} (clone hoi-bench beside ../shared to run this test)")
    return ANCHORS


@pytest.fixture
def forked_pieces(monkeypatch) -> list[tuple[int, str]]:
    """``hoi_bench.forked`` with pieces of a few hundred bytes, so small test files are read in pieces, and the
    record of every forked decode: ``(pieces, "decoded" or "failed")``."""
    import threading

    from hoi_bench import forked

    if not sys.platform.startswith("linux"):
        pytest.skip("forked decoding runs only on Linux")
    assert forked.can_fork(), f"a test left threads running: {[t.name for t in threading.enumerate()]}"
    monkeypatch.setattr(forked, "MIN_PIECE_BYTES", 256)
    calls = []
    real = forked.decode_in_pieces

    def recorded(data, cuts, decode):
        try:
            result = real(data, cuts, decode)
        except forked.PieceFailed:
            calls.append((len(cuts) + 1, "failed"))
            raise
        calls.append((len(cuts) + 1, "decoded"))
        return result

    monkeypatch.setattr(forked, "decode_in_pieces", recorded)
    return calls
