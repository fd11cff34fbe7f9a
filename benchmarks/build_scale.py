"""Peak memory of a full-size build: does it stay flat as the number of images grows?

Run: ``python benchmarks/build_scale.py [--n 2000 --n 8000 --n 16000] [--cache-dir DIR] [--num-proc N]``.

For each N, writes (once, then reuses from ``--cache-dir``) a synthetic HICO-DET native layout of N images in
the folder layout of ``hoi_sg_dataset.samples`` (three quarters ``train2015``, one quarter ``test2015``,
annotations drawn by the sample's own record generator), whose JPEGs are 640 x 480 textured noise of about
145 KB each, the size of the real HICO-DET images. Then builds the ``hico`` config with images embedded
(``build_hoi_sg``) into a fresh folder in a fresh Python process per N, and prints wall time, peak RSS
(``ru_maxrss`` of that process, which includes the pages of memory-mapped Arrow files it touched) and the size
of the written folder. Target: peak RSS within +-15 % from 2,000 to 16,000 images, because shards are embedded
and written one at a time (``hoi_bench.hub``) instead of a whole split held in memory.

Figures depend on the machine and its load; the closing note of issue 13 says where they were measured.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

DEFAULT_SIZES = (2_000, 8_000, 16_000)
WIDTH, HEIGHT = 640, 480
JPEG_POOL = 16
DONE = ".complete"


def noise_jpegs(count: int, seed: int = 13) -> list[bytes]:
    """``count`` distinct 640 x 480 JPEGs of about 145 KB (smooth colour blobs plus grain, quality 90)."""
    rng = np.random.default_rng(seed)
    pool = []
    for _ in range(count):
        blobs = rng.integers(0, 256, (HEIGHT // 8, WIDTH // 8, 3), dtype=np.uint8)
        smooth = np.asarray(Image.fromarray(blobs).resize((WIDTH, HEIGHT), Image.BICUBIC), dtype=np.int16)
        grain = rng.integers(-18, 19, (HEIGHT, WIDTH, 3))
        buffer = io.BytesIO()
        Image.fromarray((smooth + grain).clip(0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
        pool.append(buffer.getvalue())
    return pool


def write_layout(root: Path, images: int) -> Path:
    """The synthetic HICO-DET layout of ``images`` images under ``root`` (reused when already complete)."""
    from hoi_sg_dataset.formats import write_annotations
    from hoi_sg_dataset.samples import HICO_COMBINATIONS, HICO_FOLDER, SEED, _combinations, _hico_record
    from hoi_sg_dataset.vocabulary import hico_verbs

    if (root / DONE).is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    base = root / HICO_FOLDER
    rng = np.random.RandomState(SEED)
    combos = _combinations(HICO_COMBINATIONS, hico_verbs(), lambda verb: verb)
    pool = noise_jpegs(JPEG_POOL)
    train = images * 3 // 4
    for split, count, annotation in (("train2015", train, "trainval_hico.json"),
                                     ("test2015", images - train, "test_hico.json")):
        records = [_hico_record(rng, split, number + 1, combos) for number in range(count)]
        folder = base / "images" / split
        folder.mkdir(parents=True)
        for index, record in enumerate(records):
            (folder / record.file_name).write_bytes(pool[index % JPEG_POOL])
        write_annotations(base / "annotations" / annotation, records, "hico")
    (root / DONE).write_text(str(images))
    return root


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def measure_one(layout: Path, num_proc: int | None) -> dict:
    """Build ``hico`` from ``layout`` in this process; wall time, peak RSS and output size."""
    import logging

    import datasets

    from hoi_sg_dataset.hub_folder import build_hoi_sg

    datasets.disable_progress_bars()
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="build-scale-out-") as out:
        start = time.perf_counter()
        folder = build_hoi_sg(layout, Path(out) / "hoi_sg", ["hico"], num_proc=num_proc)
        wall = time.perf_counter() - start
        size = folder_bytes(folder)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall_s": wall, "peak_rss_mib": peak_kib / 1024, "output_mib": size / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", help=f"images per layout (repeatable; default "
                                                                f"{', '.join(map(str, DEFAULT_SIZES))})")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "hoi-bench-build-scale",
                        help="where the synthetic layouts are kept between runs")
    parser.add_argument("--num-proc", type=int, default=None, help="passed to the build (default: one process)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure_one(args.child, args.num_proc)))
        return 0
    rows = []
    for images in args.n or DEFAULT_SIZES:
        layout = write_layout(args.cache_dir / f"hico_{images}", images)
        image_mib = folder_bytes(layout / "hico_20160224_det" / "images") / 2**20
        command = [sys.executable, __file__, "--child", str(layout)]
        if args.num_proc is not None:
            command += ["--num-proc", str(args.num_proc)]
        result = subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ)
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append((images, image_mib, figures))
        print(f"{images:>7,} images ({image_mib:,.0f} MiB of JPEG): wall {figures['wall_s']:7.1f} s, "
              f"peak RSS {figures['peak_rss_mib']:7,.0f} MiB, output {figures['output_mib']:7,.0f} MiB", flush=True)
    if len(rows) > 1:
        peaks = [figures["peak_rss_mib"] for _, _, figures in rows]
        middle = (max(peaks) + min(peaks)) / 2
        print(f"peak RSS spread: {min(peaks):,.0f} .. {max(peaks):,.0f} MiB = +-{(max(peaks) - middle) / middle:.1%} "
              f"around the middle (target +-15 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
