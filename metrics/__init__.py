"""The ``evaluate`` metric modules of hoi-bench, one folder each (``<name>/<name>.py`` + metric card).

Installed as the package ``hoi_bench_metrics`` so ``hoi_bench.metric_path`` can find the folders; the modules
themselves are loaded by ``evaluate.load``, never imported from here.
"""
