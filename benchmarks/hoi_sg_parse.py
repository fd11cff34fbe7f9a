"""Speed of reading the largest official SG file and of an annotation-only build of it.

Run: ``python benchmarks/hoi_sg_parse.py [--anchors-dir ../shared/anchors] [--repeats 5]``. Reads
``hoi_sg/test_hico_sg1.json`` (8,515 records, 43,363 boxes, 14,475 HOIs) and prints records per second for

- ``json.load`` alone (the reference: the least any reader of this file must do),
- ``formats.read_annotations`` (parse + validate every id, index and box into ``ImageRecord`` objects),
- ``build_hoi_sg(..., with_images=False)`` of a ``hico_split1`` config whose official test file is the anchor
  (parse, validate, Arrow generation, parquet shards and dataset card),

with each figure's ratio to the ``json.load`` time measured in the same run. Target: parse + validate of the
8,515-record file in under 1 second.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

from hoi_sg_dataset.formats import read_annotations, write_annotations
from hoi_sg_dataset.hub_folder import build_hoi_sg
from hoi_sg_dataset.splits import official_split_paths

DEFAULT_ANCHORS = Path(__file__).resolve().parents[2] / "shared" / "anchors"


def best_of(repeats: int, function):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def annotation_only_build(anchor: Path, work: Path) -> int:
    """Build ``hico_split1`` with the anchor as official test file (train: its first record); rows built."""
    data_dir = work / "data"
    trainval_path, test_path = official_split_paths(data_dir, "hico", "sg1")
    test_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(anchor, test_path)
    write_annotations(trainval_path, read_annotations(anchor)[:1], "hico")
    build_hoi_sg(data_dir, work / "hub", ["hico_split1"], with_images=False)
    return 1 + len(json.loads(anchor.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchors-dir", type=Path, default=DEFAULT_ANCHORS)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    anchor = args.anchors_dir / "hoi_sg" / "test_hico_sg1.json"
    if not anchor.is_file():
        raise SystemExit(f"anchor file not found: {anchor} (pass --anchors-dir)")
    logging.disable(logging.INFO)

    def plain():
        with open(anchor, "rb") as handle:
            return json.load(handle)

    reference, data = best_of(args.repeats, plain)
    parse, records = best_of(args.repeats, lambda: read_annotations(anchor, "hico"))
    with tempfile.TemporaryDirectory() as work:
        build, rows = best_of(
            max(1, args.repeats // 2), lambda: annotation_only_build(anchor, Path(tempfile.mkdtemp(dir=work)))
        )
    n = len(records)
    print(
        f"{anchor.name}: {n:,} records, {sum(len(r.annotations) for r in records):,} boxes, "
        f"{sum(len(r.hoi_annotation) for r in records):,} HOIs (best of {args.repeats})"
    )
    print(f"{'what':<34} {'seconds':>8} {'records/s':>11} {'x json.load':>12}")
    for what, seconds, count in (
        ("json.load (reference)", reference, len(data)),
        ("read_annotations (parse+validate)", parse, n),
        ("annotation-only build (hico_split1)", build, rows),
    ):
        print(f"{what:<34} {seconds:8.3f} {count / seconds:11,.0f} {seconds / reference:12.1f}")
    verdict = "met" if parse < 1.0 else "NOT met"
    print(f"target: parse + validate of {n:,} records in < 1 s: {verdict} ({parse:.3f} s)")


if __name__ == "__main__":
    main()
