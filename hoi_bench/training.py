"""The training and evaluation loop every hoi-bench baseline shares, driven by ``accelerate``.

Runs unchanged on one CPU, one GPU or many (``accelerate launch --num_processes N``), with mixed precision
(``--mixed-precision fp16|bf16``) and gradient accumulation. A benchmark plugs in a :class:`Baseline` (its
model, datasets, loss, per-example predictions and the writer of its native prediction file); the loop does
the rest, following the accelerate examples (``complete_cv_example.py``):

``Accelerator(log_with=--report-to, project_dir=OUTPUT)`` → ``set_seed`` → ``init_trackers`` → datasets
(``load_dataset`` + ``with_transform``; streaming datasets are split per process with
``datasets.distributed.split_dataset_by_node``) → ``prepare`` → ``accumulate``/``backward`` → ``log`` (loss,
learning rate) → every ``--eval-steps`` an evaluation (``gather_for_metrics``; metrics logged, the best model
by ``--metric-for-best`` kept) → ``save_state`` every ``--checkpointing-steps`` → ``load_state`` +
``skip_first_batches`` on ``--resume`` → final evaluation → ``save_pretrained`` model folder with a model card
(``--push-to-hub`` uploads it) → ``end_training``.

What a run leaves in ``--output-dir``::

    log.json            config, loss history (step, loss, learning rate), every evaluation, final metrics
    results.json        final metrics per split and the prediction files they were computed from
    predictions/        one native prediction file per evaluated split (written by the baseline)
    checkpoints/step_N  accelerate state (model, optimizer, scheduler, RNG) + run_state.json
    evaluations/step_N  prediction files of an evaluation during training (the latest and the best kept)
    best/               with --metric-for-best: the best evaluated model (save_pretrained folder + card)
    model/              the final model: config.json, model.safetensors, README.md (model card)
    <tracker folders>   with --report-to: e.g. TensorBoard event files under OUTPUT/<baseline name>/

A *step* is one optimizer update (``--gradient-accumulation-steps`` micro-batches per process). Training
data is cycled epoch after epoch, reshuffled with ``seed + epoch``, until ``--max-steps``; so a resumed run
sees exactly the batches an uninterrupted one would have seen.
"""

from __future__ import annotations

import abc
import argparse
import json
import math
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoi_bench.errors import ConfigError, HoiBenchError
from hoi_bench.files import dumps_json
from hoi_bench.flags import FlagParser, add_dataclass_flags
from hoi_bench.run_command import main_module, module_command, script_command, settings_command
from hoi_bench.run_results import flat_metrics, results_table

if TYPE_CHECKING:  # torch is imported when a run starts, so building the `hoi-bench` parser stays fast
    import torch
    from torch import nn

MIXED_PRECISION = ("no", "fp16", "bf16")
#: transformers.get_scheduler names that need nothing but the warm-up and total steps
LR_SCHEDULERS = ("cosine", "linear", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup",
                 "inverse_sqrt", "step")
#: the ``step`` schedule's factor at each drop (``torch.optim.lr_scheduler.StepLR``'s default gamma, QPIC's)
STEP_GAMMA = 0.1
#: --report-to choices → the package each tracker needs (accelerate's tracker names)
TRACKER_PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio", "mlflow": "mlflow"}
REPORT_TO = ("none", *TRACKER_PACKAGES, "all")
METRIC_MODES = ("max", "min")
#: the split --validation-size carves from train: the one split --metric-for-best may select on by default
HELD_OUT = "heldout"
CHECKPOINTS = "checkpoints"
HUB_MODEL_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")
EVALUATIONS = "evaluations"
#: where training stood, beside each checkpoint's accelerate state; not transformers' ``trainer_state.json``,
#: whose schema (``TrainerState``) this is not
RUN_STATE = "run_state.json"
#: the name earlier versions wrote, still read on ``--resume``
LEGACY_RUN_STATE = "trainer_state.json"


def _flag(help: str, **options: Any) -> dict[str, Any]:
    """Field metadata: the ``--flag`` a :class:`TrainingConfig` field becomes (help, choices, metavar)."""
    return {"help": help, **options}


