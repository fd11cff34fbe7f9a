"""Commands and demo steps for the HOI mAP metrics (``hoi-bench evaluate hoi_map|vcoco_map``).

Kept apart from ``cli.py`` (datasets, splits, stats) so the metric commands can evolve with ``evaluation.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.plugins import Command, DemoContext, DemoStep, Registry, add_num_proc_argument
from hoi_bench.report import format_table
from hoi_sg_dataset import role_ap_cli

BENCHMARK = "hoi_sg"
HOI_MAP_KEYS = ("mAP", "mAP_rare", "mAP_non_rare", "mean_max_recall")
VCOCO_MAP_KEYS = ("mAP_all", "mAP_thesis", "mAP_thesis_present")


def register(registry: Registry) -> None:
    """Add the HOI metric commands and demo steps to ``registry``."""
    registry.add_command(
        Command(
            "evaluate",
            "hoi_map",
            "HICO-DET(-SG) HOI mAP of a prediction file",
            _configure_hoi_map,
            _run_hoi_map,
        )
    )
    registry.add_command(
        Command(
            "evaluate",
            "vcoco_map",
            "V-COCO(-SG) role mAP of a prediction file",
            _configure_vcoco_map,
            _run_vcoco_map,
        )
    )
    registry.add_command(
        Command(
            "convert",
            "hoi-predictions",
            "rewrite PPDM/QPIC HOI predictions as columnar NPZ (fast to read) or JSON",
            _configure_convert,
            _run_convert,
        )
    )
    registry.add_demo_step(DemoStep("hoi_sg: score a simple rule with hoi_map and vcoco_map", 30, run_demo))
    role_ap_cli.register(registry)


def _common_arguments(parser: argparse.ArgumentParser, predictions_note: str = "") -> None:
    parser.add_argument("--references", type=Path, required=True, help="GT annotation file (PPDM/QPIC JSON)")
    parser.add_argument(
        "--predictions",
        type=Path,
        required=True,
        help="PPDM/QPIC prediction file: JSON list of {file_name, predictions, "
        "hoi_prediction} (.json or .json.gz), or its columnar .npz (hoi-bench convert hoi-predictions)"
        + predictions_note,
    )
    parser.add_argument(
        "--top-k",
        type=_top_k,
        default="default",
        metavar="N|none",
        help="per-image cut by score (default: 100 for qpic, none for ho-rcnn)",
    )
    parser.add_argument("--output", type=Path, help="write the result as JSON here")
    parser.add_argument("--per-class", action="store_true", help="also print the AP of every class")
    add_num_proc_argument(parser)


def _workers(args: argparse.Namespace) -> int:
    from hoi_bench.forked import worker_count

    return worker_count(args.num_proc)


def _top_k(text: str) -> int | str | None:
    if text.lower() in ("none", "default"):
        return None if text.lower() == "none" else "default"
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("top-k must be a positive integer or 'none'")
    return value


def _configure_hoi_map(parser: argparse.ArgumentParser) -> None:
    _common_arguments(
        parser,
        "; with --protocol ho-rcnn also the official MATLAB tool's detections: a folder of "
        "detections_XX.mat or one detections.mat (needs scipy: pip install 'hoi-bench[matlab]')",
    )
    parser.add_argument("--train-references", type=Path, help="training annotation file, for rare / non-rare")
    parser.add_argument(
        "--protocol",
        choices=("qpic", "ho-rcnn"),
        default="qpic",
        help="qpic: QPIC hico_eval.py (default); ho-rcnn: official MATLAB rules",
    )
    parser.add_argument("--known-object", action="store_true", help="ho-rcnn known-object mode")


def _configure_vcoco_map(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)


def _configure_convert(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", type=Path, required=True,
                        help="HOI predictions to read: JSON (.json, .json.gz) or columnar .npz")
    parser.add_argument("--out", type=Path, required=True,
                        help="file to write: .npz for the columnar form, anything else for the JSON list")
    parser.add_argument("--dataset", choices=("hico", "vcoco"),
                        help="verb ids and 'no object' rule (default: from the first file name)")
    add_num_proc_argument(parser)


def _run_convert(args: argparse.Namespace) -> int:
    from hoi_sg_dataset.columnar import read_prediction_npz, write_prediction_npz
    from hoi_sg_dataset.formats import write_json_atomic
    from hoi_sg_dataset.predictions import prediction_json, read_prediction_set

    dataset = args.dataset or _dataset_of(args.predictions)
    if args.predictions.suffix == ".npz":
        names, predictions = read_prediction_npz(args.predictions, dataset)
    else:
        names, predictions = read_prediction_set(args.predictions, dataset, workers=_workers(args))
    if args.out.suffix == ".npz":
        write_prediction_npz(args.out, names, predictions)
    else:
        write_json_atomic(args.out, prediction_json(predictions, names))
    print(f"wrote {args.out} ({len(names)} images, {len(predictions.hois)} HOIs)")
    return 0


def _dataset_of(path: Path) -> str:
    """``vcoco`` when the first file name in ``path`` starts with ``COCO_``, else ``hico``."""
    import re

    from hoi_bench.files import read_bytes

    if path.suffix == ".npz":
        from hoi_bench.archives import read_npz_members

        names = read_npz_members(path, ["file_names"], what="HOI prediction NPZ").get("file_names")
        first = str(names.reshape(-1)[0]) if names is not None and names.size else ""
    else:
        match = re.search(rb'"file_name"\s*:\s*"([^"]*)"', read_bytes(path, "prediction file")[:100_000])
        first = match.group(1).decode() if match else ""
    return "vcoco" if first.startswith("COCO_") else "hico"


def _summary_rows(result: dict, keys: tuple[str, ...]) -> list[list]:
    return [[key, result[key], result.get("reasons", {}).get(key, "")] for key in keys]


def _warning_lines(result: dict) -> str:
    """The result's counted input warnings, one ``warning:`` line each (empty when there are none)."""
    return "".join(f"\nwarning: {note}" for note in result.get("warnings", []))


