"""The ProtoNet-style baseline (bongard_hoi.baseline) on the synthetic episode sample."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bongard_hoi.baseline import TEST_SPLITS, main
from bongard_hoi.predictions import evaluate_prediction_file, read_prediction_file
from bongard_hoi.samples import EVAL_EPISODES
from tests.tracked_run import assert_tracked_run_reloads

STEPS = 2


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    from accelerate.state import AcceleratorState, GradientState

    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    from bongard_hoi.builder import build_hub
    from bongard_hoi.samples import write_sample

    root = tmp_path_factory.mktemp("bongard")
    return build_hub(write_sample(root / "native"), root / "hub")


def common(hub: Path, output_dir: Path, *extra: str) -> list[str]:
    return ["--data", str(hub), "--output-dir", str(output_dir), "--cache-dir", str(hub.parent / "cache"),
            "--cpu",
            "--batch-size", "4", *extra]


@pytest.fixture(scope="module")
def launched(hub) -> Path:
    """ProtoNet trained two steps through ``accelerate launch`` (one process), checkpoint every step."""
    out = hub.parent / "protonet"
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--cpu",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--num_machines", "1",
               "-m", "bongard_hoi.baseline",
               *common(hub, out, "--max-steps", str(STEPS), "--checkpointing-steps", "1", "--log-every", "1")]
    completed = subprocess.run(command, check=False, env=dict(os.environ), capture_output=True, text=True,
                               timeout=600)
    assert completed.returncode == 0, completed.stderr[-4000:]
    return out


def test_protonet_through_accelerate_writes_a_prediction_file_the_reader_accepts(launched, hub):
    results = json.loads((launched / "results.json").read_text())
    path = Path(results["overall"]["predictions"])
    entries = read_prediction_file(path)
    assert len(entries) == 2 * EVAL_EPISODES * len(TEST_SPLITS)  # two queries per episode, every test split
    assert {e["split"] for e in entries} == set(TEST_SPLITS)
    scored = evaluate_prediction_file(path, hub)  # checks every episode has both queries exactly once
    assert scored["test_mean"] == pytest.approx(np.mean([scored["accuracy"][s] for s in TEST_SPLITS]))
    assert results["overall"]["test_mean"] == scored["test_mean"]


def test_resume_continues_from_the_saved_step(launched, hub, tmp_path):
    out = tmp_path / "resumed"
    shutil.copytree(launched, out)
    results = main(common(hub, out, "--max-steps", "3", "--log-every", "1", "--eval-splits",
                          "--resume", str(out / "checkpoints" / "step_0000001")))
    history = json.loads((out / "log.json").read_text())["history"]
    original = json.loads((launched / "log.json").read_text())["history"]
    assert results["steps"] == 3
    assert [e["step"] for e in history] == [1, 2, 3]
    assert history[0] == original[0]
    # step 2 is replayed identically after loading the step-1 state
    np.testing.assert_allclose(history[1]["loss"], original[1]["loss"], rtol=1e-4)


def test_loss_decreases_on_a_fixed_batch(hub, tmp_path):
    main(common(hub, tmp_path / "overfit", "--overfit-batches", "1", "--max-steps", "8",
                "--learning-rate", "3e-3", "--log-every", "1", "--eval-splits"))
    losses = [e["loss"] for e in json.loads((tmp_path / "overfit" / "log.json").read_text())["history"]]
    assert len(losses) == 8 and losses[-1] < 0.5 * losses[0], losses


def test_tracked_run_evaluates_and_its_model_reloads_to_identical_predictions(hub, tmp_path):
    argv = ["--data", str(hub), "--cache-dir", str(hub.parent / "cache"), "--cpu", "--batch-size", "4"]
    assert_tracked_run_reloads("bongard_hoi", argv, tmp_path / "run")
