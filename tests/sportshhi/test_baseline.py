"""The HHICls pair-classifier baseline (sportshhi.baseline) on the synthetic SportsHHI release.

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

from sportshhi.baseline import main
from sportshhi.formats import read_action_list, read_annotation_csv, read_prediction_csv
from sportshhi.samples import sample_action_list_path
from tests.tracked_run import assert_tracked_run_reloads, tracked_run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_accelerate_state")]


@pytest.fixture(scope="module")
def sample_and_hub(sample, hub_folder):
    """The session's synthetic sample and its Hub folder (``conftest.py``): ``(layout, hub)``; outputs go beside
    the Hub folder, never into it."""
    return sample, hub_folder


def common(hub: Path, output_dir: Path, *extra: str) -> list[str]:
    return ["--data", str(hub), "--output-dir", str(output_dir), "--cache-dir", str(hub.parent / "cache"),
            "--cpu",
            *extra]


def tracked_argv(hub: Path) -> list[str]:
    return ["--data", str(hub), "--cache-dir", str(hub.parent / "cache"), "--cpu",
            "--action-list", str(sample_action_list_path()), "--checkpointing-steps", "1", "--keep-checkpoints", "3",
            "--log-every", "1"]


@pytest.fixture(scope="module")
def trained(sample_and_hub) -> Path:
    """HHICls trained three steps (checkpoint every step, evaluated at steps 2 and 3, TensorBoard)."""
    _, hub = sample_and_hub
    out = hub.parent / "hhicls"
    tracked_run("sportshhi", tracked_argv(hub), out)
    return out


def test_hhicls_writes_a_prediction_csv_the_reader_accepts(trained, sample_and_hub):
    layout, _ = sample_and_hub
    results = json.loads((trained / "results.json").read_text())
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


def test_resume_continues_from_the_saved_step(trained, sample_and_hub, tmp_path):
    _, hub = sample_and_hub
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


def test_loss_decreases_on_a_fixed_batch(sample_and_hub, tmp_path):
    _, hub = sample_and_hub
    main(common(hub, tmp_path / "overfit", "--overfit-batches", "1", "--max-steps", "8",
                "--learning-rate", "3e-3", "--log-every", "1", "--eval-splits"))
    losses = [e["loss"] for e in json.loads((tmp_path / "overfit" / "log.json").read_text())["history"]]
    assert len(losses) == 8 and losses[-1] < 0.5 * losses[0], losses


def test_tracked_run_evaluates_and_its_model_reloads_to_identical_predictions(trained, sample_and_hub):
    _, hub = sample_and_hub
    assert_tracked_run_reloads("sportshhi", tracked_argv(hub), trained)
