"""What embedding images in every Bongard-HOI episode row costs, against storing each picture once.

Episodes reuse images: the overlap limit tau lets any two episodes share up to 3 (train) or 2 (test) images, and
popular concepts draw again and again from the same pool. Embedding the crop in every episode row multiplies
storage by (image slots / distinct crops). This script measures that factor

1. on episodes the sampler draws from the largest real HICO-DET-SG / V-COCO-SG annotation file (1,000 and 5,000
   train episodes, 1,000 test episodes), and on the nine real Bongard-HOI excerpts (2 episodes each);
2. in bytes, by building the synthetic sample both ways (config ``episodes`` vs ``episode_refs`` + ``images``)
   and comparing the parquet sizes; the reference is the size of the distinct source image files.

    .venv/bin/python benchmarks/bongard_storage.py [--anchors ../shared/anchors]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

from bongard_hoi.builder import build_hub
from bongard_hoi.episodes import instances_from_annotations, sample_episodes
from bongard_hoi.formats import SPLITS, episode_file_name, read_episode_file
from bongard_hoi.samples import ANNOTATION_DIR, IMAGE_DIR, write_sample
from hoi_bench.report import format_table
from hoi_sg_dataset.formats import read_annotations


def _reuse(images) -> tuple[int, int, int]:
    images = list(images)
    return len(images), len({i.im_path for i in images}), len({(i.im_path, i.crop_bbox) for i in images})


def _folder_bytes(folder: Path, config: str) -> int:
    return sum(p.stat().st_size for p in (folder / config).glob("*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--anchors", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "anchors")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    rows = []
    largest = max((args.anchors / "hoi_sg").glob("*.json"), key=lambda p: p.stat().st_size)
    instances = instances_from_annotations(read_annotations(largest))
    for role, count in (("train", 1000), ("train", 5000), ("test", 1000)):
        sampled = sample_episodes(instances, count, role=role, seed=0)
        slots, files, crops = _reuse(i for s in sampled for i in s.episode.images())
        rows.append([f"sampler on {largest.name}, {role}", len(sampled), slots, files, crops, slots / crops])
    bongard = [image for split in SPLITS
               for episode in read_episode_file(args.anchors / "bongard_hoi" / episode_file_name(split))
               for image in episode.images()]
    slots, files, crops = _reuse(bongard)
    rows.append(["official Bongard-HOI excerpts (9 x 2 episodes)", 18, slots, files, crops, slots / crops])

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        sample = write_sample(scratch / "native")
        episodes = [i for split in SPLITS for e in read_episode_file(sample / ANNOTATION_DIR / episode_file_name(split))
                    for i in e.images()]
        slots, files, crops = _reuse(episodes)
        rows.append(["synthetic sample", len(episodes) // 14, slots, files, crops, slots / crops])
        source = sum((sample / IMAGE_DIR / p).stat().st_size for p in
                     {i.relative_path.replace("pic/image/val/", "pic/image/train/") for i in episodes})
        embedded = build_hub(sample, scratch / "embedded")
        refs = build_hub(sample, scratch / "refs", configs=("episode_refs", "images"))
        embedded_bytes = _folder_bytes(embedded, "episodes")
        refs_bytes = _folder_bytes(refs, "episode_refs") + _folder_bytes(refs, "images")

    print("Image reuse: storage factor of embedding per episode = image slots / distinct crops\n")
    print(format_table(["episodes from", "episodes", "image slots", "distinct files", "distinct crops",
                        "slots / crops"], rows, digits=2))
    print("\nBytes on the synthetic sample (parquet, all nine splits):\n")
    print(format_table(["layout", "bytes", "vs distinct source files"], [
        ["distinct source image files (reference)", source, 1.0],
        ["episodes (embedded per episode)", embedded_bytes, embedded_bytes / source],
        ["episode_refs + images (each crop once)", refs_bytes, refs_bytes / source],
        ["embedded / refs", "", embedded_bytes / refs_bytes],
    ], digits=2))


if __name__ == "__main__":
    main()
