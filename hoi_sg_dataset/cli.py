"""Commands and demo steps this package adds to `hoi-bench` (entry point `hoi_bench.plugins`).

``hoi-bench build hoi_sg``, ``hoi-bench stats hoi_sg``, ``hoi-bench splits`` and the demo step that builds the
synthetic sample into a Hub folder and loads it back.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.plugins import Command, DemoContext, DemoStep, Registry, deferred, display_path, positive_int

BENCHMARK = "hoi_sg"
TRAIN_HELP = "train and evaluate the object-prior, pair-classifier and QPIC-style detector (--model detr) baselines"
TRAIN_DEMO_NAME = "hoi_sg: object prior vs. a pair classifier trained a few steps (tracked), scored with hoi_map"
DETECTOR_DEMO_NAME = "hoi_sg: the QPIC-style detector (tiny DETR) trained a few steps, scored with hoi_map"


def register(registry: Registry) -> None:
    """Add this package's commands and demo steps to ``registry``."""
    registry.add_command(
        Command(
            "build",
            BENCHMARK,
            "build HICO-DET-SG / V-COCO-SG configs into a Hub folder",
            _configure_build,
            _run_build,
        )
    )
    registry.add_command(
        Command(
            "stats",
            BENCHMARK,
            "images, HOI triplets, combinations of an annotation file",
            _configure_stats,
            _run_stats,
        )
    )
    registry.add_command(
        Command(
            "splits",
            None,
            "generate HICO-DET-SG / V-COCO-SG style splits (Algorithm 1)",
            _configure_splits,
            _run_splits,
        )
    )
    registry.add_demo_step(DemoStep("hoi_sg: build the sample into a Hub folder and load it", 10, run_demo))
    # training command and demo step (issue 7): the baseline module (numpy, torch) loads only when they run
    registry.add_command(Command("train", "hoi_sg", TRAIN_HELP,
                                 deferred("hoi_sg_dataset.baseline:configure_parser"),
                                 deferred("hoi_sg_dataset.baseline:train")))
    registry.add_demo_step(DemoStep(TRAIN_DEMO_NAME, 50, deferred("hoi_sg_dataset.baseline:demo")))
    registry.add_demo_step(DemoStep(DETECTOR_DEMO_NAME, 54, deferred("hoi_sg_dataset.baseline:detector_demo")))


def _configure_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="local copy of HICO-DET and/or V-COCO (see docs/hoi_sg.md for the layout)",
    )
    parser.add_argument(
        "--config",
        action="append",
        dest="configs",
        metavar="NAME",
        help="config to build, repeatable: hico_split1..3, vcoco_split1..3, hico, vcoco "
        "(default: every config the data allows)",
    )
    parser.add_argument("--out", type=Path, default=Path("hoi_sg"), help="Hub folder to write or extend")
    parser.add_argument("--force", action="store_true",
                        help="replace the configs of an existing hoi-bench folder instead of adding to them "
                             "(other files are kept)")
    parser.add_argument(
        "--no-images", action="store_true", help="annotation-only configs: no image files needed"
    )
    parser.add_argument(
        "--num-proc", type=positive_int, default=None, help="processes for reading and embedding images"
    )


def _run_build(args: argparse.Namespace) -> int:
    from hoi_sg_dataset.hub_folder import build_hoi_sg

    folder = build_hoi_sg(
        args.data_dir, args.out, args.configs, with_images=not args.no_images, num_proc=args.num_proc,
        force=args.force,
    )
    print(f"wrote {folder}")
    print(f'load with: datasets.load_dataset("{folder}", CONFIG)')
    return 0


