"""The training and evaluation loop every hoi-bench baseline shares, driven by ``accelerate``.

Runs unchanged on one CPU, one GPU or many (``accelerate launch --num_processes N``), with mixed precision
(``--mixed-precision fp16|bf16``) and gradient accumulation. A benchmark plugs in a :class:`Baseline` (its
model, datasets, loss, per-example predictions and the writer of its native prediction file); the loop does
the rest, following the accelerate examples:

``Accelerator`` → ``set_seed`` → datasets (``load_dataset`` + ``with_transform``; streaming datasets are split
per process with ``datasets.distributed.split_dataset_by_node``) → ``prepare`` → ``accumulate``/``backward`` →
``save_state`` every ``--checkpointing-steps`` into ``OUTPUT/checkpoints/step_N`` → ``load_state`` +
``skip_first_batches`` on ``--resume`` → evaluation with ``gather_for_metrics`` → predictions file + metrics.

What a run leaves in ``--output-dir``::

    log.json            config, loss history (step, loss, learning rate), final metrics; rewritten as it goes
    results.json        final metrics per split and the prediction files they were computed from
    predictions/        one native prediction file per evaluated split (written by the baseline)
    checkpoints/step_N  accelerate state (model, optimizer, scheduler, RNG) + trainer_state.json
    model/              final model weights (safetensors)

A *step* is one optimizer update (``--gradient-accumulation-steps`` micro-batches per process). Training
data is cycled epoch after epoch, reshuffled with ``seed + epoch``, until ``--max-steps``; so a resumed run
sees exactly the batches an uninterrupted one would have seen.
"""

from __future__ import annotations

import abc
import argparse
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoi_bench.errors import ConfigError, HoiBenchError

if TYPE_CHECKING:  # torch is imported when a run starts, so building the `hoi-bench` parser stays fast
    import torch
    from torch import nn

logger = logging.getLogger(__name__)

MIXED_PRECISION = ("no", "fp16", "bf16")
CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer_state.json"


@dataclass
class TrainingConfig:
    """Everything the loop needs besides the baseline: the ``--flags`` of :func:`add_training_arguments`."""

    output_dir: Path
    max_steps: int = 1000
    batch_size: int = 16
    eval_batch_size: int = 32
    learning_rate: float = 1e-4
    weight_decay: float = 1e-4
    warmup_steps: int = 0
    max_grad_norm: float = 1.0
    gradient_accumulation_steps: int = 1
    mixed_precision: str = "no"
    cpu: bool = False
    seed: int = 0
    checkpointing_steps: int = 500
    keep_checkpoints: int = 2
    resume: str | None = None
    log_every: int = 10
    num_workers: int = 0
    streaming: bool = False
    overfit_batches: int = 0
    eval_only: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.output_dir = Path(self.output_dir)
        if self.mixed_precision not in MIXED_PRECISION:
            raise ConfigError("mixed precision", self.mixed_precision, MIXED_PRECISION)
        for name in ("max_steps", "warmup_steps", "overfit_batches", "num_workers"):
            if getattr(self, name) < 0:
                raise HoiBenchError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}")
        for name in ("batch_size", "eval_batch_size", "gradient_accumulation_steps", "checkpointing_steps",
                     "keep_checkpoints", "log_every"):
            if getattr(self, name) < 1:
                raise HoiBenchError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")


