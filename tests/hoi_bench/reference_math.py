"""Straightforward reference versions of box and AP checks, used by tests as oracles (not library code)."""

from __future__ import annotations

import numpy as np

from hoi_bench.ap import ELEVEN_POINTS


def ap_11_point(precision: np.ndarray, recall: np.ndarray) -> float:
    """VOC2007 11-point interpolated AP: mean over t in ``ELEVEN_POINTS`` of the max precision at recall >= t."""
    precision = np.asarray(precision, dtype=np.float64)
    recall = np.asarray(recall, dtype=np.float64)
    ap = 0.0
    for t in ELEVEN_POINTS:
        mask = recall >= t
        ap += (precision[mask].max() if mask.any() else 0.0) / 11.0
    return float(ap)


def check_xyxy(boxes: np.ndarray) -> np.ndarray:
    """Indices of boxes that are not well-formed xyxy (non-finite, or x2 < x1, or y2 < y1)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    bad = ~np.isfinite(b).all(axis=1) | (b[:, 2] < b[:, 0]) | (b[:, 3] < b[:, 1])
    return np.flatnonzero(bad)
