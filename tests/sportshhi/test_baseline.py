"""The HHICls pair-classifier baseline (sportshhi.baseline) on the synthetic SportsHHI release."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sportshhi.baseline import main
from sportshhi.formats import read_action_list, read_annotation_csv, read_prediction_csv
from sportshhi.samples import sample_action_list_path
from tests.tracked_run import assert_tracked_run_reloads

STEPS = 2


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    from accelerate.state import AcceleratorState, GradientState

    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from sportshhi.builder import build_sportshhi_folder
    from sportshhi.samples import write_sample

    root = tmp_path_factory.mktemp("sportshhi")
    layout = write_sample(root / "release")
    return layout, build_sportshhi_folder(layout.root, root / "hub")


def common(hub: Path, output_dir: Path, *extra: str) -> list[str]:
    return ["--data", str(hub), "--output-dir", str(output_dir), "--cache-dir", str(hub.parent / "cache"),
            "--cpu",
            *extra]


@pytest.fixture(scope="module")
def launched(sample) -> Path:
    """HHICls trained two steps through ``accelerate launch`` (one process), checkpoint every step."""
    _, hub = sample
    out = hub.parent / "hhicls"
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--cpu",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--num_machines", "1",
               "-m", "sportshhi.baseline",
               *common(hub, out, "--max-steps", str(STEPS), "--checkpointing-steps", "1", "--log-every", "1",
                       "--action-list", str(sample_action_list_path()))]
    completed = subprocess.run(command, check=False, env=dict(os.environ), capture_output=True, text=True,
                               timeout=600)
    assert completed.returncode == 0, completed.stderr[-4000:]
    return out


def test_hhicls_through_accelerate_writes_a_prediction_csv_the_reader_accepts(launched, sample):
    layout, _ = sample
    results = json.loads((launched / "results.json").read_text())
    path = Path(results["splits"]["validation"]["predictions"])
    predicted = read_prediction_csv(path, read_action_list(sample_action_list_path()))  # validates every row
    gt = read_annotation_csv(layout.root / "annotations" / "sports_val_v1.csv")
    assert len(set(predicted.keys)) == results["splits"]["validation"]["examples"]  # rows on every keyframe
    assert set(predicted.video_ids) == set(layout.videos["validation"])
    assert np.all((predicted.scores > 0.002) & (predicted.scores <= 1.0))
    # the GT the baseline rebuilt from dataset rows is the release's own annotation CSV
    rebuilt = read_annotation_csv(path.with_name("validation_references.csv"))
    assert sorted(map(tuple, np.column_stack([rebuilt.frame_ids, rebuilt.labels]).tolist())) == \
        sorted(map(tuple, np.column_stack([gt.frame_ids, gt.labels]).tolist()))
    assert 0.0 <= results["splits"]["validation"]["metrics"]["mAP"] <= 1.0


def test_resume_continues_from_the_saved_step(launched, sample, tmp_path):
    _, hub = sample
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


def test_loss_decreases_on_a_fixed_batch(sample, tmp_path):
    _, hub = sample
    main(common(hub, tmp_path / "overfit", "--overfit-batches", "1", "--max-steps", "8",
                "--learning-rate", "3e-3", "--log-every", "1", "--eval-splits"))
    losses = [e["loss"] for e in json.loads((tmp_path / "overfit" / "log.json").read_text())["history"]]
    assert len(losses) == 8 and losses[-1] < 0.5 * losses[0], losses


def test_tracked_run_evaluates_and_its_model_reloads_to_identical_predictions(sample, tmp_path):
    _, hub = sample
    argv = ["--data", str(hub), "--cache-dir", str(hub.parent / "cache"), "--cpu",
            "--action-list", str(sample_action_list_path())]
    assert_tracked_run_reloads("sportshhi", argv, tmp_path / "run")