@dataclass
class TrainingArguments:
    """The loop's flags: each field is one ``--flag`` of :func:`add_training_arguments`, made by
    ``transformers.HfArgumentParser`` (``--max-steps`` and ``--max_steps``; name, type, default and help come
    from here, so the two cannot drift)."""

    _argument_group_name = "training (hoi_bench.training)"

    output_dir: Path = field(metadata=_flag("folder for checkpoints, log, predictions, the model"))
    max_steps: int = field(default=1000, metadata=_flag("optimizer updates (0: evaluate only)"))
    batch_size: int = field(default=16, metadata=_flag("training examples per process"))
    eval_batch_size: int = field(default=32, metadata=_flag("evaluation examples per process"))
    learning_rate: float = field(default=1e-4, metadata=_flag("peak learning rate (AdamW)"))
    weight_decay: float = field(default=1e-4, metadata=_flag("AdamW weight decay"))
    lr_scheduler_type: str = field(default="cosine", metadata=_flag(
        "transformers.get_scheduler schedule over --max-steps (cosine: decay to 0 after the warm-up), or step: "
        "the learning rate x0.1 every --lr-drop-steps (DETR/QPIC's StepLR)", choices=LR_SCHEDULERS))
    lr_drop_steps: int | None = field(default=None, metadata=_flag(
        "with --lr-scheduler-type step: steps between two x0.1 drops (QPIC's --lr_drop, counted in optimizer "
        "steps; default: 2/3 of --max-steps, QPIC's 100 of 150 epochs)"))
    warmup_steps: int = field(default=0, metadata=_flag("linear warm-up steps of the schedule"))
    max_grad_norm: float = field(default=1.0, metadata=_flag("gradient clipping norm (0 disables clipping)"))
    gradient_accumulation_steps: int = field(default=1, metadata=_flag("micro-batches per optimizer update"))
    mixed_precision: str = field(default="no", metadata=_flag("accelerate mixed precision",
                                                              choices=MIXED_PRECISION))
    cpu: bool = field(default=False, metadata=_flag("train on the CPU even if a GPU is present"))
    seed: int = field(default=0, metadata=_flag("seed of the model, the shuffling and the subsampling"))
    checkpointing_steps: int = field(default=500, metadata=_flag(
        "save the accelerate state every N steps (and always at the last step)"))
    keep_checkpoints: int = field(default=2, metadata=_flag("how many of the newest checkpoints to keep"))
    resume: str | None = field(default=None, metadata=_flag(
        "continue from a checkpoint folder, or from the newest one in OUTPUT/checkpoints ('latest' starts "
        "from scratch when there is none, so preempted jobs can always pass it)",
        metavar="CHECKPOINT|latest"))
    init_from: str | None = field(default=None, metadata=_flag(
        "start from the weights of a model folder written by a run (OUTPUT/model) or a Hub model id; with "
        "--eval-only: score that model", metavar="FOLDER|ORG/NAME"))
    log_every: int = field(default=10, metadata=_flag("steps between loss log entries"))
    report_to: str = field(default="none", metadata=_flag(
        "experiment tracker(s) that get the config, losses, learning rate and every evaluation's metrics "
        "(accelerate trackers; 'all': every one installed)", choices=REPORT_TO))
    eval_steps: int = field(default=0, metadata=_flag(
        "also evaluate every N steps during training (0: at the end only)"))
    metric_for_best: str | None = field(default=None, metadata=_flag(
        "keep the best evaluated model in OUTPUT/best by this metric: NAME (e.g. mAP) or SPLIT/NAME",
        metavar="METRIC"))
    metric_mode: str = field(default="max", metadata=_flag("whether a larger or a smaller --metric-for-best "
                                                           "is better", choices=METRIC_MODES))
    validation_size: float | None = field(default=None, metadata=_flag(
        f"carve a '{HELD_OUT}' split from the training rows (a fraction, e.g. 0.1, or a count, e.g. 200; "
        "seeded by --seed; a row is an image, or an episode for Bongard-HOI): evaluated with the others, it is "
        "where --metric-for-best selects", metavar="FRACTION|COUNT"))
    allow_test_selection: bool = field(default=False, metadata=_flag(
        f"let --metric-for-best select on a reported (test) split instead of '{HELD_OUT}': the kept model's "
        "score on that split is then optimistic"))
    push_to_hub: str | None = field(default=None, metadata=_flag(
        "upload the final model folder (weights, config, model card) to this Hub model repo",
        metavar="ORG/NAME"))
    num_workers: int = field(default=0, metadata=_flag("DataLoader worker processes"))
    streaming: bool = field(default=False, metadata=_flag(
        "stream the training split instead of loading it (split across processes)"))
    overfit_batches: int = field(default=0, metadata=_flag(
        "train on the first N batches only, unshuffled (sanity check: loss must fall)"))
    eval_only: bool = field(default=False, metadata=_flag(
        "skip training; evaluate the model of --resume or --init-from (or the untrained model)"))

    def __post_init__(self) -> None:
        self.output_dir = Path(self.output_dir)
        for what, value, allowed in (("mixed precision", self.mixed_precision, MIXED_PRECISION),
                                     ("lr scheduler type", self.lr_scheduler_type, LR_SCHEDULERS),
                                     ("--report-to tracker", self.report_to, REPORT_TO),
                                     ("metric mode", self.metric_mode, METRIC_MODES)):
            if value not in allowed:
                raise ConfigError(what, value, allowed)
        if self.lr_drop_steps is not None and self.lr_drop_steps < 1:
            raise HoiBenchError(f"--lr-drop-steps must be >= 1, got {self.lr_drop_steps}")
        for name in ("max_steps", "warmup_steps", "overfit_batches", "num_workers", "eval_steps"):
            if getattr(self, name) < 0:
                raise HoiBenchError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}")
        for name in ("batch_size", "eval_batch_size", "gradient_accumulation_steps", "checkpointing_steps",
                     "keep_checkpoints", "log_every"):
            if getattr(self, name) < 1:
                raise HoiBenchError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        size = self.validation_size
        if size is not None and not (0 < size < 1 or size >= 1 and float(size).is_integer()):
            raise HoiBenchError(f"--validation-size must be a fraction in (0, 1) or a whole count >= 1, got "
                                f"{self.validation_size}")
        # NaN passes every comparison and infinity trains to loss=nan: check before any work
        for name, smallest in (("learning_rate", "> 0"), ("weight_decay", ">= 0"), ("max_grad_norm", ">= 0")):
            value = getattr(self, name)
            if not math.isfinite(value) or (value <= 0 if smallest == "> 0" else value < 0):
                raise HoiBenchError(f"--{name.replace('_', '-')} must be a finite number {smallest}, got {value}")


@dataclass
class TrainingConfig(TrainingArguments):
    """Everything the loop needs besides the baseline: the :class:`TrainingArguments` and ``extra``, the
    baseline's other settings (logged, spelled out in the command that repeats the run)."""

    extra: dict[str, Any] = field(default_factory=dict)


def add_training_arguments(parser: argparse.ArgumentParser, **defaults: Any) -> None:
    """Add one flag per :class:`TrainingArguments` field to ``parser``; ``defaults`` overrides their defaults
    (e.g. ``max_steps=200``). A field without a default (``--output-dir``) is required unless given one."""
    add_dataclass_flags(parser, TrainingArguments, **defaults)


def add_data_arguments(parser: argparse.ArgumentParser, *, config: str,
                       configs: Sequence[str] | None = None) -> None:
    """``--data`` (a folder written by ``hoi-bench build``, or a Hub repo id), ``--config``, ``--cache-dir``.
    """
    group = parser.add_argument_group("data")
    group.add_argument("--data", required=True,
                       help="Hub dataset folder written by `hoi-bench build` (or a Hub dataset repo id)")
    group.add_argument("--config", default=config, choices=configs,
                       help=f"dataset config (default: {config})")
    group.add_argument("--cache-dir", type=Path, help="datasets cache folder (default: under HF_HOME)")


def add_baseline_arguments(parser: argparse.ArgumentParser, *, config: str,
                           configs: Sequence[str] | None = None, image_size: int = 32,
                           **training_defaults: Any) -> None:
    """Every baseline's shared flags: data (:func:`add_data_arguments`), backbone
    (:func:`add_backbone_arguments`) and training loop (:func:`add_training_arguments`, whose defaults
    ``training_defaults`` override)."""
    add_data_arguments(parser, config=config, configs=configs)
    add_backbone_arguments(parser, image_size=image_size)
    add_training_arguments(parser, **training_defaults)


