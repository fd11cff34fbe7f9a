"""A deterministic, tiny, synthetic copy of the HICO-DET and V-COCO native layouts (QPIC's folder names).

``write_sample(root)`` writes::

    root/hico_20160224_det/images/train2015/HICO_train2015_000000NN.jpg   (300 images)
    root/hico_20160224_det/images/test2015/HICO_test2015_000000NN.jpg     (100 images)
    root/hico_20160224_det/annotations/trainval_hico.json, test_hico.json
    root/v-coco/images/train2014/COCO_train2014_0000000000NN.jpg          (220 images)
    root/v-coco/images/val2014/COCO_val2014_0000000000NN.jpg              (100 images)
    root/v-coco/annotations/trainval_vcoco.json, test_vcoco.json

Annotation files follow the upstream format with its quirks (HICO trainval records carry ``img_id`` and
``hoi_category_id``, test records do not; V-COCO boxes are floats, crowd boxes ints; V-COCO HOIs without
object; V-COCO images with an empty HOI list).

Each 128 x 96 image shows persons (red figures) and objects (rectangles, one colour per category). The verb is
a function of the person and object boxes only, never of the object category, so a pair classifier can learn
it from geometry and transfer it to held-out (object, verb) combinations. With ``p`` the person box (width
``pw``, height ``ph``):

============== ==================== ===================================================================
HICO verb      V-COCO verb          object box relative to the person
============== ==================== ===================================================================
hold           hold_obj             small square overlapping p's right edge at mid-height
ride           ride_instr           wide box under p's centre, top at 55-65 % of p's height
carry          carry_obj            box on top of p's head
jump           jump_instr           flat box below p's feet, with a gap
walk           --                   tall box left of p, bottoms aligned
no_interaction --                   box at least 1.5 ``pw`` away from p, any height
--             sit_instr            box overlapping p's right half, bottoms aligned
--             look_obj             box right of p at eye level, 0.6-1.2 ``pw`` away
--             stand / walk         no object: p taller than 2.6 ``pw`` (stand) or shorter than 2 ``pw``
============== ==================== ===================================================================

The combinations are chosen so that the official seeds (HICO 368, 680, 750; V-COCO 564, 966, 2065) pass VERIFY
on the sample, so ``hico_split1..3`` and ``vcoco_split1..3`` all have held-out combinations with test images.

>>> plan = sample_plan()
>>> len(plan.hico_trainval), len(plan.hico_test), len(plan.vcoco_trainval), len(plan.vcoco_test)
(300, 100, 220, 100)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from hoi_bench.hub import staged_replace
from hoi_sg_dataset.formats import BoxAnnotation, HoiAnnotation, ImageRecord, write_annotations
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_lookup, hico_verbs, vcoco_verbs

WIDTH, HEIGHT = 128, 96
SEED = 20230228
HICO_COUNTS = (300, 100)
VCOCO_COUNTS = (220, 100)
HICO_FOLDER, VCOCO_FOLDER = "hico_20160224_det", "v-coco"
PERSON = 1

# object names -> the verbs they are drawn with (every pair is one of the 600 HICO-DET classes)
HICO_COMBINATIONS: dict[str, tuple[str, ...]] = {
    "hold": (
        "bicycle",
        "motorcycle",
        "horse",
        "skateboard",
        "skis",
        "snowboard",
        "surfboard",
        "elephant",
        "dog",
        "sheep",
    ),
    "ride": (
        "bicycle",
        "motorcycle",
        "horse",
        "skateboard",
        "skis",
        "snowboard",
        "surfboard",
        "elephant",
        "sheep",
    ),
    "carry": ("bicycle", "skateboard", "skis", "snowboard", "surfboard", "dog", "sheep"),
    "jump": ("bicycle", "horse", "motorcycle", "skateboard", "skis", "snowboard", "surfboard"),
    "no_interaction": (
        "bicycle",
        "motorcycle",
        "horse",
        "skateboard",
        "skis",
        "snowboard",
        "surfboard",
        "elephant",
        "dog",
        "sheep",
    ),
    "walk": ("bicycle", "horse", "motorcycle", "elephant", "dog", "sheep"),
}
VCOCO_COMBINATIONS: dict[str, tuple[str, ...]] = {
    "hold_obj": (
        "bicycle",
        "motorcycle",
        "skateboard",
        "sports ball",
        "surfboard",
        "dog",
        "frisbee",
        "chair",
    ),
    "ride_instr": ("bicycle", "motorcycle", "horse", "skateboard", "surfboard"),
    "carry_obj": ("skateboard", "surfboard", "sports ball", "dog", "chair", "frisbee"),
    "sit_instr": ("chair", "bicycle", "motorcycle", "horse"),
    "look_obj": ("sports ball", "dog", "horse", "frisbee", "motorcycle", "bicycle"),
    "jump_instr": ("skateboard", "bicycle", "horse", "motorcycle", "surfboard"),
}
GEOMETRY_OF_VERB = {
    "hold_obj": "hold",
    "ride_instr": "ride",
    "carry_obj": "carry",
    "sit_instr": "sit",
    "look_obj": "look",
    "jump_instr": "jump",
}

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class SampleLayout:
    """Where ``write_sample`` put things."""

    root: Path
    hico: Path
    vcoco: Path


@dataclass(frozen=True)
class SamplePlan:
    """The sample's records before anything is written (image pixels are drawn from the boxes)."""

    hico_trainval: list[ImageRecord]
    hico_test: list[ImageRecord]
    vcoco_trainval: list[ImageRecord]
    vcoco_test: list[ImageRecord]


