"""Shared fixtures: the synthetic SportsHHI release and its Hub folder, built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from sportshhi.builder import build_sportshhi_folder
from sportshhi.samples import SampleLayout, write_sample


@pytest.fixture(scope="session")
def sample(tmp_path_factory) -> SampleLayout:
    """The default synthetic release (3 videos × 8 keyframes); tests must not modify it."""
    return write_sample(tmp_path_factory.mktemp("sportshhi") / "release")


@pytest.fixture(scope="session")
def hub_folder(sample, tmp_path_factory) -> Path:
    """The sample built into a Hub folder with the default (official) context clip."""
    return build_sportshhi_folder(sample.root, tmp_path_factory.mktemp("sportshhi-hub") / "sportshhi")
