"""Commands and demo steps this package adds to `hoi-bench` (entry point `hoi_bench.plugins`)."""

from __future__ import annotations

from hoi_bench.plugins import Registry


def register(registry: Registry) -> None:
    """Add this package's commands and demo steps to ``registry``."""
