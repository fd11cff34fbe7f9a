"""Commands and demo steps this package adds to `hoi-bench` (entry point `hoi_bench.plugins`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.errors import DataError
from hoi_bench.files import resolve_inside, write_bytes_atomic, write_json_atomic
from hoi_bench.plugins import Command, DemoContext, DemoStep, Registry, deferred, non_negative_int, positive_int
from hoi_bench.report import all_undefined, format_table

BENCHMARK = "sportshhi"
TRAIN_HELP = "train and evaluate the HHICls pair-classifier baseline"
TRAIN_DEMO_NAME = "sportshhi: train the HHICls pair classifier a few steps, score it with hhi_map"


def register(registry: Registry) -> None:
    """Add this package's commands and demo steps to ``registry``."""
    registry.add_command(Command("build", "sportshhi", "build SportsHHI keyframes (config hhi) into a Hub "
                                 "folder", _configure_build, _run_build))
    registry.add_command(Command("stats", "sportshhi", "count keyframes and interactions per class of a "
                                 "SportsHHI annotation CSV", _configure_stats, _run_stats))
    registry.add_command(Command("evaluate", "hhi_map", "score a SportsHHI prediction CSV: HHI mAP and Recall@K",
                                 _configure_evaluate, _run_evaluate, aliases=("hhi",)))
    registry.add_command(Command("show", "sportshhi", "draw a SportsHHI keyframe with its human boxes and "
                                 "interactions", _configure_show, _run_show))
    registry.add_demo_step(DemoStep("sportshhi: build the synthetic sample and load it", 13, demo_build))
    registry.add_demo_step(DemoStep("sportshhi: score the proximity-prior rule (HHICls)", 33, demo_score))
    # training command and demo step (issue 7): the baseline module (numpy, torch) loads only when they run
    registry.add_command(Command("train", "sportshhi", TRAIN_HELP,
                                 deferred("sportshhi.baseline:configure_parser"),
                                 deferred("sportshhi.baseline:train")))
    registry.add_demo_step(DemoStep(TRAIN_DEMO_NAME, 53, deferred("sportshhi.baseline:demo")))


# --------------------------------------------------------------------------------------------- build


def _configure_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="release folder holding annotations/ and frames/ (see docs/sportshhi.md)")
    parser.add_argument("--out", type=Path, required=True,
                        help="Hub folder to write (then load_dataset(OUT, 'hhi'))")
    parser.add_argument("--force", action="store_true",
                        help="replace the configs of an existing hoi-bench folder instead of adding to them "
                             "(other files are kept)")
    parser.add_argument("--clip-len", type=non_negative_int, default=4, help="context frames per keyframe (0: none)")
    parser.add_argument("--frame-interval", type=positive_int, default=2, help="frames between context frames")
    parser.add_argument("--num-proc", type=positive_int, default=None, help="worker processes for the build")


def _run_build(args: argparse.Namespace) -> int:
    from sportshhi.builder import build_sportshhi_folder

    folder = build_sportshhi_folder(args.data_dir, args.out, num_proc=args.num_proc, clip_len=args.clip_len,
                                    frame_interval=args.frame_interval, force=args.force)
    print(f"wrote {folder}\nload with: datasets.load_dataset({str(folder)!r}, 'hhi')")
    return 0


# --------------------------------------------------------------------------------------------- stats


