"""Mean ± sample standard deviation of every metric over result files, grouped the way papers report them.

The HICO-DET-SG / V-COCO-SG paper reports each model's mAP as mean ± std over the three SG splits next to the
original split; Bongard-HOI reports each test split and their mean. ``build_report`` reads the JSON files the
``hoi-bench evaluate ... --output`` commands write (any benchmark) and the ``results.json`` a training run writes,
groups them by label and summarises each metric; the writers turn the summary into JSON, Markdown, LaTeX and a
bar chart in the SG paper's style (PNG, PDF or SVG).

Which values count as metrics: every number at the top level of a result file (``mAP``, ``recall@20``,
``test_mean``), and every number in a dict of numbers one level down, named ``outer/inner``
(Bongard-HOI's ``accuracy/test_seen_obj_seen_act``, Haystack's ``mean/p_auc``). Per-class breakdowns
(keys starting ``ap_per_`` or ``per_``: hundreds of entries) are left out unless ``per_class=True``, which
also descends into dicts of dicts (Haystack's ``per_predicate/beside/p_auc``). Booleans, strings and the
``settings`` block are settings, not metrics. A training run's ``results.json`` (``baseline``, ``steps``,
``splits``) contributes the metrics of its evaluated splits (``SPLIT/NAME`` when it evaluated several) and of
``overall``, never its step count, timing, best-checkpoint record or the ``heldout`` split it selected on.

``null`` is an undefined value (e.g. ``mAP_rare`` with no rare class): listed as ``null`` and left out of the
mean, and the cell shows how many files were averaged. A mean needs one defined value and a standard deviation
two (``ddof=1``), else it is ``null``. Refused, naming the file and metric: NaN or infinite values (a broken
run, not an undefined metric), integers beyond float range, and files of one group that report different
metrics (one model's mAP beside another benchmark's recall would otherwise be averaged as one).
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
HELD_OUT = "heldout"  # hoi_bench.training.HELD_OUT: the split carved from train for model selection, not a result
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
        """Mean of the defined values, ``None`` when there are none; values near the float limit do not
        overflow (each is divided by the count before summing).

        >>> Summary([1.0, None, 2.0]).mean
        1.5
        >>> Summary([1e308, 1e308]).mean
        1e+308
        """
        values = self.defined
        return math.fsum(v / len(values) for v in values) if values else None

    @property
    def std(self) -> float | None:
        """Sample standard deviation (``ddof=1``) of the defined values, ``None`` with fewer than two; computed
        on values scaled by the largest magnitude, so no square overflows.

        >>> Summary([2.0, 4.0, 9.0]).std
        3.605551275463989
        >>> Summary([2.0, None]).std is None
        True
        """
        values = self.defined
        if len(values) < 2:
            return None
        scale = max(abs(v) for v in values) or 1.0
        scaled = [v / scale for v in values]
        mean = math.fsum(scaled) / len(scaled)
        return scale * math.sqrt(math.fsum((v - mean) ** 2 for v in scaled) / (len(scaled) - 1))

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
    """Every group in the order its label first appears; ``names`` are the metrics in first-reported order."""

    files: list[str]
    labels: list[str]
    groups: dict[str, Group]

    @property
    def names(self) -> list[str]:
        names: list[str] = []
        for group in self.groups.values():
            names += [name for name in group.metrics if name not in names]
        return names

    @property
    def metrics(self) -> dict[str, Summary]:
        """The summaries over all files when they form one group; empty otherwise (pooling SG splits with the
        original split, or one model with another, gives a number nobody reports)."""
        return next(iter(self.groups.values())).metrics if len(self.groups) == 1 else {}

    def to_json(self) -> dict[str, Any]:
        """``files``, ``labels``, ``groups`` (label → files and metric summaries), and ``metrics`` at the top
        level only when there is one group."""
        out: dict[str, Any] = {"files": self.files, "labels": self.labels}
        if len(self.groups) == 1:
            out["metrics"] = {name: s.to_json() for name, s in self.metrics.items()}
        out["groups"] = {label: {"files": g.files, "metrics": {n: s.to_json() for n, s in g.metrics.items()}}
                         for label, g in self.groups.items()}
        return out


def _number(value: Any, path: str, name: str) -> int | float | None | bool:
    """The value as a number, ``None`` for ``null``, ``False`` when it is not a metric value; NaN, infinity and
    integers no float can hold raise ``ReportError`` naming the file and metric."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            raise ReportError(f"{path}: {name} is an integer of {len(str(abs(value)))} digits; expected a "
                              f"number within float range") from None
        return value  # counts stay integers in the report
    if not math.isfinite(value):
        raise ReportError(f"{path}: {name} is {value}; expected a finite number (or null for an undefined "
                          f"metric): fix or leave out the run that wrote it")
    return value


