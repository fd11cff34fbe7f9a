"""Runs that reproduce and report themselves: the command recorded in ``log.json`` and the model card is the one
that was run (``python -m``, ``accelerate launch``, ``hoi-bench train``), every launch prints its final metrics,
the model card carries the Hub metadata, and bad ``train`` settings stop with one line before any work.

The runs use the HICO-DET-SG object prior on an annotation-only sample folder: no training, a second or two.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hoi_bench.cli import main
from hoi_bench.run_command import cli_command, launcher, module_command

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")

CONFIG = "hico_split1"


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    from hoi_sg_dataset.hub_folder import build_hoi_sg
    from hoi_sg_dataset.samples import write_sample

    root = tmp_path_factory.mktemp("reproduction")
    return build_hoi_sg(write_sample(root / "sample").root, root / "hub", [CONFIG], with_images=False)


def prior_args(hub: Path, output_dir: Path, *extra: str) -> list[str]:
    return ["--data", str(hub), "--config", CONFIG, "--cache-dir", str(hub.parent / "cache"), "--cpu",
            "--model", "object-prior", "--output-dir", str(output_dir), *extra]


def recorded(output_dir: Path) -> tuple[str, str]:
    """The command in log.json and the one in the model card's "command that was run" block."""
    log = json.loads((output_dir / "log.json").read_text())
    card = (output_dir / "model" / "README.md").read_text()
    block = card.split("The command that was run:", 1)[1].split("```bash\n", 1)[1].split("\n```", 1)[0]
    return log["command"], block


def subprocess_env() -> dict[str, str]:
    root = Path(__file__).resolve().parents[2]
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))


