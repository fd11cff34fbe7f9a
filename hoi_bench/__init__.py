"""hoi-bench: Hugging Face ``datasets`` + ``evaluate`` plugin for human-interaction benchmarks.

Shared machinery lives here; each benchmark has its own package (``hoi_sg_dataset``,
``haystack_dataset``, ``bongard_hoi``, ``sportshhi``) and its metric modules live in ``metrics/``.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "metric_names", "metric_path"]


def __getattr__(name: str) -> Any:
    """``metric_names`` and ``metric_path`` load on first use, so ``import hoi_bench`` (every CLI start) stays cheap."""
    if name in ("metric_names", "metric_path"):
        from hoi_bench import metric_modules

        return getattr(metric_modules, name)
    raise AttributeError(f"module 'hoi_bench' has no attribute {name!r}")
