"""The shared accelerate loop (hoi_bench.training) and backbone factory (hoi_bench.backbones) on a toy task.

The toy task: 8×8 images that are either reddish or greenish; the label is the colour. A tiny-random
backbone + linear head learns it in a few steps. Run as a script (``accelerate launch test_training.py
--output-dir DIR``) it trains the toy baseline, which is how the accelerate launcher itself is tested.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from hoi_bench.backbones import Preprocessing, crop_resized, image_tensor, load_backbone, tiny_random_backbone
from hoi_bench.errors import ConfigError, HoiBenchError
from hoi_bench.training import (
    Baseline,
    TrainingConfig,
    add_training_arguments,
    config_from_args,
    find_checkpoint,
    pick_metric,
    push_model_folder,
    run_training,
    run_with_args,
    tracker_names,
)
from tests.hoi_bench.test_push import FakeApi

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def toy_rows(count: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for index in range(count):
        label = index % 2
        pixels = rng.integers(0, 90, size=(8, 8, 3), dtype=np.uint8)
        pixels[..., label] += 150
        images.append(Image.fromarray(pixels))
        labels.append(label)
    return {"id": [f"img{i}" for i in range(count)], "image": images, "label": labels}


class ToyBaseline(Baseline):
    """Colour classification; prediction file = JSON {id: predicted label}, metric = accuracy."""

    name = "toy"

    def __init__(self, train_rows: int = 24, eval_rows: int = 10) -> None:
        import datasets

        features = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                                      "label": datasets.ClassLabel(names=["red", "green"])})
        self.train = datasets.Dataset.from_dict(toy_rows(train_rows, 0), features=features)
        self.test = datasets.Dataset.from_dict(toy_rows(eval_rows, 1), features=features)
        self.preprocessing = Preprocessing(size=8)

    def build_model(self) -> torch.nn.Module:
        backbone = tiny_random_backbone(size=8)
        return torch.nn.Sequential(backbone, torch.nn.Linear(backbone.feature_dim, 2))

    def train_dataset(self, streaming: bool):
        return self.train.to_iterable_dataset(num_shards=2) if streaming else self.train

    def eval_datasets(self):
        return {"test": self.test}

    def transform(self, rows):
        rows["pixels"] = [crop_resized(image_tensor(image), [0, 0, 8, 8], self.preprocessing)
                          for image in rows["image"]]
        return rows

    def collate(self, rows):
        return {"pixels": torch.stack([r["pixels"] for r in rows]),
                "label": torch.tensor([r["label"] for r in rows]), "id": [r["id"] for r in rows]}

    def loss(self, model, batch):
        return torch.nn.functional.cross_entropy(model(batch["pixels"]), batch["label"])

    def predict(self, model, batch):
        predicted = model(batch["pixels"]).argmax(-1).tolist()
        truth = batch["label"].tolist()
        return [{"id": i, "label": p, "truth": t} for i, p, t in zip(batch["id"], predicted, truth)]

    def finish(self, split, records, predictions_dir):
        predictions_dir.mkdir(parents=True, exist_ok=True)
        path = predictions_dir / f"{split}.json"
        path.write_text(json.dumps({r["id"]: r["label"] for r in records}))
        return path, {"accuracy": float(np.mean([r["label"] == r["truth"] for r in records]))}


def config(tmp_path: Path, **overrides) -> TrainingConfig:
    values = {"output_dir": tmp_path / "run", "max_steps": 6, "batch_size": 4, "eval_batch_size": 3,
              "learning_rate": 1e-2, "checkpointing_steps": 3, "keep_checkpoints": 5, "log_every": 1,
              "cpu": True, "seed": 3}
    values.update(overrides)
    return TrainingConfig(**values)


def losses(output_dir: Path) -> list[float]:
    return [entry["loss"] for entry in json.loads((output_dir / "log.json").read_text())["history"]]


@pytest.mark.slow
def test_loss_decreases_on_a_fixed_batch(tmp_path):
    cfg = config(tmp_path, max_steps=12, overfit_batches=1, learning_rate=3e-2)
    run_training(ToyBaseline(), cfg)
    history = losses(cfg.output_dir)
    assert len(history) == 12
    assert history[-1] < 0.5 * history[0], history


@pytest.mark.slow
def test_resume_continues_from_the_saved_step_and_matches_an_uninterrupted_run(tmp_path):
    cfg = config(tmp_path)
    first = run_training(ToyBaseline(), cfg)
    uninterrupted = json.loads((cfg.output_dir / "log.json").read_text())["history"]
    assert [e["step"] for e in uninterrupted] == [1, 2, 3, 4, 5, 6]
    saved = sorted(p.name for p in (cfg.output_dir / "checkpoints").iterdir())
    assert saved == ["step_0000003", "step_0000006"]

    resumed_cfg = config(tmp_path, resume=str(cfg.output_dir / "checkpoints" / "step_0000003"))
    second = run_training(ToyBaseline(), resumed_cfg)
    resumed = json.loads((cfg.output_dir / "log.json").read_text())["history"]
    assert [e["step"] for e in resumed] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose([e["loss"] for e in resumed], [e["loss"] for e in uninterrupted], rtol=1e-5)
    assert second["steps"] == 6
    assert second["splits"]["test"]["metrics"] == first["splits"]["test"]["metrics"]


@pytest.mark.slow
def test_resume_latest_without_checkpoint_starts_fresh_and_with_one_continues(tmp_path):
    cfg = config(tmp_path, max_steps=3, resume="latest")
    assert find_checkpoint(cfg.output_dir, "latest") is None
    run_training(ToyBaseline(), cfg)
    assert find_checkpoint(cfg.output_dir, "latest").name == "step_0000003"
    results = run_training(ToyBaseline(), config(tmp_path, max_steps=5, resume="latest"))
    assert results["steps"] == 5
    history = json.loads((cfg.output_dir / "log.json").read_text())["history"]
    assert [e["step"] for e in history] == [1, 2, 3, 4, 5]


def test_streaming_training_and_prediction_file(tmp_path):
    cfg = config(tmp_path, max_steps=4, streaming=True, checkpointing_steps=10)
    results = run_training(ToyBaseline(), cfg)
    assert results["steps"] == 4
    predictions = json.loads(Path(results["splits"]["test"]["predictions"]).read_text())
    assert sorted(predictions) == sorted(f"img{i}" for i in range(10))  # every row once, no padding copies


class WatchedToyBaseline(ToyBaseline):
    """The toy baseline recording, at each training micro-batch, the dtype its head computes in, the head's
    weights and the head's gradient before the forward pass (None once zeroed)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[torch.dtype, torch.Tensor, torch.Tensor | None]] = []

    def loss(self, model, batch):
        head = [module for module in model.modules() if isinstance(module, torch.nn.Linear)][-1]
        grad = None if head.weight.grad is None or not head.weight.grad.any() else head.weight.grad.clone()
        computed = []  # the head's own output: accelerate hands the model's outputs back as float32
        hook = head.register_forward_hook(lambda module, inputs, output: computed.append(output.dtype))
        try:
            logits = model(batch["pixels"])
        finally:
            hook.remove()
        self.seen.append((computed[0], head.weight.detach().clone(), grad))
        return torch.nn.functional.cross_entropy(logits, batch["label"])


