"""Commands and demo steps this package adds to `hoi-bench` (entry point `hoi_bench.plugins`).

``build haystack``, ``stats haystack``, ``evaluate p_auc`` (P-AUC / PDD / PDO), ``evaluate sg_recall``
(R@k / mR@k / ngR@k), ``convert recall-predictions`` (JSON <-> columnar NPZ), ``show haystack`` (per-predicate
chart); demo steps 11 (build + load the sample) and 31 (score a frequency prior on it). Everything beyond argparse
is imported inside the command that needs it, so ``hoi-bench evaluate ... --help`` starts fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.plugins import Command, DemoContext, DemoStep, Registry, add_num_proc_argument, deferred, positive_int
from hoi_bench.report import format_table

BENCHMARK = "haystack"
TRAIN_HELP = "train and evaluate the PredCls relation baselines (accelerate)"
TRAIN_DEMO_NAME = "haystack: train the PredCls classifier a few steps, score with p_auc/pdd/pdo/sg_recall"


def register(registry: Registry) -> None:
    """Add this package's commands and demo steps to ``registry``."""
    registry.add_command(Command("build", BENCHMARK, "build PSG / Haystack native files into a Hub dataset folder",
                                 _configure_build, _run_build))
    registry.add_command(Command("stats", BENCHMARK, "count images, relations and negatives of a PSG/Haystack file",
                                 _configure_stats, _run_stats))
    registry.add_command(Command("evaluate", "p_auc", "P-AUC / PDD / PDO of a Haystack NPY output (the p_auc, "
                                 "pdd and pdo metrics at once)", _configure_evaluate, _run_evaluate,
                                 aliases=("pdd", "pdo", BENCHMARK)))
    registry.add_command(Command("evaluate", "sg_recall", "R@k / mR@k / ngR@k of scene-graph predictions (OpenPSG)",
                                 _configure_recall, _run_recall))
    registry.add_command(Command("convert", "recall-predictions",
                                 "rewrite scene-graph recall predictions as columnar NPZ (fast to read) or JSON",
                                 _configure_convert, _run_convert))
    registry.add_command(Command("show", BENCHMARK, "draw P-AUC / PDD / PDO per predicate from a metrics JSON",
                                 _configure_show, _run_show))
    registry.add_demo_step(DemoStep("haystack: build the PSG + Haystack sample and load it", 11, demo_build))
    registry.add_demo_step(DemoStep("haystack: score a frequency prior (P-AUC / PDD / PDO, R@k)", 31, demo_score))
    # training command and demo step (issue 7): the baseline module (numpy, torch) loads only when they run
    registry.add_command(Command("train", "haystack", TRAIN_HELP,
                                 deferred("haystack_dataset.baseline:configure_parser"),
                                 deferred("haystack_dataset.baseline:train")))
    registry.add_demo_step(DemoStep(TRAIN_DEMO_NAME, 51, deferred("haystack_dataset.baseline:demo")))


# ------------------------------------------------------------------------------------------------------ build


def _configure_build(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="folder with psg/psg.json, haystack/annotation_v1.json and coco/ (see docs/haystack.md)")
    parser.add_argument("--out", type=Path, required=True, help="Hub dataset folder to write (configs are merged in)")
    parser.add_argument("--force", action="store_true",
                        help="replace the configs of an existing hoi-bench folder instead of adding to them "
                             "(other files are kept)")
    parser.add_argument("--config", action="append", choices=["psg", "haystack"],
                        help="config to build (repeatable; default: both)")
    parser.add_argument("--psg-file", help="psg.json relative to --data-dir (default psg/psg.json)")
    parser.add_argument("--haystack-file", help="Haystack annotation file relative to --data-dir "
                                                "(default haystack/annotation_v1.json)")
    parser.add_argument("--image-root", help="folder under --data-dir that file_name / pan_seg_file_name are "
                                             "relative to (default coco)")
    parser.add_argument("--num-proc", type=positive_int, default=None, help="worker processes for row generation")


