"""Chart of a Haystack metrics report: P-AUC, PDD and PDO per predicate (``hoi-bench show haystack``)."""

from __future__ import annotations

import os
from pathlib import Path

from hoi_bench.errors import FormatError


def plot_predicate_metrics(report: dict, out: str | os.PathLike, *, title: str | None = None) -> Path:
    """Draw the per-predicate bars of a report written by ``hoi-bench evaluate p_auc`` into a PNG.

    Predicates are sorted by P-AUC; dashed lines mark the means. Undefined values (``None``) are left blank.
    P-AUC keeps the 0-1 axis (0.5 is chance); PDD and PDO axes end a little above their largest value, so bars
    near 0.006 stay visible.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_predicate = report.get("per_predicate")
    if not isinstance(per_predicate, dict) or not per_predicate:
        raise FormatError(None, "no per-predicate values to draw", field="per_predicate",
                          expected="a non-empty mapping written by `hoi-bench evaluate p_auc`",
                          found=per_predicate)
    names = sorted(per_predicate, key=lambda n: -(per_predicate[n].get("p_auc") or 0.0))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(3, 1, figsize=(max(6.0, 0.35 * len(names) + 2), 8), sharex=True)
    for axis, (metric, label) in zip(axes, (("p_auc", "P-AUC (higher is better)"), ("pdd", "PDD (lower is better)"),
                                            ("pdo", "PDO (lower is better)"))):
        values = [per_predicate[n].get(metric) for n in names]
        axis.bar(range(len(names)), [v if v is not None else 0.0 for v in values], color="#4c72b0")
        for position, value in enumerate(values):
            if value is None:
                axis.text(position, 0.02, "n/a", ha="center", fontsize=7, color="#666666")
        mean = (report.get("mean") or {}).get(metric)
        if mean is not None:
            axis.axhline(mean, color="#c44e52", linestyle="--", linewidth=1, label=f"mean {mean:.3f}")
            axis.legend(loc="upper right", fontsize=8)
        axis.set_ylim(0, _axis_top(metric, values, mean))
        axis.set_ylabel(label, fontsize=9)
    axes[-1].set_xticks(range(len(names)))
    axes[-1].set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    figure.suptitle(title or f"Haystack predicate metrics (rank mode: {report.get('rank_mode', '?')})")
    figure.tight_layout()
    tmp = out.with_name(f".{out.name}.partial.png")
    figure.savefig(tmp, dpi=120)
    plt.close(figure)
    os.replace(tmp, out)
    return out


def _axis_top(metric: str, values: list[float | None], mean: float | None) -> float:
    """Upper y limit: 1 for P-AUC; for PDD / PDO 15 % above the largest bar or mean (at most 1, never 0).

    >>> _axis_top("p_auc", [0.2], 0.2), _axis_top("pdd", [0.006, None, 0.004], 0.005)
    (1.0, 0.0069)
    >>> _axis_top("pdo", [None], None), _axis_top("pdo", [0.95], 0.95)
    (1.0, 1.0)
    """
    if metric == "p_auc":
        return 1.0
    largest = max([v for v in values if v is not None] + ([mean] if mean is not None else []), default=0.0)
    return min(1.0, round(largest * 1.15, 6)) if largest > 0 else 1.0
