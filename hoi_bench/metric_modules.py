"""Where the ``evaluate`` metric modules of ``metrics/`` live, and how a bare ``evaluate.load(name)`` finds them.

``evaluate`` 0.4.x has no plugin registry. A bare ``evaluate.load("p_auc")`` looks for ``./p_auc/p_auc.py``, then
downloads ``<HF_ENDPOINT>/spaces/evaluate-metric/p_auc/resolve/v<evaluate version>/p_auc.py`` (retrying the
``main`` revision) through evaluate's download cache, and only when both fail falls back to its module cache
with the warning "Using the latest cached version of the module ... couldn't be found ... on the Hugging Face
Hub". ``install_metrics`` puts each module into the download cache under exactly those URLs, as if it had been
downloaded: evaluate's downloader returns a cached file whenever the Hub cannot serve the URL (offline,
unreachable, or 404, which is what the Hub answers for these names), so the load succeeds on the normal path,
from any directory, without the fallback's warning. ``metric_path`` gives the plain ``evaluate.load(path)``
route that needs no installation.
"""

from __future__ import annotations

import os
import re
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


def _seeded_urls(name: str) -> list[str]:
    """The URLs a bare ``evaluate.load(name)`` asks for, in its order: the installed evaluate's tag, then main."""
    import evaluate
    from evaluate.utils.file_utils import hf_hub_url

    revision = evaluate.SCRIPTS_VERSION
    if re.match(r"\d*\.\d*\.\d*", revision):  # evaluate's own rule for tag names
        revision = "v" + revision
    revisions = [revision] if revision == "main" else [revision, "main"]
    return [hf_hub_url(path=f"{_NAMESPACE}/{name}", name=f"{name}.py", revision=r) for r in revisions]


def install_metrics(
    names: list[str] | None = None,
    downloads_cache: str | os.PathLike | None = None,
    modules_cache: str | os.PathLike | None = None,
) -> dict[str, str]:
    """Put metric modules into evaluate's download cache so a bare ``evaluate.load(name)`` resolves them.

    ``downloads_cache`` defaults to evaluate's (``$HF_HOME/evaluate/downloads``) and ``modules_cache`` to
    ``HF_MODULES_CACHE``, where earlier copies of the modules are removed so an upgraded package never leaves a
    stale module behind. The URLs include ``HF_ENDPOINT`` and evaluate's version: re-run after changing either.
    Returns ``{name: cached file}``.
    """
    from evaluate import config
    from evaluate.utils.file_utils import hash_url_to_filename

    downloads = Path(config.DOWNLOADED_EVALUATE_PATH if downloads_cache is None else downloads_cache)
    modules = Path(config.HF_MODULES_CACHE if modules_cache is None else modules_cache)
    chosen = metric_names() if names is None else names
    installed = {}
    for name in chosen:
        code = (Path(metric_path(name)) / f"{name}.py").read_bytes()
        family = modules / "evaluate_modules" / "metrics" / f"{_NAMESPACE}--{name}"
        if family.exists():
            shutil.rmtree(family)
        downloads.mkdir(parents=True, exist_ok=True)
        files = [downloads / hash_url_to_filename(url) for url in _seeded_urls(name)]
        for file in files:
            staging = file.with_name(file.name + ".partial")
            staging.write_bytes(code)
            staging.replace(file)
        installed[name] = str(files[0])
    return installed
