"""The part the pair baselines share (HICO-DET-SG / V-COCO-SG, Haystack / PSG PredCls, SportsHHI HHICls).

Each scores every candidate pair of boxes in a row (an image or a keyframe) with a pair head
(:class:`hoi_bench.heads.PairClassifier` or :class:`hoi_bench.heads.PairPrior`). A row becomes a variable
number of pairs, so the batch layout, the loss over pairs, the split of per-pair scores back into rows and the
training-pair subsampling are the same for all three; a benchmark only says how a row turns into pairs
(:meth:`PairBaseline.pair_rows`), how logits become scores, and how records become its native prediction file.
"""

from __future__ import annotations

import abc
import argparse
import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from hoi_bench.training import RowsAsReferences, load_split


def add_pair_arguments(parser: argparse.ArgumentParser, title: str, *, unit: str, max_pairs: int,
                       models: dict[str, str] | None = None) -> argparse._ArgumentGroup:
    """The flag group of a pair baseline's model, opened with the flags they share: how many training pairs
    one ``unit`` (image, keyframe) contributes (:attr:`PairBaseline.train_pair_limit`) and, where a
    benchmark offers several, ``--model`` (``models`` maps each choice to what it is; the first is the
    default)."""
    group = parser.add_argument_group(title)
    if models:
        group.add_argument("--model", choices=tuple(models), default=next(iter(models)),
                           help="; ".join(f"{name}: {what}" for name, what in models.items()))
    group.add_argument(f"--max-pairs-per-{unit}", type=int, default=max_pairs,
                       help=f"training pairs per {unit}: every annotated pair, then unannotated ones")
    return group


class PairBaseline(RowsAsReferences):
    """A :class:`Baseline` whose model maps ``(crops, geometry[, labels])`` of every pair to logits.

    Batches hold ``tensor_keys`` concatenated over the pairs of all rows (``targets`` among them), a
    ``pair_counts`` tensor, and ``meta_keys`` as per-row lists (``pairs`` among them). A prediction record is
    a row's metadata plus ``pairs`` as an ``(n, 2)`` array and ``scores`` (one row of scores per pair).
    """

    tensor_keys: tuple[str, ...] = ("crops", "geometry", "labels", "targets")
    meta_keys: tuple[str, ...] = ("pairs",)

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.preprocessing = None
        self.references: dict[str, Any] = {}

    @property
    @abc.abstractmethod
    def train_pair_limit(self) -> int:
        """Most pairs a training row contributes (``--max-pairs-per-image``, ``--max-pairs-per-keyframe``)."""

    @abc.abstractmethod
    def pair_rows(self, rows: dict[str, list], limit: int | None) -> dict[str, list]:
        """Raw rows → one entry per row for every tensor and meta key (at most ``limit`` pairs a row)."""

    @abc.abstractmethod
    def pair_loss(self, logits, targets):
        """The loss of the pairs' logits against their targets (a mean over pairs)."""

    def split(self, name: str, *, streaming: bool = False):
        """The rows of split ``name`` of ``--config``."""
        return load_split(self.args, name, streaming=streaming)

    def transform(self, rows: dict[str, list]) -> dict[str, list]:
        return self.pair_rows(rows, limit=None)

    def train_transform(self, rows: dict[str, list]) -> dict[str, list]:
        return self.pair_rows(rows, limit=self.train_pair_limit)

    def columns(self) -> dict[str, list]:
        """Empty output columns for :meth:`pair_rows` to fill."""
        return {key: [] for key in self.tensor_keys + self.meta_keys}

    def collate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        from hoi_bench.heads import concat_pair_rows

        return concat_pair_rows(rows, self.tensor_keys, self.meta_keys)

    def logits(self, model, batch: dict[str, Any]):
        """The model's float logits for every pair of the batch."""
        labels = [batch["labels"]] if "labels" in self.tensor_keys else []
        return model(batch["crops"], batch["geometry"], *labels).float()

    def scores(self, logits):
        """Per-pair scores written to the prediction file (default: a softmax over the classes)."""
        return logits.softmax(-1)

    def loss(self, model, batch):
        from hoi_bench.heads import loss_over_pairs

        return loss_over_pairs(self.pair_loss, self.logits(model, batch), batch["targets"])

    def predict(self, model, batch) -> list[dict[str, Any]]:
        from hoi_bench.heads import split_pair_rows

        scores = split_pair_rows(self.scores(self.logits(model, batch)).cpu().numpy(), batch["pair_counts"])
        records = []
        for row, part in enumerate(scores):
            record = {key: batch[key][row] for key in self.meta_keys}
            record["pairs"] = np.asarray(record["pairs"], dtype=np.int64).reshape(-1, 2)
            record["scores"] = part
            records.append(record)
        return records


def pair_crops_or_blank(image_of: Callable[[], Any], boxes: list[tuple[Any, Any]], preprocessing, *,
                        needed: bool, extra: Callable[[Any, Any], list] | None = None,
                        crops_per_pair: int = 3):
    """``(pairs, crops_per_pair, 3, S, S)``: subject, object and union crops of every ``(subject box, object
    box)`` (plus ``extra(subject, object)`` crops), or zeros when the model reads no pixels (a prior) or there
    is no pair; ``image_of()`` decodes the image only when crops are cut."""
    import torch

    from hoi_bench.backbones import image_tensor, pair_crops

    side = preprocessing.size
    if not (needed and boxes):
        return torch.zeros(len(boxes), crops_per_pair, 3, side, side)
    image = image_tensor(image_of())
    return torch.stack([torch.cat([pair_crops(image, subject, obj, preprocessing)] +
                                  (extra(subject, obj) if extra is not None else []))
                        for subject, obj in boxes])


def subsample_pairs(pairs: list[tuple[int, int]], annotated, limit: int, key: str) -> list[tuple[int, int]]:
    """Every annotated pair, then unannotated ones in an order fixed by ``key`` (the row's id), up to
    ``limit``: the same training pairs for a row in every epoch, on every process and after a resume.

    >>> subsample_pairs([(0, 1), (1, 0), (0, 2), (2, 0)], {(0, 2)}, 2, "img")[0]
    (0, 2)
    """
    positives = [p for p in pairs if p in annotated]
    negatives = [p for p in pairs if p not in annotated]
    seed = int.from_bytes(hashlib.sha1(key.encode()).digest()[:4], "little")
    order = np.random.default_rng(seed).permutation(len(negatives))
    return positives[:limit] + [negatives[i] for i in order[: max(0, limit - len(positives))]]