@pytest.mark.slow
def test_hoi_bench_train_records_its_own_command_and_prints_the_final_table(hub, tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["train", "hoi_sg", *prior_args(hub, out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"{CONFIG}-object-prior: step 0, final metrics" in printed
    results = json.loads((out / "results.json").read_text())
    table_row = next(line for line in printed.splitlines() if line.split()[:2] == ["test", "mAP"])
    assert table_row.split()[2] == f"{results['splits']['test']['metrics']['mAP']:.4f}"
    log_command, card_command = recorded(out)
    assert log_command == card_command == shlex.join(["hoi-bench", *argv])
    reproduce = json.loads((out / "log.json").read_text())["reproduce"]
    assert reproduce.startswith("python -m hoi_sg_dataset.baseline --output-dir ")


def test_the_model_card_carries_license_datasets_metrics_and_a_model_index(hub, tmp_path):
    from huggingface_hub import ModelCard

    out = tmp_path / "card"
    assert main(["train", "hoi_sg", *prior_args(hub, out)]) == 0
    card = ModelCard.load(out / "model" / "README.md")
    results = json.loads((out / "results.json").read_text())
    assert card.data.license == "other"
    assert card.data.datasets == [hub.name]
    assert "mAP" in card.data.metrics
    values = {(r.dataset_split, r.metric_type): r.metric_value for r in card.data.eval_results}
    assert values[("test", "mAP")] == results["splits"]["test"]["metrics"]["mAP"]
    assert "pypi.org" not in card.content


@pytest.mark.slow
def test_python_m_records_the_module_not_main(hub, tmp_path):
    out = tmp_path / "module"
    argv = prior_args(hub, out)
    completed = subprocess.run([sys.executable, "-m", "hoi_sg_dataset.baseline", *argv], env=subprocess_env(),
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "final metrics" in completed.stdout and "mAP" in completed.stdout
    assert recorded(out) == (shlex.join(["python", "-m", "hoi_sg_dataset.baseline", *argv]),) * 2


@pytest.mark.slow
def test_accelerate_launch_records_the_launcher(hub, tmp_path):
    out = tmp_path / "launched"
    argv = prior_args(hub, out)
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--cpu",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--num_machines", "1",
               "-m", "hoi_sg_dataset.baseline", *argv]
    completed = subprocess.run(command, env=subprocess_env(), capture_output=True, text=True, timeout=300,
                               check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "final metrics" in completed.stdout
    expected = shlex.join(["accelerate", "launch", "-m", "hoi_sg_dataset.baseline", *argv])
    assert recorded(out) == (expected, expected)


def test_the_launcher_is_read_from_accelerates_environment():
    accelerate = {"ACCELERATE_MIXED_PRECISION": "bf16", "WORLD_SIZE": "4"}
    assert module_command("pkg.baseline", ["--max-steps", "2"], accelerate) == \
        "accelerate launch --num_processes 4 -m pkg.baseline --max-steps 2"
    assert module_command("pkg.baseline", ["--max-steps", "2"], {}) == "python -m pkg.baseline --max-steps 2"
    assert cli_command(["train", "hoi_sg"], accelerate) == \
        "accelerate launch --num_processes 4 -m hoi_bench.cli train hoi_sg"
    assert launcher({"WORLD_SIZE": "4"}) == []  # torchrun alone is not accelerate launch


def error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hoi-bench: error: "), captured.err
    return lines[0]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1e-3", "0"])
def test_a_learning_rate_that_cannot_train_is_refused_before_any_work(hub, tmp_path, capsys, value):
    out = tmp_path / "lr"
    assert main(["train", "hoi_sg", *prior_args(hub, out, f"--learning-rate={value}")]) == 2
    assert "--learning-rate must be a finite number > 0" in error_line(capsys)
    assert not out.exists()


@pytest.mark.slow
def test_a_loss_that_turns_nan_stops_the_run_without_saving_a_model(tmp_path):
    import torch

    from hoi_bench.errors import HoiBenchError
    from hoi_bench.training import run_training
    from tests.hoi_bench.test_training import ToyBaseline, config

    class Exploding(ToyBaseline):
        def loss(self, model, batch):
            return super().loss(model, batch) * torch.tensor(float("nan"))

    cfg = config(tmp_path, max_steps=2)
    with pytest.raises(HoiBenchError, match="the training loss is nan at step 1"):
        run_training(Exploding(), cfg)
    assert not (cfg.output_dir / "model").exists()


def _foreign_model_folder(folder: Path) -> Path:
    """A ``save_pretrained``-shaped folder of some other model (other config keys, other weights)."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"hidden_size": 3, "num_layers": 2}))
    save_file({"encoder.weight": torch.zeros(3, 3)}, str(folder / "model.safetensors"))
    return folder


@pytest.mark.parametrize("source", ["/etc", "empty", "foreign", "a/missing/folder", "file.txt"])
def test_init_from_anything_but_a_saved_model_of_this_baseline_is_one_line(hub, tmp_path, capsys, source):
    if source == "empty":
        (tmp_path / "empty").mkdir()
    elif source == "foreign":
        _foreign_model_folder(tmp_path / "foreign")
    elif source == "file.txt":
        (tmp_path / "file.txt").write_text("weights?")
    target = source if source.startswith("/") else str(tmp_path / source)
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "init"
    assert main(["train", "hoi_sg", *prior_args(hub, out, "--eval-only", "--init-from", target)]) == 2
    line = error_line(capsys)
    assert f"--init-from {target}: " in line and "expected a saved PairPrior" in line
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "init") == before


def test_a_checkpoint_of_an_earlier_version_still_resumes(tmp_path):
    from hoi_bench.training import RUN_STATE, find_checkpoint

    old = tmp_path / "checkpoints" / "step_0000004"
    old.mkdir(parents=True)
    (old / "trainer_state.json").write_text(json.dumps({"step": 4}))
    new = tmp_path / "checkpoints" / "step_0000002"
    new.mkdir()
    (new / RUN_STATE).write_text(json.dumps({"step": 2}))
    assert RUN_STATE != "trainer_state.json"
    assert find_checkpoint(tmp_path, "latest") == old
    assert find_checkpoint(tmp_path, str(new)) == new


def test_version_and_bare_command(capsys):
    import hoi_bench

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"hoi-bench {hoi_bench.__version__}"
    assert main([]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("usage: hoi-bench") and "train" in printed and "report" in printed


def test_a_hub_backbone_and_dataset_become_base_model_and_datasets():
    import torch

    from hoi_bench.model_card import model_card
    from hoi_bench.training import TrainingConfig

    config = TrainingConfig(output_dir=Path("runs/x"), extra={"data": "org/hico-det-sg", "config": CONFIG,
                                                               "backbone": "microsoft/resnet-50"})
    results = {"splits": {"test": {"metrics": {"mAP": 0.25, "mAP_rare": None}}}, "overall": {}}
    card = model_card(torch.nn.Linear(1, 1), "pair", config, "hoi-bench train hoi_sg ...", results, 7,
                      processes=1, reproduce="python -m hoi_sg_dataset.baseline --max-steps 7")
    assert card.data.base_model == "microsoft/resnet-50" and card.data.datasets == ["org/hico-det-sg"]
    assert [(r.dataset_type, r.dataset_config, r.metric_type, r.metric_value) for r in card.data.eval_results] == [
        ("org/hico-det-sg", CONFIG, "mAP", 0.25)]
    assert "hoi-bench train hoi_sg ..." in card.text and "--max-steps 7" in card.text