def test_gradient_accumulation_and_bf16(tmp_path):
    cfg = config(tmp_path, max_steps=2, gradient_accumulation_steps=2, mixed_precision="bf16")
    baseline = WatchedToyBaseline()
    run_training(baseline, cfg)
    state = json.loads((cfg.output_dir / "checkpoints" / "step_0000002" / "run_state.json").read_text())
    assert state["micro_batches"] == 4 and state["step"] == 2
    dtypes, weights, grads = zip(*baseline.seen, strict=True)
    assert dtypes == (torch.bfloat16,) * 4  # the forward pass ran under bf16 autocast
    # two micro-batches per optimizer step: the weights move only after the 2nd and 4th; the 2nd micro-batch
    # finds the 1st one's gradient still there (accumulated), the 3rd finds it zeroed after the step
    assert torch.equal(weights[0], weights[1]) and torch.equal(weights[2], weights[3])
    assert not torch.equal(weights[1], weights[2])
    assert grads[0] is None and grads[1] is not None and grads[2] is None and grads[3] is not None


def test_eval_only_scores_without_training(tmp_path):
    results = run_training(ToyBaseline(), config(tmp_path, eval_only=True))
    assert results["steps"] == 0 and results["splits"]["test"]["examples"] == 10
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_eval_only_with_resume_scores_the_saved_model(tmp_path):
    trained = run_training(ToyBaseline(), config(tmp_path, max_steps=3))
    evaluated = run_training(ToyBaseline(), config(tmp_path, eval_only=True, resume="latest"))
    assert evaluated["steps"] == 3
    assert evaluated["splits"]["test"]["metrics"] == trained["splits"]["test"]["metrics"]


