"""Fixtures shared by the hoi_sg tests: one synthetic sample per session, copied when a test changes it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hoi_sg_dataset.samples import write_sample


@pytest.fixture(scope="session")
def sample_root(tmp_path_factory) -> Path:
    """The synthetic HICO-DET + V-COCO layout; read-only by convention (use ``sample_copy`` to change it)."""
    return write_sample(tmp_path_factory.mktemp("hoi_sg") / "sample").root


@pytest.fixture
def sample_copy(sample_root, tmp_path) -> Path:
    """A private copy of the sample that a test may change."""
    return Path(shutil.copytree(sample_root, tmp_path / "sample"))
