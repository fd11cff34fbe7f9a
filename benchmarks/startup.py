"""How long `hoi-bench ... --help` takes in a fresh process, and what it imports (target: under 0.25 s).

Run: ``python benchmarks/startup.py [--repeats 10] [COMMAND ...]`` (default command: ``evaluate hoi_map``).

Prints wall and CPU time (min and median over ``--repeats`` fresh processes) of ``hoi-bench COMMAND --help``
next to a bare ``python -c pass`` (the interpreter's own floor on this machine), then the ten slowest imports
of one run from ``python -X importtime`` and any heavy library (numpy, datasets, pyarrow, matplotlib, torch,
evaluate, huggingface_hub) that was imported. On a loaded machine wall time varies; CPU time much less.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HEAVY = ("numpy", "datasets", "pyarrow", "matplotlib", "torch", "evaluate", "huggingface_hub")


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(name: str, runs: list[tuple[float, float]]) -> str:
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    return (f"{name:<40} wall min {min(walls):.3f} s, median {statistics.median(walls):.3f} s; "
            f"cpu min {min(cpus):.3f} s, median {statistics.median(cpus):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", nargs="*", default=["evaluate", "hoi_map"])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "hoi_bench.cli", *args.command, "--help"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(summary("python -c pass", [timed([sys.executable, "-c", "pass"]) for _ in range(args.repeats)]))
    print(summary(f"hoi-bench {' '.join(args.command)} --help", [timed(cli) for _ in range(args.repeats)]))
    report = subprocess.run([sys.executable, "-X", "importtime", *cli[1:]], check=True, capture_output=True,
                            text=True).stderr
    rows = [m.groups() for m in re.finditer(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", report)]
    top = sorted(((int(total), name) for total, indent, name in rows if len(indent) <= 3), reverse=True)[:10]
    print("\nslowest imports (cumulative):")
    for total, name in top:
        print(f"  {total / 1e6:.3f} s  {name}")
    loaded = sorted({name.split(".")[0] for _, _, name in rows} & set(HEAVY))
    print(f"\nheavy libraries imported: {', '.join(loaded) if loaded else 'none'}")


if __name__ == "__main__":
    main()