def test_bad_settings_are_named():
    with pytest.raises(ConfigError, match="unknown mixed precision 'fp8'"):
        TrainingConfig(output_dir=Path("x"), mixed_precision="fp8")
    with pytest.raises(HoiBenchError, match="--batch-size must be >= 1, got 0"):
        TrainingConfig(output_dir=Path("x"), batch_size=0)
    with pytest.raises(HoiBenchError, match="not a checkpoint folder"):
        find_checkpoint(Path("x"), "/nonexistent/step_1")


def test_tiny_random_backbone_needs_no_download_and_crops_degenerate_boxes():
    backbone = load_backbone("tiny-random", size=16)
    assert backbone.preprocessing.size == 16
    crop = crop_resized(torch.zeros(3, 5, 5, dtype=torch.uint8), [4.5, 4.5, 4.5, 4.5], backbone.preprocessing)
    assert backbone(crop.unsqueeze(0)).shape == (1, backbone.feature_dim)
    with pytest.raises(ConfigError, match="unknown backbone kind 'timm'"):
        load_backbone("tiny-random", kind="timm")


def test_checkpoint_folder_loads_with_automodel_and_autobackbone(tmp_path):
    """A saved ``transformers`` checkpoint (config, weights, image processor) loads offline both ways, with
    the crop size and normalisation of its image processor."""
    from transformers import ConvNextImageProcessor, ResNetConfig, ResNetModel

    config = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                          layer_type="basic")
    ResNetModel(config).save_pretrained(tmp_path)
    ConvNextImageProcessor(size={"shortest_edge": 24}, image_mean=[0.5] * 3, image_std=[0.25] * 3,
                           ).save_pretrained(tmp_path)
    for kind in ("model", "backbone"):
        backbone = load_backbone(str(tmp_path), kind=kind)
        assert backbone.preprocessing == Preprocessing(size=24, mean=(0.5,) * 3, std=(0.25,) * 3)
        assert backbone(torch.zeros(2, 3, 24, 24)).shape == (2, 16)
    with pytest.raises(HoiBenchError, match="use 'tiny-random'"):
        load_backbone(str(tmp_path / "missing"))


