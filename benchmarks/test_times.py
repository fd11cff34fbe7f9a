"""Where the test suite's time goes: runs pytest (offline, throw-away HF cache) and prints the slowest tests.

    .venv/bin/python benchmarks/test_times.py                      # the whole suite, as `make test` runs it
    .venv/bin/python benchmarks/test_times.py -m "not slow"        # what `make test-fast` runs
    .venv/bin/python benchmarks/test_times.py --top 40 tests/hoi_bench

Arguments other than ``--top`` go to pytest. A test's time is its setup + call + teardown (pytest's
``--durations=0`` lines summed per test), so a session fixture's cost shows on the first test that uses it.
Prints the wall time of the run, the slowest ``--top`` tests, and how many tests took how long together; exits
with pytest's status.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DURATION = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S.*)$")
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "HF_UPDATE_DOWNLOAD_COUNTS": "0"}


def seconds_per_test(output: str) -> dict[str, float]:
    """Seconds per test id (setup + call + teardown) from pytest's ``--durations=0`` report."""
    seconds: dict[str, float] = defaultdict(float)
    for line in output.splitlines():
        match = DURATION.match(line.strip())
        if match:
            seconds[match.group(3)] += float(match.group(1))
    return dict(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=20, help="how many of the slowest tests to print")
    args, pytest_args = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="hoi-bench-test-times-") as hf_home:
        env = dict(os.environ, HF_HOME=hf_home, **OFFLINE)
        command = [sys.executable, "-m", "pytest", "-q", "--durations=0", "--durations-min=0", *pytest_args]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
    seconds = seconds_per_test(done.stdout)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-500:]
    print(f"pytest {shlex.join(pytest_args)}: {summary} (wall {wall:.0f} s)")
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    print(f"\nthe {min(args.top, len(ranked))} slowest tests (setup + call + teardown):")
    for test, spent in ranked[: args.top]:
        print(f"{spent:8.2f} s  {test}")
    for low, high in ((5, None), (1, 5), (0, 1)):
        chosen = [spent for spent in seconds.values() if spent >= low and (high is None or spent < high)]
        label = f">= {low} s" if high is None else f"{low}-{high} s"
        print(f"{len(chosen):5d} tests of {label}: {sum(chosen):7.1f} s together")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
