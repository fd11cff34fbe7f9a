"""Chart of a Haystack metrics report: P-AUC, PDD and PDO per predicate (``hoi-bench show haystack``)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from hoi_bench.errors import FormatError, OutputPathError

METRICS = (("p_auc", "P-AUC (higher is better)"), ("pdd", "PDD (lower is better)"), ("pdo", "PDO (lower is better)"))


def chart_formats() -> dict[str, str]:
    """The file extensions matplotlib can write (``"png" -> "Portable Network Graphics"``, ``"pdf"``, ...)."""
    from matplotlib.backend_bases import FigureCanvasBase

    return FigureCanvasBase.get_supported_filetypes()


def check_chart_path(out: str | os.PathLike, what: str = "--out") -> str:
    """The image format of ``out`` from its extension; ``OutputPathError`` when matplotlib cannot write it.

    A chart named ``chart.xyz`` used to be written as a PNG under that name; ``chart.pdf`` or ``chart.svg`` are
    written in their own format.
    """
    extension = Path(out).suffix.lower().removeprefix(".")
    formats = chart_formats()
    if extension not in formats:
        raise OutputPathError(out, what, f"unknown image format {('.' + extension) if extension else '(no extension)'}",
                              expected="a file name ending in " + ", ".join("." + name for name in sorted(formats)))
    return extension


def check_report(report: Any, file: str | os.PathLike | None = None) -> dict:
    """``report`` if it holds what the chart draws: ``per_predicate`` maps names to P-AUC / PDD / PDO values,
    each a finite number or ``null`` (as ``mean`` does); otherwise a ``FormatError`` naming the entry."""
    file = None if file is None else str(file)
    if not isinstance(report, dict):
        raise FormatError(file, "not a Haystack metrics report", expected="a JSON object written by "
                          "`hoi-bench evaluate p_auc`", found=type(report).__name__)
    per_predicate = report.get("per_predicate")
    if not isinstance(per_predicate, dict) or not per_predicate:
        raise FormatError(file, "no per-predicate values to draw", field="per_predicate",
                          expected="a non-empty mapping written by `hoi-bench evaluate p_auc`",
                          found=per_predicate)
    entries = [(f"per_predicate.{name}", values) for name, values in per_predicate.items()]
    entries += [("mean", report["mean"])] if report.get("mean") is not None else []
    for where, values in entries:
        if not isinstance(values, dict):
            raise FormatError(file, "metric values are not an object", field=where,
                              expected="{p_auc, pdd, pdo}", found=values)
        for metric, _ in METRICS:
            value = values.get(metric)
            if value is not None and (type(value) not in (int, float) or not math.isfinite(value)):
                raise FormatError(file, "metric value is not a number", field=f"{where}.{metric}",
                                  expected="a finite number or null", found=value)
    return report


def plot_predicate_metrics(report: dict, out: str | os.PathLike, *, title: str | None = None,
                           file: str | os.PathLike | None = None) -> Path:
    """Draw the per-predicate bars of a report written by ``hoi-bench evaluate p_auc`` into ``out``.

    The image format follows the extension of ``out`` (``.png``, ``.pdf``, ``.svg``, ... as matplotlib writes
    them; an unknown one is an ``OutputPathError``). Predicates are sorted by P-AUC; dashed lines mark the means.
    Undefined values (``None``) are left blank. P-AUC keeps the 0-1 axis (0.5 is chance); PDD and PDO axes end a
    little above their largest value, so bars near 0.006 stay visible. A value that is not a number is a
    ``FormatError`` naming ``file`` (the report's path, for messages) and the entry.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    image_format = check_chart_path(out)
    per_predicate = check_report(report, file)["per_predicate"]
    names = sorted(per_predicate, key=lambda n: -(per_predicate[n].get("p_auc") or 0.0))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(3, 1, figsize=(max(6.0, 0.35 * len(names) + 2), 8), sharex=True)
    for axis, (metric, label) in zip(axes, METRICS):
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
    tmp = out.with_name(f".{out.name}.partial")
    try:
        figure.savefig(tmp, dpi=120, format=image_format)
        os.replace(tmp, out)
    finally:
        plt.close(figure)
        tmp.unlink(missing_ok=True)
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
