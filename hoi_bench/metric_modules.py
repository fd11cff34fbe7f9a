"""Where the ``evaluate`` metric modules of ``metrics/`` live, and how ``evaluate.load(name)`` finds them offline.

``evaluate`` 0.4.x has no plugin registry: a bare ``evaluate.load("p_auc")`` looks in ``./p_auc/p_auc.py``,
then on the Hub, then in its module cache. ``install_metrics`` seeds that cache (the same place a Hub download
would land) so that a bare name works offline from any directory; ``metric_path`` gives the documented
``evaluate.load(path)`` route.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from importlib import resources
from pathlib import Path

from hoi_bench.errors import ConfigError

_NAMESPACE = "evaluate-metric"


def _metrics_root() -> Path:
    return Path(str(resources.files("hoi_bench_metrics")))


def metric_names() -> list[str]:
    """Names of every metric module shipped in ``metrics/`` (folders holding ``<name>/<name>.py``)."""
    root = _metrics_root()
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / f"{p.name}.py").is_file())


def metric_path(name: str) -> str:
    """Folder of the metric module ``name``, for ``evaluate.load(hoi_bench.metric_path(name))``.

    Raises ``ConfigError`` listing the available names when ``name`` is not a shipped metric.
    """
    path = _metrics_root() / name
    if not (path / f"{name}.py").is_file():
        raise ConfigError("metric", name, metric_names())
    return str(path)


def install_metrics(names: list[str] | None = None, modules_cache: str | os.PathLike | None = None) -> dict[str, str]:
    """Copy metric modules into evaluate's module cache so ``evaluate.load(name)`` resolves them offline.

    Returns ``{name: installed file}``. Re-running replaces earlier copies, so an upgraded package never
    leaves a stale module behind (evaluate picks the newest copy).
    """
    if modules_cache is None:
        from evaluate import config

        modules_cache = config.HF_MODULES_CACHE
    chosen = metric_names() if names is None else names
    installed = {}
    for name in chosen:
        src_dir = Path(metric_path(name))
        code = (src_dir / f"{name}.py").read_bytes()
        family = Path(modules_cache) / "evaluate_modules" / "metrics" / f"{_NAMESPACE}--{name}"
        if family.exists():
            shutil.rmtree(family)
        target = family / hashlib.sha256(code).hexdigest()
        target.mkdir(parents=True)
        for item in ("README.md", "requirements.txt"):
            if (src_dir / item).is_file():
                shutil.copy2(src_dir / item, target / item)
        (target / f"{name}.py").write_bytes(code)
        installed[name] = str(target / f"{name}.py")
    return installed