def add_training_arguments(parser: argparse.ArgumentParser, **defaults: Any) -> None:
    """Add the loop's flags to ``parser``; ``defaults`` overrides their defaults (e.g. ``max_steps=200``)."""
    base = {f.name: f.default for f in TrainingConfig.__dataclass_fields__.values()
            if not callable(f.default_factory)}
    base.update(defaults)
    group = parser.add_argument_group("training (hoi_bench.training)")
    group.add_argument("--output-dir", type=Path, required="output_dir" not in defaults,
                       default=defaults.get("output_dir"), help="folder for checkpoints, log, predictions")
    group.add_argument("--max-steps", type=int, default=base["max_steps"],
                       help="optimizer updates (0: evaluate only)")
    group.add_argument("--batch-size", type=int, default=base["batch_size"],
                       help="training examples per process")
    group.add_argument("--eval-batch-size", type=int, default=base["eval_batch_size"])
    group.add_argument("--learning-rate", type=float, default=base["learning_rate"])
    group.add_argument("--weight-decay", type=float, default=base["weight_decay"])
    group.add_argument("--warmup-steps", type=int, default=base["warmup_steps"],
                       help="linear warm-up, then cosine decay to 0 at --max-steps")
    group.add_argument("--max-grad-norm", type=float, default=base["max_grad_norm"],
                       help="0 disables clipping")
    group.add_argument("--gradient-accumulation-steps", type=int, default=base["gradient_accumulation_steps"])
    group.add_argument("--mixed-precision", choices=MIXED_PRECISION, default=base["mixed_precision"])
    group.add_argument("--cpu", action="store_true", help="train on the CPU even if a GPU is present")
    group.add_argument("--seed", type=int, default=base["seed"])
    group.add_argument("--checkpointing-steps", type=int, default=base["checkpointing_steps"],
                       help="save the accelerate state every N steps (and always at the last step)")
    group.add_argument("--keep-checkpoints", type=int, default=base["keep_checkpoints"],
                       help="how many of the newest checkpoints to keep")
    group.add_argument("--resume", default=base["resume"], metavar="CHECKPOINT|latest",
                       help="continue from a checkpoint folder, or from the newest one in OUTPUT/checkpoints "
                            "('latest' starts from scratch when there is none, so preempted jobs can always "
                            "pass it)")
    group.add_argument("--log-every", type=int, default=base["log_every"],
                       help="steps between loss log entries")
    group.add_argument("--num-workers", type=int, default=base["num_workers"],
                       help="DataLoader worker processes")
    group.add_argument("--streaming", action="store_true",
                       help="stream the training split instead of loading it (split across processes)")
    group.add_argument("--overfit-batches", type=int, default=base["overfit_batches"],
                       help="train on the first N batches only, unshuffled (sanity check: loss must fall)")
    group.add_argument("--eval-only", action="store_true",
                       help="skip training; evaluate the model of --resume (or the untrained model)")


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

    return load_dataset(str(args.data), args.config, split=split, streaming=streaming,
                        cache_dir=None if args.cache_dir is None else str(args.cache_dir))


