"""QPIC's training objective for interaction queries (``SetCriterionHOI``).

Same constructor arguments and loss names as QPIC's: ``loss_obj_ce``, ``loss_verb_ce`` (focal or bce),
``loss_sub_bbox``, ``loss_obj_bbox``, ``loss_sub_giou``, ``loss_obj_giou``, the logged ``obj_class_error`` and
``obj_cardinality_error``, and the same for every auxiliary decoder layer with the suffix ``_0``, ``_1``, ...
:meth:`SetCriterionHOI.total` is QPIC's weighted sum (what ``engine.py`` backpropagates).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from hoi_bench.detection.boxes import cxcywh_to_xyxy, generalized_box_iou
from hoi_bench.errors import ConfigError

LOSSES = ("obj_labels", "verb_labels", "sub_obj_boxes", "obj_cardinality")
VERB_LOSS_TYPES = ("focal", "bce")


def weight_dict(*, obj_loss_coef: float = 1, verb_loss_coef: float = 1, bbox_loss_coef: float = 2.5,
                giou_loss_coef: float = 1, aux_layers: int = 0) -> dict[str, float]:
    """QPIC's ``weight_dict`` (``main.py``): one weight per loss, repeated with ``_i`` for each aux layer.

    >>> sorted(weight_dict(aux_layers=1))[:3]
    ['loss_obj_bbox', 'loss_obj_bbox_0', 'loss_obj_ce']
    """
    last = {"loss_obj_ce": obj_loss_coef, "loss_verb_ce": verb_loss_coef,
            "loss_sub_bbox": bbox_loss_coef, "loss_obj_bbox": bbox_loss_coef,
            "loss_sub_giou": giou_loss_coef, "loss_obj_giou": giou_loss_coef}
    weights = dict(last)
    for layer in range(aux_layers):
        weights.update({f"{name}_{layer}": value for name, value in last.items()})
    return weights


def focal_verb_loss(probabilities: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """CornerNet's modified focal loss on sigmoid probabilities, normalised by the number of positives.

    >>> round(focal_verb_loss(torch.tensor([[0.5, 0.5]]), torch.tensor([[1.0, 0.0]])).item(), 6)
    0.346574
    """
    positive = targets.eq(1).to(probabilities.dtype)
    negative = targets.lt(1).to(probabilities.dtype)
    pos_loss = (torch.log(probabilities) * (1 - probabilities) ** 2 * positive).sum()
    neg_loss = (torch.log(1 - probabilities) * probabilities ** 2 * negative).sum()
    count = positive.sum()
    if count == 0:
        return -neg_loss
    return -(pos_loss + neg_loss) / count


class SetCriterionHOI(nn.Module):
    """Losses of a QPIC-style HOI detector for one batch; ``forward`` returns every term, unweighted."""

    def __init__(self, num_obj_classes: int, num_queries: int, num_verb_classes: int, matcher: nn.Module,
                 weight_dict: dict[str, float], eos_coef: float, losses: Sequence[str],
                 verb_loss_type: str = "focal") -> None:
        super().__init__()
        if verb_loss_type not in VERB_LOSS_TYPES:
            raise ConfigError("verb loss type", verb_loss_type, VERB_LOSS_TYPES)
        for name in losses:
            if name not in LOSSES:
                raise ConfigError("loss", name, LOSSES)
        self.num_obj_classes = num_obj_classes
        self.num_queries = num_queries
        self.num_verb_classes = num_verb_classes
        self.matcher = matcher
        self.weight_dict = dict(weight_dict)
        self.eos_coef = eos_coef
        self.losses = tuple(losses)
        self.verb_loss_type = verb_loss_type
        empty_weight = torch.ones(num_obj_classes + 1)
        empty_weight[-1] = eos_coef
        self.register_buffer("empty_weight", empty_weight)

    def loss_obj_labels(self, outputs, targets, indices, num_interactions, log: bool = True) -> dict:
        logits = outputs["pred_obj_logits"]
        where = _matched(indices)
        matched = torch.cat([t["obj_labels"][found] for t, (_, found) in zip(targets, indices)])
        classes = torch.full(logits.shape[:2], self.num_obj_classes, dtype=torch.int64, device=logits.device)
        classes[where] = matched.to(logits.device)
        losses = {"loss_obj_ce": F.cross_entropy(logits.transpose(1, 2), classes,
                                                 self.empty_weight.to(logits.dtype))}
        if log:
            losses["obj_class_error"] = 100 - _top1_accuracy(logits[where], matched)
        return losses

    @torch.no_grad()
    def loss_obj_cardinality(self, outputs, targets, indices, num_interactions) -> dict:
        logits = outputs["pred_obj_logits"]
        lengths = torch.as_tensor([len(t["obj_labels"]) for t in targets], device=logits.device)
        predicted = (logits.argmax(-1) != logits.shape[-1] - 1).sum(1)
        return {"obj_cardinality_error": F.l1_loss(predicted.float(), lengths.float())}

    def loss_verb_labels(self, outputs, targets, indices, num_interactions) -> dict:
        logits = outputs["pred_verb_logits"]
        where = _matched(indices)
        matched = torch.cat([t["verb_labels"][found] for t, (_, found) in zip(targets, indices)])
        verbs = torch.zeros_like(logits)
        verbs[where] = matched.to(logits.dtype)
        if self.verb_loss_type == "bce":
            return {"loss_verb_ce": F.binary_cross_entropy_with_logits(logits, verbs)}
        return {"loss_verb_ce": focal_verb_loss(logits.sigmoid(), verbs)}

    def loss_sub_obj_boxes(self, outputs, targets, indices, num_interactions) -> dict:
        where = _matched(indices)
        sub = outputs["pred_sub_boxes"][where]
        obj = outputs["pred_obj_boxes"][where]
        if sub.shape[0] == 0:
            return {"loss_sub_bbox": sub.sum(), "loss_obj_bbox": obj.sum(),
                    "loss_sub_giou": sub.sum(), "loss_obj_giou": obj.sum()}
        tgt_sub = torch.cat([t["sub_boxes"][found] for t, (_, found) in zip(targets, indices)]).to(sub)
        tgt_obj = torch.cat([t["obj_boxes"][found] for t, (_, found) in zip(targets, indices)]).to(obj)
        has_object = (tgt_obj != 0).any(dim=1)
        objects = has_object.sum() + 1e-4
        sub_giou = 1 - torch.diag(generalized_box_iou(cxcywh_to_xyxy(sub), cxcywh_to_xyxy(tgt_sub)))
        obj_giou = 1 - torch.diag(generalized_box_iou(cxcywh_to_xyxy(obj), cxcywh_to_xyxy(tgt_obj)))
        return {
            "loss_sub_bbox": F.l1_loss(sub, tgt_sub, reduction="none").sum() / num_interactions,
            "loss_obj_bbox": (F.l1_loss(obj, tgt_obj, reduction="none") * has_object.unsqueeze(1)).sum()
            / objects,
            "loss_sub_giou": sub_giou.sum() / num_interactions,
            "loss_obj_giou": (obj_giou * has_object).sum() / objects,
        }

    def get_loss(self, loss: str, outputs, targets, indices, num_interactions, **kwargs) -> dict:
        methods = {"obj_labels": self.loss_obj_labels, "obj_cardinality": self.loss_obj_cardinality,
                   "verb_labels": self.loss_verb_labels, "sub_obj_boxes": self.loss_sub_obj_boxes}
        return methods[loss](outputs, targets, indices, num_interactions, **kwargs)

    def forward(self, outputs: dict, targets: list[dict]) -> dict[str, torch.Tensor]:
        last = {key: value for key, value in outputs.items() if key != "aux_outputs"}
        indices = self.matcher(last, targets)
        num_interactions = self.num_interactions(targets, next(iter(last.values())).device)
        losses: dict[str, torch.Tensor] = {}
        for loss in self.losses:
            losses.update(self.get_loss(loss, outputs, targets, indices, num_interactions))
        for layer, aux in enumerate(outputs.get("aux_outputs", [])):
            indices = self.matcher(aux, targets)
            for loss in self.losses:
                extra = {"log": False} if loss == "obj_labels" else {}
                terms = self.get_loss(loss, aux, targets, indices, num_interactions, **extra)
                losses.update({f"{name}_{layer}": value for name, value in terms.items()})
        return losses

    def total(self, losses: dict[str, torch.Tensor]) -> torch.Tensor:
        """``Σ weight_dict[k] · losses[k]`` over the weighted terms (QPIC's backpropagated loss)."""
        return sum(losses[name] * weight for name, weight in self.weight_dict.items() if name in losses)

    @staticmethod
    def num_interactions(targets: list[dict], device: torch.device) -> float:
        """Targets in the batch, averaged over processes (all-reduced when distributed), at least 1."""
        count = torch.as_tensor([float(sum(len(t["obj_labels"]) for t in targets))], device=device)
        world = 1
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(count)
            world = torch.distributed.get_world_size()
        return torch.clamp(count / world, min=1).item()


def _matched(indices) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch index, query index) of every matched query, image after image."""
    batch = torch.cat([torch.full_like(queries, image) for image, (queries, _) in enumerate(indices)])
    queries = torch.cat([queries for queries, _ in indices])
    return batch, queries


def _top1_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Top-1 accuracy in percent; 0 when there is nothing to score (so the error is 100, as in DETR)."""
    if labels.numel() == 0:
        return torch.zeros((), device=logits.device)
    return (logits.argmax(-1) == labels.to(logits.device)).float().mean() * 100
