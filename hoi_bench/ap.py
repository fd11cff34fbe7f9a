"""Average precision from ranked true/false positives, in the two interpolations the benchmarks' code uses."""

from __future__ import annotations

import numpy as np

# np.arange(0., 1.1, 0.1) exactly as the VOC2007 / HICO-DET code iterates it (0.30000000000000004 included).
ELEVEN_POINTS = np.arange(0.0, 1.1, 0.1)


def precision_recall(is_tp: np.ndarray, num_gt: int) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative precision and recall of detections already sorted by descending score.

    >>> p, r = precision_recall(np.array([1, 0, 1]), num_gt=4)
    >>> p.round(4).tolist(), r.tolist()
    ([1.0, 0.5, 0.6667], [0.25, 0.25, 0.5])
    """
    tp = np.cumsum(np.asarray(is_tp, dtype=np.float64))
    fp = np.cumsum(1.0 - np.asarray(is_tp, dtype=np.float64))
    recall = tp / num_gt if num_gt > 0 else np.full_like(tp, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    return precision, recall


def ap_all_point(precision: np.ndarray, recall: np.ndarray) -> float:
    """VOC2010+ all-point AP: area under the monotone precision envelope (TF-OD-API formulation).

    >>> ap_all_point(np.array([1.0, 0.5, 0.6667]), np.array([0.25, 0.25, 0.5])).__round__(4)
    0.4167
    """
    precision = np.asarray(precision, dtype=np.float64)
    recall = np.asarray(recall, dtype=np.float64)
    if precision.size == 0:
        return 0.0
    recall = np.concatenate([[0.0], recall, [1.0]])
    precision = np.concatenate([[0.0], precision, [0.0]])
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    changed = np.flatnonzero(recall[1:] != recall[:-1]) + 1
    return float(np.sum((recall[changed] - recall[changed - 1]) * precision[changed]))
