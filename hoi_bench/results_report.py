"""Mean ± sample standard deviation of every metric over result files, grouped the way papers report them.

The HICO-DET-SG / V-COCO-SG paper reports each model's mAP as mean ± std over the three SG splits next to the
original split; Bongard-HOI reports each test split and their mean. ``build_report`` reads the JSON files the
``hoi-bench evaluate ... --output`` commands write (any benchmark), groups them by label and summarises each
metric; the writers turn the summary into JSON, Markdown, LaTeX and a bar chart in the SG paper's style.

Which values count as metrics: every number at the top level of a result file (``mAP``, ``recall@20``,
``test_mean``), and every number in a dict of numbers one level down, named ``outer/inner``
(Bongard-HOI's ``accuracy/test_seen_obj_seen_act``, Haystack's ``mean/p_auc``). Per-class breakdowns
(keys starting ``ap_per_`` or ``per_``: hundreds of entries) are left out unless ``per_class=True``, which
also descends into dicts of dicts (Haystack's ``per_predicate/beside/p_auc``). Booleans, strings and the
``settings`` block are settings, not metrics. ``null`` and NaN are undefined values (e.g. ``mAP_rare`` with no rare class): they
are listed as ``null`` and left out of the mean; a mean needs one defined value and a standard deviation two
(``ddof=1``), else it is ``null``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoi_bench.errors import FormatError, HoiBenchError
from hoi_bench.files import read_json, write_bytes_atomic, write_json_atomic, write_text_atomic
from hoi_bench.report import format_table, format_value

DEFAULT_GROUP = "all"
_BREAKDOWN_PREFIXES = ("ap_per_", "per_")
_SETTINGS = ("settings",)  # SportsHHI echoes its options (IoU threshold, K values) under this key


class ReportError(HoiBenchError, ValueError):
    """The report cannot be built as asked (labels do not match the files, no metric in common)."""


@dataclass
class Summary:
    """One metric over the files of one group: the values in file order (``None`` when undefined)."""

    values: list[float | None]

    @property
    def defined(self) -> list[float]:
        return [v for v in self.values if v is not None]

    @property
    def mean(self) -> float | None:
        """Mean of the defined values, ``None`` when there are none.

        >>> Summary([1.0, None, 2.0]).mean
        1.5
        """
        return math.fsum(self.defined) / len(self.defined) if self.defined else None

    @property
    def std(self) -> float | None:
        """Sample standard deviation (``ddof=1``) of the defined values, ``None`` with fewer than two.

        >>> Summary([2.0, 4.0, 9.0]).std
        3.605551275463989
        >>> Summary([2.0, None]).std is None
        True
        """
        values = self.defined
        if len(values) < 2:
            return None
        mean = math.fsum(values) / len(values)
        return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std, "n": len(self.defined), "values": self.values}


@dataclass
class Group:
    """The files sharing one label and the summary of every metric they report."""

    label: str
    files: list[str] = field(default_factory=list)
    metrics: dict[str, Summary] = field(default_factory=dict)


@dataclass
class Report:
    """Every group in the order its label first appears, and the summary over all files."""

    files: list[str]
    labels: list[str]
    metrics: dict[str, Summary]
    groups: dict[str, Group]

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "labels": self.labels,
            "metrics": {name: s.to_json() for name, s in self.metrics.items()},
            "groups": {label: {"files": g.files, "metrics": {n: s.to_json() for n, s in g.metrics.items()}}
                       for label, g in self.groups.items()},
        }


def _number(value: Any) -> int | float | None | bool:
    """The value as a float, ``None`` for undefined (null, NaN), ``False`` when it is not a metric value."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return value  # counts stay integers in the report
    return None if math.isnan(value) else value


def metric_values(result: dict[str, Any], *, per_class: bool = False) -> dict[str, float | None]:
    """The metrics of one result file, flattened to ``outer/inner`` names (see the module docstring).

    >>> metric_values({"mAP": 0.5, "mAP_rare": None, "protocol": "qpic", "accuracy": {"val": 0.75},
    ...                "ap_per_class": {"2": 0.1}, "settings": {"official": False, "ks": [20, 50]}})
    {'mAP': 0.5, 'mAP_rare': None, 'accuracy/val': 0.75}
    """
    out: dict[str, float | None] = {}

    def visit(prefix: str, value: Any, depth: int) -> None:
        number = _number(value)
        if number is not False:
            out[prefix] = number
        elif isinstance(value, dict) and depth < (3 if per_class else 2):
            for key, inner in value.items():
                if depth == 0 and (key in _SETTINGS or not per_class and str(key).startswith(_BREAKDOWN_PREFIXES)):
                    continue
                visit(f"{prefix}/{key}" if prefix else str(key), inner, depth + 1)

    visit("", result, 0)
    return out


def _summaries(per_file: list[dict[str, float | None]]) -> dict[str, Summary]:
    names: list[str] = []
    for values in per_file:
        names += [n for n in values if n not in names]
    return {n: Summary([values.get(n) for values in per_file]) for n in names}