def _configure_stats(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--annotations", type=Path, required=True, help="13-column annotation CSV")
    parser.add_argument("--action-list", type=Path, required=True, help="sports_action_list.pbtxt")


def _run_stats(args: argparse.Namespace) -> int:
    import numpy as np

    from sportshhi import formats
    from sportshhi.evaluation import EVALUATED_LABEL_IDS

    actions = formats.read_action_list(args.action_list)
    annotations = formats.read_annotation_csv(args.annotations, actions)
    keys = annotations.keys
    print(f"{args.annotations}: {len(annotations):,} interactions on {len(set(keys)):,} keyframes of "
          f"{len(set(annotations.video_ids)):,} videos")
    labels, counts = np.unique(annotations.labels, return_counts=True)
    rows = [[int(label), actions.name_of(label), int(count), "yes" if label in EVALUATED_LABEL_IDS else "no"]
            for label, count in zip(labels, counts)]
    print(format_table(["label id", "name", "interactions", "evaluated"], rows))
    return 0


# --------------------------------------------------------------------------------------------- evaluate


def _configure_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--references", type=Path, required=True, help="13-column annotation CSV (GT)")
    parser.add_argument("--predictions", type=Path, required=True, help="12-column prediction CSV")
    parser.add_argument("--action-list", type=Path, required=True, help="sports_action_list.pbtxt")
    parser.add_argument("--iou-threshold", type=float, default=None,
                        help="IoU for subject and object (default 0.5, or 0.9 with --official)")
    parser.add_argument("--official", action="store_true",
                        help="reproduce the released hhi_eval (IoU 0.9, GT truncation, dropped classes)")
    parser.add_argument("--output", type=Path, default=None, help="write the result as JSON here")


def _run_evaluate(args: argparse.Namespace) -> int:
    import warnings

    from hoi_bench.input_warnings import InputWarning
    from sportshhi import formats
    from sportshhi.evaluation import score_tables

    actions = formats.read_action_list(args.action_list)
    # --official scores boxes a little outside [0, 1] as the released code does (counted in the warnings)
    annotations = formats.read_annotation_csv(args.references, actions, allow_outside_image=args.official)
    predictions = formats.read_prediction_csv(args.predictions, actions, allow_outside_image=args.official)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)  # listed below the tables
        result = score_tables(annotations, predictions, iou_threshold=args.iou_threshold, official=args.official)
    settings = result["settings"]
    if all_undefined([result["mAP"], *(result[f"recall@{k}"] for k in settings["ks"])]):
        found = f"{len(annotations)} GT interactions, none of an evaluated class" if len(annotations) else "no rows"
        raise DataError(f"{args.references}: nothing to score: no GT interaction of an evaluated class ({found}; "
                        "every metric would be n/a)")
    print(f"SportsHHI: {len(predictions):,} predictions against {len(annotations):,} GT interactions "
          f"({'official' if settings['official'] else 'paper'} counting, IoU >= {settings['iou_threshold']})")
    rows = [["mAP", result["mAP"]]] + [[f"recall@{k}", result[f"recall@{k}"]] for k in settings["ks"]]
    print(format_table(["metric", "value"], rows))
    per_class = [[int(label), actions.name_of(int(label)) if int(label) in actions else "?", ap]
                 for label, ap in result["ap_per_class"].items()]
    print()
    print(format_table(["label id", "name", "AP"], per_class))
    for note in result["warnings"]:
        print(f"warning: {note}")
    if args.output is not None:
        write_json_atomic(args.output, result, indent=2)
        print(f"\nwrote {args.output}")
    return 0


# --------------------------------------------------------------------------------------------- show


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, required=True, help="release folder (annotations/, frames/)")
    parser.add_argument("--keyframe", required=True, help="VIDEO_ID,T (keyframe index T = frame index // 5)")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument("--predictions", type=Path, default=None,
                        help="also draw the best predictions of this CSV")
    parser.add_argument("--top", type=non_negative_int, default=3, help="how many predictions to draw (default 3)")


def _run_show(args: argparse.Namespace) -> int:
    from hoi_bench.images import check_png_path

    check_png_path(args.out)
    path = render_keyframe(args.data_dir, args.keyframe, args.out, predictions_csv=args.predictions,
                           top=args.top)
    print(f"wrote {path}")
    return 0


def render_keyframe(data_dir: Path, keyframe: str, out: Path, *, predictions_csv: Path | None = None,
                    top: int = 3) -> Path:
    """Draw one keyframe of a release folder (GT people, interactions, optional predictions) into ``out``."""
    import numpy as np

    from hoi_bench.images import encode_png, load_rgb
    from sportshhi import formats
    from sportshhi.builder import check_release_files, read_split
    from sportshhi.drawing import draw_keyframe

    try:
        video_id, t = formats.parse_keyframe_key(keyframe)
    except ValueError as error:
        raise DataError(f"--keyframe: {error}") from None
    key = formats.keyframe_key(video_id, t)
    check_release_files(Path(data_dir))
    actions = formats.read_action_list(Path(data_dir) / formats.ACTION_LIST_FILE)
    records = {record.key: record for split in formats.RELEASE_SPLITS
               for record in read_split(Path(data_dir), split, actions)}
    if key not in records:
        raise DataError(f"{data_dir}: keyframe {key} has no annotation in either split "
                        f"(first annotated keyframes: {', '.join(sorted(records)[:3])})")
    record = records[key]
    boxes, _, pairs = record.humans()
    interactions = [(s, o, actions.name_of(item[2])) for (s, o), item in zip(pairs, record.interactions)]
    drawn = []
    if predictions_csv is not None:
        predictions = formats.read_prediction_csv(predictions_csv, actions)
        rows = np.flatnonzero(predictions.keys == key)
        rows = rows[np.argsort(-predictions.scores[rows], kind="stable")][:top]
        drawn = [(predictions.subject_boxes[i], predictions.object_boxes[i],
                  actions.name_of(int(predictions.labels[i])), float(predictions.scores[i])) for i in rows]
    frame_name = formats.frame_file(video_id, t * formats.FRAMES_PER_KEYFRAME)
    frame = resolve_inside(data_dir, frame_name, file=record.source, record=key, field="video_id")
    if not frame.is_file():
        raise DataError(f"{data_dir}: frame {frame_name} of keyframe {key} is missing")
    image = draw_keyframe(load_rgb(frame), boxes, interactions, drawn)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out, encode_png(image))
    return out


