"""Read the files of V-COCO's official evaluation (vsrl_eval.py) into ``role_ap`` arrays.

The official ``vsrl_eval.py`` reads three GT files and a detection list:

- the VSRL JSON of a split (``vcoco_test.json``): 26 actions in a fixed order, each with ``action_name``,
  ``role_name`` (``agent`` plus 0-2 roles), per-row lists ``image_id``, ``ann_id``, ``label`` and
  ``role_object_id`` flattened role-major (0 = no object). Several files can be given (V-COCO-SG test images
  come from V-COCO trainval and test): a person annotated in two files must be annotated alike;
- the COCO instances JSON (``instances_vcoco_all_2014.json``): images (``id``, ``width``, ``height``),
  annotations (``id``, ``image_id``, ``category_id``, ``bbox`` [x, y, w, h], ``area``, optional ``ignore``) and
  categories, the first of which (person) gives the GT persons;
- the image-id file (``vcoco_test.ids``): one COCO image id a line, sorted, no repeats; with one VSRL file it
  must hold exactly that file's images (upstream's assertion), with several it selects the evaluated images;
- the detection list as JSON: one object per (person, object) hypothesis with ``image_id``, ``person_box``
  [x1, y1, x2, y2], the 26 ``<action>_agent`` scores and the 25 ``<action>_<role>`` lists [x1, y1, x2, y2,
  score]; ``null`` stands for NaN (an empty role box is four nulls or [0, 0, 0, 0], a null score drops the
  detection from that class). Entries for images outside the split are ignored, as upstream ignores them, and
  counted in a warning; an integral float ``image_id`` (``500001.0``) is that image, a string or fractional one
  matches no image (upstream compares it to the integer ids) and is ignored and counted too. A number beyond the
  float32 range (upstream casts to float32, which would make it infinite) is a ``FormatError``.

Every input the official code would stop on (a missing key, an unknown action or role name, split ids that do
not match, a role object that is not a kept annotation of the image, ...) is a ``FormatError`` naming the file,
the record, the field, what was expected and what was found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hoi_bench.errors import FormatError, PredictionError
from hoi_bench.files import decode_json, read_bytes, read_json
from hoi_bench.input_warnings import collected_notes, warn_input
from hoi_sg_dataset.formats import FLOAT32_MAX
from hoi_sg_dataset.role_ap import (
    ACTION_ROLE_NAMES,
    ACTION_ROLES,
    ACTIONS,
    AGENT_NAMES,
    ROLES,
    VcocoDetections,
    VcocoGroundTruth,
    vcoco_role_ap,
)

DETECTION_KEYS = ("image_id", "person_box", *AGENT_NAMES, *ACTION_ROLE_NAMES)
"""The keys every detection of an evaluated image carries (extra keys are ignored, as upstream ignores them)."""

_BATCH = 8192


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _integer(value: Any) -> bool:
    return type(value) is int


INT64_MAX = 2**63 - 1
"""Largest id the arrays hold (COCO ids are far below it); a larger one is refused, not an ``OverflowError``."""


def _int64(value: Any) -> bool:
    return type(value) is int and -INT64_MAX - 1 <= value <= INT64_MAX


@dataclass(frozen=True)
class VsrlPersons:
    """The annotated persons of one or several VSRL files, one row per COCO annotation id.

    ``labels`` (N x 26, 1 / 0), ``role_objects`` (N x 25 annotation ids, 0 = none; set only where the label is
    1), ``image_ids`` per VSRL file (the ids upstream's split check sees), ``sources`` the file of each person.
    """

    ann_ids: np.ndarray
    labels: np.ndarray
    role_objects: np.ndarray
    sources: list[str]
    file_image_ids: dict[str, np.ndarray]


def read_vsrl(paths: Sequence[str | os.PathLike]) -> VsrlPersons:
    """Read and merge VSRL files; a person in two files must have the same labels and role objects."""
    merged: dict[int, tuple[np.ndarray, np.ndarray, str]] = {}
    file_image_ids = {}
    for path in paths:
        source = str(path)
        ann_ids, image_ids, labels, roles = _parse_vsrl(read_json(path, what="VSRL file"), source)
        file_image_ids[source] = image_ids
        for k, ann_id in enumerate(ann_ids.tolist()):
            earlier = merged.get(ann_id)
            if earlier is None:
                merged[ann_id] = (labels[k], roles[k], source)
                continue
            differ = [
                (ACTIONS[a], "label", earlier[0][a], labels[k][a])
                for a in np.flatnonzero(earlier[0] != labels[k])
            ]
            differ += [
                (ACTION_ROLE_NAMES[r], "role object", earlier[1][r], roles[k][r])
                for r in np.flatnonzero(earlier[1] != roles[k])
            ]
            if differ:
                name, what, before, now = differ[0]
                raise FormatError(
                    source,
                    "rows disagree with another VSRL file",
                    record=f"ann_id {ann_id}",
                    field=name,
                    expected=f"{what} {int(before)} as in {earlier[2]}",
                    found=int(now),
                )
    ids = np.array(sorted(merged), dtype=np.int64)
    return VsrlPersons(
        ids,
        np.array([merged[i][0] for i in ids.tolist()], dtype=np.int8).reshape(-1, len(ACTIONS)),
        np.array([merged[i][1] for i in ids.tolist()], dtype=np.int64).reshape(-1, len(ACTION_ROLES)),
        [merged[i][2] for i in ids.tolist()],
        file_image_ids,
    )


def _parse_vsrl(data: Any, source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One VSRL file as (ann ids, sorted unique image ids, labels N x 26, role object ids N x 25)."""
    if type(data) is not list or len(data) != len(ACTIONS):
        found = f"{len(data)} entries" if type(data) is list else type(data).__name__
        raise FormatError(
            source,
            "a VSRL file is a JSON list of the 26 V-COCO actions",
            expected=f"a list of {len(ACTIONS)} action objects",
            found=found,
        )
    rows = None
    labels = roles = None
    for a, (action, entry) in enumerate(zip(ACTIONS, data, strict=True)):
        if type(entry) is not dict:
            raise FormatError(
                source,
                "an action entry is a JSON object",
                record=a,
                expected="object",
                found=type(entry).__name__,
            )
        expected_roles = ["agent", *ROLES[action]]
        if entry.get("action_name") != action or entry.get("role_name") != expected_roles:
            raise FormatError(
                source,
                "unknown action-role names",
                record=a,
                field="action_name / role_name",
                expected=f"{action!r} with roles {expected_roles}",
                found=f"{entry.get('action_name')!r} with roles {entry.get('role_name')}",
            )
        columns = {}
        for key in ("image_id", "ann_id", "label", "role_object_id"):
            value = entry.get(key)
            if type(value) is not list or not all(map(_integer, value)):
                raise FormatError(
                    source,
                    f"{key} of {action} is not a list of integers",
                    record=a,
                    field=key,
                    expected="list of int",
                    found=value if type(value) is not list else "other items",
                )
            huge = next((k for k, v in enumerate(value) if not _int64(v)), None)
            if huge is not None:
                raise FormatError(
                    source,
                    f"{key} of {action} out of range",
                    record=a,
                    field=f"{key}[{huge}]",
                    expected=f"an integer of at most {INT64_MAX}",
                    found=value[huge],
                )
            columns[key] = np.array(value, dtype=np.int64)
        n = len(columns["ann_id"])
        if len(columns["image_id"]) != n or len(columns["label"]) != n:
            raise FormatError(
                source,
                f"row lists of {action} differ in length",
                record=a,
                field="image_id / label",
                expected=f"{n} rows like ann_id",
                found=(len(columns["image_id"]), len(columns["label"])),
            )
        if len(columns["role_object_id"]) != n * len(expected_roles):
            raise FormatError(
                source,
                f"role_object_id of {action} has the wrong length",
                record=a,
                field="role_object_id",
                expected=f"{len(expected_roles)} x {n} ids (role-major)",
                found=len(columns["role_object_id"]),
            )
        if rows is None:
            rows = columns["image_id"], columns["ann_id"]
            labels = np.zeros((n, len(ACTIONS)), dtype=np.int8)
            roles = np.zeros((n, len(ACTION_ROLES)), dtype=np.int64)
        else:
            _check_same_rows(rows, columns, source, a)
        label = columns["label"]
        bad = np.flatnonzero((label != 0) & (label != 1))
        if len(bad):
            raise FormatError(
                source,
                f"label of {action} is not 0 or 1",
                record=a,
                field=f"label[{bad[0]}]",
                expected="0 or 1",
                found=int(label[bad[0]]),
            )
        positive = np.flatnonzero(label == 1)
        ann_ids = columns["ann_id"]
        _, counts = np.unique(ann_ids[positive], return_counts=True)
        if (counts > 1).any():
            twice = int(np.unique(ann_ids[positive])[counts > 1][0])
            raise FormatError(
                source,
                f"a person is labelled {action} twice",
                record=a,
                field="label",
                expected="one positive row per person",
                found=f"ann_id {twice} twice",
            )
        role_ids = columns["role_object_id"].reshape(len(expected_roles), n).T
        wrong = positive[role_ids[positive, 0] != ann_ids[positive]]
        if len(wrong):
            raise FormatError(
                source,
                f"agent of {action} is not the row's person",
                record=a,
                field=f"role_object_id[{wrong[0]}]",
                expected=f"ann_id {int(ann_ids[wrong[0]])}",
                found=int(role_ids[wrong[0], 0]),
            )
        labels[positive, a] = 1
        for r in range(len(expected_roles) - 1):
            roles[positive, ACTION_ROLES.index((a, r))] = role_ids[positive, r + 1]
    image_ids, ann_ids = rows
    # a person with several rows: at most one is positive per action (checked above), so sums are its labels
    unique, inverse = np.unique(ann_ids, return_inverse=True)
    person_labels = np.zeros((len(unique), len(ACTIONS)), dtype=np.int8)
    person_roles = np.zeros((len(unique), len(ACTION_ROLES)), dtype=np.int64)
    np.add.at(person_labels, inverse, labels)
    np.add.at(person_roles, inverse, roles)
    return unique, np.unique(image_ids), person_labels, person_roles


def _check_same_rows(rows: tuple[np.ndarray, np.ndarray], columns: dict, source: str, action: int) -> None:
    """Every action lists the same persons in the same order as the first (upstream reads them that way)."""
    for key, first in zip(("image_id", "ann_id"), rows, strict=True):
        column = columns[key]
        if len(column) != len(first) or not np.array_equal(column, first):
            at = (
                int(np.flatnonzero(column[: len(first)] != first[: len(column)])[0])
                if len(column) == len(first)
                else min(len(column), len(first))
            )
            raise FormatError(
                source,
                f"rows of {ACTIONS[action]} disagree with those of {ACTIONS[0]}",
                record=action,
                field=f"{key}[{at}]",
                expected=f"the {len(first)} rows of {ACTIONS[0]} in the same order",
                found=f"{len(column)} rows" if len(column) != len(first) else int(column[at]),
            )


def read_image_ids(path: str | os.PathLike) -> np.ndarray:
    """The split's COCO image ids, one integer a line, sorted ascending without repeats (upstream's check)."""
    source = str(path)
    try:
        text = read_bytes(path, "image-id file").decode("ascii")
    except UnicodeDecodeError as error:
        raise FormatError(
            source, "unreadable image-id file", expected="ASCII digits", found=str(error)
        ) from error
    ids = []
    for line, token in ((n, t) for n, row in enumerate(text.splitlines(), 1) for t in row.split()):
        if not re.fullmatch(r"\d+", token):
            raise FormatError(
                source,
                "not an image id",
                record=f"line {line}",
                expected="one integer COCO image id a line",
                found=token,
            )
        if int(token) > INT64_MAX:
            raise FormatError(
                source,
                "image id out of range",
                record=f"line {line}",
                expected=f"a COCO image id of at most {INT64_MAX}",
                found=token,
            )
        if ids and int(token) <= ids[-1]:
            raise FormatError(
                source,
                "image ids out of order",
                record=f"line {line}",
                expected=f"ids sorted ascending without repeats (after {ids[-1]})",
                found=int(token),
            )
        ids.append(int(token))
    if not ids:
        raise FormatError(source, "empty image-id file", expected="one COCO image id a line", found="no ids")
    return np.array(ids, dtype=np.int64)


def check_split(vsrl: VsrlPersons, image_ids: np.ndarray, ids_source: str) -> None:
    """Upstream's split check: one VSRL file holds exactly the listed images; several must cover them."""
    known = np.unique(np.concatenate(list(vsrl.file_image_ids.values())))
    missing = image_ids[~np.isin(image_ids, known)]
    if len(missing):
        line = int(np.flatnonzero(image_ids == missing[0])[0]) + 1
        raise FormatError(
            ids_source,
            "image id in no VSRL file",
            record=f"line {line}",
            expected=f"ids of images annotated in {', '.join(vsrl.file_image_ids)}",
            found=int(missing[0]),
        )
    if len(vsrl.file_image_ids) == 1:
        ((source, file_ids),) = vsrl.file_image_ids.items()
        extra = file_ids[~np.isin(file_ids, image_ids)]
        if len(extra):
            raise FormatError(
                source,
                "image not in the id file",
                field="image_id",
                expected=f"only the images listed in {ids_source} (one VSRL file must match the "
                "split exactly; give several VSRL files to select images)",
                found=int(extra[0]),
            )


@dataclass(frozen=True)
class CocoImages:
    """The kept COCO annotations of the evaluated images, in file order, and the first (person) category."""

    person_category: int
    ann_ids: list[np.ndarray]
    categories: list[np.ndarray]
    boxes: list[np.ndarray]


def read_instances(path: str | os.PathLike, image_ids: np.ndarray) -> CocoImages:
    """Upstream's GT boxes of ``image_ids``: annotations in file order (crowd too) unless ``ignore`` is 1,
    box x2 = x + max(0, w - 1) clipped to the image, kept if ``area`` > 0 and the box is not degenerate.

    Upstream looks annotations up through pycocotools, whose index keeps one annotation per ``id`` (the last in
    the file) but lists an image's ids as often as they occur: an id used twice makes every listing the last
    annotation with that id, so a person can count twice and halve the recall. That is what is scored here too,
    with a warning that counts the repeated ids."""
    source = str(path)
    data = read_json(path, what="COCO instances file")
    if type(data) is not dict:
        raise FormatError(
            source, "a COCO instances file is a JSON object", expected="object", found=type(data).__name__
        )
    for key in ("images", "annotations", "categories"):
        if type(data.get(key)) is not list:
            raise FormatError(source, f"no {key} list", field=key, expected="list", found=data.get(key))
    categories = data["categories"]
    if not categories or type(categories[0]) is not dict or not _int64(categories[0].get("id")):
        raise FormatError(
            source,
            "no first category",
            field="categories[0].id",
            expected="the person category first",
            found=categories[:1],
        )
    category_ids = {c.get("id") for c in categories if type(c) is dict and _int64(c.get("id"))}
    position = {int(i): k for k, i in enumerate(image_ids.tolist())}
    sizes: dict[int, tuple[float, float]] = {}
    for k, image in enumerate(data["images"]):
        if type(image) is not dict or not _integer(image.get("id")):
            raise FormatError(
                source,
                "an image without integer id",
                record=k,
                field="images.id",
                expected="int",
                found=image,
            )
        if image["id"] in position:
            width, height = image.get("width"), image.get("height")
            if not (_number(width) and _number(height)):
                raise FormatError(
                    source,
                    "image size is not a number",
                    record=k,
                    field="images.width / height",
                    expected="numbers",
                    found=(width, height),
                )
            sizes[image["id"]] = (float(width), float(height))
    absent = [i for i in position if i not in sizes]
    if absent:
        raise FormatError(
            source,
            "image of the split not in the instances file",
            field="images",
            expected="every id of the image-id file",
            found=absent[0],
        )
    rows: list[list[tuple[int, int, list]]] = [[] for _ in position]
    annotations = data["annotations"]
    last_of: dict[int, int] = {}
    for k, ann in enumerate(annotations):
        if type(ann) is dict and _int64(ann.get("id")):
            last_of[ann["id"]] = k
    _note_repeated_ids(source, annotations, last_of)
    for k, ann in enumerate(annotations):
        if type(ann) is not dict or not _int64(ann.get("id")) or not _integer(ann.get("image_id")):
            raise FormatError(
                source,
                "an annotation without integer id and image_id",
                record=k,
                field="annotations",
                expected=f"id and image_id integers (id at most {INT64_MAX})",
                found=ann,
            )
        image = position.get(ann["image_id"])
        k = last_of[ann["id"]]  # pycocotools' anns[id]: the last annotation with this id
        ann = annotations[k]
        if image is None or ann.get("ignore") == 1:
            continue
        bbox, area, category = ann.get("bbox"), ann.get("area"), ann.get("category_id")
        if type(bbox) is not list or len(bbox) != 4 or not all(map(_number, bbox)) or not _number(area):
            raise FormatError(
                source,
                "malformed box or area",
                record=k,
                field="annotations.bbox / area",
                expected="bbox [x, y, w, h] and area as numbers",
                found=(bbox, area),
            )
        rows[image].append((ann["id"], category, [*bbox, area], k))
    return _clean_boxes(rows, sizes, image_ids, categories[0]["id"], category_ids, source)


def _note_repeated_ids(source: str, annotations: list, last_of: dict[int, int]) -> None:
    first_of: dict[int, int] = {}
    repeated = []
    for k, ann in enumerate(annotations):
        if type(ann) is dict and _integer(ann.get("id")):
            if ann["id"] in first_of:
                repeated.append((first_of[ann["id"]], k, ann["id"]))
            first_of.setdefault(ann["id"], k)
    if repeated:
        first, second, ann_id = repeated[0]
        warn_input(f"{source}: {len(repeated)} annotations repeat an id used before (first: id {ann_id} at records "
                   f"{first} and {second}); as pycocotools indexes them, every listing of the id is the last "
                   f"annotation with it (record {last_of[ann_id]}), so a person can be counted twice, as "
                   "vsrl_eval.py counts it")


def _clean_boxes(rows, sizes, image_ids, person_category, category_ids, source) -> CocoImages:
    ann_ids, categories, boxes = [], [], []
    for image, image_rows in zip(image_ids.tolist(), rows, strict=True):
        width, height = sizes[image]
        values = np.array([r[2] for r in image_rows], dtype=np.float64).reshape(-1, 5)
        x1, y1 = values[:, 0], values[:, 1]
        x2 = x1 + np.maximum(0.0, values[:, 2] - 1.0)
        y2 = y1 + np.maximum(0.0, values[:, 3] - 1.0)
        x1, x2 = (np.minimum(width - 1.0, np.maximum(0.0, v)) for v in (x1, x2))
        y1, y2 = (np.minimum(height - 1.0, np.maximum(0.0, v)) for v in (y1, y2))
        kept = np.flatnonzero((values[:, 4] > 0) & (x2 > x1) & (y2 > y1))
        for k in kept:
            if image_rows[k][1] not in category_ids:
                raise FormatError(
                    source,
                    "annotation of an unknown category",
                    record=image_rows[k][3],
                    field="annotations.category_id",
                    expected="an id of the categories list",
                    found=image_rows[k][1],
                )
        ann_ids.append(np.array([image_rows[k][0] for k in kept], dtype=np.int64))
        categories.append(np.array([image_rows[k][1] for k in kept], dtype=np.int64))
        boxes.append(np.stack([x1, y1, x2, y2], axis=1)[kept].astype(np.float32))
    return CocoImages(person_category, ann_ids, categories, boxes)


def ground_truth(vsrl: VsrlPersons, coco: CocoImages, image_ids: np.ndarray) -> VcocoGroundTruth:
    """The GT persons of each image (the kept annotations of the first category), with V-COCO's labels;
    a person no VSRL row names is ignored (actions all -1), crowd regions included."""
    row_of = {int(a): k for k, a in enumerate(vsrl.ann_ids.tolist())}
    person_boxes, actions, role_boxes, counts = [], [], [], []
    for image, ann_ids, categories, boxes in zip(
        image_ids.tolist(), coco.ann_ids, coco.categories, coco.boxes, strict=True
    ):
        persons = np.flatnonzero(categories == coco.person_category)
        counts.append(len(persons))
        person_boxes.append(boxes[persons])
        image_actions = np.full((len(persons), len(ACTIONS)), -1, dtype=np.int8)
        image_roles = np.full((len(persons), len(ACTION_ROLES), 4), -1, dtype=np.float32)
        for p, k in enumerate(persons):
            row = row_of.get(int(ann_ids[k]))
            if row is None:
                continue
            image_actions[p] = vsrl.labels[row]
            for r, (a, _) in enumerate(ACTION_ROLES):
                target = int(vsrl.role_objects[row, r])
                if vsrl.labels[row, a] != 1 or target == 0:
                    continue
                found = np.flatnonzero(ann_ids == target)
                if len(found) == 0:
                    raise FormatError(
                        vsrl.sources[row],
                        "role object is not a kept annotation of the image",
                        record=f"ann_id {int(ann_ids[k])}",
                        field=ACTION_ROLE_NAMES[r],
                        expected=f"an annotation of image {image} with a valid box",
                        found=target,
                    )
                image_roles[p, r] = boxes[found[0]]
        actions.append(image_actions)
        role_boxes.append(image_roles)
    return VcocoGroundTruth(
        image_ids=image_ids,
        person_offsets=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        person_boxes=np.concatenate(person_boxes).reshape(-1, 4),
        actions=np.concatenate(actions).reshape(-1, len(ACTIONS)),
        role_boxes=np.concatenate(role_boxes).reshape(-1, len(ACTION_ROLES), 4),
    )


def _detection_types():
    import msgspec

    value = float | None
    fields = [("image_id", int | float | str), ("person_box", tuple[value, value, value, value])]
    fields += [(name, value) for name in AGENT_NAMES]
    fields += [(name, tuple[value, value, value, value, value]) for name in ACTION_ROLE_NAMES]
    full = msgspec.defstruct("Detection", fields)
    image_only = msgspec.defstruct("DetectionImage", [("image_id", int | float | str)])
    return msgspec, full, image_only


def read_detections(path: str | os.PathLike, image_ids: np.ndarray) -> VcocoDetections:
    """The detections of the evaluated images, in file order; entries for other images are skipped unread
    (only their ``image_id`` is checked)."""
    msgspec, full, image_only = _detection_types()
    source = str(path)
    data = read_bytes(path, "detection file")
    entries = decode_json(data, list[msgspec.Raw], source, "detection file")
    position = {int(i): k for k, i in enumerate(image_ids.tolist())}
    image_index, records, batch, parsed = [], [], [], []
    not_integer, outside = [], []
    decode_image, decode_full = msgspec.json.Decoder(image_only).decode, msgspec.json.Decoder(full).decode
    for k, raw in enumerate(entries):
        try:  # the common case in one pass; an entry that does not decode may still be outside the split
            entry = decode_full(raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            entry = None
        image_id = _decode(decode_image, raw, source, k, msgspec).image_id if entry is None else entry.image_id
        image = position.get(image_id) if type(image_id) is not str else None  # 500001.0 == 500001
        if image is None:
            integral = type(image_id) is int or (type(image_id) is float and image_id.is_integer())
            (outside if integral else not_integer).append((k, image_id))
            continue
        image_index.append(image)
        records.append(k)
        batch.append(
            msgspec.structs.astuple(
                entry if entry is not None else _decode(decode_full, raw, source, k, msgspec)
            )
        )
        if len(batch) == _BATCH:
            parsed.append(_arrays(batch, records[-len(batch):], source))
            batch = []
    parsed.append(_arrays(batch, records[len(records) - len(batch):], source))
    _note_unmatched(source, not_integer, outside)
    person, agents, roles = (np.concatenate([p[i] for p in parsed]) for i in range(3))
    return VcocoDetections(
        image_index=np.array(image_index, dtype=np.int64),
        records=np.array(records, dtype=np.int64),
        person_boxes=person,
        agent_scores=agents,
        role_boxes=roles[:, :, :4].copy(),
        role_scores=roles[:, :, 4].copy(),
    )


def _decode(decode, raw, source: str, record: int, msgspec):
    try:
        return decode(raw)
    except msgspec.ValidationError as error:
        text = str(error)
        missing = re.match(r"Object missing required field `(.+)`", text)
        if missing:
            raise FormatError(
                source,
                "detection lacks a key",
                record=record,
                field=missing.group(1),
                expected="image_id, person_box, the 26 <action>_agent scores and the 25 "
                "<action>_<role> [x1, y1, x2, y2, score] lists",
                found="no such key",
            ) from error
        where = re.search(r"at `\$\.?(.*)`", text)
        raise FormatError(
            source,
            "malformed detection",
            record=record,
            field=where.group(1) if where else None,
            expected="numbers or null in the official detection structure",
            found=text.split(" - at ")[0],
        ) from error
    except msgspec.DecodeError as error:
        raise FormatError(
            source, "malformed detection", record=record, expected="a JSON object", found=str(error)
        ) from error


def _note_unmatched(source: str, not_integer: list[tuple[int, Any]], outside: list[tuple[int, Any]]) -> None:
    if not_integer:
        k, image_id = not_integer[0]
        warn_input(f"{source}: {len(not_integer)} detections have an image_id that is not an integer (first: record "
                   f"{k}, found {image_id!r}); they match no image and are ignored, as vsrl_eval.py ignores them")
    if outside:
        k, image_id = outside[0]
        warn_input(f"{source}: {len(outside)} detections are for images outside the evaluated split (first: record "
                   f"{k}, image_id {image_id!r}); ignored, as vsrl_eval.py ignores them")


def _arrays(batch: list[tuple], records: list[int], source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Person boxes, agent scores and role lists of decoded detections as float32 (``None`` becomes NaN).

    A value beyond the float32 range is refused: upstream's cast would turn it into an infinite box or score.
    """
    agents_end = 2 + len(AGENT_NAMES)
    person = np.array([t[1] for t in batch], dtype=np.float64).reshape(-1, 4)
    agents = np.array([t[2:agents_end] for t in batch], dtype=np.float64).reshape(-1, len(AGENT_NAMES))
    roles = np.array([t[agents_end:] for t in batch], dtype=np.float64).reshape(-1, len(ACTION_ROLE_NAMES), 5)
    for values, names in ((person, ("person_box",)), (agents, AGENT_NAMES), (roles, ACTION_ROLE_NAMES)):
        far = np.abs(values) > FLOAT32_MAX  # NaN (null) compares False
        if far.any():
            row, column = np.argwhere(far.reshape(len(values), len(names), -1).any(axis=2))[0]
            raise FormatError(
                source,
                "number beyond the float32 range (vsrl_eval.py casts to float32: it would become infinite)",
                record=records[row],
                field=names[column],
                expected=f"numbers within +-{FLOAT32_MAX:.4g} or null",
                found=values[row].reshape(len(names), -1)[column].tolist(),
            )
    return person.astype(np.float32), agents.astype(np.float32), roles.astype(np.float32)


def vcoco_role_map_files(
    vsrl: Sequence[str | os.PathLike],
    instances: str | os.PathLike,
    image_ids: str | os.PathLike,
    detections: str | os.PathLike,
) -> dict:
    """``role_ap.vcoco_role_ap`` of the official V-COCO files and a detection list, as the public result."""
    with collected_notes() as notes:
        ids = read_image_ids(image_ids)
        persons = read_vsrl(vsrl)
        check_split(persons, ids, str(image_ids))
        gt = ground_truth(persons, read_instances(instances, ids), ids)
        dets = read_detections(detections, ids)
        try:
            result = vcoco_role_ap(gt, dets).to_json()
        except PredictionError as error:
            raise PredictionError(f"{detections}: {error}") from error
    result["warnings"] = notes
    return result