def _configure_stats(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split-file", type=Path, required=True, help="annotation or SG split file (JSON)")
    parser.add_argument("--dataset", choices=["hico", "vcoco"], help="default: from the file names")
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON")
    parser.add_argument("--combinations", action="store_true", help="also list the object-verb combinations")


def _run_stats(args: argparse.Namespace) -> int:
    from hoi_bench.files import dumps_json
    from hoi_bench.report import format_table
    from hoi_sg_dataset.formats import read_annotations
    from hoi_sg_dataset.splits import combinations_of
    from hoi_sg_dataset.stats import combination_table, split_stats

    records = read_annotations(args.split_file, args.dataset)
    dataset = args.dataset or _dataset_of(records)
    stats = split_stats(records, dataset)
    table = combination_table(combinations_of(records), dataset)
    if args.json:
        payload = stats.as_dict()
        if args.combinations:
            payload["combination_list"] = [{"hoi_id": h or None, "verb": v, "object": o} for h, v, o in table]
        print(dumps_json(payload, indent=2))
        return 0
    rows = [
        ["images", stats.images],
        ["HOI triplets", stats.hoi_triplets],
        ["object-verb combinations", stats.combinations],
    ]
    if stats.quirk_combinations:
        rows.append(["+ combinations via the last-box quirk", stats.quirk_combinations])
    rows += [[f"images from {origin}", count] for origin, count in stats.images_per_origin.items()]
    rows += [
        ["boxes", stats.boxes],
        ["HOIs without object", stats.no_object_hois],
        ["images without HOI", stats.empty_images],
    ]
    print(f"{args.split_file} ({dataset})")
    print(format_table(["statistic", "value"], rows))
    if args.combinations:
        print()
        print(format_table(["HOI id", "verb", "object"], table))
    return 0


def _dataset_of(records) -> str:
    from hoi_sg_dataset.formats import detect_dataset

    return (detect_dataset(records[0].file_name) if records else None) or "hico"


def _configure_splits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=["hico", "vcoco"], required=True)
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="dataset root holding annotations/trainval_<dataset>.json and test_<dataset>.json",
    )
    parser.add_argument("--trainval", type=Path, help="original trainval file (overrides --data-dir)")
    parser.add_argument("--test", type=Path, help="original test file (overrides --data-dir)")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seed", type=int, action="append", dest="seeds", help="seed of one split, repeatable"
    )
    seeds.add_argument("--official-seeds", action="store_true", help="HICO 368 680 750 / V-COCO 564 966 2065")
    parser.add_argument("--count", type=int, default=3, help="splits to make by seed search (no seed given)")
    parser.add_argument("--search-from", type=int, help="first seed tried (default: 368 HICO, 0 V-COCO)")
    parser.add_argument("--ratio", type=float, help="fraction of combinations kept for training (0.9 / 0.7)")
    parser.add_argument(
        "--no-official-quirks",
        action="store_true",
        help="empty images to train, no-object HOIs neutral (see docs/hoi_sg.md)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        help="where SGsplits/<HICO-DET-SG|V-COCO-SG>/{trainval,test}/ are written",
    )
    parser.add_argument("--flat", action="store_true", help="write both files directly into --out")


