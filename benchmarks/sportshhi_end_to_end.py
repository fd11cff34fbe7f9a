"""Where the time of `hoi-bench evaluate hhi --official` goes, at the size of the SportsHHI validation set.

Uses the input of ``benchmarks/end_to_end.py`` (2,679 keyframes, 12,126 GT rows, 535,800 prediction rows;
generated once and cached) and prints, for ``--repeats`` fresh processes, wall time (best and median), CPU time
and the child's peak RSS against the issue-11 target (1.2 s, 1,011 MiB: the official evaluator's peak on the
same input), then the wall and CPU time of each phase measured in this process (action list, GT CSV, prediction
CSV, metric) and which heavy modules a fresh ``evaluate hhi`` imports. On a shared machine the CPU times are
the steadier figures.
Run: ``python benchmarks/sportshhi_end_to_end.py [--repeats 3] [--cache DIR]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from end_to_end import DEFAULT_CACHE, GENERATOR_VERSION, make_hhi
from fresh_process import heavy_imports, run_fresh

TARGET_SECONDS, TARGET_MIB = 1.2, 1011


def phases(references: Path, predictions: Path, action_list: Path) -> list[tuple[str, float, float]]:
    """Wall and CPU seconds of each step of ``evaluate hhi --official`` in this process (the first read imports
    pyarrow, as in a fresh process)."""
    from sportshhi import formats
    from sportshhi.evaluation import score_tables

    timings = []

    def timed(name, step):
        wall, cpu = time.perf_counter(), time.process_time()
        value = step()
        timings.append((name, time.perf_counter() - wall, time.process_time() - cpu))
        return value

    actions = timed("action list", lambda: formats.read_action_list(action_list))
    annotations = timed("GT CSV (imports pyarrow)", lambda: formats.read_annotation_csv(references, actions))
    scored = timed("prediction CSV", lambda: formats.read_prediction_csv(predictions, actions))
    timed("metric (mAP + 4 recalls)", lambda: score_tables(annotations, scored, official=True))
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    folder = args.cache / f"v{GENERATOR_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    case = make_hhi(folder)
    references, predictions, action_list = (Path(case.command[case.command.index(flag) + 1])
                                            for flag in ("--references", "--predictions", "--action-list"))
    print(f"input: {references} ({references.stat().st_size / 2**20:.1f} MiB), "
          f"{predictions} ({predictions.stat().st_size / 2**20:.1f} MiB)")
    runs = [run_fresh(case.command + ["--output", str(folder / "hhi_result.json")]) for _ in range(args.repeats)]
    if any(run.exit_code for run in runs):
        raise SystemExit(f"evaluate hhi failed:\n{next(run.stderr for run in runs if run.exit_code)}")
    best = min(run.wall for run in runs)
    peak = max(run.rss_mib for run in runs)
    print(f"fresh process, evaluate hhi --official: wall best {best:.2f} s, median "
          f"{statistics.median(run.wall for run in runs):.2f} s (target {TARGET_SECONDS} s); "
          f"CPU (user + system) best {min(run.cpu for run in runs):.2f} s; peak RSS {peak:.0f} MiB "
          f"(target {TARGET_MIB} MiB) -> {'met' if best <= TARGET_SECONDS and peak <= TARGET_MIB else 'NOT met'}")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall time inflates under load)")
    print("phases in this process:            wall s    CPU s")
    for name, seconds, cpu in phases(references, predictions, action_list):
        print(f"  {name:<32} {seconds:7.3f} {cpu:8.3f}")
    print(f"heavy modules imported by evaluate hhi: {', '.join(heavy_imports(case.command)) or 'none'}")


if __name__ == "__main__":
    main()