def write_sample(root: str | os.PathLike) -> SampleLayout:
    """Write the synthetic HICO-DET and V-COCO layouts under ``root`` (replaced atomically) and say where."""
    root = Path(root)
    plan = sample_plan()
    with staged_replace(root) as stage:
        _write_dataset(
            stage / HICO_FOLDER, "hico", plan.hico_trainval, plan.hico_test, ("train2015", "test2015")
        )
        _write_dataset(
            stage / VCOCO_FOLDER, "vcoco", plan.vcoco_trainval, plan.vcoco_test, ("train2014", "val2014")
        )
    return SampleLayout(root.absolute(), root.absolute() / HICO_FOLDER, root.absolute() / VCOCO_FOLDER)


def _write_dataset(base: Path, dataset: str, trainval, test, folders: tuple[str, str]) -> None:
    for records, folder in ((trainval, folders[0]), (test, folders[1])):
        image_dir = base / "images" / folder
        image_dir.mkdir(parents=True)
        for record in records:
            draw_image(record).save(image_dir / record.file_name, format="JPEG", quality=90)
    write_annotations(base / "annotations" / f"trainval_{dataset}.json", trainval, dataset)
    write_annotations(base / "annotations" / f"test_{dataset}.json", test, dataset)


def draw_image(record: ImageRecord) -> Image.Image:
    """The picture of a sample record: objects as coloured rectangles, persons as red figures with a head."""
    rng = np.random.RandomState(sum(map(ord, record.file_name)))
    background = tuple(int(v) for v in 225 + rng.randint(-15, 16, size=3))
    image = Image.new("RGB", (WIDTH, HEIGHT), background)
    draw = ImageDraw.Draw(image)
    for box in sorted(record.annotations, key=lambda b: b.category_id == PERSON):
        x1, y1, x2, y2 = (float(v) for v in box.bbox)
        if box.category_id == PERSON:
            head = min(x2 - x1, (y2 - y1) / 4)
            draw.rectangle([x1, y1 + head, x2, y2], fill=(200, 40, 40))
            draw.ellipse(
                [x1 + (x2 - x1 - head) / 2, y1, x1 + (x2 - x1 + head) / 2, y1 + head], fill=(230, 160, 120)
            )
        else:
            draw.rectangle([x1, y1, x2, y2], fill=_colour(box.category_id), outline=(40, 40, 40))
    return image


