"""QPIC's Hungarian matching of interaction queries to ground-truth (subject, object, verbs) targets.

Same constructor arguments, dict keys and costs as QPIC's ``HungarianMatcherHOI`` (see
``docs/baselines.md``), so a QPIC user can swap one for the other and compare numbers.
"""

from __future__ import annotations

import torch
from torch import nn

from hoi_bench.detection.boxes import cxcywh_to_xyxy, generalized_box_iou
from hoi_bench.errors import HoiBenchError


class HungarianMatcherHOI(nn.Module):
    """One-to-one assignment of queries to targets per image, minimising QPIC's weighted cost.

    ``outputs``: ``pred_obj_logits`` (B×Q×(K+1)), ``pred_verb_logits`` (B×Q×V), ``pred_sub_boxes`` and
    ``pred_obj_boxes`` (B×Q×4, normalised cx, cy, w, h). ``targets``: one dict per image with ``obj_labels``
    (T), ``verb_labels`` (T×V, 0/1), ``sub_boxes`` and ``obj_boxes`` (T×4; an all-zero object box is a pair
    without object). Returns, per image, ``(query indices, target indices)`` as int64 tensors in the order
    ``scipy.optimize.linear_sum_assignment`` gives them.
    """

    def __init__(self, cost_obj_class: float = 1, cost_verb_class: float = 1, cost_bbox: float = 1,
                 cost_giou: float = 1) -> None:
        super().__init__()
        if not any((cost_obj_class, cost_verb_class, cost_bbox, cost_giou)):
            raise HoiBenchError("HungarianMatcherHOI: at least one of the four matching costs must be non-zero")
        self.cost_obj_class = cost_obj_class
        self.cost_verb_class = cost_verb_class
        self.cost_bbox = cost_bbox
        self.cost_giou = cost_giou

    @torch.no_grad()
    def cost_matrix(self, outputs: dict, targets: list[dict]) -> torch.Tensor:
        """``(B, Q, ΣT)`` cost of giving each query each target of the whole batch."""
        batch, queries = outputs["pred_obj_logits"].shape[:2]
        obj_prob = outputs["pred_obj_logits"].flatten(0, 1).softmax(-1)
        verb_prob = outputs["pred_verb_logits"].flatten(0, 1).sigmoid()
        sub_boxes = outputs["pred_sub_boxes"].flatten(0, 1)
        obj_boxes = outputs["pred_obj_boxes"].flatten(0, 1)

        labels = torch.cat([t["obj_labels"] for t in targets])
        verbs = torch.cat([t["verb_labels"] for t in targets]).to(verb_prob.dtype).T
        tgt_sub = torch.cat([t["sub_boxes"] for t in targets]).to(sub_boxes.dtype)
        tgt_obj = torch.cat([t["obj_boxes"] for t in targets]).to(obj_boxes.dtype)
        has_object = (tgt_obj != 0).any(dim=1).unsqueeze(0)

        cost_obj_class = -obj_prob[:, labels]
        cost_verb_class = -(verb_prob @ verbs / (verbs.sum(dim=0, keepdim=True) + 1e-4)
                            + (1 - verb_prob) @ (1 - verbs) / ((1 - verbs).sum(dim=0, keepdim=True) + 1e-4)) / 2
        cost_sub_bbox = torch.cdist(sub_boxes, tgt_sub, p=1)
        cost_sub_giou = -generalized_box_iou(cxcywh_to_xyxy(sub_boxes), cxcywh_to_xyxy(tgt_sub))
        if cost_sub_bbox.shape[1] == 0:
            cost_bbox, cost_giou = cost_sub_bbox, cost_sub_giou
        else:
            cost_obj_bbox = torch.cdist(obj_boxes, tgt_obj, p=1) * has_object
            cost_obj_giou = (-generalized_box_iou(cxcywh_to_xyxy(obj_boxes), cxcywh_to_xyxy(tgt_obj))
                             + cost_sub_giou * ~has_object)
            cost_bbox = torch.maximum(cost_sub_bbox, cost_obj_bbox)
            cost_giou = torch.maximum(cost_sub_giou, cost_obj_giou)
        cost = (self.cost_obj_class * cost_obj_class + self.cost_verb_class * cost_verb_class
                + self.cost_bbox * cost_bbox + self.cost_giou * cost_giou)
        return cost.view(batch, queries, -1)

    @torch.no_grad()
    def forward(self, outputs: dict, targets: list[dict]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        from scipy.optimize import linear_sum_assignment

        cost = self.cost_matrix(outputs, targets).cpu()
        if cost.dtype in (torch.float16, torch.bfloat16):  # mixed precision: scipy reads float32 or float64
            cost = cost.float()
        sizes = [len(t["obj_labels"]) for t in targets]
        assignments = [linear_sum_assignment(block[image]) for image, block in enumerate(cost.split(sizes, -1))]
        return [(torch.as_tensor(queries, dtype=torch.int64), torch.as_tensor(found, dtype=torch.int64))
                for queries, found in assignments]
