"""Model heads the baselines put on a :class:`hoi_bench.backbones.Backbone`.

- :class:`PairClassifier`: an interaction between two boxes (human–object in HICO-DET/V-COCO,
  subject–object in PSG/Haystack, person–person in SportsHHI) from backbone features of several crops
  (e.g. subject, object and their union, possibly in several frames) plus the pair's box geometry.
- :class:`PrototypeClassifier`: ProtoNet-style few-shot head (Snell et al., 2017) for Bongard-HOI: embed the
  shots, average them into one prototype per side, score each query by its negative squared distance.

Every head is a ``huggingface_hub`` ``PyTorchModelHubMixin``: ``save_pretrained(folder)`` writes
``config.json`` (the constructor's arguments) and ``model.safetensors``, and ``Head.from_pretrained(folder or
Hub id)`` rebuilds the same module offline, backbone included (from its ``transformers`` config, no download),
and loads the weights strictly.

(No ``from __future__ import annotations`` here: the mixin reads the constructor's annotations as types to
decode ``config.json``.)
"""

from collections.abc import Callable

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from hoi_bench.backbones import Backbone

#: How constructor arguments that are not JSON go to ``config.json`` and back: a backbone as its
#: :meth:`Backbone.to_config`; a tensor (a prior table) as its shape only, since its values are a buffer that
#: ``model.safetensors`` holds and loading fills in.
CODERS = {
    Backbone: (Backbone.to_config, Backbone.from_config),
    torch.Tensor: (lambda tensor: list(tensor.shape), lambda shape: torch.zeros(shape)),
}


class HubModule(nn.Module, PyTorchModelHubMixin, library_name="hoi-bench", tags=["hoi-bench"]):
    """A head that ``save_pretrained`` / ``from_pretrained`` handle; loading is strict (every weight present).
    """

    @classmethod
    def _from_pretrained(cls, *, strict: bool = True, **kwargs):
        return super()._from_pretrained(strict=strict, **kwargs)


class PairClassifier(HubModule, coders=CODERS):
    """``forward(crops, geometry)``: ``(pairs, crops, 3, S, S)`` and ``(pairs, G)`` → ``(pairs, classes)``.

    >>> from hoi_bench.backbones import tiny_random_backbone
    >>> head = PairClassifier(tiny_random_backbone(16), crops_per_pair=3, geometry_dim=9, num_classes=5)
    >>> head(torch.zeros(4, 3, 3, 16, 16), torch.zeros(4, 9)).shape
    torch.Size([4, 5])
    """

    def __init__(self, backbone: Backbone, *, crops_per_pair: int, geometry_dim: int, num_classes: int,
                 hidden: int = 256, geometry_hidden: int = 64, num_labels: int = 0, label_dim: int = 32,
                 pair_bias: torch.Tensor | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.crops_per_pair = crops_per_pair
        self.num_classes = num_classes
        self.geometry = nn.Sequential(nn.Linear(geometry_dim, geometry_hidden), nn.ReLU(),
                                      nn.Linear(geometry_hidden, geometry_hidden), nn.ReLU())
        self.labels = nn.Embedding(num_labels, label_dim) if num_labels else None
        width = crops_per_pair * backbone.feature_dim + geometry_hidden + (2 * label_dim if num_labels else 0)
        self.classifier = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))
        self.register_buffer("pair_bias", pair_bias, persistent=pair_bias is not None)

    def forward(self, crops: torch.Tensor, geometry: torch.Tensor,
                labels: torch.Tensor | None = None) -> torch.Tensor:
        """``labels`` ``(pairs, 2)``: subject and object class, needed when built with ``num_labels`` or a
        ``pair_bias`` (a ``(labels, labels, classes)`` table added to the logits, e.g. log frequencies)."""
        pairs = crops.shape[0]
        if pairs == 0:  # empty, yet tied to every parameter: backward reaches them all, as DDP requires
            tied = sum(parameter.sum() for parameter in self.parameters()) * 0.0
            return crops.new_zeros((0, self.num_classes)) + tied
        # reshape, not view: a ViT/DINOv2 pooled CLS token is a strided slice of the token sequence
        parts = [self.backbone(crops.flatten(0, 1)).reshape(pairs, -1), self.geometry(geometry)]
        if self.labels is not None:
            parts.append(self.labels(labels).flatten(1))
        logits = self.classifier(torch.cat(parts, dim=1))
        if self.pair_bias is not None:
            logits = logits + self.pair_bias[labels[:, 0], labels[:, 1]]
        return logits