def add_backbone_arguments(parser: argparse.ArgumentParser, *, image_size: int = 32) -> None:
    """``--backbone NAME|tiny-random``, ``--backbone-kind``, ``--image-size``, ``--freeze-backbone``."""
    group = parser.add_argument_group("backbone (hoi_bench.backbones)")
    group.add_argument("--backbone", default="tiny-random",
                       help="transformers checkpoint (e.g. microsoft/resnet-50, facebook/dinov2-small) or "
                            "'tiny-random' (small random ResNet, no download)")
    group.add_argument("--backbone-kind", choices=("model", "backbone"), default="model",
                       help="AutoModel (pooled output) or AutoBackbone (last stage, average-pooled)")
    group.add_argument("--image-size", type=int, default=None,
                       help=f"crop side in pixels (default: the checkpoint's; {image_size} for tiny-random)")
    group.add_argument("--freeze-backbone", action="store_true", help="train the heads only")
    parser.set_defaults(default_image_size=image_size)


def backbone_from_args(args: argparse.Namespace):
    """The :class:`hoi_bench.backbones.Backbone` the backbone flags describe (frozen if asked)."""
    from hoi_bench.backbones import TINY_RANDOM, load_backbone

    size = args.image_size or (args.default_image_size if args.backbone == TINY_RANDOM else None)
    backbone = load_backbone(args.backbone, kind=args.backbone_kind, size=size)
    if args.freeze_backbone:
        backbone.requires_grad_(False)
    return backbone


def load_split(args: argparse.Namespace, split: str, *, streaming: bool = False):
    """``load_dataset(args.data, args.config, split=split)`` (streaming if asked), with ``args.cache_dir``."""
    from datasets import load_dataset

    try:
        return load_dataset(str(args.data), args.config, split=split, streaming=streaming,
                            cache_dir=None if args.cache_dir is None else str(args.cache_dir))
    except ValueError as error:
        if "BuilderConfig" not in str(error) and "Unknown split" not in str(error):
            raise
        raise HoiBenchError(f"--data {args.data}: no split {split!r} of config {args.config!r} there; is it a "
                            f"folder written by `hoi-bench build` for this benchmark? ({error})") from error


def config_from_args(args: argparse.Namespace, **extra: Any) -> TrainingConfig:
    """The :class:`TrainingConfig` of parsed arguments; ``extra`` goes to ``config.extra`` (logged)."""
    return TrainingConfig(**{name: getattr(args, name) for name in TrainingArguments.__dataclass_fields__},
                          extra=extra)


