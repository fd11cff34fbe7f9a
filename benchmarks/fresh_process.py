"""Measuring a command the way a user meets it: a fresh process, its wall time, CPU time and peak memory.

Shared by the scripts in ``benchmarks/`` that time ``hoi-bench`` end to end, so every figure they print is
taken the same way: ``os.wait4`` on the child gives its own peak RSS and CPU time (user + system, the steadier
figure on a shared machine), and the wall clock runs from start to exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
               "HF_UPDATE_DOWNLOAD_COUNTS": "0"}
HEAVY_MODULES = ("datasets", "pyarrow", "matplotlib", "torch", "pandas", "evaluate", "transformers")
_SCRIPT = Path(sys.executable).with_name("hoi-bench")
HOI_BENCH = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "hoi_bench.cli"]
"""The console script a user runs (its own start-up included), or the module when it is not installed."""


@dataclass(frozen=True)
class Run:
    """One fresh process: wall and CPU seconds, peak RSS in MiB, exit status and what it wrote to stderr."""

    wall: float
    cpu: float
    rss_mib: float
    exit_code: int
    stderr: str


def offline_env() -> dict[str, str]:
    """This process's environment with the Hub switched off and the checkout importable."""
    return {**os.environ, **OFFLINE_ENV, "PYTHONPATH": str(ROOT)}


def run_fresh(command: list[str], env: dict[str, str] | None = None) -> Run:
    """Run ``command`` as a fresh child process (stdout discarded) and measure it."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=offline_env() if env is None else env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    errors = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status),
               errors)


def heavy_imports(command: list[str], env: dict[str, str] | None = None) -> list[str]:
    """Which of ``HEAVY_MODULES`` a fresh ``command`` (``HOI_BENCH + [...]``) imports, from ``-X importtime``."""
    arguments = command[1:] if command[0] == sys.executable else command
    done = subprocess.run([sys.executable, "-X", "importtime", *arguments], env=offline_env() if env is None else env,
                          capture_output=True, text=True, check=False)
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
             if line.startswith("import time:")}
    return sorted(names & set(HEAVY_MODULES))
