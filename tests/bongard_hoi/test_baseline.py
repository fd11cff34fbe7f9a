"""The ProtoNet-style baseline (bongard_hoi.baseline) on the synthetic episode sample.

One short tracked training in this process (``trained``) is read by the tests of this package's wiring; the
generic loop (``accelerate launch``, two processes, resume and checkpoints in general) is tested once, on a toy
task, in ``tests/hoi_bench/test_training.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from bongard_hoi.baseline import TEST_SPLITS, main
from bongard_hoi.predictions import evaluate_prediction_file, read_prediction_file
from bongard_hoi.samples import EVAL_EPISODES
from tests.tracked_run import assert_tracked_run_reloads, tracked_run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_accelerate_state")]


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


def tracked_argv(hub: Path) -> list[str]:
    return ["--data", str(hub), "--cache-dir", str(hub.parent / "cache"), "--cpu", "--batch-size", "4",
            "--checkpointing-steps", "1", "--keep-checkpoints", "3", "--log-every", "1"]


@pytest.fixture(scope="module")
def trained(hub) -> Path:
    """ProtoNet trained three steps (checkpoint every step, evaluated at steps 2 and 3, TensorBoard)."""
    out = hub.parent / "protonet"
    tracked_run("bongard_hoi", tracked_argv(hub), out)
    return out


def test_protonet_writes_a_prediction_file_the_reader_accepts(trained, hub):
    results = json.loads((trained / "results.json").read_text())
    path = Path(results["overall"]["predictions"])
    entries = read_prediction_file(path)
    assert len(entries) == 2 * EVAL_EPISODES * len(TEST_SPLITS)  # two queries per episode, every test split
    assert {e["split"] for e in entries} == set(TEST_SPLITS)
    scored = evaluate_prediction_file(path, hub)  # checks every episode has both queries exactly once
    assert scored["test_mean"] == pytest.approx(np.mean([scored["accuracy"][s] for s in TEST_SPLITS]))
    assert results["overall"]["test_mean"] == scored["test_mean"]


def test_resume_continues_from_the_saved_step(trained, hub, tmp_path):
    out = tmp_path / "resumed"
    shutil.copytree(trained, out)
    results = main(common(hub, out, "--max-steps", "3", "--log-every", "1", "--eval-splits",
                          "--resume", str(out / "checkpoints" / "step_0000001")))
    history = json.loads((out / "log.json").read_text())["history"]
    original = json.loads((trained / "log.json").read_text())["history"]
    assert results["steps"] == 3
    assert [e["step"] for e in history] == [1, 2, 3]
    assert history[0] == original[0]
    # steps 2 and 3 are replayed identically after loading the step-1 state (evaluations change no step)
    np.testing.assert_allclose([e["loss"] for e in history[1:]], [e["loss"] for e in original[1:]], rtol=1e-4)


def test_loss_decreases_on_a_fixed_batch(hub, tmp_path):
    main(common(hub, tmp_path / "overfit", "--overfit-batches", "1", "--max-steps", "8",
                "--learning-rate", "3e-3", "--log-every", "1", "--eval-splits"))
    losses = [e["loss"] for e in json.loads((tmp_path / "overfit" / "log.json").read_text())["history"]]
    assert len(losses) == 8 and losses[-1] < 0.5 * losses[0], losses


def test_tracked_run_evaluates_and_its_model_reloads_to_identical_predictions(trained, hub):
    assert_tracked_run_reloads("bongard_hoi", tracked_argv(hub), trained)
