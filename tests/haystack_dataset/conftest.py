"""Shared fixtures: one synthetic native layout and one built Hub folder per test session; the hand-checked
fixtures and the loop references importable as ``haystack_fixtures``, ``loop_reference`` and
``recall_reference``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from haystack_dataset.samples import write_sample


def _load(name: str, file: str) -> None:
    if name not in sys.modules:  # tests run with --import-mode=importlib: sibling modules are not on sys.path
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_load("haystack_fixtures", "fixtures.py")
_load("loop_reference", "loop_reference.py")
_load("recall_reference", "recall_reference.py")


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    """The synthetic PSG + Haystack native layout of ``haystack_dataset.samples`` (do not modify in tests)."""
    return write_sample(tmp_path_factory.mktemp("haystack-native") / "native")


@pytest.fixture(scope="session")
def hub_folder(sample, tmp_path_factory):
    """Both configs of the sample built into one Hub folder."""
    from haystack_dataset.builder import build

    return build(sample.root, tmp_path_factory.mktemp("haystack-hub") / "hub")