def _run_build(args: argparse.Namespace) -> int:
    from haystack_dataset.builder import CONFIG_NAMES, build

    configs = args.config or list(CONFIG_NAMES)
    files = {"psg": args.psg_file, "haystack": args.haystack_file}
    out = build(args.data_dir, args.out, configs, annotation_files={k: v for k, v in files.items() if v},
                image_root=args.image_root, num_proc=args.num_proc, force=args.force)
    print(f"wrote {out} (configs: {', '.join(configs)})")
    print(f'load with: load_dataset("{out}", "{configs[-1]}")')
    return 0


# ------------------------------------------------------------------------------------------------------ stats


def _configure_stats(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--annotations", type=Path, required=True, help="psg.json or a Haystack annotation file")


def _run_stats(args: argparse.Namespace) -> int:
    import numpy as np

    from haystack_dataset.formats import NO_PREDICATE, read_annotation

    annotation = read_annotation(args.annotations, records=False)
    n = len(annotation.predicate_classes)
    positives = np.zeros(n, dtype=int)
    negatives = np.zeros(n, dtype=int)
    placeholders = 0
    for image in annotation.images:
        positives += np.bincount(image.relations[image.relations[:, 2] >= 0, 2], minlength=n)
        negatives += np.bincount(image.neg_relations[image.neg_relations[:, 2] >= 0, 2], minlength=n)
        placeholders += int((image.relations[:, 2] == NO_PREDICATE).sum()
                            + (image.neg_relations[:, 2] == NO_PREDICATE).sum())
    print(format_table(["what", "count"], [
        ["images", len(annotation.images)], ["images without relations",
                                             sum(len(i.relations) == 0 for i in annotation.images)],
        ["test_image_ids", len(annotation.test_image_ids)], ["segments", sum(len(i.boxes) for i in annotation.images)],
        ["positive relations", int(positives.sum())], ["negative relations", int(negatives.sum())],
        ["entries with predicate -1", placeholders]]))
    print()
    rows = [[name, int(positives[p]), int(negatives[p])] for p, name in enumerate(annotation.predicate_classes)
            if positives[p] or negatives[p]]
    print(format_table(["predicate", "positives", "negatives"], rows))
    return 0


# --------------------------------------------------------------------------------------------------- evaluate


def _configure_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--annotations", type=Path, required=True, help="Haystack annotation JSON")
    parser.add_argument("--predictions", type=Path, required=True,
                        help="NPY, rows [image_id, subject, object, n predicate scores] (no no-relation column); "
                             "read block by block")
    parser.add_argument("--rank-mode", choices=["paper", "official"], default="paper",
                        help="paper: rank among all n predicates (default); official: as calc_metrics.py "
                             "(first n-1 columns)")
    parser.add_argument("--min-positives", type=int, default=4, help="report predicates with at least N positives")
    parser.add_argument("--output", type=Path, help="write the report as JSON here")


def _run_evaluate(args: argparse.Namespace) -> int:
    import warnings

    from haystack_dataset.evaluation import HaystackInputWarning, haystack_scores
    from haystack_dataset.formats import read_annotation
    from haystack_dataset.predictions import NpyRows
    from hoi_bench.files import write_json_atomic

    annotation = read_annotation(args.annotations, require_negatives=True, records=False)
    rows = NpyRows(args.predictions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HaystackInputWarning)  # the report lists them; printed below
        report = haystack_scores(annotation, rows, rank_mode=args.rank_mode, min_positives=args.min_positives,
                                 file=str(args.predictions))
    if not report["per_predicate"]:
        from hoi_bench.errors import DataError

        raise DataError(f"{args.annotations}: nothing to score: no predicate has {args.min_positives} or more "
                        f"positive relations ({len(annotation.images)} images; every metric would be n/a)")
    print(haystack_table(report))
    if args.output:
        write_json_atomic(args.output, report)
        print(f"\nwrote {args.output}")
    return 0


def haystack_table(report: dict) -> str:
    """The terminal table of a Haystack report: one line per reported predicate, then the mean and any warnings."""
    rows = [[name, v["p_auc"], v["pdd"], v["pdo"], v["positives"], v["negatives"]]
            for name, v in report["per_predicate"].items()]
    mean = report["mean"]
    rows.append(["mean", mean["p_auc"], mean["pdd"], mean["pdo"], "", ""])
    text = format_table(["predicate", "P-AUC", "PDD", "PDO", "positives", "negatives"], rows)
    text += f"\n\nrank mode: {report['rank_mode']}; predicates with >= {report['min_positives']} positives; " \
            f"P-AUC higher is better, PDD/PDO lower is better"
    for note in report.get("warnings", []):
        text += f"\nwarning: {note}"
    return text


def _configure_recall(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--annotations", type=Path, required=True, help="psg.json (or a Haystack file)")
    parser.add_argument("--predictions", type=Path, required=True,
                        help="recall predictions: JSON (.json, .json.gz) or the columnar .npz (see docs/haystack.md)")
    parser.add_argument("--output", type=Path, help="write the result as JSON here")
    add_num_proc_argument(parser)


def _run_recall(args: argparse.Namespace) -> int:
    import warnings

    from hoi_bench.input_warnings import InputWarning
    from haystack_dataset.formats import read_annotation
    from haystack_dataset.predictions import read_recall_predictions
    from haystack_dataset.recall import psg_recall
    from hoi_bench.files import write_json_atomic
    from hoi_bench.forked import worker_count

    annotation = read_annotation(args.annotations, records=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)  # listed below the table
        result = psg_recall(annotation, read_recall_predictions(args.predictions, workers=worker_count(args.num_proc)))
    print(format_table(["metric", "value"], [[k, v] for k, v in result.items() if k != "warnings"])
          + "".join(f"\nwarning: {note}" for note in result["warnings"]))
    if args.output:  # an undefined recall (no image evaluated) is null, not a bare NaN token
        write_json_atomic(args.output, {k: None if v != v else v for k, v in result.items()})
        print(f"\nwrote {args.output}")
    return 0


# ---------------------------------------------------------------------------------------------------- convert


def _configure_convert(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", type=Path, required=True,
                        help="recall predictions to read: JSON (.json, .json.gz) or columnar .npz")
    parser.add_argument("--out", type=Path, required=True,
                        help="file to write: .npz for the columnar form, anything else for the JSON list")
    add_num_proc_argument(parser)


def _run_convert(args: argparse.Namespace) -> int:
    from haystack_dataset.predictions import read_recall_predictions, write_recall_predictions
    from hoi_bench.forked import worker_count

    predictions = read_recall_predictions(args.predictions, workers=worker_count(args.num_proc))
    out = write_recall_predictions(args.out, predictions)
    pairs = sum(len(p.pairs) for p in predictions)
    print(f"wrote {out} ({len(predictions)} images, {pairs} scored pairs)")
    return 0


# ------------------------------------------------------------------------------------------------------- show


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics", type=Path, required=True, help="JSON written by `hoi-bench evaluate p_auc`")
    parser.add_argument("--out", type=Path, required=True,
                        help="chart to write; the extension picks the format (.png, .pdf, .svg, ...)")


def _run_show(args: argparse.Namespace) -> int:
    from haystack_dataset.plots import check_chart_path, plot_predicate_metrics
    from hoi_bench.files import read_json

    check_chart_path(args.out)
    report = read_json(args.metrics, what="metrics JSON")
    print(f"wrote {plot_predicate_metrics(report, args.out, file=args.metrics)}")
    return 0


# ------------------------------------------------------------------------------------------------------- demo


def _hub_folder(context: DemoContext) -> Path:
    return context.out_dir / BENCHMARK


def demo_build(context: DemoContext) -> None:
    """Write the synthetic native layout, build both configs into a Hub folder and load them back."""
    import tempfile

    from datasets import load_dataset

    from haystack_dataset.builder import build
    from haystack_dataset.samples import write_sample

    base = context.out_dir / "work" / BENCHMARK
    layout = write_sample(base / "native")
    context.say(f"wrote the synthetic PSG + Haystack layout to {layout.root}")
    out = build(layout.root, _hub_folder(context), synthetic=True)
    with tempfile.TemporaryDirectory() as cache:
        psg = load_dataset(str(out), "psg", cache_dir=cache)
        haystack = load_dataset(str(out), "haystack", split="test", cache_dir=cache)
        negatives = sum(len(r) for r in haystack["negative_relations"])
        positives = sum(len(r) for r in haystack["relations"])
    context.say(f'load_dataset("{out}", "psg"): train {len(psg["train"])}, test {len(psg["test"])} images')
    context.say(f'load_dataset("{out}", "haystack", split="test"): {len(haystack)} images, {positives} positive '
                f"and {negatives} negative relations")
    context.artifacts["haystack Hub folder"] = out
    context.artifacts["haystack native sample"] = layout.root


def demo_score(context: DemoContext) -> None:
    """Fit a frequency prior on the PSG train split, then score it with P-AUC / PDD / PDO and R@k / mR@k."""
    import tempfile
    import warnings

    from datasets import load_dataset

    from haystack_dataset.evaluation import HaystackInputWarning, haystack_scores
    from haystack_dataset.formats import psg_classes, read_annotation
    from haystack_dataset.frequency_prior import FrequencyPrior
    from haystack_dataset.plots import plot_predicate_metrics
    from haystack_dataset.predictions import (
        read_haystack_npy,
        read_recall_predictions,
        write_haystack_npy,
        write_recall_predictions,
    )
    from haystack_dataset.recall import psg_recall
    from hoi_bench.files import write_json_atomic

    base = context.out_dir / "work" / BENCHMARK
    if not (_hub_folder(context) / "README.md").is_file():
        demo_build(context)
    classes = psg_classes()
    with tempfile.TemporaryDirectory() as cache:
        psg = load_dataset(str(_hub_folder(context)), "psg", cache_dir=cache)
        haystack = load_dataset(str(_hub_folder(context)), "haystack", split="test", cache_dir=cache)
        graph = ["image_id", "segments", "relations"]  # skip decoding images: the prior needs only the graphs
        prior = FrequencyPrior.fit(psg["train"].select_columns(graph),
                                   len(classes["thing_classes"]) + len(classes["stuff_classes"]),
                                   len(classes["predicate_classes"]))
        npy = write_haystack_npy(base / "frequency_prior_haystack.npy",
                                 prior.haystack_rows(haystack.select_columns(graph)))
        recall_json = write_recall_predictions(base / "frequency_prior_psg_test.json",
                                               prior.recall_predictions(psg["test"].select_columns(graph)))
    context.say(f"frequency prior fitted on {len(psg['train'])} PSG train images; outputs: {npy.name}, "
                f"{recall_json.name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HaystackInputWarning)  # listed at the end of the table below
        report = haystack_scores(read_annotation(base / "native" / "haystack" / "annotation_v1.json"),
                                 read_haystack_npy(npy), file=str(npy))
    metrics = write_json_atomic(base / "frequency_prior_haystack_metrics.json", report)
    chart = plot_predicate_metrics(report, base / "frequency_prior_haystack_metrics.png")
    for line in haystack_table(report).splitlines():
        context.say(line)
    recall = psg_recall(read_annotation(base / "native" / "psg" / "psg.json"), read_recall_predictions(recall_json))
    context.say(", ".join(f"{k} {v:.3f}" for k, v in recall.items() if k not in ("images", "warnings"))
                + f" over {recall['images']} PSG test images (PredCls)")
    for name in ("p_auc", "pdd", "pdo"):
        context.result(BENCHMARK, "test", f"{name.upper().replace('_', '-')} (freq. prior)", report["mean"][name])
    for name in ("R@20", "mR@20", "R@50", "mR@50", "R@100", "mR@100"):
        context.result("psg", "test", f"{name} PredCls (freq. prior)", recall[name])
    context.suggest("hoi-bench", "evaluate", "p_auc", "--annotations", base / "native" / "haystack" /
                    "annotation_v1.json", "--predictions", npy, "--rank-mode", "official", "--output",
                    base / "frequency_prior_haystack_official.json")
    context.artifacts["haystack metrics"] = metrics
    context.artifacts["haystack chart"] = chart
