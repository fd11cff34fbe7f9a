"""Clean-room loop reference for P-AUC, PDD and PDO, written from the definitions, not from the vectorised code.

Plain Python lists and loops, one predicate and one k at a time, so that every rule is visible: paper mode's rank =
number of other predicates whose score is >= the predicate's own; official mode's rank = the predicate's position
in numpy's ``argsort`` of the first n - 1 scores, reversed (the corrected reference notes: numpy's unstable sort
decides ties, so that one call is the definition and the only numpy used here); missing output -> score 0 and
rank n - 1; PDO's precision is 1 when nothing is in the top k; predicates with fewer than ``min_positives``
positives are not reported; AUC counts every (positive, negative) pair, ties 1/2, and is ``None`` without
negatives. :func:`loop_mean` is the reported mean: official mode's plain mean (undefined if any value is), paper
mode's mean of the defined values. Used by the property tests and, as the baseline, by
``benchmarks/haystack_metrics_speed.py``.
"""

from __future__ import annotations

import numpy


def loop_rank(row: list[float], predicate: int, rank_mode: str) -> int:
    """Rank of ``predicate`` in ``row``: competitors at least as high (paper), numpy's reversed argsort (official)."""
    n = len(row)
    own = row[predicate]
    competing = row[:-1] if rank_mode == "official" else row
    if rank_mode == "official" and predicate < n - 1 and any(q != predicate and score == own
                                                             for q, score in enumerate(competing)):
        order = list(numpy.array(row[:-1]).argsort()[::-1])   # without a tie this is the count below
        return order.index(predicate)
    return sum(1 for q, score in enumerate(competing) if q != predicate and score >= own)


def loop_mean(values: list[float | None], rank_mode: str) -> float | None:
    """The ``mean`` row: ``None`` (NaN) stays in official mode's plain mean and is skipped in paper mode."""
    if rank_mode == "official" and any(v is None for v in values):
        return None
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def loop_auc(positive_scores: list[float], negative_scores: list[float]) -> float | None:
    """Probability that a positive outscores a negative, ties 1/2 (sorted sweep, no pairwise blow-up)."""
    if not positive_scores or not negative_scores:
        return None
    negatives = sorted(negative_scores)
    wins = 0.0
    for score in positive_scores:
        below = _count_less(negatives, score)
        equal = _count_less(negatives, score, or_equal=True) - below
        wins += below + 0.5 * equal
    return wins / (len(positive_scores) * len(negative_scores))


def _count_less(sorted_values: list[float], value: float, or_equal: bool = False) -> int:
    low, high = 0, len(sorted_values)
    while low < high:
        middle = (low + high) // 2
        if sorted_values[middle] < value or (or_equal and sorted_values[middle] == value):
            low = middle + 1
        else:
            high = middle
    return low


def loop_metrics(rows: list[list[float] | None], predicates: list[int], labels: list[int], num_predicates: int, *,
                 rank_mode: str = "paper", min_positives: int = 4) -> dict[int, dict[str, float | None]]:
    """``{predicate: {"p_auc", "pdd", "pdo"}}`` for the reported predicates; ``rows[i] is None`` = no output row."""
    n = num_predicates
    by_predicate: dict[int, list[tuple[int, float, int]]] = {}
    for row, predicate, label in zip(rows, predicates, labels):
        if row is None:
            score, rank = 0.0, n - 1
        else:
            score, rank = row[predicate], loop_rank(row, predicate, rank_mode)
        by_predicate.setdefault(predicate, []).append((label, score, rank))
    out = {}
    for predicate, entries in sorted(by_predicate.items()):
        positives = [e for e in entries if e[0] == 1]
        if len(positives) < min_positives:
            continue
        recalls, precisions = [], []
        for k in range(1, n):
            selected = [e for e in entries if e[2] < k]
            hits = sum(1 for e in selected if e[0] == 1)
            recalls.append(hits / len(positives))
            precisions.append(1.0 if not selected else hits / len(selected))
        out[predicate] = {
            "p_auc": loop_auc([e[1] for e in positives], [e[1] for e in entries if e[0] == 0]),
            "pdd": 1.0 - sum(recalls) / len(recalls),
            "pdo": 1.0 - sum(precisions) / len(precisions),
        }
    return out