def config_from_args(args: argparse.Namespace, **extra: Any) -> TrainingConfig:
    """The :class:`TrainingConfig` of parsed arguments; ``extra`` goes to ``config.extra`` (logged)."""
    names = [f for f in TrainingConfig.__dataclass_fields__ if f != "extra"]
    return TrainingConfig(**{name: getattr(args, name) for name in names}, extra=extra)


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
        """``{split name: Dataset}`` to predict on at the end of the run."""

    def transform(self, rows: dict[str, list]) -> dict[str, list]:
        """Turn a batch of raw rows (column → list) into model inputs (column → list of tensors/values)."""
        return rows

    def train_transform(self, rows: dict[str, list]) -> dict[str, list]:
        """:meth:`transform` for training rows (override to subsample); must be deterministic per row."""
        return self.transform(rows)

    @abc.abstractmethod
    def collate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Stack transformed rows into one batch (tensors, plus any per-row metadata as lists)."""

    def loss(self, model: nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        """The training loss of one batch (only called when :meth:`train_dataset` returns data)."""
        raise NotImplementedError(f"{type(self).__name__} has no training loss")

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


class EpochShuffleSampler:
    """Indices ``0..n-1`` in an order fixed by ``seed + epoch`` (accelerate's loader calls ``set_epoch``).

    Every process draws the same permutation, so the batches a resumed run skips are the ones it already saw.

    >>> sampler = EpochShuffleSampler(5, seed=0)
    >>> sampler.set_epoch(1); first = list(sampler); sampler.set_epoch(1)
    >>> first == list(sampler), sorted(first)
    (True, [0, 1, 2, 3, 4])
    """

    def __init__(self, size: int, seed: int, shuffle: bool = True) -> None:
        self.size = size
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if not self.shuffle:
            return iter(range(self.size))
        import numpy as np

        return iter(np.random.default_rng(self.seed + self.epoch).permutation(self.size).tolist())

    def __len__(self) -> int:
        return self.size


@dataclass
class _Progress:
    """Where training stands; saved next to the accelerate state as ``trainer_state.json``."""

    step: int = 0
    micro_batches: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0


def find_checkpoint(output_dir: Path, resume: str | None) -> Path | None:
    """The checkpoint folder ``--resume`` names: a path, or ``latest`` (highest step in OUTPUT/checkpoints).

    ``latest`` with no checkpoint yet returns None (fresh start); a path that is not a checkpoint raises.
    """
    if resume is None:
        return None
    if resume == "latest":
        root = Path(output_dir) / CHECKPOINTS
        saved = [p for p in root.glob("step_*") if (p / TRAINER_STATE).is_file()] if root.is_dir() else []
        candidates = sorted(saved, key=lambda p: json.loads((p / TRAINER_STATE).read_text())["step"])
        return candidates[-1] if candidates else None
    path = Path(resume)
    if not (path / TRAINER_STATE).is_file():
        raise HoiBenchError(f"--resume {resume}: not a checkpoint folder (expected {path / TRAINER_STATE})")
    return path


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(partial, path)


def _schedule(warmup: int, total: int):
    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        if total <= warmup:
            return 1.0
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / (total - warmup))))
    return factor


def _cycle_batches(loader, accelerator, progress: _Progress, batches_per_epoch: int | None, epoch_setters):
    """Micro-batches forever: epoch after epoch, starting inside the epoch where ``progress`` stopped.

    ``epoch_setters`` are the objects whose order depends on the epoch (our sampler, a streaming dataset);
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
                logger.info("streaming resume: reading past %d batches already seen", skip)
        seen = 0
        for position, batch in enumerate(current, start=skip if batches_per_epoch is not None else 0):
            if batches_per_epoch is None and position < skip:
                continue
            seen += 1
            yield epoch, position, batch
        if seen == 0 and skip == 0:
            raise HoiBenchError("the training data is empty (no batch in a whole epoch)")
        epoch, skip = epoch + 1, 0


def run_training(baseline: Baseline, config: TrainingConfig) -> dict[str, Any]:
    """Train ``baseline`` as ``config`` says, write its predictions, score them; returns the results dict.

    Every process must call this; only the main process writes the log, predictions and results.
    """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration, GradientAccumulationPlugin, set_seed
    from datasets import is_progress_bar_enabled
    from datasets.distributed import split_dataset_by_node
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    accelerator = Accelerator(
        cpu=config.cpu,
        mixed_precision=config.mixed_precision,
        gradient_accumulation_plugin=GradientAccumulationPlugin(
            num_steps=config.gradient_accumulation_steps, sync_with_dataloader=False),
        dataloader_config=DataLoaderConfiguration(even_batches=True),
    )
    output_dir = config.output_dir
    logger.info("%s: %s, %d process(es), mixed precision %s", baseline.name, accelerator.device,
                accelerator.num_processes, accelerator.mixed_precision)
    set_seed(config.seed)
    with accelerator.main_process_first():  # one process fills the datasets cache, the others then read it
        train_data = None if config.eval_only else baseline.train_dataset(config.streaming)
        eval_data = baseline.eval_datasets()
        model = baseline.build_model()
    trainable = any(p.requires_grad for p in model.parameters())
    trains = train_data is not None and config.max_steps > 0 and trainable

    checkpoint = find_checkpoint(output_dir, config.resume)
    progress = _Progress()
    history: list[dict[str, Any]] = []
    log_path = output_dir / "log.json"
    if checkpoint is not None:
        progress = _Progress(**json.loads((checkpoint / TRAINER_STATE).read_text()))
        if log_path.is_file():
            logged = json.loads(log_path.read_text()).get("history", [])
            history = [entry for entry in logged if entry["step"] <= progress.step]

    started = time.perf_counter()
    if trains:
        model, history = _train(accelerator, baseline, model, train_data, config, checkpoint, progress,
                                history, split_dataset_by_node, tqdm)
    else:
        model = accelerator.prepare(model) if trainable else model.to(accelerator.device)
        if checkpoint is not None:
            accelerator.load_state(str(checkpoint))
    train_seconds = time.perf_counter() - started

    results: dict[str, Any] = {"baseline": baseline.name, "steps": progress.step,
                               "train_seconds": round(train_seconds, 3), "splits": {}}
    model.eval()
    for split, dataset in eval_data.items():
        records: list[dict[str, Any]] = []
        loader = accelerator.prepare(DataLoader(dataset.with_transform(baseline.transform),
                                                batch_size=config.eval_batch_size, shuffle=False,
                                                collate_fn=baseline.collate, num_workers=config.num_workers))
        for batch in tqdm(loader, desc=f"predict {split}",
                          disable=not (accelerator.is_local_main_process and is_progress_bar_enabled())):
            with torch.no_grad(), accelerator.autocast():
                records.extend(accelerator.gather_for_metrics(baseline.predict(model, batch),
                                                              use_gather_object=True))
        if accelerator.is_main_process:
            path, metrics = baseline.finish(split, records, output_dir / "predictions")
            results["splits"][split] = {"predictions": str(path), "examples": len(records),
                                        "metrics": metrics}
            logger.info("%s %s: %s", baseline.name, split, metrics)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        results["overall"] = baseline.finalize(output_dir / "predictions", results["splits"])
        _write_json(output_dir / "results.json", results)
        _write_json(log_path, {"baseline": baseline.name, "config": asdict(config), "history": history,
                               "results": results})
    accelerator.end_training()
    return results


def _train(accelerator, baseline, model, train_data, config, checkpoint, progress, history, split_by_node,
           tqdm):
    import torch
    from datasets import IterableDataset, is_progress_bar_enabled
    from torch.utils.data import DataLoader

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
        sampler = EpochShuffleSampler(len(train_data), config.seed, shuffle=not config.overfit_batches)
        loader = DataLoader(train_data.with_transform(baseline.train_transform), batch_size=config.batch_size,
                            sampler=sampler, collate_fn=baseline.collate, num_workers=config.num_workers,
                            drop_last=len(train_data) >= config.batch_size * accelerator.num_processes)
        epoch_setters = (sampler,)

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.learning_rate,
                                  weight_decay=config.weight_decay)
    # accelerate steps a prepared scheduler once per process per update, hence the num_processes factor
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(
        config.warmup_steps * accelerator.num_processes, config.max_steps * accelerator.num_processes))
    if streaming:
        # split_dataset_by_node already gave each process its own rows; accelerate must not shard them again
        model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    else:
        model, optimizer, scheduler, loader = accelerator.prepare(model, optimizer, scheduler, loader)
    batches_per_epoch = None if streaming else len(loader)

    if checkpoint is not None:
        accelerator.load_state(str(checkpoint))
        logger.info("resumed from %s at step %d", checkpoint, progress.step)

    bar = tqdm(total=config.max_steps, initial=progress.step, desc=f"train {baseline.name}",
               disable=not (accelerator.is_local_main_process and is_progress_bar_enabled()))
    running = torch.zeros(2, device=accelerator.device)
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
            total, count = accelerator.reduce(running, reduction="sum").tolist()
            entry = {"step": progress.step, "epoch": progress.epoch, "loss": total / max(count, 1),
                     "learning_rate": scheduler.get_last_lr()[0]}
            history.append(entry)
            bar.set_postfix(loss=f"{entry['loss']:.4f}")
            running.zero_()
            if accelerator.is_main_process:
                _write_json(config.output_dir / "log.json",
                            {"baseline": baseline.name, "config": asdict(config), "history": history})
        if progress.step % config.checkpointing_steps == 0 or last:
            _save_checkpoint(accelerator, config, progress)
    bar.close()
    accelerator.wait_for_everyone()
    accelerator.save_model(model, str(config.output_dir / "model"))
    return model, history


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
        _write_json(staging / TRAINER_STATE, asdict(progress))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
        kept = sorted(root.glob("step_*"))
        for old in kept[: max(0, len(kept) - config.keep_checkpoints)]:
            shutil.rmtree(old, ignore_errors=True)
        logger.info("saved checkpoint %s", final)
    accelerator.wait_for_everyone()


def demo_hub_folder(context_dir: Path, build) -> Path:
    """The Hub folder a benchmark's demo build step wrote under ``context_dir / "hub"``, built with
    ``build(hub_path)`` when that step did not run (e.g. a single demo step run on its own)."""
    hub = Path(context_dir) / "hub"
    if not (hub / "README.md").is_file():
        hub = Path(build(hub))
    return hub


def run_with_args(baseline: Baseline, args: argparse.Namespace) -> dict[str, Any]:
    """Run ``baseline`` with the training flags of ``args``; the other flags are logged as ``config.extra``.

    This is what both ``accelerate launch -m <package>.baseline`` and ``hoi-bench train <benchmark>`` call.
    """
    extra = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
             if k not in TrainingConfig.__dataclass_fields__ and not callable(v)}
    return run_training(baseline, config_from_args(args, **extra))


def parse_script_args(module: str, description: str | None, configure, argv: Sequence[str] | None = None
                      ) -> argparse.Namespace:
    """Parse ``python -m <module>`` arguments of a baseline whose flags ``configure(parser)`` declares."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    configure(parser)
    return parser.parse_args(argv)
