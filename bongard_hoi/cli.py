"""Commands and demo steps this package adds to `hoi-bench` (entry point `hoi_bench.plugins`).

``build bongard_hoi``, ``stats bongard_hoi``, ``episodes``, ``show bongard_hoi``, ``evaluate bongard_accuracy``; demo steps
12 (build the sample, load it, draw a sheet) and 32 (accuracy of a simple rule).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.errors import DataError
from hoi_bench.files import write_json_atomic
from hoi_bench.plugins import Command, DemoContext, DemoStep, Registry, deferred

BENCHMARK = "bongard_hoi"
TRAIN_HELP = "train and evaluate the ProtoNet baseline (accelerate)"
TRAIN_DEMO_NAME = "bongard_hoi: train the ProtoNet baseline a few steps, score it with bongard_accuracy"


def register(registry: Registry) -> None:
    """Add this package's commands and demo steps to ``registry``."""
    registry.add_command(Command("build", BENCHMARK, "build the Bongard-HOI episode files into a Hub dataset folder",
                                 _configure_build, _run_build))
    registry.add_command(Command("stats", BENCHMARK, "count episodes, concepts and images of Bongard-HOI episode files",
                                 _configure_stats, _run_stats))
    registry.add_command(Command("episodes", None, "sample Bongard-style few-shot episodes from HOI annotations",
                                 _configure_episodes, _run_episodes))
    registry.add_command(Command("show", BENCHMARK, "draw a Bongard-HOI episode as a sheet PNG",
                                 _configure_show, _run_show))
    registry.add_command(Command("evaluate", "bongard_accuracy", "Bongard-HOI query accuracy per split and the "
                                 "test mean", _configure_evaluate, _run_evaluate, aliases=("bongard",)))
    registry.add_demo_step(DemoStep("bongard_hoi: build the sample episodes, load them, draw a sheet", 12, _demo_build))
    registry.add_demo_step(DemoStep("bongard_hoi: accuracy of a colour-prototype rule", 32, _demo_rule))
    # training command and demo step (issue 7): the baseline module (numpy, torch) loads only when they run
    registry.add_command(Command("train", BENCHMARK, TRAIN_HELP, deferred("bongard_hoi.baseline:configure_parser"),
                                 deferred("bongard_hoi.baseline:train")))
    registry.add_demo_step(DemoStep(TRAIN_DEMO_NAME, 52, deferred("bongard_hoi.baseline:demo")))


def _configure_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="folder holding bongard_hoi_release/ (episode files) and images/ (the HAKE image tar)")
    parser.add_argument("--out", type=Path, required=True, help="Hub dataset folder to write (config 'episodes')")
    parser.add_argument("--force", action="store_true",
                        help="replace the configs of an existing hoi-bench folder instead of adding to them "
                             "(other files are kept)")
    parser.add_argument("--no-crop", dest="crop", action="store_false",
                        help="embed whole original images, boxes in image pixels (default: official crops)")
    parser.add_argument("--splits", nargs="+", help="build only these splits (default: all nine)")
    parser.add_argument("--layout", choices=["embedded", "refs", "both"], default="embedded",
                        help="embedded: config 'episodes' with images in every row; refs: configs 'episode_refs' + "
                             "'images' (each picture once, recommended for the full release); both: all three")
    parser.add_argument("--annotation-dir", default="bongard_hoi_release",
                        help="episode-file folder, absolute or relative to --data-dir")
    parser.add_argument("--image-dir", default="images", help="image root, absolute or relative to --data-dir")


def _run_build(args: argparse.Namespace) -> int:
    from bongard_hoi.builder import build_hub

    configs = {"embedded": ("episodes",), "refs": ("episode_refs", "images"),
               "both": ("episodes", "episode_refs", "images")}[args.layout]
    out = build_hub(args.data_dir, args.out, crop=args.crop, splits=args.splits, annotation_dir=args.annotation_dir,
                    image_dir=args.image_dir, configs=configs, force=args.force)
    print(f"wrote {out}; load with datasets.load_dataset({str(out)!r}, {configs[0]!r})")
    return 0


def _configure_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", type=Path, required=True,
                        help='JSON list of {"split", "episode", "query": "positive"|"negative", "prediction": '
                             '"positive"|"negative" or [positive-set score, negative-set score]}')
    parser.add_argument("--references", type=Path, required=True,
                        help="folder of official episode files (bongard_hoi_<split>.json) or a built dataset folder")
    parser.add_argument("--output", type=Path, help="write the result JSON here")


def _run_evaluate(args: argparse.Namespace) -> int:
    from bongard_hoi.evaluation import summary_rows
    from bongard_hoi.predictions import evaluate_prediction_file
    from hoi_bench.report import format_table

    result = evaluate_prediction_file(args.predictions, args.references)
    rows = summary_rows(result)
    if not rows:
        raise DataError(f"{args.predictions}: nothing to score: the file holds no prediction (expected one record "
                        "per query: {split, episode, query, prediction})")
    print(format_table(["split", "accuracy", "episode accuracy (not official)"], rows))
    if args.output:
        write_json_atomic(args.output, result)
        print(f"\nwrote {args.output}")
    return 0


