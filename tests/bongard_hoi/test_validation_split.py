"""Bongard-HOI model selection without a test split: ``--validation-size`` carves whole training episodes into a
``heldout`` split, scored from their own query labels, and ``--metric-for-best accuracy`` selects there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bongard_hoi.baseline import main

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


@pytest.mark.slow
def test_carved_episodes_are_scored_and_selected_on(tmp_path):
    from bongard_hoi.builder import build_hub
    from bongard_hoi.samples import write_sample

    hub = build_hub(write_sample(tmp_path / "native"), tmp_path / "hub")
    out = tmp_path / "run"
    results = main(["--data", str(hub), "--output-dir", str(out), "--cache-dir", str(tmp_path / "cache"), "--cpu",
                    "--batch-size", "2", "--max-steps", "2", "--eval-steps", "1", "--validation-size", "2",
                    "--metric-for-best", "accuracy", "--eval-splits", "test_seen_obj_seen_act"])
    held = results["splits"]["heldout"]
    assert held["examples"] == 2
    entries = json.loads(Path(held["predictions"]).read_text())
    assert {e["split"] for e in entries} == {"train"} and len(entries) == 4  # two episodes, two queries each
    right = sum((e["prediction"][0] >= e["prediction"][1]) == (e["query"] == "positive") for e in entries)
    assert held["metrics"]["accuracy"] == right / 4
    assert results["best"]["metric"] == "heldout/accuracy"
    assert "train" not in results["overall"].get("accuracy", {})  # the carved episodes are not a result