def _colour(category: int) -> tuple[int, int, int]:
    rng = np.random.RandomState(category)
    return tuple(int(v) for v in rng.randint(20, 200, size=3))


@lru_cache(maxsize=1)
def sample_plan() -> SamplePlan:
    """The sample's annotation records, drawn from a fixed seed."""
    rng = np.random.RandomState(SEED)
    hico = _combinations(HICO_COMBINATIONS, hico_verbs(), lambda v: v)
    vcoco = _combinations(VCOCO_COMBINATIONS, vcoco_verbs(), GEOMETRY_OF_VERB.get)
    hico_trainval = [_hico_record(rng, "train2015", i + 1, hico) for i in range(HICO_COUNTS[0])]
    hico_test = [_hico_record(rng, "test2015", i + 1, hico) for i in range(HICO_COUNTS[1])]
    vcoco_trainval = [_vcoco_record(rng, "train2014", i + 1, vcoco) for i in range(VCOCO_COUNTS[0])]
    vcoco_test = [_vcoco_record(rng, "val2014", i + 1, vcoco) for i in range(VCOCO_COUNTS[1])]
    return SamplePlan(hico_trainval, hico_test, vcoco_trainval, vcoco_test)


def _combinations(table: dict[str, tuple[str, ...]], verbs, geometry: Callable) -> list[tuple[int, int, str]]:
    """``(object id, verb id, geometry)`` for every pair of ``table``."""
    objects = coco_objects()
    object_ids = dict(zip(objects.names, objects.raw_ids, strict=True))
    verb_ids = dict(zip(verbs.names, verbs.raw_ids, strict=True))
    return [(object_ids[o], verb_ids[v], geometry(v)) for v, names in table.items() for o in names]


def _hico_record(rng: np.random.RandomState, split: str, number: int, combos) -> ImageRecord:
    pairs = 1 if rng.rand() < 0.75 else 2
    boxes, hois = _draw_pairs(rng, combos, pairs, integer=True)
    train = split == "train2015"
    if train:
        lookup = hico_hoi_lookup()
        hois = [
            HoiAnnotation(
                h.subject_id,
                h.object_id,
                h.category_id,
                lookup[(h.category_id, boxes[h.object_id].category_id)],
            )
            for h in hois
        ]
    return ImageRecord(f"HICO_{split}_{number:08d}.jpg", boxes, hois, img_id=number if train else None)


def _vcoco_record(rng: np.random.RandomState, split: str, number: int, combos) -> ImageRecord:
    file_name = f"COCO_{split}_{number:012d}.jpg"
    roll = rng.rand()
    if roll < 0.06:  # persons without any action: an empty HOI list
        person = _person(rng, 0, WIDTH, aspect=(2.0, 2.6))
        return ImageRecord(file_name, [_box(person, PERSON, integer=False)], [])
    if roll < 0.16:  # stand / walk: actions without object
        stand = rng.rand() < 0.5
        person = _person(rng, 0, WIDTH, aspect=(2.7, 3.2) if stand else (1.5, 1.9))
        verb = vcoco_verbs().names.index("stand" if stand else "walk")
        return ImageRecord(file_name, [_box(person, PERSON, integer=False)], [HoiAnnotation(0, -1, verb)])
    boxes, hois = _draw_pairs(rng, combos, 1 if roll < 0.8 else 2, integer=False)
    if rng.rand() < 0.08:  # a hold_obj whose object was not annotated
        hois.append(HoiAnnotation(0, -1, vcoco_verbs().names.index("hold_obj")))
    if rng.rand() < 0.15:  # a COCO crowd box: integer coordinates, last in the list
        boxes.append(BoxAnnotation([0, 70, WIDTH - 1, HEIGHT - 1], PERSON))
    return ImageRecord(file_name, boxes, hois)