def _quietly(compute, *args, **kwargs) -> dict:
    """``compute(...)`` with its input warnings left to the table (they are in the result's ``warnings``)."""
    import warnings

    from hoi_bench.input_warnings import InputWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        return compute(*args, **kwargs)


def hoi_map_table(result: dict, per_class: bool = False) -> str:
    """The terminal report of a ``hoi_map`` result."""
    from hoi_sg_dataset.vocabulary import coco_objects, hico_verbs

    text = format_table(["metric", "value", "note"], _summary_rows(result, HOI_MAP_KEYS))
    text += f"\n({result['num_classes']} classes, protocol {result['protocol']})"
    if per_class:
        objects, verbs = coco_objects(), hico_verbs()
        rows = []
        for key, ap in result["ap_per_triplet"].items():
            subject, obj, verb = (int(v) for v in key.split("_"))
            name = f"{_name(objects, subject)} {_name(verbs, verb)} {_name(objects, obj)}"
            rows.append([key, name, ap])
        text += "\n\n" + format_table(["triplet", "name", "AP"], rows)
    return text + _warning_lines(result)


def vcoco_map_table(result: dict, per_class: bool = False) -> str:
    """The terminal report of a ``vcoco_map`` result."""
    from hoi_sg_dataset.vocabulary import vcoco_verbs

    text = format_table(["metric", "value", "note"], _summary_rows(result, VCOCO_MAP_KEYS))
    if per_class:
        verbs = vcoco_verbs()
        rows = [[key, _name(verbs, int(key)), ap] for key, ap in result["ap_per_verb"].items()]
        text += "\n\n" + format_table(["verb", "name", "AP"], rows)
    return text + _warning_lines(result)


def _name(vocabulary, raw_id: int) -> str:
    return vocabulary.name_of(raw_id) if raw_id in vocabulary else str(raw_id)


def _refuse_nothing_scored(result: dict, keys: tuple[str, ...], references: Path) -> None:
    """An all-undefined result (GT without a single HOI) is an error saying why, not a table of n/a."""
    from hoi_bench.errors import DataError
    from hoi_bench.report import all_undefined

    if all_undefined(result[key] for key in keys):
        why = result.get("reasons", {}).get(keys[0], "no value could be computed")
        raise DataError(f"{references}: nothing to score: {why} (every metric would be n/a; expected a GT file "
                        "with annotated HOIs)")


def _write_output(path: Path | None, result: dict) -> None:
    if path is not None:
        from hoi_sg_dataset.formats import write_json_atomic

        write_json_atomic(path, result)
        print(f"\nwrote {path}")