def metric_values(result: dict[str, Any], *, per_class: bool = False, path: str = "result file"
                  ) -> dict[str, float | None]:
    """The metrics of one result file, flattened to ``outer/inner`` names (see the module docstring).

    >>> metric_values({"mAP": 0.5, "mAP_rare": None, "protocol": "qpic", "accuracy": {"val": 0.75},
    ...                "ap_per_class": {"2": 0.1}, "settings": {"official": False, "ks": [20, 50]}})
    {'mAP': 0.5, 'mAP_rare': None, 'accuracy/val': 0.75}
    >>> metric_values({"baseline": "hico_split1-pair", "steps": 40, "train_seconds": 3.2,
    ...                "splits": {"test": {"examples": 8, "metrics": {"mAP": 0.25}}}, "overall": {},
    ...                "best": {"metric": "test/mAP", "value": 0.3, "step": 20}})
    {'mAP': 0.25}
    """
    if is_training_results(result):
        return _training_metrics(result, per_class=per_class, path=path)
    out: dict[str, float | None] = {}

    def visit(prefix: str, value: Any, depth: int) -> None:
        number = _number(value, path, prefix)
        if number is not False:
            out[prefix] = number
        elif isinstance(value, dict) and depth < (3 if per_class else 2):
            for key, inner in value.items():
                if depth == 0 and (key in _SETTINGS or not per_class and str(key).startswith(_BREAKDOWN_PREFIXES)):
                    continue
                visit(f"{prefix}/{key}" if prefix else str(key), inner, depth + 1)

    visit("", result, 0)
    return out


def is_training_results(result: dict[str, Any]) -> bool:
    """Whether ``result`` is the ``results.json`` of a training run (``hoi_bench.training``), not the output
    of ``hoi-bench evaluate``."""
    return {"baseline", "steps", "splits"} <= set(result) and isinstance(result["splits"], dict)