def build_report(
    paths: Sequence[str | os.PathLike],
    labels: Sequence[str] | None = None,
    *,
    per_class: bool = False,
) -> Report:
    """Read the result files ``paths`` and summarise their metrics, overall and per label.

    ``labels`` (one per file, default one group ``all``) name the groups, e.g. ``SG SG SG original``; a label
    ``MODEL:GROUP`` also names the model, which the plot puts on its x axis.
    """
    if not paths:
        raise ReportError("no result files given")
    if labels is not None and len(labels) != len(paths):
        raise ReportError(f"{len(labels)} labels for {len(paths)} result files: give one label per file")
    labels = list(labels) if labels is not None else [DEFAULT_GROUP] * len(paths)
    files = [str(p) for p in paths]
    per_file = []
    for path in files:
        result = read_json(path, "result file")
        if not isinstance(result, dict):
            raise FormatError(path, "not a result file", expected="a JSON object of metrics",
                              found=type(result).__name__)
        values = metric_values(result, per_class=per_class)
        if not values:
            raise FormatError(path, "no numeric metric in this result file", expected="numbers such as mAP",
                              found=sorted(result)[:8])
        per_file.append(values)
    groups: dict[str, Group] = {}
    members: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        members.setdefault(label, []).append(index)
    for label, indices in members.items():
        groups[label] = Group(label, [files[i] for i in indices], _summaries([per_file[i] for i in indices]))
    return Report(files, labels, _summaries(per_file), groups)


def _cell(summary: Summary | None, plus_minus: str) -> str:
    if summary is None or summary.mean is None:
        return "n/a"
    counts = all(isinstance(v, int) for v in summary.defined)
    mean = int(summary.mean) if counts and summary.mean.is_integer() else summary.mean
    if summary.std is None:
        return format_value(mean)
    return f"{format_value(mean)} {plus_minus} {format_value(summary.std)}"


def _rows(report: Report, plus_minus: str) -> tuple[list[str], list[list[str]]]:
    headers = ["metric"] + [f"{label} (n={len(g.files)})" for label, g in report.groups.items()]
    rows = [[name] + [_cell(g.metrics.get(name), plus_minus) for g in report.groups.values()]
            for name in report.metrics]
    return headers, rows


def format_text(report: Report) -> str:
    """The terminal table: one row per metric, one ``mean ± std`` column per group."""
    headers, rows = _rows(report, "±")
    return format_table(headers, rows) + "\n(mean ± sample standard deviation, ddof=1, over each group's files)"


def to_markdown(report: Report) -> str:
    """A GitHub Markdown table of :func:`format_text`'s numbers."""
    headers, rows = _rows(report, "±")
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", r"\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n\nMean ± sample standard deviation (ddof=1) over each group's result files.\n"


def _latex_escape(text: str) -> str:
    for char, escaped in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"),
                          ("$", r"\$"), ("{", r"\{"), ("}", r"\}")):
        text = text.replace(char, escaped)
    return text


def to_latex(report: Report) -> str:
    """A ``booktabs`` LaTeX table of the same numbers (``\\usepackage{booktabs}``)."""
    headers, rows = _rows(report, "$\\pm$")
    spec = "l" + "r" * (len(headers) - 1)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
             " & ".join(_latex_escape(h) for h in headers) + " \\\\", "\\midrule"]
    lines += [" & ".join([_latex_escape(row[0])] + row[1:]) + " \\\\" for row in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def plot_metric(report: Report) -> str:
    """The metric the plot shows: ``mAP`` when reported, else the first metric."""
    return "mAP" if "mAP" in report.metrics else next(iter(report.metrics))


def to_png(report: Report, metric: str | None = None) -> bytes:
    """Bars of ``metric`` per model, one bar per group with a ± std error bar, as the SG paper's figure
    compares each model on the SG splits with the original split."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = metric or plot_metric(report)
    models: list[str] = []
    kinds: list[str] = []
    for label in report.groups:
        model, _, kind = label.rpartition(":")
        models += [model] if model not in models else []
        kinds += [kind] if kind not in kinds else []
    width = 0.8 / len(kinds)
    figure, axes = plt.subplots(figsize=(max(4.0, 1.6 * len(models) * max(1, len(kinds)) / 2 + 2), 3.6))
    for k, kind in enumerate(kinds):
        means, errors, positions = [], [], []
        for m, model in enumerate(models):
            group = report.groups.get(f"{model}:{kind}" if model else kind)
            summary = group.metrics.get(metric) if group else None
            if summary is None or summary.mean is None:
                continue
            means.append(summary.mean)
            errors.append(summary.std or 0.0)
            positions.append(m + (k - (len(kinds) - 1) / 2) * width)
        bars = axes.bar(positions, means, width * 0.9, yerr=errors, capsize=4, label=kind)
        axes.bar_label(bars, labels=[format_value(v, 3) for v in means], padding=2, fontsize=8)
    axes.set_xticks(range(len(models)), [m or metric for m in models])
    axes.set_ylabel(metric)
    axes.set_ylim(bottom=0)
    axes.margins(y=0.15)
    axes.spines[["top", "right"]].set_visible(False)
    if len(kinds) > 1:
        axes.legend(frameon=False, ncol=len(kinds), loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=9)
    axes.set_title(f"{metric}, mean ± std", loc="left", fontsize=10)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=150)
    plt.close(figure)
    return buffer.getvalue()


def write_outputs(
    report: Report,
    *,
    output: str | os.PathLike | None = None,
    markdown: str | os.PathLike | None = None,
    latex: str | os.PathLike | None = None,
    plot: str | os.PathLike | None = None,
    plot_metric_name: str | None = None,
) -> list[Path]:
    """Write each requested form of ``report`` atomically; returns the paths written."""
    written = []
    if output is not None:
        written.append(write_json_atomic(output, report.to_json(), indent=2))
    if markdown is not None:
        written.append(write_text_atomic(markdown, to_markdown(report)))
    if latex is not None:
        written.append(write_text_atomic(latex, to_latex(report)))
    if plot is not None:
        if plot_metric_name is not None and plot_metric_name not in report.metrics:
            raise ReportError(f"cannot plot {plot_metric_name!r}: the result files report "
                              f"{', '.join(report.metrics)}")
        written.append(write_bytes_atomic(plot, to_png(report, plot_metric_name)))
    return written
