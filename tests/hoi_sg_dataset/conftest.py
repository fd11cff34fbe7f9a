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


@pytest.fixture(scope="module")
def hub(hoi_sg_demo, tmp_path_factory) -> Path:
    """The session demo's Hub folder (every config of the sample, images embedded) and its sample, linked into
    a folder of the test module, so that the caches and runs written beside them stay out of the demo output.
    Modules that build a Hub folder of their own define their own ``hub``."""
    _, _, demo = hoi_sg_demo
    root = tmp_path_factory.mktemp("hoi_sg")
    (root / "sample").symlink_to(demo / "work" / "hoi_sg" / "sample", target_is_directory=True)
    (root / "hub").symlink_to(demo / "hoi_sg", target_is_directory=True)
    return root / "hub"