def _training_metrics(result: dict[str, Any], *, per_class: bool, path: str) -> dict[str, float | None]:
    """The metrics of a run's evaluated splits (``SPLIT/NAME`` when there are several) and of ``overall``."""
    splits = {name: entry for name, entry in result["splits"].items() if name != HELD_OUT}
    out: dict[str, float | None] = {}
    for split, entry in splits.items():
        metrics = entry.get("metrics", {}) if isinstance(entry, dict) else {}
        for name, value in metric_values(metrics, per_class=per_class, path=path).items():
            out[name if len(splits) == 1 else f"{split}/{name}"] = value
    overall = result.get("overall")
    if isinstance(overall, dict):
        for name, value in metric_values(overall, per_class=per_class, path=path).items():
            out.setdefault(name, value)
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
    """Read the result files ``paths`` and summarise their metrics per label.

    ``labels`` (one per file, default one group ``all``) name the groups, e.g. ``SG SG SG original``; a label
    ``MODEL:GROUP`` also names the model, which the plot puts on its x axis. The files of one group must
    report the same metrics.
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
        values = metric_values(result, per_class=per_class, path=path)
        if not values:
            raise FormatError(path, "no numeric metric in this result file", expected="numbers such as mAP",
                              found=sorted(result)[:8])
        per_file.append(values)
    members: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        members.setdefault(label, []).append(index)
    groups: dict[str, Group] = {}
    for label, indices in members.items():
        _check_same_metrics(label, [files[i] for i in indices], [per_file[i] for i in indices])
        groups[label] = Group(label, [files[i] for i in indices], _summaries([per_file[i] for i in indices]))
    for label, group in groups.items():
        for name, summary in group.metrics.items():
            if summary.std is not None and not math.isfinite(summary.std):
                raise ReportError(f"group {label}: the standard deviation of {name} exceeds float range "
                                  f"(values {summary.values})")
    return Report(files, labels, groups)


def _check_same_metrics(label: str, files: list[str], per_file: list[dict[str, float | None]]) -> None:
    """Refuse a group whose files report different metrics, naming the first file that differs."""
    first = per_file[0]
    for path, values in zip(files[1:], per_file[1:]):
        if values.keys() != first.keys():
            missing = [n for n in first if n not in values]
            extra = [n for n in values if n not in first]
            parts = ([f"lacks {', '.join(missing[:5])}"] if missing else []) + (
                [f"adds {', '.join(extra[:5])}"] if extra else [])
            group = "" if label == DEFAULT_GROUP else f" of group {label}"
            raise ReportError(f"{path}: reports other metrics than {files[0]} ({'; '.join(parts)}); every "
                              f"file{group} must come from the same metric (give other runs their own "
                              f"--labels)")


def _cell(summary: Summary | None, plus_minus: str) -> str:
    if summary is None or summary.mean is None:
        return "n/a"
    counts = all(isinstance(v, int) for v in summary.defined)
    mean = int(summary.mean) if counts and summary.mean.is_integer() else summary.mean
    text = format_value(mean) if summary.std is None else (
        f"{format_value(mean)} {plus_minus} {format_value(summary.std)}")
    if len(summary.defined) < len(summary.values):  # some files have it undefined (null): say over how many
        text += f" (n={len(summary.defined)})"
    return text


def _rows(report: Report, plus_minus: str) -> tuple[list[str], list[list[str]]]:
    headers = ["metric"] + [f"{label} (n={len(g.files)})" for label, g in report.groups.items()]
    rows = [[name] + [_cell(g.metrics.get(name), plus_minus) for g in report.groups.values()]
            for name in report.names]
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


#: ``--plot`` file extension → the matplotlib format written
PLOT_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
PNG_DPI = 300


def plot_format(path: str | os.PathLike) -> str:
    """The figure format of ``path``'s extension; any other extension is refused (before any work).

    >>> plot_format("report.PDF")
    'pdf'
    """
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_FORMATS:
        raise ReportError(f"--plot {path}: unknown figure format {suffix or '(no extension)'!r}; expected a "
                          f"name ending in {', '.join(PLOT_FORMATS)}")
    return PLOT_FORMATS[suffix]


def plot_metrics(report: Report, names: Sequence[str] | None = None) -> list[str]:
    """The metrics the plot shows: ``names`` (each must be reported), else ``mAP`` when reported, else the
    first metric."""
    if names:
        unknown = [name for name in names if name not in report.names]
        if unknown:
            raise ReportError(f"cannot plot {', '.join(map(repr, unknown))}: the result files report "
                              f"{', '.join(report.names)}")
        return list(dict.fromkeys(names))
    return ["mAP"] if "mAP" in report.names else report.names[:1]


def draw_figure(report: Report, metrics: Sequence[str] | None = None, format: str = "png") -> bytes:
    """One panel per metric: a bar per group (groups ``MODEL:GROUP`` side by side per model, as the SG paper's
    figure compares each model on the SG splits with the original split), the mean written above each bar and a
    ± std error bar where a group has two or more defined values. A mean of 0.0 is drawn as a line on the axis,
    so it reads as zero rather than missing. ``format``: ``png`` (300 dpi), ``pdf`` or ``svg``."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = plot_metrics(report, metrics)
    models: list[str] = []
    kinds: list[str] = []
    for label in report.groups:
        model, _, kind = label.rpartition(":")
        models += [model] if model not in models else []
        kinds += [kind] if kind not in kinds else []
    by_model = models != [""]
    positions_per_panel = len(models) * len(kinds) if by_model else len(kinds)
    panel_width = max(3.4, 0.6 * positions_per_panel + 1.4)
    figure, panels = plt.subplots(1, len(metrics), figsize=(panel_width * len(metrics), 3.8), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    width = 0.8 / len(kinds) if by_model else 0.6
    for axes, metric in zip(panels[0], metrics):
        tops = [0.0]
        for k, kind in enumerate(kinds):
            color = colors[k % len(colors)]
            for m, model in enumerate(models):
                group = report.groups.get(f"{model}:{kind}" if model else kind)
                summary = group.metrics.get(metric) if group else None
                if summary is None or summary.mean is None:
                    continue
                x = m + (k - (len(kinds) - 1) / 2) * width if by_model else k
                axes.bar([x], [summary.mean], width * 0.9, color=color, label=kind if m == 0 else None, zorder=2)
                if summary.mean == 0:  # a zero-height bar is invisible: a thick stroke on the axis shows it
                    axes.plot([x - width * 0.45, x + width * 0.45], [0, 0], color=color, linewidth=4,
                              solid_capstyle="butt", clip_on=False, zorder=4)
                top = summary.mean
                if summary.std is not None:
                    axes.errorbar([x], [summary.mean], yerr=[summary.std], fmt="none", ecolor="black",
                                  capsize=4, linewidth=1, zorder=3)
                    top += summary.std
                axes.annotate(format_value(summary.mean, 3), (x, top), xytext=(0, 3), textcoords="offset points",
                              ha="center", va="bottom", fontsize=8)
                tops.append(top)
        if by_model:
            axes.set_xticks(range(len(models)), models)
        else:
            axes.set_xticks(range(len(kinds)), kinds)
        axes.set_title(metric, fontsize=10)
        axes.set_ylim(0, max(tops) * 1.18 or 1.0)
        axes.spines[["top", "right"]].set_visible(False)
        axes.tick_params(axis="x", length=0)
    figure.text(0.01, 0.985, "mean ± sample std (ddof=1) per group; no error bar: one file", fontsize=8,
                ha="left", va="top", color="0.3")
    if by_model and len(kinds) > 1:
        handles, names = panels[0][0].get_legend_handles_labels()
        figure.legend(handles, names, frameon=False, ncol=len(kinds), loc="lower center", fontsize=9)
        figure.tight_layout(rect=(0, 0.07, 1, 0.95))
    else:
        figure.tight_layout(rect=(0, 0, 1, 0.95))
    buffer = io.BytesIO()
    figure.savefig(buffer, format=format, dpi=PNG_DPI if format == "png" else None, metadata=(
        {"Software": None} if format == "png" else {"Creator": None, "Date": None} if format == "svg"
        else {"Creator": None, "Producer": None, "CreationDate": None}))
    plt.close(figure)
    return buffer.getvalue()


def write_outputs(
    report: Report,
    *,
    output: str | os.PathLike | None = None,
    markdown: str | os.PathLike | None = None,
    latex: str | os.PathLike | None = None,
    plot: str | os.PathLike | None = None,
    plot_metric_names: Sequence[str] | None = None,
) -> list[Path]:
    """Write each requested form of ``report`` atomically; returns the paths written. The plot's metrics and
    format are checked before anything is written."""
    figure = None
    if plot is not None:
        figure = draw_figure(report, plot_metric_names, plot_format(plot))
    written = []
    if output is not None:
        written.append(write_json_atomic(output, report.to_json(), indent=2))
    if markdown is not None:
        written.append(write_text_atomic(markdown, to_markdown(report)))
    if latex is not None:
        written.append(write_text_atomic(latex, to_latex(report)))
    if plot is not None and figure is not None:
        written.append(write_bytes_atomic(plot, figure))
    return written