# --------------------------------------------------------------------------------------------- demo


def demo_build(context: DemoContext) -> None:
    """Write the synthetic release, build it into a Hub folder, load it (also streaming)."""
    import datasets

    from sportshhi.builder import build_sportshhi_folder
    from sportshhi.samples import write_sample

    out = context.out_dir / "work" / BENCHMARK
    sample = write_sample(out / "release")
    context.say(f"synthetic release: {sum(len(v) for v in sample.videos.values())} videos of "
                f"{5 * sample.keyframes_per_video} frames in the native layout at {sample.root}")
    folder = build_sportshhi_folder(sample.root, context.out_dir / BENCHMARK, synthetic=True)
    loaded = datasets.load_dataset(str(folder), "hhi", cache_dir=str(out / "cache"))
    for split, table in loaded.items():
        interactions = sum(len(i) for i in table["interactions"])
        context.say(f"load_dataset(hub, 'hhi')[{split!r}]: {table.num_rows} keyframes, "
                    f"{interactions} interactions")
    first = next(iter(datasets.load_dataset(str(folder), "hhi", streaming=True)["validation"]))
    context.say(f"streaming: first keyframe {first['keyframe_key']} with {len(first['context'])} context "
                f"frames {first['context_frame_indices']} and {len(first['human_boxes'])} people")
    context.artifacts["sportshhi release (synthetic)"] = sample.root
    context.artifacts["sportshhi Hub folder"] = folder


def demo_score(context: DemoContext) -> None:
    """Score the proximity-prior rule on the sample's validation split and draw one keyframe."""
    from sportshhi import formats
    from sportshhi.evaluation import score_tables
    from sportshhi.rule import class_priors, proximity_predictions
    from sportshhi.samples import write_sample

    out = context.out_dir / "work" / BENCHMARK
    root = out / "release"
    if not (root / formats.ACTION_LIST_FILE).is_file():
        write_sample(root)
    actions = formats.read_action_list(root / formats.ACTION_LIST_FILE)
    train = formats.read_annotation_csv(root / formats.annotation_file("train"), actions)
    validation = formats.read_annotation_csv(root / formats.annotation_file("validation"), actions)
    humans = formats.read_proposals(root / formats.gt_proposal_file("validation"))
    predictions_csv = out / "proximity_rule_val.csv"
    predictions = proximity_predictions(humans, class_priors(train))
    written = formats.write_prediction_csv(predictions_csv, predictions)
    context.say(f"proximity-prior rule: {written} predictions (every ordered pair of GT people x every "
                f"training class) written to {predictions_csv.name}")
    result = score_tables(validation, formats.read_prediction_csv(predictions_csv, actions))
    metrics = ["mAP"] + [f"recall@{k}" for k in result["settings"]["ks"]]
    context.say("  ".join(f"{m} {result[m]:.4f}" for m in metrics) + " (IoU >= 0.5, paper counting)")
    for metric in metrics:
        context.result(BENCHMARK, "validation", f"{metric} (proximity rule)", result[metric])
    official = score_tables(validation, formats.read_prediction_csv(predictions_csv, actions), official=True)
    context.result(BENCHMARK, "validation", "mAP official@0.9 (proximity rule)", official["mAP"])
    result_json = out / "proximity_rule_val.json"
    write_json_atomic(result_json, result, indent=2)
    first = formats.keyframe_key(str(validation.video_ids[0]), int(validation.keyframes[0]))
    picture = render_keyframe(root, first, out / "keyframe.png", predictions_csv=predictions_csv, top=2)
    context.suggest("hoi-bench", "evaluate", "hhi_map", "--references", root / formats.annotation_file("validation"),
                    "--predictions", predictions_csv, "--action-list", root / formats.ACTION_LIST_FILE, "--official",
                    "--output", out / "proximity_rule_val_official.json")
    context.artifacts["sportshhi predictions (CSV)"] = predictions_csv
    context.artifacts["sportshhi scores (JSON)"] = result_json
    context.artifacts["sportshhi keyframe drawing"] = picture