def _run_splits(args: argparse.Namespace) -> int:
    from hoi_bench.errors import MissingFilesError
    from hoi_bench.report import format_table
    from hoi_sg_dataset.builder import dataset_root, original_annotation_paths
    from hoi_sg_dataset.formats import read_annotations
    from hoi_sg_dataset.splits import (
        OFFICIAL_SEEDS,
        RATIOS,
        SEARCH_START,
        combinations_of,
        make_split,
        search_seeds,
        verify,
        write_split,
    )
    from hoi_sg_dataset.stats import combination_names

    dataset = args.dataset
    defaults = (
        original_annotation_paths(dataset_root(args.data_dir, dataset), dataset)
        if args.data_dir
        else (None, None)
    )
    trainval_path, test_path = args.trainval or defaults[0], args.test or defaults[1]
    if trainval_path is None or test_path is None:
        raise MissingFilesError(
            "<arguments>",
            [n for n, p in (("--trainval", trainval_path), ("--test", test_path)) if p is None],
            what="inputs",
            hint="or pass --data-dir",
        )
    trainval = read_annotations(trainval_path, dataset)
    test = read_annotations(test_path, dataset)
    ratio = RATIOS[dataset] if args.ratio is None else args.ratio
    if args.official_seeds:
        seeds = list(OFFICIAL_SEEDS[dataset])
    elif args.seeds:
        seeds = args.seeds
    else:
        start = SEARCH_START[dataset] if args.search_from is None else args.search_from
        seeds = search_seeds(combinations_of((*trainval, *test)), ratio, start, args.count)
        print(f"seed search from {start}: {' '.join(map(str, seeds))}")
    rows = []
    for number, seed in enumerate(seeds, start=1):
        split = make_split(
            trainval, test, dataset, seed=seed, ratio=ratio, official_quirks=not args.no_official_quirks
        )
        name = f"sg{number}"
        paths = write_split(split, args.out, name, flat=args.flat)
        rows.append(
            [
                name,
                seed,
                "pass" if verify(split.train_combinations, split.test_combinations) else "FAIL",
                len(split.test_combinations),
                len(split.trainval),
                len(split.test),
                split.dropped,
                str(paths[1]),
            ]
        )
        print(f"{name} held out: {', '.join(combination_names(split.test_combinations, dataset))}")
    print(
        format_table(
            ["split", "seed", "VERIFY", "held-out", "train images", "test images", "dropped", "test file"],
            rows,
        )
    )
    return 0


def run_demo(context: DemoContext) -> None:
    """Write the synthetic sample, build every config into a Hub folder, load two back, report sizes."""
    import datasets

    from hoi_sg_dataset.builder import CONFIG_NAMES
    from hoi_sg_dataset.hub_folder import build_hoi_sg
    from hoi_sg_dataset.samples import write_sample

    base = context.out_dir / "work" / BENCHMARK  # the Hub folder is demo-output/hoi_sg: load_dataset("hoi_sg", ...) from demo-output
    layout = write_sample(base / "sample")
    context.say(f"synthetic HICO-DET and V-COCO layouts written to {layout.root}")
    folder = build_hoi_sg(layout.root, context.out_dir / BENCHMARK, list(CONFIG_NAMES), synthetic=True)
    context.say(f"built {len(CONFIG_NAMES)} configs into {folder}")
    datasets.disable_progress_bars()
    try:
        for config in ("hico_split1", "vcoco_split1"):
            loaded = datasets.load_dataset(str(folder), config, cache_dir=str(base / "cache"))
            test = loaded["test"]
            verbs = test.features["hois"].feature["verb"]
            triplets = sum(len(h) for h in test["hois"])
            held_out = {
                (label, verbs.int2str(h["verb"]))
                for labels, hois in zip(test["box_labels"], test["hois"], strict=True)
                for h in hois
                if h["object"] >= 0
                for label in [labels[h["object"]]]
            }
            context.say(
                f"load_dataset({folder.name!r}, {config!r}): {loaded['train'].num_rows} train / "
                f"{test.num_rows} test images, {triplets} test HOI triplets, "
                f"{len(held_out)} held-out combinations in test"
            )
            context.result(f"{BENCHMARK}/{config}", "train", "images", loaded["train"].num_rows)
            context.result(f"{BENCHMARK}/{config}", "test", "images", test.num_rows)
            context.result(f"{BENCHMARK}/{config}", "test", "HOI triplets", triplets)
            context.result(f"{BENCHMARK}/{config}", "test", "held-out combinations in test", len(held_out))
    finally:
        datasets.enable_progress_bars()
    context.suggest("python", "-c", f'import datasets; print(datasets.load_dataset("{display_path(folder)}", '
                    '"hico_split3"))')
    context.artifacts["hoi_sg sample (native layout)"] = layout.root
    context.artifacts["hoi_sg Hub folder"] = folder