class PairPrior(HubModule, coders=CODERS):
    """A parameter-free pair "classifier": logits = ``log_table[subject label, object label]`` (a prior).

    Same call signature as :class:`PairClassifier`, so a baseline can swap one for the other; with no
    trainable parameters the training loop only evaluates it.

    >>> prior = PairPrior(torch.log(torch.tensor([[[0.9, 0.1], [0.2, 0.8]]])))
    >>> prior(torch.zeros(2, 3, 3, 8, 8), torch.zeros(2, 9), torch.tensor([[0, 1], [0, 0]])).exp()
    tensor([[0.2000, 0.8000],
            [0.9000, 0.1000]])
    """

    def __init__(self, log_table: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("log_table", log_table)

    def forward(self, crops: torch.Tensor, geometry: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.log_table[labels[:, 0], labels[:, 1]]


class PrototypeClassifier(HubModule, coders=CODERS):
    """``forward(positive_shots, negative_shots, queries)`` → ``(episodes, queries, 2)`` logits.

    Logit 0 is the positive side, 1 the negative side. Shots are ``(episodes, shots, 3, S, S)``, queries
    ``(episodes, queries, 3, S, S)``; a query's logit for a side is minus its squared distance to that side's
    prototype (the mean shot embedding), divided by a learned temperature.

    >>> from hoi_bench.backbones import tiny_random_backbone
    >>> head = PrototypeClassifier(tiny_random_backbone(16), embedding_dim=8)
    >>> shots = torch.zeros(2, 6, 3, 16, 16)
    >>> head(shots, shots, torch.zeros(2, 2, 3, 16, 16)).shape
    torch.Size([2, 2, 2])
    """

    def __init__(self, backbone: Backbone, *, embedding_dim: int = 128) -> None:
        super().__init__()
        self.backbone = backbone
        self.projection = nn.Sequential(nn.Linear(backbone.feature_dim, embedding_dim), nn.ReLU(),
                                        nn.Linear(embedding_dim, embedding_dim))
        self.log_temperature = nn.Parameter(torch.zeros(()))

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        leading = images.shape[:-3]
        return self.projection(self.backbone(images.flatten(0, len(leading) - 1))).view(*leading, -1)

    def forward(self, positive_shots: torch.Tensor, negative_shots: torch.Tensor,
                queries: torch.Tensor) -> torch.Tensor:
        sides = (positive_shots, negative_shots)
        prototypes = torch.stack([self.embed(shots).mean(1) for shots in sides], dim=1)
        distances = torch.cdist(self.embed(queries), prototypes).pow(2)
        return -distances / self.log_temperature.exp()


def loss_over_pairs(loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], logits: torch.Tensor,
                    targets: torch.Tensor) -> torch.Tensor:
    """``loss(logits, targets)``, or a zero that still back-propagates when the batch holds no candidate pair.

    A batch can lack pairs (images with a single box, small batches); a mean over no pairs would be NaN and
    would poison the logged loss, so such a batch contributes 0 and zero gradients instead.

    >>> import torch.nn.functional as F
    >>> loss_over_pairs(F.cross_entropy, torch.zeros(0, 3, requires_grad=True), torch.zeros(0, 3)).item()
    0.0
    """
    return logits.sum() * 0.0 if logits.shape[0] == 0 else loss(logits, targets)


def concat_pair_rows(rows: list[dict], tensor_keys: tuple[str, ...], meta_keys: tuple[str, ...]) -> dict:
    """Collate rows that each hold a variable number of pairs: tensors concatenated along the pair axis,
    ``pair_counts`` saying how many pairs each row brought, metadata kept as per-row lists.

    >>> rows = [{"x": torch.zeros(2, 3), "id": "a"}, {"x": torch.zeros(0, 3), "id": "b"}]
    >>> batch = concat_pair_rows(rows, ("x",), ("id",))
    >>> batch["x"].shape, batch["pair_counts"].tolist(), batch["id"]
    (torch.Size([2, 3]), [2, 0], ['a', 'b'])
    """
    batch = {key: torch.cat([row[key] for row in rows]) for key in tensor_keys}
    batch["pair_counts"] = torch.tensor([len(row[tensor_keys[0]]) for row in rows])
    for key in meta_keys:
        batch[key] = [row[key] for row in rows]
    return batch


def split_pair_rows(values, pair_counts: torch.Tensor) -> list:
    """The inverse of :func:`concat_pair_rows` for per-pair outputs: one slice of ``values`` per batch row.

    >>> [part.tolist() for part in split_pair_rows(torch.arange(3), torch.tensor([2, 0, 1]))]
    [[0, 1], [], [2]]
    """
    parts, start = [], 0
    for count in pair_counts.tolist():
        parts.append(values[start:start + count])
        start += count
    return parts
