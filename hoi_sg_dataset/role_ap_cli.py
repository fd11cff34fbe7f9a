"""Commands for V-COCO's official role AP: ``hoi-bench evaluate vcoco_role_map`` and
``hoi-bench convert vcoco-detections`` (QPIC-style predictions to the official detection list)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hoi_bench.errors import DataError
from hoi_bench.plugins import Command, Registry
from hoi_bench.report import all_undefined, format_table

MEAN_KEYS = (
    "mean_role_ap_scenario_1",
    "mean_role_ap_scenario_2",
    "mean_role_ap_scenario_1_excl_point",
    "mean_role_ap_scenario_2_excl_point",
    "mean_agent_ap",
)
_NOTES = {
    "mean_role_ap_scenario_1": "official print (25 roles)",
    "mean_role_ap_scenario_2": "official print (25 roles)",
    "mean_role_ap_scenario_1_excl_point": "24 roles, the number papers report",
    "mean_role_ap_scenario_2_excl_point": "24 roles",
    "mean_agent_ap": "sum / 26",
}


def register(registry: Registry) -> None:
    """Add ``evaluate vcoco_role_map`` and ``convert vcoco-detections`` to ``registry``."""
    registry.add_command(
        Command(
            "evaluate",
            "vcoco_role_map",
            "V-COCO(-SG) official role AP (vsrl_eval.py scenarios 1 and 2) and agent AP",
            _configure_evaluate,
            _run_evaluate,
        )
    )
    registry.add_command(
        Command(
            "convert",
            "vcoco-detections",
            "QPIC-style V-COCO predictions to the detection list of the official evaluator",
            _configure_convert,
            _run_convert,
        )
    )


def _configure_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--vsrl",
        type=Path,
        nargs="+",
        required=True,
        help="VSRL JSON of the split (vcoco_test.json); several for V-COCO-SG",
    )
    parser.add_argument(
        "--instances", type=Path, required=True, help="COCO instances JSON (instances_vcoco_all_2014.json)"
    )
    parser.add_argument(
        "--image-ids",
        type=Path,
        required=True,
        help="image-id file of the split (vcoco_test.ids; the SG test ids for V-COCO-SG)",
    )
    parser.add_argument(
        "--detections",
        type=Path,
        required=True,
        help="detection list JSON (official per-detection structure, null = NaN)",
    )
    parser.add_argument("--output", type=Path, help="write the result as JSON here")
    parser.add_argument("--per-class", action="store_true", help="also print every action-role and action")


def _configure_convert(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--predictions",
        type=Path,
        required=True,
        help="QPIC-style V-COCO prediction file (the vcoco_map input)",
    )
    parser.add_argument("--references", type=Path, required=True, help="V-COCO(-SG) GT file in QPIC format")
    parser.add_argument("--out", type=Path, required=True, help="detection list JSON to write")


def vcoco_role_map_table(result: dict, per_class: bool = False) -> str:
    """The terminal report of a ``vcoco_role_map`` result (``n/a``: undefined, see the metric card)."""
    from hoi_sg_dataset.role_ap import ACTION_ROLE_NAMES, ACTIONS

    text = format_table(["metric", "value", "note"], [[key, result[key], _NOTES[key]] for key in MEAN_KEYS])
    if per_class:
        rows = [
            [name, result["role_ap_scenario_1"][name], result["role_ap_scenario_2"][name]]
            for name in ACTION_ROLE_NAMES
        ]
        text += "\n\n" + format_table(["action-role", "AP scenario 1", "AP scenario 2"], rows)
        text += "\n\n" + format_table(["action", "agent AP"], [[a, result["agent_ap"][a]] for a in ACTIONS])
    return text + "".join(f"\nwarning: {note}" for note in result.get("warnings", []))


def _run_evaluate(args: argparse.Namespace) -> int:
    import warnings

    from hoi_bench.input_warnings import InputWarning
    from hoi_sg_dataset.vcoco_role_files import vcoco_role_map_files

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)  # listed below the table
        result = vcoco_role_map_files(args.vsrl, args.instances, args.image_ids, args.detections)
    if all_undefined(result[key] for key in MEAN_KEYS):
        raise DataError(f"nothing to score: {_why_undefined(args)} (every AP would be n/a)")
    print(vcoco_role_map_table(result, args.per_class))
    if args.output is not None:
        from hoi_bench.files import write_json_atomic

        write_json_atomic(args.output, result)
        print(f"\nwrote {args.output}")
    return 0


def _why_undefined(args: argparse.Namespace) -> str:
    """Why every AP is undefined: no detection of an evaluated image, or no GT action to score against (the
    detection file is read again: only on this failure)."""
    from hoi_sg_dataset.vcoco_role_files import read_detections, read_image_ids

    ids = read_image_ids(args.image_ids)
    if len(read_detections(args.detections, ids).image_index) == 0:
        return f"{args.detections} holds no detection of the {len(ids)} evaluated images of {args.image_ids}"
    return f"the VSRL files hold no annotated action of the {len(ids)} evaluated images of {args.image_ids}"


def _run_convert(args: argparse.Namespace) -> int:
    from hoi_bench.files import write_json_atomic
    from hoi_sg_dataset.vcoco_role_convert import detections_from_predictions

    detections = detections_from_predictions(args.references, args.predictions)
    write_json_atomic(args.out, detections)
    print(f"wrote {len(detections)} detections to {args.out}")
    return 0
