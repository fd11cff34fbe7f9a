"""QPIC-style V-COCO predictions to the detection list of V-COCO's official evaluator.

The conversion QPIC, CDN and GEN-VLKT do in ``generate_vcoco_official.py``, applied to the prediction file that
``vcoco_map`` reads, so their users get the official role AP from the files they already have
(``hoi-bench convert vcoco-detections``).
"""

from __future__ import annotations

import os
import re

from hoi_bench.errors import FormatError
from hoi_sg_dataset.role_ap import ACTION_ROLE_NAMES, ACTIONS, ROLES

_NO_ROLE_VERBS = frozenset(action for action in ACTIONS if not ROLES[action])
_TWO_ROLE_ACTIONS = frozenset(action for action in ACTIONS if len(ROLES[action]) == 2)
_COCO_ID = re.compile(r"COCO_[a-z]+\d{4}_(\d+)\.jpg")


def detections_from_predictions(references: str | os.PathLike, predictions: str | os.PathLike) -> list[dict]:
    """QPIC / CDN ``generate_vcoco_official.py`` on a prediction file: one detection per (subject, object)
    pair of an image's ``hoi_prediction`` (the file's query), in file order, without any top-k cut.

    Each verb's score goes to its ``<action>_<role>`` with the object's box (four ``None`` when ``object_id``
    is -1, QPIC's "missing" object), or to ``<verb>_agent`` for stand, walk, run and smile; the agent score of
    the other actions is the role score, for hit, cut and eat QPIC's running maximum of the two (from 0). A verb
    the file does not give for a pair is ``None`` (not ranked); so are hit/cut/eat agents without role scores.
    The image id is the number in the COCO file name; file names must be images of ``references``.
    """
    from hoi_sg_dataset.formats import read_annotations
    from hoi_sg_dataset.predictions import prediction_set, read_predictions
    from hoi_sg_dataset.vocabulary import vcoco_verbs

    source = str(predictions)
    records = read_annotations(references, "vcoco")
    entries = read_predictions(predictions, "vcoco")
    prediction_set(records, entries, source=source, refuse_unknown=True)
    verbs = vcoco_verbs()
    out = []
    for k, entry in enumerate(entries):
        match = _COCO_ID.fullmatch(entry.file_name)
        if match is None:
            raise FormatError(
                source,
                "no COCO image id in the file name",
                record=k,
                field="file_name",
                expected="COCO_<split>_<id>.jpg",
                found=entry.file_name,
            )
        pairs: dict[tuple[int, int], dict[str, float]] = {}
        for j, (subject, obj, verb) in enumerate(entry.hois.tolist()):
            scores = pairs.setdefault((subject, obj), {})
            name = verbs.name_of(verb)
            if name in scores:
                raise FormatError(
                    source,
                    "two scores for one verb of one (subject, object) pair",
                    record=k,
                    field=f"hoi_prediction[{j}]",
                    expected="each verb once per pair",
                    found=f"{name} again",
                )
            scores[name] = float(entry.scores[j])
        for (subject, obj), scores in pairs.items():
            object_box = [None] * 4 if obj < 0 else [float(v) for v in entry.boxes[obj]]
            out.append(
                _detection(int(match.group(1)), [float(v) for v in entry.boxes[subject]], object_box, scores)
            )
    return out


def _detection(image_id: int, person_box: list, object_box: list, scores: dict[str, float]) -> dict:
    detection: dict = {"image_id": image_id, "person_box": person_box}
    agents: dict[str, float | None] = {}
    for action in ACTIONS:
        if action in _NO_ROLE_VERBS:
            agents[action] = scores.get(action)
            continue
        given = [scores[f"{action}_{role}"] for role in ROLES[action] if f"{action}_{role}" in scores]
        if action in _TWO_ROLE_ACTIONS:
            best = 0.0  # QPIC's running maximum starts from 0
            for score in given:
                best = max(best, score)
            agents[action] = best if given else None
        else:
            agents[action] = given[0] if given else None
    for action in ACTIONS:
        detection[f"{action}_agent"] = agents[action]
    for name in ACTION_ROLE_NAMES:
        detection[name] = [*object_box, scores[name]] if name in scores else [None] * 5
    return detection