def _run_hoi_map(args: argparse.Namespace) -> int:
    from hoi_sg_dataset.predictions import hoi_map_files

    result = _quietly(
        hoi_map_files,
        args.references,
        args.predictions,
        train_references=args.train_references,
        protocol=args.protocol,
        top_k=args.top_k,
        known_object=args.known_object,
        workers=_workers(args),
    )
    _refuse_nothing_scored(result, ("mAP", "mean_max_recall"), args.references)
    print(hoi_map_table(result, args.per_class))
    _write_output(args.output, result)
    return 0


def _run_vcoco_map(args: argparse.Namespace) -> int:
    from hoi_sg_dataset.predictions import vcoco_map_files

    result = _quietly(vcoco_map_files, args.references, args.predictions, top_k=args.top_k, workers=_workers(args))
    _refuse_nothing_scored(result, ("mAP_all",), args.references)
    print(vcoco_map_table(result, args.per_class))
    _write_output(args.output, result)
    return 0


def run_demo(context: DemoContext) -> None:
    """Make split 1 of the synthetic sample, predict with the verb-prior rule, score it as the CLI does."""
    import evaluate

    from hoi_bench import metric_path
    from hoi_sg_dataset.formats import write_annotations, write_json_atomic
    from hoi_sg_dataset.predictions import hoi_map_files, load_sets, verb_prior_predictions
    from hoi_sg_dataset.samples import sample_plan
    from hoi_sg_dataset.splits import make_split

    base = context.out_dir / "work" / BENCHMARK / "metrics"
    plan = sample_plan()
    for dataset, trainval, test, seed in (
        ("hico", plan.hico_trainval, plan.hico_test, 368),
        ("vcoco", plan.vcoco_trainval, plan.vcoco_test, 564),
    ):
        split = make_split(trainval, test, dataset, seed=seed)
        train_path = write_annotations(base / f"trainval_{dataset}_sg1.json", split.trainval, dataset)
        test_path = write_annotations(base / f"test_{dataset}_sg1.json", split.test, dataset)
        pred_path = write_json_atomic(
            base / f"predictions_{dataset}_sg1.json", verb_prior_predictions(split.trainval, split.test)
        )
        held_out = len(split.test_combinations)
        total = held_out + len(split.train_combinations)
        context.say(
            f"{dataset} split sg1 (seed {seed}): {len(split.test)} test images, {held_out} of "
            f"{total} combinations held out; verb-prior predictions in {pred_path.name}"
        )
        if dataset == "hico":
            context.suggest("hoi-bench", "evaluate", "hoi_map", "--references", test_path, "--predictions", pred_path,
                            "--train-references", train_path, "--per-class", "--output", base / "hoi_map.json")
            for protocol in ("qpic", "ho-rcnn"):
                result = hoi_map_files(test_path, pred_path, train_references=train_path, protocol=protocol)
                if protocol == "qpic":
                    with_gt = result["num_classes"]
                else:
                    context.say(f"(ho-rcnn averages all 600 HOI classes, so the {600 - with_gt} without test GT add "
                                f"AP 0 each; qpic averages only the {with_gt} triplets the test GT has)")
                context.say(
                    f"hoi-bench evaluate hoi_map --protocol {protocol} --references {test_path.name} "
                    f"--predictions {pred_path.name} --train-references {train_path.name}"
                )
                for line in hoi_map_table(result).splitlines():
                    context.say(f"  {line}")
                context.result(f"{BENCHMARK}/hico_split1", "test", f"hoi_map mAP, {protocol} (verb-prior rule)", result["mAP"])
        else:
            gt, pred, _ = load_sets(test_path, pred_path, "vcoco")
            ids = list(range(gt.num_images))
            result = evaluate.load(metric_path("vcoco_map")).compute(
                predictions=ids, references=ids, prediction_set=pred, reference_set=gt
            )
            context.say(
                f"evaluate.load(metric_path('vcoco_map')) on {test_path.name} and {pred_path.name} "
                f"(same numbers as hoi-bench evaluate vcoco_map)"
            )
            for line in vcoco_map_table(result).splitlines():
                context.say(f"  {line}")
            context.result(f"{BENCHMARK}/vcoco_split1", "test", "vcoco_map mAP_all (verb-prior rule)", result["mAP_all"])
            context.result(f"{BENCHMARK}/vcoco_split1", "test", "vcoco_map mAP_thesis (verb-prior rule)", result["mAP_thesis"])
    context.artifacts["hoi_sg metric inputs (GT + rule predictions)"] = base