class Baseline(abc.ABC):
    """What a benchmark plugs into :func:`run_training`.

    The datasets are ``datasets`` objects (usually from ``load_dataset`` on a folder written by
    ``hoi-bench build``); the loop applies :meth:`transform` to them with ``with_transform`` (lazily, per
    row), batches rows with :meth:`collate`, and calls :meth:`loss` / :meth:`predict` with the prepared model.
    """

    #: short name used in logs and result files
    name: str = "baseline"

    @abc.abstractmethod
    def build_model(self) -> nn.Module:
        """The model; its ``forward`` must do all the work (so DDP sees every parameter use)."""

    def train_dataset(self, streaming: bool):
        """The training rows (a ``Dataset``; an ``IterableDataset`` when ``streaming``); None: no training."""

    @abc.abstractmethod
    def eval_datasets(self) -> dict[str, Any]:
        """``{split name: Dataset}`` to predict on at the end of the run (and every ``--eval-steps``)."""

    def transform(self, rows: dict[str, list]) -> dict[str, list]:
        """Turn a batch of raw rows (column → list) into model inputs (column → list of tensors/values)."""
        return rows

    def train_transform(self, rows: dict[str, list]) -> dict[str, list]:
        """:meth:`transform` for training rows (override to subsample); must be deterministic per row."""
        return self.transform(rows)

    @abc.abstractmethod
    def collate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Stack transformed rows into one batch (tensors, plus any per-row metadata as lists)."""

    def loss(self, model: nn.Module, batch: dict[str, Any]) -> torch.Tensor | dict[str, torch.Tensor]:
        """The training loss of one batch (only called when :meth:`train_dataset` returns data): a tensor, or
        a dict whose ``loss`` is backpropagated and whose other entries (e.g. ``loss_obj_ce``) are averaged
        like it and logged as ``train/<name>``."""
        raise NotImplementedError(f"{type(self).__name__} has no training loss")

    def parameter_groups(self, model: nn.Module, learning_rate: float) -> list[dict[str, Any]]:
        """The optimizer's parameter groups (default: every trainable parameter at ``learning_rate``);
        override to give parts of the model their own learning rate (DETR's backbone)."""
        return [{"params": [p for p in model.parameters() if p.requires_grad], "lr": learning_rate}]

    def load_pretrained(self, model: nn.Module, source: str) -> nn.Module:
        """``--init-from``: by default the built model's class loaded strictly from a model folder or Hub id
        written by a run; override to start from other checkpoints (QPIC's DETR initialisation)."""
        return _load_pretrained(self, model, source)

    @abc.abstractmethod
    def predict(self, model: nn.Module, batch: dict[str, Any]) -> list[dict[str, Any]]:
        """One picklable record per row of ``batch`` (with the row's identity); gathered across processes."""

    @abc.abstractmethod
    def finish(self, split: str, records: list[dict[str, Any]],
               predictions_dir: Path) -> tuple[Path, dict[str, Any]]:
        """Write the native prediction file of ``split`` from all records and score it; main process only."""

    def finalize(self, predictions_dir: Path, splits: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """After every split: write files spanning splits, return metrics over them (main process only)."""
        return {}

    def held_out(self, split: str, rows):
        """``--validation-size``: take ``rows`` (carved from the training split) as the evaluation split
        ``split``, so :meth:`finish` can score it; returns the rows to predict on. A baseline whose scoring
        reads its references elsewhere overrides this; by default the option is refused."""
        raise HoiBenchError(f"--validation-size: the {self.name} baseline cannot score rows carved from its "
                            f"training split")



class RowsAsReferences(Baseline):
    """A :class:`Baseline` that scores each evaluated split (``--eval-splits``, and rows carved by
    ``--validation-size``) against that split's own rows, kept in ``self.references`` for :meth:`finish`.
    Subclasses give ``self.args`` and :meth:`split`."""

    references: dict[str, Any]

    @abc.abstractmethod
    def split(self, name: str):
        """The rows of split ``name`` of ``--config``."""

    def eval_datasets(self) -> dict[str, Any]:
        self.references = {name: self.split(name) for name in self.args.eval_splits}
        return self.references

    def held_out(self, split: str, rows):
        """Rows carved from train (``--validation-size``) are scored like any split: they are its references."""
        self.references[split] = rows
        return rows

@dataclass
class _Progress:
    """Where training stands; saved next to the accelerate state as ``run_state.json``."""

    step: int = 0
    micro_batches: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_metric: float | None = None
    best_step: int | None = None


def run_state_file(checkpoint: Path) -> Path | None:
    """The run-state file of a checkpoint folder (``run_state.json``, or ``trainer_state.json`` as earlier
    versions named it); None when it has neither."""
    for name in (RUN_STATE, LEGACY_RUN_STATE):
        if (Path(checkpoint) / name).is_file():
            return Path(checkpoint) / name
    return None


def find_checkpoint(output_dir: Path, resume: str | None) -> Path | None:
    """The checkpoint folder ``--resume`` names: a path, or ``latest`` (highest step in OUTPUT/checkpoints).

    ``latest`` with no checkpoint yet returns None (fresh start); a path that is not a checkpoint raises.
    """
    if resume is None:
        return None
    if resume == "latest":
        root = Path(output_dir) / CHECKPOINTS
        saved = [p for p in root.glob("step_*") if run_state_file(p) is not None] if root.is_dir() else []
        candidates = sorted(saved, key=lambda p: json.loads(run_state_file(p).read_text())["step"])
        return candidates[-1] if candidates else None
    path = Path(resume)
    if run_state_file(path) is None:
        raise HoiBenchError(f"--resume {resume}: not a checkpoint folder (expected {path / RUN_STATE})")
    return path


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(dumps_json(data, indent=2, default=str) + "\n")
    os.replace(partial, path)


def tracker_names(report_to: str) -> list[str]:
    """The accelerate trackers ``--report-to`` asks for, each checked to be installed.

    ``all`` is every tracker of :data:`TRACKER_PACKAGES` that is installed (at least one must be).

    >>> tracker_names("none")
    []
    """
    from accelerate.utils import (
        is_mlflow_available,
        is_tensorboard_available,
        is_trackio_available,
        is_wandb_available,
    )

    available = {"tensorboard": is_tensorboard_available, "wandb": is_wandb_available,
                 "trackio": is_trackio_available, "mlflow": is_mlflow_available}
    if report_to == "none":
        return []
    if report_to == "all":
        names = [name for name, check in available.items() if check()]
        if not names:
            raise HoiBenchError("--report-to all: no experiment tracker is installed; pip install "
                                "'hoi-bench[tracking]' (TensorBoard), or wandb, trackio or mlflow")
        return names
    if not available[report_to]():
        hint = "'hoi-bench[tracking]'" if report_to == "tensorboard" else TRACKER_PACKAGES[report_to]
        raise HoiBenchError(f"--report-to {report_to}: {TRACKER_PACKAGES[report_to]} is not installed; "
                            f"pip install {hint}")
    return [report_to]


def check_hub_upload(repo_id: str | None) -> None:
    """Fail before training, not after it, when ``--push-to-hub`` cannot work: offline, or no token."""
    if repo_id is None:
        return
    from huggingface_hub import constants, get_token
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise HoiBenchError(f"--push-to-hub {repo_id}: not a repository id (expected ORG/NAME)") from error
    if constants.HF_HUB_OFFLINE:
        raise HoiBenchError(f"--push-to-hub {repo_id}: the Hub is switched off here (HF_HUB_OFFLINE=1); "
                            f"train without it and upload OUTPUT/model later with `hf upload {repo_id} "
                            f"OUTPUT/model`")
    if get_token() is None:
        raise HoiBenchError(f"--push-to-hub {repo_id}: no Hugging Face token; run `hf auth login` or set "
                            f"HF_TOKEN to a token with write access")


def tracker_config(config: TrainingConfig) -> dict[str, Any]:
    """The run's settings as flat scalars (what TensorBoard's hparams, W&B, trackio and MLflow all accept)."""
    settings = {key: value for key, value in asdict(config).items() if key != "extra"}
    settings.update(config.extra)
    return {key: value if isinstance(value, (bool, int, float, str)) else str(value)
            for key, value in settings.items()}


def pick_metric(metrics: dict[str, float], name: str) -> tuple[str, float]:
    """``(key, value)`` of ``--metric-for-best``: an exact ``SPLIT/NAME`` key, or the one key ending in
    ``/NAME``; a missing or ambiguous name is an error naming the candidates.

    >>> pick_metric({"test/mAP": 0.5, "test/mAP_rare": 0.1}, "mAP")
    ('test/mAP', 0.5)
    """
    if name in metrics:
        return name, metrics[name]
    matches = [key for key in metrics if key.endswith(f"/{name}")]
    if len(matches) != 1:
        problem = "matches several metrics" if matches else "is not among the evaluation's metrics"
        raise HoiBenchError(f"--metric-for-best {name} {problem}; name one of: "
                            f"{', '.join(matches or sorted(metrics))}")
    return matches[0], metrics[matches[0]]


#: settings of the ``hoi-bench`` command line itself, not of the run
CLI_ONLY = ("verbose", "verb", "name", "default_image_size", "launch_command")


def command_line(module: str, config: TrainingConfig) -> str:
    """``python -m MODULE`` with every setting of the run spelled out as a flag: the same run again, whichever
    way it was started (``hoi-bench train``, ``accelerate launch``, a script or a test). A ``__main__`` module
    is named as ``python -m`` ran it.

    >>> words = command_line("pkg.baseline", TrainingConfig(output_dir=Path("out"), max_steps=5, cpu=True,
    ...                                                     extra={"eval_splits": ["test"], "verb": "train"}))
    >>> words.split()[:5], "--max-steps 5" in words, "--cpu --seed 0" in words, words.split()[-2:]
    (['python', '-m', 'pkg.baseline', '--output-dir', 'out'], True, True, ['--eval-splits', 'test'])
    """
    settings = {key: value for key, value in asdict(config).items() if key != "extra"}
    settings.update((key, value) for key, value in config.extra.items() if key not in CLI_ONLY)
    return settings_command(main_module(module) or module, settings)


def _cycle_batches(loader, accelerator, progress: _Progress, batches_per_epoch: int | None, epoch_setters):
    """Micro-batches forever: epoch after epoch, starting inside the epoch where ``progress`` stopped.

    ``epoch_setters`` are the objects whose order depends on the epoch (the sampler, a streaming dataset);
    they are told the epoch directly because accelerate only forwards ``set_epoch`` two wrappers deep.
    """
    epoch, skip = progress.epoch, progress.batch_in_epoch
    while True:
        for target in (loader, *epoch_setters):
            if hasattr(target, "set_epoch"):
                target.set_epoch(epoch)
        current = loader
        if skip:
            if batches_per_epoch is not None:
                current = accelerator.skip_first_batches(loader, skip)
                current.set_epoch(epoch)
            else:
                _logger().info("streaming resume: reading past %d batches already seen", skip)
        seen = 0
        for position, batch in enumerate(current, start=skip if batches_per_epoch is not None else 0):
            if batches_per_epoch is None and position < skip:
                continue
            seen += 1
            yield epoch, position, batch
        if seen == 0 and skip == 0:
            raise HoiBenchError("the training data is empty (no batch in a whole epoch)")
        epoch, skip = epoch + 1, 0


def _logger():
    """accelerate's multi-process logger (logs on the main process unless told otherwise); imported when a run
    starts, since accelerate imports torch."""
    from accelerate.logging import get_logger

    return get_logger(__name__)


class _Run:
    """One run's shared pieces: the accelerator, the baseline, the config, the log kept in ``log.json``."""

    def __init__(self, accelerator, baseline: Baseline, config: TrainingConfig, command: str | None = None,
                 module: str | None = None) -> None:
        self.accelerator = accelerator
        self.baseline = baseline
        self.config = config
        self.history: list[dict[str, Any]] = []
        self.evaluations: list[dict[str, Any]] = []
        self.loaders: dict[str, Any] | None = None
        self.eval_data: dict[str, Any] = {}
        self.reproduce = command_line(module or type(baseline).__module__, config)
        self.command = command or self.reproduce

    def write_log(self, results: dict[str, Any] | None = None) -> None:
        if self.accelerator.is_main_process:
            log = {"baseline": self.baseline.name, "config": asdict(self.config), "command": self.command,
                   "reproduce": self.reproduce, "history": self.history, "evaluations": self.evaluations}
            if results is not None:
                log["results"] = results
            _write_json(self.config.output_dir / "log.json", log)

    def evaluate(self, model, predictions_dir: Path, step: int) -> dict[str, Any]:
        """Predict every eval split, write and score the native files (main process), log the metrics.

        Returns ``{"splits": {...}, "overall": {...}}`` on the main process, ``{}`` on the others. The random
        number generators are restored afterwards, so evaluating does not change the training that follows.
        """
        import torch
        from datasets import is_progress_bar_enabled
        from torch.utils.data import DataLoader
        from tqdm.auto import tqdm

        accelerator, baseline = self.accelerator, self.baseline
        if self.loaders is None:
            self.loaders = {split: accelerator.prepare(DataLoader(
                dataset.with_transform(baseline.transform), batch_size=self.config.eval_batch_size,
                shuffle=False, collate_fn=baseline.collate, num_workers=self.config.num_workers))
                for split, dataset in self.eval_data.items()}
        devices = [accelerator.device] if accelerator.device.type == "cuda" else []
        was_training = model.training
        model.eval()
        results: dict[str, Any] = {"splits": {}}
        quiet = not (accelerator.is_local_main_process and is_progress_bar_enabled())
        with torch.random.fork_rng(devices=devices):
            for split, loader in self.loaders.items():
                records: list[dict[str, Any]] = []
                for batch in tqdm(loader, desc=f"predict {split}", leave=False, disable=quiet):
                    with torch.no_grad(), accelerator.autocast():
                        records.extend(accelerator.gather_for_metrics(baseline.predict(model, batch),
                                                                      use_gather_object=True))
                if accelerator.is_main_process:
                    path, metrics = baseline.finish(split, records, predictions_dir)
                    results["splits"][split] = {"predictions": str(path), "examples": len(records),
                                                "metrics": metrics}
                    _logger().info("%s %s, step %d: %s", baseline.name, split, step, metrics)
        model.train(was_training)
        accelerator.wait_for_everyone()
        if not accelerator.is_main_process:
            return {}
        results["overall"] = baseline.finalize(predictions_dir, results["splits"])
        metrics = flat_metrics(results)
        accelerator.log({f"eval/{key}": value for key, value in metrics.items()}, step=step)
        self.evaluations.append({"step": step, "metrics": metrics})
        return results

    def keep_if_best(self, model, results: dict[str, Any], progress: _Progress,
                     predictions_dir: Path) -> bool:
        """With ``--metric-for-best``: when this evaluation beats the best so far, save the model and its
        prediction files to ``OUTPUT/best`` (main process). True when it did."""
        config = self.config
        if config.metric_for_best is None or not self.accelerator.is_main_process:
            return False
        key, value = pick_metric(flat_metrics(results), config.metric_for_best)
        best = progress.best_metric
        improved = best is None or math.isnan(best) or (value > best if config.metric_mode == "max"
                                                        else value < best)
        if not improved:
            return False
        progress.best_metric, progress.best_step = value, progress.step
        best_dir = config.output_dir / "best"
        self.save_model(model, best_dir, results, progress.step, predictions_dir=predictions_dir,
                        best={"metric": key, "value": value, "step": progress.step})
        self.accelerator.log({"eval/best": value}, step=progress.step)
        _logger().info("best %s so far: %.6g at step %d (saved to %s)", key, value, progress.step, best_dir)
        return True

    def save_model(self, model, folder: Path, results: dict[str, Any], step: int, *,
                   predictions_dir: Path | None = None, best: dict[str, Any] | None = None) -> None:
        """The unwrapped model as a ``save_pretrained`` folder with its model card (plus, for ``OUTPUT/best``,
        a copy of the evaluation's prediction files and ``best.json``), swapped in whole. Main process only; a
        model without ``save_pretrained`` gets its weights as ``model.safetensors``."""
        from hoi_bench.model_card import model_card

        unwrapped = self.accelerator.unwrap_model(model)
        staging = folder.with_name(f".{folder.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        if hasattr(unwrapped, "save_pretrained"):
            unwrapped.save_pretrained(staging)
        else:
            from safetensors.torch import save_model

            save_model(unwrapped, str(staging / "model.safetensors"))
        model_card(unwrapped, self.baseline.name, self.config, self.command, results, step,
                   processes=self.accelerator.num_processes, reproduce=self.reproduce).save(staging / "README.md")
        if predictions_dir is not None:
            shutil.copytree(predictions_dir, staging / "predictions")
        if best is not None:
            _write_json(staging / "best.json", best)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)


def run_training(baseline: Baseline, config: TrainingConfig, *, command: str | None = None,
                 module: str | None = None) -> dict[str, Any]:
    """Train ``baseline`` as ``config`` says, write its predictions, score them; returns the results dict.

    Every process must call this; only the main process writes the log, predictions, model and results.
    ``command`` is the command line that started the run (:mod:`hoi_bench.run_command`), recorded in
    ``log.json`` and the model card beside the one that spells out every setting of ``python -m MODULE``
    (``module``: the baseline's module, default the baseline class's).
    """
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration, GradientAccumulationPlugin, set_seed
    from datasets.distributed import split_dataset_by_node
    from tqdm.auto import tqdm

    trackers = tracker_names(config.report_to)
    check_hub_upload(config.push_to_hub)
    accelerator = Accelerator(
        cpu=config.cpu,
        mixed_precision=config.mixed_precision,
        gradient_accumulation_plugin=GradientAccumulationPlugin(
            num_steps=config.gradient_accumulation_steps, sync_with_dataloader=False),
        dataloader_config=DataLoaderConfiguration(even_batches=True),
        log_with=trackers or None,
        project_dir=str(config.output_dir),
    )
    output_dir = config.output_dir
    _logger().info("%s: %s, %d process(es), mixed precision %s", baseline.name, accelerator.device,
                   accelerator.num_processes, accelerator.mixed_precision)
    set_seed(config.seed)
    if trackers:
        accelerator.init_trackers(baseline.name, config=tracker_config(config))
    run = _Run(accelerator, baseline, config, command, module)
    with accelerator.main_process_first():  # one process fills the datasets cache, the others then read it
        train_data = None if config.eval_only else baseline.train_dataset(config.streaming)
        run.eval_data = baseline.eval_datasets()
        if config.validation_size is not None and not config.eval_only:
            train_data, held_out = carve_validation(train_data, config.validation_size, config.seed)
            run.eval_data[HELD_OUT] = baseline.held_out(HELD_OUT, held_out)
        check_selection_split(config, list(run.eval_data))
        model = baseline.build_model()
        if config.init_from is not None:
            model = baseline.load_pretrained(model, config.init_from)
    trainable = any(p.requires_grad for p in model.parameters())
    trains = train_data is not None and config.max_steps > 0 and trainable

    checkpoint = find_checkpoint(output_dir, config.resume)
    progress = _Progress()
    log_path = output_dir / "log.json"
    if checkpoint is not None:
        progress = _Progress(**json.loads(run_state_file(checkpoint).read_text()))
        if log_path.is_file():
            logged = json.loads(log_path.read_text())
            run.history = [entry for entry in logged.get("history", []) if entry["step"] <= progress.step]
            run.evaluations = [entry for entry in logged.get("evaluations", [])
                               if entry["step"] <= progress.step]

    started = time.perf_counter()
    if trains:
        model = _train(run, model, train_data, checkpoint, progress, split_dataset_by_node, tqdm)
    else:
        model = accelerator.prepare(model) if trainable else model.to(accelerator.device)
        if checkpoint is not None:
            accelerator.load_state(str(checkpoint))
    train_seconds = time.perf_counter() - started

    evaluated = run.evaluate(model, output_dir / "predictions", progress.step) if run.eval_data else {}
    results: dict[str, Any] = {"baseline": baseline.name, "steps": progress.step,
                               "train_seconds": round(train_seconds, 3),
                               "splits": evaluated.get("splits", {})}
    if accelerator.is_main_process:
        results["overall"] = evaluated.get("overall", {})
        if run.eval_data:
            run.keep_if_best(model, results, progress, output_dir / "predictions")
        if progress.best_step is not None:
            best = json.loads((output_dir / "best" / "best.json").read_text())
            results["best"] = {**best, "model": str(output_dir / "best")}
        if not config.eval_only:
            run.save_model(model, output_dir / "model", results, progress.step)
            results["model"] = str(output_dir / "model")
        _write_json(output_dir / "results.json", results)
        run.write_log(results)
        if config.push_to_hub is not None and not config.eval_only:
            results["hub"] = push_model_folder(output_dir / "model", config.push_to_hub)
            _logger().info("pushed %s to the Hub: %s", output_dir / "model", results["hub"])
            _write_json(output_dir / "results.json", results)
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return results


def _load_pretrained(baseline: Baseline, built, source: str):
    """``--init-from``: the built model's class loaded (strictly) from a model folder or Hub id; its crops
    must be the ones this run prepares. A local folder must be a saved model of this baseline (``config.json``
    + ``model.safetensors`` whose settings and weights fit the built model)."""
    if not hasattr(built, "from_pretrained"):
        raise HoiBenchError(f"--init-from: {type(built).__name__} has no from_pretrained")
    what = f"a saved {type(built).__name__} (the model folder of a {baseline.name} run, e.g. OUTPUT/model)"
    folder = Path(source)
    if folder.exists() or source.startswith((".", "/", "~")) or not HUB_MODEL_ID.match(source):
        if not folder.is_dir():
            raise HoiBenchError(f"--init-from {source}: not a folder; expected {what}")
        missing = [name for name in ("config.json", "model.safetensors") if not (folder / name).is_file()]
        if missing:
            raise HoiBenchError(f"--init-from {source}: no {' or '.join(missing)}; expected {what}")
        try:
            saved = json.loads((folder / "config.json").read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise HoiBenchError(f"--init-from {source}: unreadable config.json ({error}); expected {what}"
                                ) from error
        if not isinstance(saved, dict):
            raise HoiBenchError(f"--init-from {source}: config.json is not a JSON object; expected {what}")
    try:
        model = type(built).from_pretrained(source)
    except (OSError, ValueError, RuntimeError, TypeError, KeyError, AttributeError) as error:
        reason = " ".join(str(error).split())[:300]
        raise HoiBenchError(f"--init-from {source}: cannot load a {type(built).__name__} ({reason}); expected "
                            f"{what}") from error
    expected = getattr(baseline, "preprocessing", None)
    backbone = getattr(model, "backbone", None)
    if backbone is not None and expected is not None and backbone.preprocessing != expected:
        raise HoiBenchError(f"--init-from {source}: the model was trained on {backbone.preprocessing} crops, "
                            f"this run prepares {expected}; pass the backbone flags of its README's command "
                            f"line")
    return model


def carve_validation(train_data, size: float, seed: int):
    """``(train rows, held-out rows)``: ``size`` (a fraction, or a count when >= 1) of the training rows drawn
    with ``seed``, each row on one side only (a row is an image, an episode, a keyframe: whatever the baseline
    trains on)."""
    from datasets import IterableDataset

    if train_data is None or isinstance(train_data, IterableDataset):
        what = "--streaming" if train_data is not None else "a baseline that does not train"
        raise HoiBenchError(f"--validation-size cannot be used with {what}: it needs the whole training split")
    count = round(size * len(train_data)) if size < 1 else int(size)
    if not 1 <= count < len(train_data):
        raise HoiBenchError(f"--validation-size {size:g}: {count} of the {len(train_data)} training rows; "
                            f"expected at least 1 and fewer than all")
    parts = train_data.train_test_split(test_size=count, seed=seed, shuffle=True)
    return parts["train"], parts["test"]


def check_selection_split(config: TrainingConfig, splits: Sequence[str]) -> None:
    """Refuse ``--metric-for-best`` on a reported split without ``--allow-test-selection``: the best of many
    evaluations on the test split is an optimistic estimate of that split's score. A bare metric name selects
    on the held-out split when there is one."""
    name = config.metric_for_best
    if name is None or config.eval_only:  # one evaluation: nothing is selected
        return
    split, _, metric = name.rpartition("/")
    if not split and HELD_OUT in splits:
        config.metric_for_best = name = f"{HELD_OUT}/{metric}"
        split = HELD_OUT
    if config.allow_test_selection or split == HELD_OUT:
        return
    chosen = split if split in splits else ", ".join(s for s in splits if s != HELD_OUT)
    raise HoiBenchError(f"--metric-for-best {name} selects on {chosen or 'the evaluated splits'}, which the run "
                        f"reports as its result: carve a held-out split with --validation-size (e.g. 0.1), or "
                        f"pass --allow-test-selection to select on it knowingly")


def push_model_folder(folder: Path, repo_id: str, api: Any = None) -> str:
    """Create the Hub model repo ``repo_id`` if needed and upload ``folder`` with
    ``hoi_bench.push.upload_folder`` (every failure is a one-line ``PushError``); returns the commit URL
    (``api``: see that function)."""
    from hoi_bench.push import upload_folder

    commit = upload_folder(folder, repo_id, repo_type="model", api=api,
                           commit_message="Upload a model trained with hoi-bench")
    return str(getattr(commit, "commit_url", commit))


def _train(run: _Run, model, train_data, checkpoint, progress: _Progress, split_by_node, tqdm):
    import torch
    from accelerate.data_loader import SeedableRandomSampler
    from datasets import IterableDataset, is_progress_bar_enabled
    from torch.utils.data import DataLoader, SequentialSampler
    from transformers import get_scheduler

    accelerator, baseline, config = run.accelerator, run.baseline, run.config
    streaming = isinstance(train_data, IterableDataset)
    if streaming:
        train_data = split_by_node(train_data, rank=accelerator.process_index,
                                   world_size=accelerator.num_processes)
        train_data = train_data.map(baseline.train_transform, batched=True)
        if config.overfit_batches:
            train_data = train_data.take(config.overfit_batches * config.batch_size)
        loader = DataLoader(train_data, batch_size=config.batch_size, collate_fn=baseline.collate,
                            num_workers=config.num_workers)
        epoch_setters = (train_data,)
    else:
        if config.overfit_batches:
            kept = min(len(train_data), config.overfit_batches * config.batch_size)
            train_data = train_data.select(range(kept))
        # accelerate's seedable sampler draws epoch e's order from seed + e alone, the same on every process,
        # which is what lets a resumed run skip exactly the batches it already saw
        sampler = (SequentialSampler(train_data) if config.overfit_batches
                   else SeedableRandomSampler(train_data, data_seed=config.seed))
        loader = DataLoader(train_data.with_transform(baseline.train_transform), batch_size=config.batch_size,
                            sampler=sampler, collate_fn=baseline.collate, num_workers=config.num_workers,
                            drop_last=len(train_data) >= config.batch_size * accelerator.num_processes)
        epoch_setters = (sampler,)
    if hasattr(baseline, "set_epoch"):  # a baseline whose augmentation draws from (seed, epoch, row)
        epoch_setters += (baseline,)

    optimizer = torch.optim.AdamW(baseline.parameter_groups(model, config.learning_rate),
                                  lr=config.learning_rate, weight_decay=config.weight_decay)
    scheduler = _scheduler(config, optimizer, accelerator.num_processes, get_scheduler)
    if streaming:
        # split_dataset_by_node already gave each process its own rows; accelerate must not shard them again
        model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    else:
        model, optimizer, scheduler, loader = accelerator.prepare(model, optimizer, scheduler, loader)
    batches_per_epoch = None if streaming else len(loader)

    if checkpoint is not None:
        accelerator.load_state(str(checkpoint))
        _logger().info("resumed from %s at step %d", checkpoint, progress.step)

    bar = tqdm(total=config.max_steps, initial=progress.step, desc=f"train {baseline.name}",
               disable=not (accelerator.is_local_main_process and is_progress_bar_enabled()))
    running = torch.zeros(2, device=accelerator.device)
    terms: dict[str, torch.Tensor] = {}
    model.train()
    for epoch, position, batch in _cycle_batches(loader, accelerator, progress, batches_per_epoch,
                                                  epoch_setters):
        if progress.step >= config.max_steps:
            break
        if streaming:
            batch = _to_device(batch, accelerator.device)
        with accelerator.accumulate(model):
            with accelerator.autocast():
                loss = baseline.loss(model, batch)
            if isinstance(loss, dict):
                for name, value in loss.items():
                    if name != "loss":
                        terms[name] = terms.get(name, 0) + value.detach().float()
                loss = loss["loss"]
            accelerator.backward(loss)
            if accelerator.sync_gradients and config.max_grad_norm > 0:
                accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        running += torch.stack([loss.detach().float(), torch.ones((), device=running.device)])
        progress.micro_batches += 1
        progress.epoch, progress.batch_in_epoch = epoch, position + 1
        if batches_per_epoch is not None and progress.batch_in_epoch >= batches_per_epoch:
            progress.epoch, progress.batch_in_epoch = epoch + 1, 0
        if not accelerator.sync_gradients:
            continue
        progress.step += 1
        bar.update(1)
        last = progress.step >= config.max_steps
        if progress.step % config.log_every == 0 or last or progress.step == 1:
            names = sorted(terms)
            sums = torch.cat([running, torch.stack([terms[name] for name in names])]) if names else running
            total, count, *term_sums = accelerator.reduce(sums, reduction="sum").tolist()
            entry = {"step": progress.step, "epoch": progress.epoch, "loss": total / max(count, 1),
                     "learning_rate": scheduler.get_last_lr()[0]}
            if not math.isfinite(entry["loss"]):
                raise HoiBenchError(f"the training loss is {entry['loss']} at step {progress.step} (learning rate "
                                    f"{entry['learning_rate']:.3g}); no model was saved: lower --learning-rate or "
                                    f"raise --warmup-steps")
            entry.update({name: value / max(count, 1) for name, value in zip(names, term_sums)})
            run.history.append(entry)
            accelerator.log({f"train/{key}": value for key, value in entry.items() if key != "step"},
                            step=progress.step)
            bar.set_postfix(loss=f"{entry['loss']:.4f}")
            running.zero_()
            terms.clear()
            run.write_log()
        if config.eval_steps and progress.step % config.eval_steps == 0 and not last and run.eval_data:
            _evaluate_during_training(run, model, progress)
        if progress.step % config.checkpointing_steps == 0 or last:
            _save_checkpoint(accelerator, config, progress)
    bar.close()
    accelerator.wait_for_everyone()
    return model


def _scheduler(config: TrainingConfig, optimizer, processes: int, get_scheduler):
    """The learning-rate schedule of ``--lr-scheduler-type``. accelerate steps a prepared scheduler once per
    process per update, hence the ``processes`` factor on every step count."""
    if config.lr_scheduler_type != "step":
        return get_scheduler(config.lr_scheduler_type, optimizer,
                             num_warmup_steps=config.warmup_steps * processes,
                             num_training_steps=config.max_steps * processes)
    from torch.optim.lr_scheduler import LambdaLR

    drop = (config.lr_drop_steps or max(1, (2 * config.max_steps) // 3)) * processes
    warmup = config.warmup_steps * processes
    return LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup if warmup else 1.0)
                    * STEP_GAMMA ** (step // drop))


def _evaluate_during_training(run: _Run, model, progress: _Progress) -> None:
    """An evaluation at this step into ``OUTPUT/evaluations/step_N``; only the newest and the best such
    folders are kept."""
    root = run.config.output_dir / EVALUATIONS
    folder = root / f"step_{progress.step:07d}"
    results = run.evaluate(model, folder, progress.step)
    if run.accelerator.is_main_process:
        run.keep_if_best(model, results, progress, folder)
        keep = {folder.name, f"step_{progress.best_step or 0:07d}"}
        for old in root.glob("step_*"):
            if old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
        run.write_log()
    run.accelerator.wait_for_everyone()


def _to_device(batch, device):
    from accelerate.utils import send_to_device

    return send_to_device(batch, device)


def _save_checkpoint(accelerator, config: TrainingConfig, progress: _Progress) -> None:
    """``save_state`` into a staging folder every process agrees on, then swap it into ``step_N``."""
    root = config.output_dir / CHECKPOINTS
    final = root / f"step_{progress.step:07d}"
    staging = root / f".step_{progress.step:07d}.partial"
    if accelerator.is_main_process:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(staging))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        _write_json(staging / RUN_STATE, asdict(progress))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
        kept = sorted(root.glob("step_*"))
        for old in kept[: max(0, len(kept) - config.keep_checkpoints)]:
            shutil.rmtree(old, ignore_errors=True)
        _logger().info("saved checkpoint %s", final)
    accelerator.wait_for_everyone()


def demo_hub_folder(hub: Path, build) -> Path:
    """The Hub folder ``hub`` a benchmark's demo build step wrote, built with ``build(hub)`` when that step
    did not run (e.g. a single demo step run on its own)."""
    hub = Path(hub)
    if not (hub / "README.md").is_file():
        hub = Path(build(hub))
    return hub


def run_with_args(baseline: Baseline, args: argparse.Namespace, module: str | None = None) -> dict[str, Any]:
    """Run ``baseline`` with the training flags of ``args``; the other flags are logged as ``config.extra``.

    This is what both ``accelerate launch -m <package>.baseline`` and ``hoi-bench train <benchmark>`` call. The
    recorded command is ``args.launch_command`` (set by the entry point), else this process's own command line.
    """
    extra = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
             if k not in TrainingConfig.__dataclass_fields__ and not callable(v) and k != "launch_command"}
    command = getattr(args, "launch_command", None) or script_command()
    return run_training(baseline, config_from_args(args, **extra), command=command, module=module)


def parse_script_args(module: str, description: str | None, configure, argv: Sequence[str] | None = None
                      ) -> argparse.Namespace:
    """Parse ``python -m <module>`` arguments of a baseline whose flags ``configure(parser)`` declares
    (:class:`hoi_bench.flags.FlagParser`: underscore forms, a JSON/YAML file of flags)."""
    parser = FlagParser(prog=f"python -m {module}", description=description,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    configure(parser)
    return parser.parse_args(argv)


@dataclass(frozen=True)
class BaselineScript:
    """The entry points every baseline module offers, from its flags and its ``Baseline`` class.

    ``python -m <module>`` (and ``accelerate launch -m <module>``) calls ``main``; ``hoi-bench train
    <benchmark>`` calls ``train`` with the CLI's parsed flags; tests call ``main(argv)`` for the results dict.
    """

    module: str
    description: str | None
    configure: Callable[[argparse.ArgumentParser], None]
    make_baseline: Callable[[argparse.Namespace], Baseline]

    def run(self, args: argparse.Namespace) -> dict[str, Any]:
        """Train and evaluate with parsed arguments; returns the results dict (see :func:`run_training`)."""
        return run_with_args(self.make_baseline(args), args, module=self.module)

    def train(self, args: argparse.Namespace) -> int:
        """``hoi-bench train <benchmark>``: :meth:`run`, print the final metrics table, exit status 0 (outputs
        in ``--output-dir``)."""
        _print_final_table(self.run(args))
        return 0

    def parse_args(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """The parsed flags of ``python -m MODULE ARGV``, with the command that was run (``launch_command``)."""
        argv = sys.argv[1:] if argv is None else list(argv)
        args = parse_script_args(self.module, self.description, self.configure, argv)
        args.launch_command = module_command(self.module, argv)
        return args

    def main(self, argv: Sequence[str] | None = None) -> dict[str, Any]:
        """``python -m MODULE``: run, print the final metrics table (main process), return the results dict."""
        results = self.run(self.parse_args(argv))
        _print_final_table(results)
        return results


def _print_final_table(results: dict[str, Any]) -> None:
    """The run's final metrics on stdout, once (the main process holds the ``overall`` entry); the entry points
    are the command line, so they may print."""
    if "overall" in results:
        print(f"\n{results['baseline']}: step {results['steps']}, final metrics", flush=True)
        print(results_table(results), flush=True)