def former_factor(step: int, warmup: int, total: int) -> float:
    """The learning-rate factor of the hand-written schedule used before transformers.get_scheduler."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if total <= warmup:
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / (total - warmup))))


def test_default_schedule_gives_the_former_warmup_cosine_factors(tmp_path):
    from transformers import get_scheduler

    cfg = config(tmp_path)
    run_training(ToyBaseline(), cfg)
    logged = json.loads((cfg.output_dir / "log.json").read_text())["history"]
    expected = [cfg.learning_rate * former_factor(e["step"], 0, cfg.max_steps) for e in logged]
    np.testing.assert_allclose([e["learning_rate"] for e in logged], expected, rtol=1e-12, atol=1e-15)
    # with a warm-up: transformers ramps from 0 (the former ramp started at 1/warmup); the same afterwards
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = get_scheduler(cfg.lr_scheduler_type, optimizer, num_warmup_steps=3, num_training_steps=10)
    factor = scheduler.lr_lambdas[0]
    assert [factor(s) for s in range(3, 11)] == pytest.approx([former_factor(s, 3, 10) for s in range(3, 11)])
    assert [factor(step) for step in range(3)] == pytest.approx([0, 1 / 3, 2 / 3])


def test_every_config_field_is_a_flag_with_the_config_default():
    parser = argparse.ArgumentParser()
    add_training_arguments(parser, max_steps=7)
    assert config_from_args(parser.parse_args(["--output-dir", "x"])) == TrainingConfig(output_dir=Path("x"),
                                                                                       max_steps=7)
    args = parser.parse_args(["--output-dir", "x", "--cpu", "--report-to", "tensorboard", "--eval-steps", "5",
                              "--lr-scheduler-type", "linear", "--metric-for-best", "test/mAP"])
    assert (args.cpu, args.report_to, args.eval_steps, args.lr_scheduler_type, args.metric_for_best) == \
        (True, "tensorboard", 5, "linear", "test/mAP")
    with pytest.raises(SystemExit):
        parser.parse_args([])  # --output-dir has no default


@pytest.mark.slow
def test_evaluating_during_training_changes_no_step_and_keeps_the_best_model(tmp_path):
    plain = config(tmp_path, output_dir=tmp_path / "plain", checkpointing_steps=2)
    evaluated = config(tmp_path, output_dir=tmp_path / "evaluated", eval_steps=2, metric_for_best="accuracy",
                       checkpointing_steps=2, allow_test_selection=True)
    run_training(ToyBaseline(), plain)
    results = run_training(ToyBaseline(), evaluated)
    # the evaluations' data loaders and RNG use leave the training exactly as it was
    assert losses(evaluated.output_dir) == losses(plain.output_dir)
    log = json.loads((evaluated.output_dir / "log.json").read_text())
    accuracies = {e["step"]: e["metrics"]["test/accuracy"] for e in log["evaluations"]}
    assert list(accuracies) == [2, 4, 6]
    best_step = max(accuracies, key=lambda step: (accuracies[step], -step))  # the first of equal bests
    best = json.loads((evaluated.output_dir / "best" / "best.json").read_text())
    assert best == {"metric": "test/accuracy", "value": accuracies[best_step], "step": best_step}
    assert results["best"]["step"] == best_step
    # the best folder holds the weights the model had at the best step (saved in that step's checkpoint)
    saved_best = load_file(evaluated.output_dir / "best" / "model.safetensors")
    at_best = load_file(evaluated.output_dir / "checkpoints" / f"step_{best_step:07d}" / "model.safetensors")
    final = load_file(evaluated.output_dir / "checkpoints" / "step_0000006" / "model.safetensors")
    assert saved_best.keys() == at_best.keys()
    assert all(torch.equal(saved_best[name], at_best[name]) for name in saved_best)
    assert best_step < 6  # seed 3: accuracy 0.1, 0.5, 0.5, so the best model is not the final one
    assert any(not torch.equal(saved_best[name], final[name]) for name in saved_best)
    assert (evaluated.output_dir / "model" / "README.md").is_file()
    kept = {p.name for p in (evaluated.output_dir / "evaluations").iterdir()}
    assert kept <= {"step_0000002", "step_0000004"}  # the newest in-training evaluation and the best


def test_metric_for_best_must_name_one_metric():
    metrics = {"test/mAP": 0.5, "val/mAP": 0.4}
    assert pick_metric(metrics, "val/mAP") == ("val/mAP", 0.4)
    with pytest.raises(HoiBenchError, match="mAP matches several metrics; name one of: test/mAP, val/mAP"):
        pick_metric(metrics, "mAP")
    with pytest.raises(HoiBenchError, match="recall is not among the evaluation's metrics"):
        pick_metric(metrics, "recall")


def test_a_tracker_that_is_not_installed_is_named_with_its_pip_command(monkeypatch):
    import accelerate.utils

    assert tracker_names("tensorboard") == ["tensorboard"]  # installed for the tests
    monkeypatch.setattr(accelerate.utils, "is_wandb_available", lambda: False)
    with pytest.raises(HoiBenchError, match="--report-to wandb: wandb is not installed; pip install wandb"):
        tracker_names("wandb")
    for name in ("is_tensorboard_available", "is_trackio_available", "is_mlflow_available"):
        monkeypatch.setattr(accelerate.utils, name, lambda: False)
    with pytest.raises(HoiBenchError, match="no experiment tracker is installed"):
        tracker_names("all")


def test_push_to_hub_fails_before_training_when_offline_or_without_a_token(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HoiBenchError, match="--push-to-hub org/toy: the Hub is switched off here"):
        run_training(ToyBaseline(), config(tmp_path, push_to_hub="org/toy"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(HoiBenchError, match="--push-to-hub org/to/y: not a repository id"):
        run_training(ToyBaseline(), config(tmp_path, push_to_hub="org/to/y"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    with pytest.raises(HoiBenchError, match="--push-to-hub org/toy: no Hugging Face token"):
        run_training(ToyBaseline(), config(tmp_path, push_to_hub="org/toy"))
    assert not (tmp_path / "run").exists()  # nothing trained or written


def test_push_to_hub_creates_a_model_repo_and_uploads_the_model_folder(tmp_path):
    (tmp_path / "model").mkdir()
    api = FakeApi()
    assert push_model_folder(tmp_path / "model", "org/toy", api=api) == "commit-1"
    assert [(name, kwargs["repo_id"], kwargs["repo_type"]) for name, kwargs in api.calls] == [
        ("create_repo", "org/toy", "model"), ("upload_folder", "org/toy", "model")]
    assert api.calls[1][1]["folder_path"] == str(tmp_path / "model")


def accelerate_launch(processes: int, *argv: str) -> None:
    """Run this file as the toy baseline script on the CPU: under ``accelerate launch`` for one process, under
    torchrun for several (``accelerate launch --cpu`` starts one process whatever ``--num_processes`` says)."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    launcher = (["accelerate.commands.launch", "--num_processes", "1", "--cpu", "--mixed_precision", "no",
                 "--dynamo_backend", "no", "--num_machines", "1"] if processes == 1
                else ["torch.distributed.run", "--nproc_per_node", str(processes)])
    command = [sys.executable, "-m", *launcher, __file__, "--cpu", *argv]
    completed = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]


