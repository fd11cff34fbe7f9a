"""The PredCls relation baselines (haystack_dataset.baseline) on the synthetic PSG + Haystack sample.

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

from haystack_dataset.baseline import HAYSTACK_SPLIT, PSG_SPLIT, annotation_from_rows, main, parse_args
from haystack_dataset.formats import read_annotation
from haystack_dataset.predictions import read_haystack_npy, read_recall_predictions
from tests.tracked_run import assert_tracked_run_reloads, tracked_run

# the tiny sample has a predicate with positives but no negatives: the metric warns, reports NaN P-AUC for it
pytestmark = [pytest.mark.filterwarnings("ignore::haystack_dataset.evaluation.HaystackInputWarning"),
              pytest.mark.slow, pytest.mark.usefixtures("fresh_accelerate_state")]


@pytest.fixture(scope="module")
def sample_and_hub(sample, hub_folder):
    """The session's synthetic sample and its Hub folder (``conftest.py``): ``(layout, hub)``; outputs go beside
    the Hub folder, never into it."""
    return sample, hub_folder


def common(hub: Path, output_dir: Path, *extra: str) -> list[str]:
    return ["--data", str(hub), "--output-dir", str(output_dir), "--cache-dir", str(hub.parent / "cache"),
            "--cpu",
            "--batch-size", "4", *extra]


def tracked_argv(hub: Path) -> list[str]:
    return ["--data", str(hub), "--cache-dir", str(hub.parent / "cache"), "--cpu", "--batch-size", "4",
            "--checkpointing-steps", "1", "--keep-checkpoints", "3", "--log-every", "1"]


@pytest.fixture(scope="module")
def trained(sample_and_hub) -> Path:
    """The classifier trained three steps (checkpoint every step, evaluated at steps 2 and 3, TensorBoard)."""
    _, hub = sample_and_hub
    out = hub.parent / "classifier"
    tracked_run("haystack", tracked_argv(hub), out)
    return out


def test_classifier_writes_the_haystack_npy_and_recall_json(trained, sample_and_hub):
    layout, _ = sample_and_hub
    results = json.loads((trained / "results.json").read_text())
    rows = read_haystack_npy(results["splits"][HAYSTACK_SPLIT]["predictions"])
    haystack = read_annotation(layout.haystack_file)
    pairs = sum(len(image.boxes) * (len(image.boxes) - 1) for image in haystack.images)
    # every ordered pair; no no-relation column: a softmax with that column dropped, not renormalised
    assert rows.shape == (pairs, 3 + len(haystack.predicate_classes))
    assert np.all(rows[:, 3:].sum(axis=1) < 1.0)
    recall = read_recall_predictions(results["splits"][PSG_SPLIT]["predictions"])
    assert len(recall) == len(layout.test_image_ids)
    assert all(p.predicate_scores.shape[1] == 1 + len(haystack.predicate_classes) for p in recall)
    metrics = results["splits"][HAYSTACK_SPLIT]["metrics"]
    assert 0.0 <= metrics["p_auc"] <= 1.0 and metrics["rank_mode"] == "paper"
    assert 0.0 <= results["splits"][PSG_SPLIT]["metrics"]["R@20"] <= 1.0


def test_annotation_rebuilt_from_rows_scores_like_the_native_file(sample_and_hub, trained):
    """The annotation the baseline rebuilds from dataset rows scores exactly like the native file."""
    from haystack_dataset.baseline import PredClsBaseline
    from haystack_dataset.evaluation import haystack_scores

    layout, hub = sample_and_hub
    rows = read_haystack_npy(json.loads((trained / "results.json").read_text())["splits"][HAYSTACK_SPLIT]
                             ["predictions"])
    baseline = PredClsBaseline(parse_args(common(hub, trained)))
    rebuilt = annotation_from_rows(baseline.split(HAYSTACK_SPLIT), negatives=True)
    assert haystack_scores(rebuilt, rows) == haystack_scores(read_annotation(layout.haystack_file), rows)


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
    assert len(losses) == 8 and losses[-1] < 0.8 * losses[0], losses


def test_frequency_prior_needs_no_training(sample_and_hub, tmp_path):
    _, hub = sample_and_hub
    results = main(common(hub, tmp_path / "prior", "--model", "prior"))
    assert results["steps"] == 0 and not (tmp_path / "prior" / "checkpoints").exists()
    assert 0.0 <= results["splits"][HAYSTACK_SPLIT]["metrics"]["p_auc"] <= 1.0


def test_tracked_run_evaluates_and_its_model_reloads_to_identical_predictions(trained, sample_and_hub):
    _, hub = sample_and_hub
    assert_tracked_run_reloads("haystack", tracked_argv(hub), trained)
