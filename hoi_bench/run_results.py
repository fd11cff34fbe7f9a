"""What a training run's results dict holds, read for people and trackers: its metrics flattened to
``SPLIT/NAME`` and the final table every launch prints. Shared by the loop (``hoi_bench.training``) and the model
card (``hoi_bench.model_card``), which import this module and not each other."""

from __future__ import annotations

from typing import Any

from hoi_bench.report import format_table


def flat_metrics(results: dict[str, Any]) -> dict[str, float]:
    """Every numeric metric of an evaluation as ``SPLIT/NAME`` (``overall/NAME`` for metrics over splits);
    nested dicts add path parts, non-numbers (file names, modes) are left out.

    >>> flat_metrics({"splits": {"test": {"metrics": {"mAP": 0.5, "mode": "paper", "per": {"a": 1}}}},
    ...               "overall": {"mean": 0.25}})
    {'test/mAP': 0.5, 'test/per/a': 1.0, 'overall/mean': 0.25}
    """
    out: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}/{key}", inner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[prefix] = float(value)

    for split, entry in results.get("splits", {}).items():
        walk(split, entry.get("metrics", {}))
    walk("overall", results.get("overall", {}))
    return out


def results_table(results: dict[str, Any]) -> str:
    """The final metrics of a run as a ``split / metric / value`` table (what every launch prints last).

    >>> print(results_table({"steps": 3, "splits": {"test": {"metrics": {"mAP": 0.25}}}}))
    split  metric  value
    -----  ------  ------
    test   mAP     0.2500
    """
    rows = [key.split("/", 1) + [value] for key, value in flat_metrics(results).items()]
    if not rows:
        return "no evaluation split was scored"
    return format_table(["split", "metric", "value"], rows)
