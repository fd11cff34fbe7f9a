"""A deterministic, tiny, synthetic copy of the Bongard-HOI on-disk layout, for tests and ``hoi-bench demo``.

The layout is the one the builder reads::

    <root>/bongard_hoi_release/bongard_hoi_<split>.json        the nine episode files
    <root>/images/hake_images_20190730/HOI_PVP_*.jpg            HAKE image folders, as in bongard_hoi_images.tar
    <root>/images/hico_20160224_det/images/train2015/*.jpg
    <root>/images/vcoco/train2014/*.jpg
    <root>/images/openimages/images/*.jpg                       annotated in the 1/1.6 frame (the upstream quirk)
    <root>/images/pic/image/train/*.jpg                         some referenced as pic/image/val/ (the path swap)

Pictures are drawn, not photographed: a person box, an object box in the object's colour, and the action as a
coloured band on the person plus a line to the object, so a few-shot model can learn the concepts. Images
recur across episodes, as they do in the release.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from bongard_hoi.formats import SHOTS, Episode, EpisodeImage, episode_file_name, write_episode_file
from hoi_bench.hub import staged_replace

ANNOTATION_DIR = "bongard_hoi_release"
IMAGE_DIR = "images"
SEED = 2022

SEEN_OBJECTS = ("orange", "horse")
SEEN_ACTIONS = ("eat", "peel", "hold", "ride", "wash", "no_interaction")
ACTIONS_OF_OBJECT = {
    "orange": ("eat", "peel", "hold", "wash", "squeeze", "no_interaction"),
    "horse": ("ride", "hold", "wash", "jump", "no_interaction"),
    "tennis_racket": ("swing", "hold", "no_interaction"),
    "wine_glass": ("toast", "hold", "no_interaction"),
}
OBJECT_COLOURS = {"orange": (240, 140, 20), "horse": (120, 70, 30), "tennis_racket": (40, 200, 60),
                  "wine_glass": (170, 200, 240)}
ACTION_COLOURS = {"eat": (220, 30, 30), "peel": (250, 230, 40), "hold": (30, 60, 220), "ride": (200, 40, 200),
                  "wash": (20, 200, 200), "squeeze": (255, 255, 255), "jump": (0, 0, 0), "swing": (255, 120, 180),
                  "toast": (120, 255, 120), "no_interaction": (128, 128, 128)}
CONCEPTS = {
    "train": ("eat++orange", "peel++orange", "hold++orange", "ride++horse", "hold++horse", "wash++horse"),
    "seen_obj_seen_act": ("eat++orange", "ride++horse"),
    "seen_obj_unseen_act": ("squeeze++orange", "jump++horse"),
    "unseen_obj_seen_act": ("hold++tennis_racket", "hold++wine_glass"),
    "unseen_obj_unseen_act": ("swing++tennis_racket", "toast++wine_glass"),
}
TRAIN_EPISODES = 24
EVAL_EPISODES = 4
POOL_SIZE = 9
SAMPLE_EPISODE_COUNTS = {"train": TRAIN_EPISODES, **{f"{role}_{kind}": EVAL_EPISODES
                                                     for role in ("val", "test") for kind in list(CONCEPTS)[1:]}}
_FOLDERS = ("hake", "hico", "vcoco", "openimages", "pic")


@dataclass(frozen=True)
class _Picture:
    """A drawn picture on disk and its true (full-resolution) geometry."""

    relative_path: str  # as the episode file writes it (may name the other pic folder)
    stored_path: str  # where the file really is
    crop: tuple[int, int, int, int]
    sub: tuple[int, int, int, int]
    obj: tuple[int, int, int, int]
    action: str
    object: str


def training_ids() -> tuple[dict[str, int], dict[str, int]]:
    """``(action ids, object ids)`` of the sample's training vocabulary; other classes get -1."""
    return ({a: i for i, a in enumerate(SEEN_ACTIONS)}, {o: i for i, o in enumerate(SEEN_OBJECTS)})


def write_sample(root: str | os.PathLike, *, seed: int = SEED) -> Path:
    """Write the sample layout into ``root`` (replacing it) and return ``root``; same seed, same bytes."""
    root = Path(root)
    with staged_replace(root) as stage:
        rng = np.random.default_rng(seed)
        counter = iter(range(10**6))
        episodes: dict[str, list[Episode]] = {}
        for role in ("train", "val", "test"):
            pools: dict[tuple[str, str], list[_Picture]] = {}
            kinds = ["train"] if role == "train" else list(CONCEPTS)[1:]
            for kind in kinds:
                split = "train" if role == "train" else f"{role}_{kind}"
                count = TRAIN_EPISODES if role == "train" else EVAL_EPISODES
                concepts = CONCEPTS[kind]
                episodes[split] = [
                    _episode(concepts[i % len(concepts)], pools, stage / IMAGE_DIR, rng, counter)
                    for i in range(count)
                ]
        for split, split_episodes in episodes.items():
            write_episode_file(stage / ANNOTATION_DIR / episode_file_name(split), split_episodes)
    return root