def _configure_stats(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", type=Path, nargs="+", help="bongard_hoi_<split>.json files")


def _run_stats(args: argparse.Namespace) -> int:
    from bongard_hoi.formats import read_episode_file, split_of_file
    from hoi_bench.report import format_table

    rows = []
    for path in args.files:
        episodes = read_episode_file(path)
        slots = [image for episode in episodes for image in episode.images()]
        rows.append([split_of_file(path), len(episodes), len({e.concept_name for e in episodes}), len(slots),
                     len({i.im_path for i in slots}), len({(i.im_path, i.crop_bbox) for i in slots})])
    print(format_table(["split", "episodes", "concepts", "image slots", "unique images", "unique crops"], rows))
    return 0


def _configure_episodes(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--annotations", type=Path,
                        help="PPDM/QPIC annotation file to sample from (HICO-DET, V-COCO or their SG splits)")
    source.add_argument("--hoi-sg", type=Path, metavar="FOLDER",
                        help="hoi_sg Hub folder (hoi-bench build hoi_sg): sample its --config 'test' split (or "
                             "'train' for --role train); its 'train' split is the training vocabulary")
    parser.add_argument("--config", help="hoi_sg config with --hoi-sg, e.g. hico_split3")
    parser.add_argument("--image-folder",
                        help="image path prefix before <original split>/<file> (default: the HAKE layout, "
                             "hico_20160224_det/images or vcoco)")
    parser.add_argument("--dataset", choices=["hico", "vcoco"], help="annotation vocabulary (default: from file names)")
    parser.add_argument("--role", choices=["train", "val", "test"], default="test",
                        help="train episodes go to split 'train'; val/test ones to <role>_<obj>_<act> splits")
    parser.add_argument("--train-annotations", type=Path,
                        help="training annotation file whose actions and objects count as seen (default: every "
                             "class of --annotations is seen)")
    parser.add_argument("--num-episodes", type=int, default=1000)
    parser.add_argument("--shots", type=int, default=6, help="shots per side (M); each side also gets one query")
    parser.add_argument("--max-overlap", type=int, help="tau: most images two episodes may share (3 train, 2 test)")
    parser.add_argument("--margin", type=float, default=0.1, help="crop margin, as a fraction of the union box")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="folder for the bongard_hoi_<split>.json files")
    parser.add_argument("--images", type=Path, help="image root (HAKE layout) to also build a Hub dataset folder")
    parser.add_argument("--hub", type=Path, help="Hub dataset folder to write from the episodes (needs --images)")


def _run_episodes(args: argparse.Namespace) -> int:
    from bongard_hoi.builder import build_hub
    from bongard_hoi.episodes import (
        TrainingVocabulary,
        group_by_split,
        instances_from_annotations,
        sample_episodes,
        write_episode_set,
    )
    from bongard_hoi.episodes import why_no_episodes
    from hoi_bench.errors import ConfigError, MissingFilesError, OutputPathError
    from hoi_bench.report import format_table
    from hoi_sg_dataset.formats import read_annotations

    if args.out.exists() and not args.out.is_dir():
        raise OutputPathError(args.out, "--out", "is a file, not a folder; nothing was written",
                              expected="a folder for the bongard_hoi_<split>.json files")
    if (args.hub is None) != (args.images is None):
        raise ConfigError("option combination", "--hub without --images" if args.hub else "--images without --hub",
                          ["--hub HUB --images ROOT", "neither"])
    if args.hub is not None and args.shots != 6:
        raise ConfigError("option combination", f"--hub with --shots {args.shots}", ["--hub with --shots 6"])
    vocabulary = None
    if args.hoi_sg is not None:
        import datasets

        from bongard_hoi.episodes import instances_from_rows

        if not args.config:
            raise ConfigError("option combination", "--hoi-sg without --config", ["--hoi-sg FOLDER --config NAME"])
        if not args.hoi_sg.is_dir():
            raise MissingFilesError(str(args.hoi_sg.absolute().parent), [args.hoi_sg.name], what="hoi_sg Hub folder",
                                    hint="write it with: hoi-bench build hoi_sg --data-dir DIR --out FOLDER")
        dataset = "vcoco" if args.config.startswith("vcoco") else "hico"
        try:
            loaded = datasets.load_dataset(str(args.hoi_sg), args.config)
        except (ValueError, FileNotFoundError) as error:
            raise DataError(f"--hoi-sg {args.hoi_sg}: cannot load config {args.config!r}: "
                            f"{str(error).splitlines()[0]}") from None
        instances = instances_from_rows(loaded["train" if args.role == "train" else "test"], dataset,
                                        image_folder=args.image_folder)
        vocabulary = TrainingVocabulary.from_instances(
            instances_from_rows(loaded["train"], dataset, image_folder=args.image_folder))
    else:
        records = read_annotations(args.annotations, args.dataset)
        instances = instances_from_annotations(records, args.dataset, image_folder=args.image_folder)
        if args.train_annotations is not None:
            vocabulary = TrainingVocabulary.from_instances(instances_from_annotations(
                read_annotations(args.train_annotations, args.dataset), args.dataset, image_folder=args.image_folder))
    sampled = sample_episodes(instances, args.num_episodes, role=args.role, vocabulary=vocabulary, shots=args.shots,
                              max_overlap=args.max_overlap, margin=args.margin, seed=args.seed)
    if not sampled:
        raise DataError(f"0 episodes, nothing written: {why_no_episodes(instances, args.num_episodes, args.shots)}")
    files = write_episode_set(args.out, sampled)
    grouped = group_by_split(sampled)
    print(format_table(["split", "episodes", "concepts", "file"],
                       [[s, len(e), len({x.concept for x in e}), str(files[s])] for s, e in grouped.items()]))
    if args.hub is not None:
        out = build_hub(args.out, args.hub, splits=tuple(grouped), annotation_dir=str(args.out.absolute()),
                        image_dir=str(args.images.absolute()))
        print(f"wrote {out}; load with datasets.load_dataset({str(out)!r}, 'episodes')")
    return 0


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=Path(BENCHMARK),
                        help="built dataset folder, or a folder of bongard_hoi_<split>.json files "
                             "(directly or in bongard_hoi_release/); default: ./bongard_hoi")
    parser.add_argument("--images", type=Path, help="image root for episode files (default: <data>/images)")
    parser.add_argument("--split", required=True)
    parser.add_argument("--episode", type=int, required=True, help="0-based episode index in the split")
    parser.add_argument("--out", type=Path, required=True, help="PNG file to write")


