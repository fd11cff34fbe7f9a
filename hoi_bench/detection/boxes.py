"""Box conversions and overlaps for the detector, delegated to ``transformers``' DETR utilities.

Boxes inside the detector are normalised ``(cx, cy, w, h)``; GIoU is computed on corners, as DETR and QPIC do.
"""

from __future__ import annotations

import torch


def cxcywh_to_xyxy(boxes: torch.Tensor) -> torch.Tensor:
    """Corners ``(x1, y1, x2, y2)`` of ``(cx, cy, w, h)`` boxes (``transformers``' ``center_to_corners_format``).

    >>> cxcywh_to_xyxy(torch.tensor([[0.5, 0.5, 0.2, 0.4]])).tolist()
    [[0.4000000059604645, 0.30000001192092896, 0.6000000238418579, 0.699999988079071]]
    """
    from transformers.image_transforms import center_to_corners_format

    return center_to_corners_format(boxes)


def generalized_box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    """``(N, M)`` generalized IoU of corner boxes (``transformers.loss``' DETR implementation)."""
    from transformers.loss.loss_for_object_detection import generalized_box_iou as giou

    return giou(boxes1, boxes2)


def xyxy_to_normalized_cxcywh(boxes: torch.Tensor, width: float, height: float) -> torch.Tensor:
    """Pixel corners to ``(cx, cy, w, h)`` divided by the image size (the detector's target space).

    >>> xyxy_to_normalized_cxcywh(torch.tensor([[10.0, 20.0, 30.0, 60.0]]), 100, 80).tolist()
    [[0.20000000298023224, 0.5, 0.20000000298023224, 0.5]]
    """
    x1, y1, x2, y2 = boxes.unbind(-1)
    out = torch.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], dim=-1)
    return out / torch.tensor([width, height, width, height], dtype=out.dtype)
