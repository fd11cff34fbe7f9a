"""Every metric in ``metrics/`` loads offline from any directory: by bare name after ``hoi-bench
install-metrics``, and always through ``hoi_bench.metric_path`` (fresh process, temporary cwd,
HF_EVALUATE_OFFLINE=1, own modules cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hoi_bench import metric_names, metric_path
from hoi_bench.errors import ConfigError
from hoi_bench.metric_modules import install_metrics

LOAD_ALL = """
import json, sys, evaluate, hoi_bench
report = {}
for name in hoi_bench.metric_names():
    by_name = evaluate.load(name)
    by_path = evaluate.load(hoi_bench.metric_path(name))
    report[name] = {"by_name": by_name.name, "by_path": by_path.name,
                    "module": type(by_name).__module__, "features": str(by_name.features)}
json.dump(report, sys.stdout)
"""


def offline_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HOME=str(tmp_path / "hf-home"),
        HF_MODULES_CACHE=str(tmp_path / "modules"),
        HF_EVALUATE_OFFLINE="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_UPDATE_DOWNLOAD_COUNTS="0",
    )
    return env


def test_every_metric_folder_is_listed():
    root = Path(metric_path(metric_names()[0])).parent
    folders = sorted(p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file())
    assert metric_names() == folders
    assert {"hoi_map", "vcoco_map"} <= set(folders)
    for name in folders:
        assert (root / name / "README.md").is_file(), f"{name} has no metric card"
        assert (root / name / "requirements.txt").is_file(), f"{name} has no requirements.txt"


def test_install_metrics_then_bare_names_load_offline_from_any_directory(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = offline_env(tmp_path)
    installed = subprocess.run(
        [sys.executable, "-m", "hoi_bench.cli", "install-metrics"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    for name in metric_names():
        assert name in installed.stdout
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_ALL], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300
    )
    assert loaded.returncode == 0, loaded.stderr
    report = json.loads(loaded.stdout)
    assert sorted(report) == metric_names()
    for name, info in report.items():
        assert info["by_name"] == info["by_path"] == name
        assert "evaluate-metric--" + name in info["module"]


def test_reinstall_replaces_the_previous_copy(tmp_path):
    first = install_metrics(["hoi_map"], modules_cache=tmp_path)
    second = install_metrics(["hoi_map"], modules_cache=tmp_path)
    assert first == second
    family = tmp_path / "evaluate_modules" / "metrics" / "evaluate-metric--hoi_map"
    assert [p.name for p in family.iterdir()] == [Path(second["hoi_map"]).parent.name]
    assert (Path(second["hoi_map"]).parent / "README.md").is_file()


def test_unknown_metric_name_lists_the_available_ones():
    with pytest.raises(ConfigError, match="unknown metric 'hoi_mAP'; available: .*hoi_map"):
        metric_path("hoi_mAP")