@pytest.mark.slow
def test_runs_through_accelerate_launch(tmp_path):
    accelerate_launch(1, "--output-dir", str(tmp_path / "launched"), "--max-steps", "2")
    results = json.loads((tmp_path / "launched" / "results.json").read_text())
    assert results["steps"] == 2 and results["splits"]["test"]["examples"] == 10


@pytest.mark.slow
def test_two_processes_gather_every_row_once_and_resume_exactly(tmp_path):
    out = tmp_path / "two"
    accelerate_launch(2, "--output-dir", str(out), "--max-steps", "4", "--checkpointing-steps", "2",
                      "--eval-batch-size", "3")
    uninterrupted = json.loads((out / "log.json").read_text())["history"]
    predictions = json.loads((out / "predictions" / "test.json").read_text())
    assert sorted(predictions) == sorted(f"img{i}" for i in range(10))  # 12 padded slots, 10 rows kept
    accelerate_launch(2, "--output-dir", str(out), "--max-steps", "4", "--eval-batch-size", "3",
                      "--resume", str(out / "checkpoints" / "step_0000002"))
    resumed = json.loads((out / "log.json").read_text())["history"]
    assert [e["step"] for e in resumed] == [1, 2, 3, 4]
    np.testing.assert_allclose([e["loss"] for e in resumed], [e["loss"] for e in uninterrupted], rtol=1e-5)


def _script_main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="toy baseline (test of hoi_bench.training)")
    add_training_arguments(parser, batch_size=4, log_every=1, seed=3)
    run_with_args(ToyBaseline(), parser.parse_args(argv))


if __name__ == "__main__":
    _script_main()
