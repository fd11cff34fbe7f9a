"""Test-wide settings: offline Hugging Face libraries with a throw-away cache, and the shared anchors."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

for _name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("HF_UPDATE_DOWNLOAD_COUNTS", "0")
if "HF_HOME" not in os.environ:
    os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="hoi-bench-test-hf-home-")

# imported only now: the environment above must be set before datasets/evaluate are imported
import pytest
from hypothesis import settings

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