def _run_show(args: argparse.Namespace) -> int:
    from bongard_hoi.sheet import load_episode_row, save_sheet
    from hoi_bench.images import check_png_path

    check_png_path(args.out)
    row = load_episode_row(args.data, args.split, args.episode, images=args.images)
    print(f"wrote {save_sheet(row, args.out)}")
    return 0


def _demo_build(context: DemoContext) -> None:
    from datasets import load_dataset

    from bongard_hoi.builder import build_hub
    from bongard_hoi.samples import write_sample
    from bongard_hoi.sheet import save_sheet

    base = context.out_dir / "work" / BENCHMARK
    native = write_sample(base / "native")
    context.say(f"wrote the synthetic native layout (nine episode files + HAKE-style image folders) to {native}")
    hub = build_hub(native, context.out_dir / BENCHMARK, synthetic=True)
    dataset = load_dataset(str(hub), "episodes", cache_dir=str(base / "cache"))
    sizes = ", ".join(f"{split} {len(rows)}" for split, rows in dataset.items())
    context.say(f"built {hub} and loaded it with load_dataset: {sizes} episodes")
    row = dataset["test_seen_obj_seen_act"][0]
    sheet = save_sheet(row, base / "sheet_test_seen_obj_seen_act_0.png")
    context.say(f"episode 0 of test_seen_obj_seen_act ({row['concept']}) drawn to {sheet}")
    context.artifacts["bongard_hoi dataset"] = hub
    context.artifacts["bongard_hoi episode sheet"] = sheet


def _demo_rule(context: DemoContext) -> None:
    import json

    from datasets import load_dataset

    from bongard_hoi.builder import build_hub
    from bongard_hoi.formats import TEST_SPLITS
    from bongard_hoi.predictions import evaluate_prediction_file
    from bongard_hoi.samples import write_sample
    from bongard_hoi.simple_rule import predict_split

    base = context.out_dir / "work" / BENCHMARK
    hub = context.out_dir / BENCHMARK
    if not (hub / "README.md").is_file():
        hub = build_hub(write_sample(base / "native"), hub, synthetic=True)
    records = []
    for split in TEST_SPLITS:
        rows = load_dataset(str(hub), "episodes", split=split, cache_dir=str(base / "cache"))
        records += predict_split(rows, split)
    predictions = base / "colour_rule_predictions.json"
    write_json_atomic(predictions, records)
    result = evaluate_prediction_file(predictions, hub)
    context.say("colour-histogram nearest-prototype rule (no training), scored by hoi-bench evaluate bongard_accuracy:")
    for split in TEST_SPLITS:
        context.result(BENCHMARK, split, "query accuracy (colour rule)", result["accuracy"][split])
    context.result(BENCHMARK, "test mean", "query accuracy (colour rule)", result["test_mean"])
    context.say(json.dumps({"test_mean": result["test_mean"], "episode_accuracy": result["episode_accuracy"]}))
    context.artifacts["bongard_hoi colour-rule predictions"] = predictions
