"""A deterministic, tiny, synthetic copy of the native PSG + Haystack layout, for tests and ``hoi-bench demo``.

Layout written under ``root`` (the same one :mod:`haystack_dataset.builder` expects of a real copy)::

    coco/train2017/000000100001.jpg ...        tiny RGB images (train split of PSG)
    coco/val2017/000000100025.jpg ...          tiny RGB images (PSG test split, also the Haystack images)
    coco/panoptic_train2017/*.png, coco/panoptic_val2017/*.png   panoptic PNGs, id = R + 256·G + 256²·B
    psg/psg.json                               PSG format: string image ids, test_image_ids, 0-based predicates
    haystack/annotation_v1.json                Haystack format: numeric ids, neg_relations, some -1 entries

Scenes are a sky band, a ground band (grass or pavement) and two to four "thing" rectangles in separate
columns. Relations follow object-class rules (a person rides a horse, a dog runs on grass ...) with random choices,
so a frequency prior learned on the train split carries real signal to the test split. Haystack re-annotates
the PSG test images: for every rule pair, the chosen predicate is positive and the rule's alternatives are
negative; some unrelated pairs get explicit negatives. Class names are the real PSG lists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from haystack_dataset.formats import (
    HAYSTACK_FILE,
    IMAGE_ROOT,
    NO_PREDICATE,
    PSG_FILE,
    id_to_rgb,
    psg_classes,
)
from hoi_bench.files import write_json_atomic
from hoi_bench.hub import staged_replace

WIDTH, HEIGHT = 48, 32
NUM_TRAIN, NUM_TEST = 24, 8
FIRST_ID = 100001

_THINGS = ["person", "person", "person", "dog", "horse", "bench", "bicycle", "frisbee"]
_GROUNDS = ["grass-merged", "pavement-merged"]
_SKY = "sky-other-merged"

# (subject class, object class) -> predicates the pair may have; the first listed is the most frequent.
_RULES: dict[tuple[str, str], list[str]] = {
    ("person", "horse"): ["riding", "standing on"],
    ("person", "bicycle"): ["riding", "leaning on"],
    ("person", "bench"): ["sitting on", "standing on"],
    ("person", "frisbee"): ["holding", "throwing"],
    ("person", "dog"): ["looking at", "playing with"],
    ("person", "person"): ["beside", "looking at"],
    ("dog", "frisbee"): ["catching", "chasing"],
    ("dog", "person"): ["looking at", "chasing"],
    ("person", "grass-merged"): ["standing on", "walking on"],
    ("person", "pavement-merged"): ["walking on", "standing on"],
    ("dog", "grass-merged"): ["running on", "standing on"],
    ("dog", "pavement-merged"): ["running on", "walking on"],
    ("horse", "grass-merged"): ["standing on", "running on"],
    ("bench", "grass-merged"): ["on"],
    ("bench", "pavement-merged"): ["on"],
    ("bicycle", "pavement-merged"): ["on", "parked on"],
    ("bicycle", "grass-merged"): ["on", "parked on"],
}
_COLOURS = {"person": (200, 150, 120), "dog": (140, 90, 40), "horse": (110, 70, 30), "bench": (90, 90, 90),
            "bicycle": (30, 30, 200), "frisbee": (230, 30, 30), "grass-merged": (40, 160, 40),
            "pavement-merged": (150, 150, 150), _SKY: (120, 180, 240)}


@dataclass(frozen=True)
class SampleLayout:
    """Where :func:`write_sample` put things."""

    root: Path
    psg_file: Path
    haystack_file: Path
    image_root: Path
    test_image_ids: tuple[str, ...]


def write_sample(root: str | os.PathLike, seed: int = 0) -> SampleLayout:
    """Write the synthetic native layout into ``root`` (replaced atomically) and return where things are.

    The same ``seed`` always gives byte-identical JSON files.

    >>> import tempfile
    >>> layout = write_sample(tempfile.mkdtemp())
    >>> sorted(p.name for p in layout.root.iterdir())
    ['coco', 'haystack', 'psg']
    >>> len(layout.test_image_ids)
    8
    """
    root = Path(root)
    classes = psg_classes()
    objects = classes["thing_classes"] + classes["stuff_classes"]
    predicates = classes["predicate_classes"]
    rng = np.random.default_rng(seed)
    psg_records, haystack_records, test_ids = [], [], []
    with staged_replace(root) as stage:
        for index in range(NUM_TRAIN + NUM_TEST):
            is_test = index >= NUM_TRAIN
            number = FIRST_ID + index
            folder = "val2017" if is_test else "train2017"
            scene = _scene(rng)
            record = _write_image(stage / IMAGE_ROOT, folder, number, scene, objects)
            relations = _positive_relations(scene, rng, predicates)
            psg_records.append({**record, "image_id": str(number), "coco_image_id": str(number),
                                "relations": relations})
            if is_test:
                test_ids.append(str(number))
                haystack_records.append({**record, "image_id": number,
                                         **_haystack_relations(scene, relations, rng, predicates)})
        psg = {**{k: classes[k] for k in ("thing_classes", "stuff_classes", "predicate_classes")},
               "data": psg_records, "test_image_ids": test_ids}
        haystack = {**{k: classes[k] for k in ("thing_classes", "stuff_classes", "predicate_classes")},
                    "data": haystack_records}
        write_json_atomic(stage / PSG_FILE, psg)
        write_json_atomic(stage / HAYSTACK_FILE, haystack)
    return SampleLayout(root, root / PSG_FILE, root / HAYSTACK_FILE, root / IMAGE_ROOT, tuple(test_ids))


def _scene(rng: np.random.Generator) -> list[str]:
    """Class names of the segments: things first (one per column), then ground and sky."""
    count = int(rng.integers(2, 5))
    things = ["person"] + [str(c) for c in rng.choice(_THINGS, size=count - 1)]
    return things + [str(rng.choice(_GROUNDS)), _SKY]


def _write_image(image_root: Path, folder: str, number: int, scene: list[str], objects: list[str]) -> dict:
    ids = np.zeros((HEIGHT, WIDTH), dtype=np.uint32)
    rgb = np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
    num_things = len(scene) - 2
    layers = [(scene[-1], (0, 0, WIDTH, HEIGHT // 2)), (scene[-2], (0, HEIGHT // 2, WIDTH, HEIGHT))]
    column = WIDTH // num_things
    for position in range(num_things):
        top = 4 + (number + position) % 6
        layers.append((scene[position], (position * column + 2, top, (position + 1) * column - 2, HEIGHT - 3)))
    segment_ids = [1000 * (number % 97 + 1) + 10 * k + 1 for k in range(len(scene))]
    order = [len(scene) - 1, len(scene) - 2] + list(range(num_things))
    for layer, k in zip(layers, order):
        name, (x1, y1, x2, y2) = layer
        ids[y1:y2, x1:x2] = segment_ids[k]
        rgb[y1:y2, x1:x2] = _COLOURS[name]
    stem = f"{number:012d}"
    (image_root / folder).mkdir(parents=True, exist_ok=True)
    (image_root / f"panoptic_{folder}").mkdir(parents=True, exist_ok=True)
    Image.fromarray(rgb).save(image_root / folder / f"{stem}.jpg", quality=90)
    Image.fromarray(id_to_rgb(ids)).save(image_root / f"panoptic_{folder}" / f"{stem}.png")
    segments, annotations = [], []
    for k, name in enumerate(scene):
        ys, xs = np.nonzero(ids == segment_ids[k])
        category = objects.index(name)
        isthing = int(category < 80)
        segments.append({"id": segment_ids[k], "category_id": category, "iscrowd": 0, "isthing": isthing,
                         "area": len(xs)})
        annotations.append({"bbox": [float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)],
                            "bbox_mode": 0, "category_id": category})
    return {"file_name": f"{folder}/{stem}.jpg", "height": HEIGHT, "width": WIDTH,
            "pan_seg_file_name": f"panoptic_{folder}/{stem}.png", "segments_info": segments,
            "annotations": annotations}


def _rule_pairs(scene: list[str]) -> list[tuple[int, int, list[str]]]:
    return [(s, o, _RULES[(scene[s], scene[o])]) for s in range(len(scene)) for o in range(len(scene))
            if s != o and (scene[s], scene[o]) in _RULES]


def _positive_relations(scene: list[str], rng: np.random.Generator, predicates: list[str]) -> list[list[int]]:
    relations = []
    for s, o, options in _rule_pairs(scene):
        if rng.random() < 0.85:
            weights = np.array([3.0] + [1.0] * (len(options) - 1))
            name = options[int(rng.choice(len(options), p=weights / weights.sum()))]
            relations.append([s, o, predicates.index(name)])
    if not relations:
        s, o, options = _rule_pairs(scene)[0]
        relations.append([s, o, predicates.index(options[0])])
    return relations


def _haystack_relations(scene: list[str], relations: list[list[int]], rng: np.random.Generator,
                        predicates: list[str]) -> dict:
    """Positives = PSG relations; negatives = each rule pair's other options plus spot checks on other pairs."""
    positives = [list(r) for r in relations]
    negatives = []
    labelled = {(s, o): p for s, o, p in relations}
    for s, o, options in _rule_pairs(scene):
        chosen = labelled.get((s, o))
        for name in options:
            p = predicates.index(name)
            if p != chosen:
                negatives.append([s, o, p])
    others = [(s, o) for s in range(len(scene)) for o in range(len(scene)) if s != o and (s, o) not in labelled]
    for s, o in others[: int(rng.integers(1, 4))]:
        negatives.append([s, o, predicates.index(str(rng.choice(["on", "riding", "sitting on", "holding"])))])
    if others:
        negatives.append([others[-1][0], others[-1][1], NO_PREDICATE])
    return {"relations": positives, "neg_relations": negatives}
