"""From detector outputs to scored (subject, object, verb) triplets: QPIC's ``PostProcessHOI`` and the
triplet ranking of its evaluators (validity mask, stable sort, top ``max_hois``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hoi_bench.detection.boxes import cxcywh_to_xyxy


class PostProcessHOI(nn.Module):
    """QPIC's post-processing: per image, ``labels`` (Q × ``subject_category_id`` then the Q object labels),
    ``boxes`` (Q subject then Q object boxes, pixels of the original size), ``verb_scores`` (Q×V, sigmoid × the
    object score), ``sub_ids`` (0..Q−1) and ``obj_ids`` (Q..2Q−1).

    ``target_sizes`` is ``(B, 2)``: each image's original ``(height, width)``. The object score and label are
    the maximum of the softmax over the object classes, the "no object" prediction slot (last) excluded.
    """

    def __init__(self, subject_category_id: int = 0) -> None:
        super().__init__()
        self.subject_category_id = subject_category_id

    @torch.no_grad()
    def forward(self, outputs: dict, target_sizes: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        obj_logits, verb_logits = outputs["pred_obj_logits"], outputs["pred_verb_logits"]
        if len(obj_logits) != len(target_sizes) or target_sizes.shape[1] != 2:
            raise ValueError(f"PostProcessHOI: target_sizes must be ({len(obj_logits)}, 2) (height, width), "
                             f"got {tuple(target_sizes.shape)}")
        obj_scores, obj_labels = F.softmax(obj_logits, -1)[..., :-1].max(-1)
        verb_scores = verb_logits.sigmoid()
        height, width = target_sizes.unbind(1)
        scale = torch.stack([width, height, width, height], dim=1).to(verb_scores)
        sub_boxes = cxcywh_to_xyxy(outputs["pred_sub_boxes"]) * scale[:, None, :]
        obj_boxes = cxcywh_to_xyxy(outputs["pred_obj_boxes"]) * scale[:, None, :]
        results = []
        for scores, labels, verbs, subs, objs in zip(obj_scores, obj_labels, verb_scores, sub_boxes, obj_boxes):
            queries = len(labels)
            ids = torch.arange(2 * queries)
            results.append({
                "labels": torch.cat([torch.full_like(labels, self.subject_category_id), labels]).cpu(),
                "boxes": torch.cat([subs, objs]).cpu(),
                "verb_scores": (verbs * scores.unsqueeze(1)).cpu(),
                "sub_ids": ids[:queries],
                "obj_ids": ids[queries:],
            })
        return results


@dataclass(frozen=True)
class RankedTriplets:
    """One image's best triplets: indices into the post-processed ``boxes``, verb index and score."""

    subject_ids: np.ndarray
    object_ids: np.ndarray
    verbs: np.ndarray
    scores: np.ndarray


def rank_triplets(result: dict[str, torch.Tensor], correct_mat: np.ndarray, max_hois: int = 100
                  ) -> RankedTriplets:
    """QPIC's ``HICOEvaluator`` / ``VCOCOEvaluator`` candidate list of one post-processed image.

    Every (query, verb) is a candidate, enumerated query-major then verb; its score is multiplied by
    ``correct_mat[verb, object label]`` (0/1: whether that verb–object combination exists); candidates are
    sorted by score, descending, with a stable sort (equal scores keep enumeration order, as Python's
    ``list.sort`` does), and the first ``max_hois`` kept.

    >>> result = {"labels": torch.tensor([0, 0, 1, 2]), "verb_scores": torch.tensor([[0.2, 0.9], [0.9, 0.9]]),
    ...           "sub_ids": torch.tensor([0, 1]), "obj_ids": torch.tensor([2, 3])}
    >>> ranked = rank_triplets(result, np.array([[1, 1, 1], [1, 0, 1]]), max_hois=3)
    >>> ranked.subject_ids.tolist(), ranked.object_ids.tolist(), ranked.verbs.tolist(), ranked.scores.tolist()
    ([1, 1, 0], [3, 3, 2], [0, 1, 0], [0.8999999761581421, 0.8999999761581421, 0.20000000298023224])
    """
    scores = result["verb_scores"].float().numpy()
    queries, verbs = scores.shape
    verb_of = np.tile(np.arange(verbs), queries)
    subject_of = np.repeat(result["sub_ids"].numpy(), verbs)
    object_of = np.repeat(result["obj_ids"].numpy(), verbs)
    labels = result["labels"].numpy()
    flat = scores.ravel() * correct_mat[verb_of, labels[object_of]]
    order = np.argsort(-flat, kind="stable")[:max_hois]
    return RankedTriplets(subject_of[order], object_of[order], verb_of[order], flat[order])
