"""Score a HICO-DET-SG / V-COCO-SG baseline's prediction file against the rows of a built ``hoi_sg`` config.

Shared by the GT-box baselines (``hoi_sg_dataset.baseline``) and the detector (``hoi_sg_dataset.detector``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def dataset_of(config: str) -> str:
    """``"hico"`` or ``"vcoco"``: the GT conventions (verb ids, "no object" HOIs, metric) a config follows."""
    return "vcoco" if config.startswith("vcoco") else "hico"

def without_images(rows):
    """The rows without their (undecoded) image column, for annotation-only reads."""
    return rows.remove_columns(["image"]) if "image" in rows.column_names else rows

def score_prediction_file(path: Path, references: list, dataset: str) -> dict[str, Any]:
    """Read the prediction file back with the package's reader (validating it) and compute ``hoi_map``
    (HICO-DET) or ``vcoco_map`` (V-COCO) against the split's GT records."""
    from hoi_sg_dataset.evaluation import hoi_map, vcoco_map
    from hoi_sg_dataset.predictions import prediction_set, read_predictions, reference_set

    predictions = prediction_set(references, read_predictions(path, dataset), source=str(path))
    result = (hoi_map if dataset == "hico" else vcoco_map)(reference_set(references), predictions)
    return {key: value for key, value in result.items() if key not in ("ap_per_triplet", "ap_per_verb")}

def module_inputs(path: Path, rows, dataset: str) -> tuple[list[dict], list[dict]]:
    """``hoi_map``/``vcoco_map`` module inputs: one dict per GT image of ``rows`` (boxes, raw labels, raw
    HOIs), predictions read from the PPDM/QPIC file ``path`` with the package's reader, lined up by file
    name."""
    from hoi_sg_dataset.builder import row_to_record
    from hoi_sg_dataset.predictions import read_predictions

    references = [row_to_record(row, dataset) for row in without_images(rows)]
    by_name = {p.file_name: p for p in read_predictions(path, dataset)}
    reference_dicts, prediction_dicts = [], []
    for record in references:
        reference_dicts.append({"boxes": record.boxes.tolist(), "box_labels": record.box_labels.tolist(),
                                "hois": record.hoi_triplets.tolist()})
        entry = by_name.get(record.file_name)
        prediction_dicts.append({"boxes": [] if entry is None else entry.boxes.tolist(),
                                 "box_labels": [] if entry is None else entry.box_labels.tolist(),
                                 "hois": [] if entry is None else entry.hois.tolist(),
                                 "scores": [] if entry is None else entry.scores.tolist()})
    return prediction_dicts, reference_dicts
