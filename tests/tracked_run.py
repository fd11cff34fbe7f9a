"""The check every baseline's test suite runs once: a tracked ``hoi-bench train`` run with evaluations during
training, whose saved model loads back with ``from_pretrained`` and predicts exactly what the run predicted.
The run itself (:func:`tracked_run`) is also the package's one short training that its other tests read.
"""

from __future__ import annotations

import json
from pathlib import Path

STEPS, EVAL_STEPS = 3, 2


def _command(benchmark: str, argv: list[str]) -> list[str]:
    return ["train", benchmark, *argv, "--backbone", "tiny-random", "--max-steps", str(STEPS),
            "--report-to", "tensorboard", "--eval-steps", str(EVAL_STEPS)]


def tracked_run(benchmark: str, argv: list[str], run_dir: Path) -> dict:
    """``hoi-bench train BENCHMARK ARGV --max-steps 3 --eval-steps 2 --report-to tensorboard --output-dir
    RUN_DIR`` in this process; returns the run's results."""
    from hoi_bench.cli import main

    assert main([*_command(benchmark, argv), "--output-dir", str(run_dir)]) == 0
    return json.loads((run_dir / "results.json").read_text())


def assert_tracked_run_reloads(benchmark: str, argv: list[str], run_dir: Path) -> None:
    """Checks the :func:`tracked_run` in ``RUN_DIR`` (same ``argv``): TensorBoard event files holding the loss
    and an evaluation at step 2 and at the end; ``RUN_DIR/model`` a ``save_pretrained`` folder with a Hub model
    card; and ``--eval-only --init-from RUN_DIR/model`` (the model class's ``from_pretrained``) writing
    byte-identical prediction files."""
    from huggingface_hub import ModelCard
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from hoi_bench.cli import main

    command = _command(benchmark, argv)

    folders = {path.parent for path in run_dir.rglob("events.out.tfevents.*")}  # scalars + an hparams folder
    logged = [EventAccumulator(str(folder)).Reload() for folder in sorted(folders)]
    scalars = next((events for events in logged if "train/loss" in events.Tags()["scalars"]), None)
    assert scalars is not None, f"no TensorBoard scalars under {run_dir}: {sorted(folders)}"
    tags = scalars.Tags()["scalars"]
    assert {"train/loss", "train/learning_rate"} <= set(tags), tags
    evaluated = [tag for tag in tags if tag.startswith("eval/")]
    assert evaluated, tags
    assert [event.step for event in scalars.Scalars(evaluated[0])] == [EVAL_STEPS, STEPS]
    log = json.loads((run_dir / "log.json").read_text())
    assert [entry["step"] for entry in log["evaluations"]] == [EVAL_STEPS, STEPS]

    model_dir = run_dir / "model"
    assert {"config.json", "model.safetensors", "README.md"} <= {p.name for p in model_dir.iterdir()}
    card = ModelCard.load(model_dir / "README.md")
    assert card.data.library_name == "hoi-bench"
    assert f"--max-steps {STEPS} " in card.text and f"## Evaluation (step {STEPS})" in card.text

    reloaded = run_dir.with_name(run_dir.name + "-reloaded")
    assert main([*command, "--eval-only", "--init-from", str(model_dir), "--output-dir", str(reloaded)]) == 0
    written = sorted(p.relative_to(run_dir) for p in (run_dir / "predictions").rglob("*") if p.is_file())
    assert written
    for relative in written:
        assert (reloaded / relative).read_bytes() == (run_dir / relative).read_bytes(), relative
