"""hoi-bench: Hugging Face ``datasets`` + ``evaluate`` plugin for human-interaction benchmarks.

Shared machinery lives here; each benchmark has its own package (``hoi_sg_dataset``,
``haystack_dataset``, ``bongard_hoi``, ``sportshhi``) and its metric modules live in ``metrics/``.
"""

from hoi_bench.metric_modules import metric_names, metric_path

__version__ = "0.1.0"

__all__ = ["__version__", "metric_names", "metric_path"]