def _episode(concept: str, pools, image_root: Path, rng, counter) -> Episode:
    action, obj = concept.split("++")
    positives = _draw(pools, (action, obj), SHOTS + 1, image_root, rng, counter)
    others = [a for a in ACTIONS_OF_OBJECT[obj] if a != action]
    negative_actions = [others[i] for i in rng.integers(0, len(others), SHOTS + 1)]
    negatives = []
    for negative_action in sorted(set(negative_actions)):
        negatives += _draw(pools, (negative_action, obj), negative_actions.count(negative_action), image_root, rng,
                           counter)
    order = rng.permutation(len(negatives))
    return Episode(tuple(_record(p) for p in positives), tuple(_record(negatives[i]) for i in order), concept)


def _draw(pools, key, count: int, image_root: Path, rng, counter) -> list[_Picture]:
    pool = pools.setdefault(key, [])
    while len(pool) < POOL_SIZE:
        pool.append(_paint(key[0], key[1], image_root, rng, next(counter)))
    return [pool[i] for i in rng.choice(len(pool), size=count, replace=False)]


def _paint(action: str, obj: str, image_root: Path, rng, number: int) -> _Picture:
    folder = _FOLDERS[number % len(_FOLDERS)]
    width, height = 8 * int(rng.integers(12, 21)), 8 * int(rng.integers(10, 17))
    sub_w, sub_h = 8 * int(rng.integers(3, 6)), 8 * int(rng.integers(5, 9))
    sx, sy = 8 * int(rng.integers(0, (width - sub_w) // 8 + 1)), 8 * int(rng.integers(0, (height - sub_h) // 8 + 1))
    obj_w, obj_h = 8 * int(rng.integers(2, 4)), 8 * int(rng.integers(2, 4))
    ox = 8 * int(rng.integers(0, (width - obj_w) // 8 + 1))
    oy = 8 * int(rng.integers(0, (height - obj_h) // 8 + 1))
    sub, obj_box = (sx, sy, sx + sub_w, sy + sub_h), (ox, oy, ox + obj_w, oy + obj_h)
    margin = 8
    crop = (max(min(sx, ox) - margin, 0), max(min(sy, oy) - margin, 0),
            min(max(sx + sub_w, ox + obj_w) + margin, width), min(max(sy + sub_h, oy + obj_h) + margin, height))

    pixels = (rng.integers(0, 60, (height // 8, width // 8, 3)) + 90).astype(np.uint8)
    picture = Image.fromarray(pixels).resize((width, height), Image.Resampling.BILINEAR)
    draw = ImageDraw.Draw(picture)
    draw.rectangle([sub[0], sub[1], sub[2] - 1, sub[3] - 1], fill=(235, 200, 170), outline=(60, 40, 30))
    draw.rectangle([sub[0], sub[1], sub[2] - 1, sub[1] + 7], fill=ACTION_COLOURS[action])
    draw.ellipse([obj_box[0], obj_box[1], obj_box[2] - 1, obj_box[3] - 1], fill=OBJECT_COLOURS[obj])
    draw.line([_centre(sub), _centre(obj_box)], fill=ACTION_COLOURS[action], width=3)

    token = hashlib.sha1(f"{number}".encode()).hexdigest()
    stored = {
        "hake": f"hake_images_20190730/HOI_PVP_{number:08d}.jpg",
        "hico": f"hico_20160224_det/images/train2015/HICO_train2015_{number:08d}.jpg",
        "vcoco": f"vcoco/train2014/COCO_train2014_{number:012d}.jpg",
        "openimages": f"openimages/images/{token[:16]}.jpg",
        "pic": f"pic/image/train/{number}.jpg",
    }[folder]
    relative = stored.replace("pic/image/train/", "pic/image/val/") if folder == "pic" and number % 2 else stored
    target = image_root / stored
    target.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    picture.save(buffer, format="JPEG", quality=90)
    target.write_bytes(buffer.getvalue())
    if folder == "openimages" and crop[2] == width:
        crop = (crop[0], crop[1], width + 8, crop[3])  # annotated past the border: the fix must clamp it
    return _Picture(relative, stored, crop, sub, obj_box, action, obj)


def _centre(box: tuple[int, int, int, int]) -> tuple[int, int]:
    return (box[0] + box[2]) // 2, (box[1] + box[3]) // 2


def _record(picture: _Picture) -> EpisodeImage:
    """The episode dict as the release writes it (openimages coordinates in the 1/1.6 frame)."""
    action_ids, object_ids = training_ids()
    cx, cy = picture.crop[0], picture.crop[1]
    sub = (picture.sub[0] - cx, picture.sub[1] - cy, picture.sub[2] - cx, picture.sub[3] - cy)
    obj = (picture.obj[0] - cx, picture.obj[1] - cy, picture.obj[2] - cx, picture.obj[3] - cy)
    crop = picture.crop
    if "openimages" in picture.relative_path:
        crop, sub, obj = (tuple(v * 5 // 8 for v in box) for box in (crop, sub, obj))
    return EpisodeImage(f"./{picture.relative_path}", crop, sub, obj, "person", picture.object, picture.action,
                        object_ids.get(picture.object, -1), 1, action_ids.get(picture.action, -1))
