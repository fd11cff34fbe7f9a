"""Box arithmetic shared by the benchmarks: xyxy IoU matrices under the pixel conventions upstream code uses."""

from __future__ import annotations

import numpy as np


def iou_matrix(boxes_a: np.ndarray, boxes_b: np.ndarray, *, plus_one: bool = False, strict: bool = True) -> np.ndarray:
    """IoU between every box of ``boxes_a`` (N×4 xyxy) and every box of ``boxes_b`` (M×4); returns N×M float64.

    ``plus_one=True`` is the +1-pixel convention of HICO-DET code (a box [x1, x2] spans x2 - x1 + 1 pixels).
    ``strict=True`` scores intersections whose raw extent ``min(x2) - max(x1)`` is not positive as 0 (QPIC's
    ``ix1 >= ix2`` rule, so with ``plus_one`` a one-pixel touch still counts as no overlap); ``strict=False``
    accepts any non-negative raw extent, as the official MATLAB code does (``iw = ix2 - ix1 + 1 > 0``).

    >>> a = np.array([[0, 0, 10, 10]]); b = np.array([[5, 0, 15, 10], [10, 0, 20, 10]])
    >>> iou_matrix(a, b).round(4).tolist()
    [[0.3333, 0.0]]
    >>> iou_matrix(a, b, plus_one=True).round(4).tolist()
    [[0.375, 0.0]]
    >>> iou_matrix(a, b, plus_one=True, strict=False).round(4).tolist()
    [[0.375, 0.0476]]
    """
    a = np.asarray(boxes_a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(boxes_b, dtype=np.float64).reshape(-1, 4)
    pad = 1.0 if plus_one else 0.0
    area_a = (a[:, 2] - a[:, 0] + pad) * (a[:, 3] - a[:, 1] + pad)
    area_b = (b[:, 2] - b[:, 0] + pad) * (b[:, 3] - b[:, 1] + pad)
    raw_w = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    raw_h = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    overlaps = (raw_w > 0) & (raw_h > 0) if strict else (raw_w >= 0) & (raw_h >= 0)
    inter = np.where(overlaps, (raw_w + pad) * (raw_h + pad), 0.0)
    inter = np.clip(inter, 0.0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / union, 0.0)
    return iou

