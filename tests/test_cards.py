"""Every dataset card links its baseline with a launch command for a module that exists."""

from __future__ import annotations

import importlib
from importlib import resources

import pytest

PACKAGES = ["hoi_sg_dataset", "haystack_dataset", "bongard_hoi", "sportshhi"]


@pytest.mark.parametrize("package", PACKAGES)
def test_card_links_a_runnable_baseline(package):
    card = resources.files(package).joinpath("card.md").read_text(encoding="utf-8")
    assert f"accelerate launch -m {package}.baseline" in card
    assert "{{citation}}" in card and "{{configs}}" in card
    assert hasattr(importlib.import_module(f"{package}.baseline"), "main")
