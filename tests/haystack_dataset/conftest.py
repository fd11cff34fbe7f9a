"""Shared fixtures: one synthetic native layout and one built Hub folder per test session."""

from __future__ import annotations

import pytest

from haystack_dataset.samples import write_sample


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    """The synthetic PSG + Haystack native layout of ``haystack_dataset.samples`` (do not modify in tests)."""
    return write_sample(tmp_path_factory.mktemp("haystack-native") / "native")


@pytest.fixture(scope="session")
def hub_folder(sample, tmp_path_factory):
    """Both configs of the sample built into one Hub folder."""
    from haystack_dataset.builder import build

    return build(sample.root, tmp_path_factory.mktemp("haystack-hub") / "hub")
