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


@pytest.fixture(scope="session")
def hoi_sg_demo(tmp_path_factory):
    """The hoi_sg demo steps (every config of the sample built into a Hub folder, then split 1 scored) run once
    per session: ``(context, said, out_dir)``. Read-only: a test that writes into it copies ``out_dir`` first."""
    from hoi_bench.plugins import DemoContext
    from hoi_sg_dataset import cli, evaluation_cli

    out = tmp_path_factory.mktemp("hoi-sg-demo-output")
    said: list[str] = []
    context = DemoContext(out_dir=out, say=said.append)
    cli.run_demo(context)
    evaluation_cli.run_demo(context)
    return context, said, out


@pytest.fixture(scope="session")
def hoi_sg_annotation_only_hub(tmp_path_factory) -> tuple[Path, Path]:
    """``hoi-bench build hoi_sg --no-images`` with its default configs (every one the data allows) on a sample
    whose image folders are removed: ``(hub_folder, sample_root)``. Read-only."""
    import shutil

    from hoi_bench.cli import main
    from hoi_sg_dataset.samples import write_sample

    work = tmp_path_factory.mktemp("hoi-sg-annotation-only")
    root = write_sample(work / "sample").root
    for folder in root.glob("*/images"):
        shutil.rmtree(folder)
    assert main(["build", "hoi_sg", "--data-dir", str(root), "--no-images", "--out", str(work / "hoi_sg")]) == 0
    return work / "hoi_sg", root


@pytest.fixture
def fresh_accelerate_state():
    """accelerate's process-wide state reset after the test, so the next in-process run builds its own
    ``Accelerator`` (mixed precision, gradient accumulation) instead of reusing this one's. Training test modules
    use it through ``pytestmark``."""
    from accelerate.state import AcceleratorState, GradientState

    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
