"""Commands and demo steps for the HOI mAP metrics (``hoi-bench evaluate hoi_map|vcoco_map``).

Kept apart from ``cli.py`` (datasets, splits, stats) so the metric commands can evolve with ``evaluation.py``.
"""

from __future__ import annotations

from hoi_bench.plugins import Registry


def register(registry: Registry) -> None:
    """Add the HOI metric commands and demo steps to ``registry``."""