def _draw_pairs(rng, combos, pairs: int, integer: bool) -> tuple[list[BoxAnnotation], list[HoiAnnotation]]:
    boxes: list[BoxAnnotation] = []
    hois: list[HoiAnnotation] = []
    width = WIDTH // pairs
    for k in range(pairs):
        object_id, verb, geometry = combos[rng.randint(len(combos))]
        person, thing = _place(rng, geometry, k * width, (k + 1) * width)
        boxes += [_box(person, PERSON, integer), _box(thing, object_id, integer)]
        hois.append(HoiAnnotation(len(boxes) - 2, len(boxes) - 1, verb))
    return boxes, hois


def _box(box: Box, category: int, integer: bool) -> BoxAnnotation:
    if integer:
        return BoxAnnotation([int(round(v)) for v in box], category)
    return BoxAnnotation([round(float(v), 2) for v in box], category)


def _person(rng, left: float, right: float, aspect=(2.0, 2.6)) -> Box:
    w = rng.uniform(8, 12)
    h = w * rng.uniform(*aspect)
    x1 = rng.uniform(left + 1, right - w - 1)
    y1 = rng.uniform(1, HEIGHT - h - 1)
    return (x1, y1, x1 + w, y1 + h)


def _place(rng, geometry: str, left: float, right: float) -> tuple[Box, Box]:
    """A person box and an object box in ``[left, right)`` whose relative position shows ``geometry``."""
    for _ in range(1000):
        person = _person(rng, left, right)
        thing = _object_box(rng, geometry, person)
        x1, y1, x2, y2 = thing
        if left <= x1 and x2 < right and 0 <= y1 and y2 < HEIGHT:
            return person, thing
    raise RuntimeError(f"could not place a {geometry!r} pair in [{left}, {right})")  # pragma: no cover


def _object_box(rng, geometry: str, person: Box) -> Box:
    px1, py1, px2, py2 = person
    pw, ph = px2 - px1, py2 - py1
    cx = (px1 + px2) / 2 + rng.uniform(-0.1, 0.1) * pw
    u = rng.uniform
    if geometry == "hold":
        s = u(0.5, 0.8) * pw
        x1, cy = px2 - 0.25 * s, py1 + u(0.45, 0.6) * ph
        return (x1, cy - s / 2, x1 + s, cy + s / 2)
    if geometry == "ride":
        w, h, top = u(1.5, 2.0) * pw, u(0.45, 0.6) * ph, py1 + u(0.55, 0.65) * ph
        return (cx - w / 2, top, cx + w / 2, top + h)
    if geometry == "carry":
        w, h, bottom = u(0.9, 1.3) * pw, u(0.25, 0.4) * ph, py1 + u(0.0, 0.05) * ph
        return (cx - w / 2, bottom - h, cx + w / 2, bottom)
    if geometry == "jump":
        w, h, top = u(1.2, 1.6) * pw, u(0.15, 0.25) * ph, py2 + u(0.2, 0.35) * ph
        return (cx - w / 2, top, cx + w / 2, top + h)
    if geometry == "walk":
        w, h, x2, y2 = u(0.8, 1.2) * pw, u(0.5, 0.7) * ph, px1 - u(0.0, 0.15) * pw, py2 - u(0.0, 0.05) * ph
        return (x2 - w, y2 - h, x2, y2)
    if geometry == "sit":
        w, h, x1 = u(1.0, 1.3) * pw, u(0.4, 0.5) * ph, (px1 + px2) / 2 + u(0.0, 0.2) * pw
        return (x1, py2 - h, x1 + w, py2)
    if geometry == "look":
        s, x1, cy = u(0.5, 0.9) * pw, px2 + u(0.6, 1.2) * pw, py1 + u(0.1, 0.2) * ph
        return (x1, cy - s / 2, x1 + s, cy + s / 2)
    if geometry == "no_interaction":
        w, h = u(0.6, 1.4) * pw, u(0.3, 0.8) * ph
        gap = u(1.5, 2.5) * pw
        x1 = px2 + gap if rng.rand() < 0.5 else px1 - gap - w
        y1 = u(0, HEIGHT - h)
        return (x1, y1, x1 + w, y1 + h)
    raise ValueError(f"unknown geometry {geometry!r}")
