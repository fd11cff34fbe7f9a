"""Read, validate and write the official Bongard-HOI episode files (``bongard_hoi_<split>.json``).

A file is a JSON list of episodes; an episode is the 3-element list ``[positives, negatives, concept]``. Each side
holds 7 image dicts, the last being that side's query. ``concept`` is ``"act++obj"`` in the official release and
an integer id in a third-party "clean" variant; both are accepted. Image dicts carry ``im_path`` (relative to
the image root, normally starting with ``./``), ``crop_bbox`` (xyxy pixels of the original image), ``sub_bbox`` /
``obj_bbox`` (xyxy pixels relative to the crop), class names, and training-vocabulary ids that are -1 for
classes unseen in training, so names, not ids, are the labels.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi_bench.errors import ConfigError, FormatError
from hoi_bench.files import read_bytes, read_json, write_text_atomic

SHOTS = 6
SIDE_SIZE = SHOTS + 1
SPLITS = (
    "train",
    "val_seen_obj_seen_act",
    "val_seen_obj_unseen_act",
    "val_unseen_obj_seen_act",
    "val_unseen_obj_unseen_act",
    "test_seen_obj_seen_act",
    "test_seen_obj_unseen_act",
    "test_unseen_obj_seen_act",
    "test_unseen_obj_unseen_act",
)
TEST_SPLITS = tuple(s for s in SPLITS if s.startswith("test_"))
VAL_SPLITS = tuple(s for s in SPLITS if s.startswith("val_"))
IMAGE_KEYS = ("im_path", "crop_bbox", "sub_bbox", "obj_bbox", "sub_class", "obj_class", "act_class",
              "obj_id", "sub_id", "act_id")
_BOX_KEYS = ("crop_bbox", "sub_bbox", "obj_bbox")
_CLASS_KEYS = ("sub_class", "obj_class", "act_class")
_ID_KEYS = ("obj_id", "sub_id", "act_id")


def episode_file_name(split: str) -> str:
    """The official file name of ``split``.

    >>> episode_file_name("test_unseen_obj_seen_act")
    'bongard_hoi_test_unseen_obj_seen_act.json'
    """
    return f"bongard_hoi_{split}.json"


def split_of_file(path: str | os.PathLike) -> str:
    """The split name of an episode file: its name without ``bongard_hoi_`` and ``.json``.

    >>> split_of_file("cache/bongard_hoi_release/bongard_hoi_val_seen_obj_unseen_act.json")
    'val_seen_obj_unseen_act'
    """
    name = Path(path).name
    if not (name.startswith("bongard_hoi_") and name.endswith(".json")):
        raise ConfigError("episode file name", name, [episode_file_name(s) for s in SPLITS])
    return name[len("bongard_hoi_"):-len(".json")]


def split_name(role: str, object_seen: bool, action_seen: bool) -> str:
    """The split a concept falls in for ``role`` ``"val"`` or ``"test"``, by whether its object and action are seen.

    >>> split_name("test", object_seen=True, action_seen=False)
    'test_seen_obj_unseen_act'
    """
    if role not in ("val", "test"):
        raise ConfigError("split role", role, ["val", "test"])
    obj = "seen" if object_seen else "unseen"
    act = "seen" if action_seen else "unseen"
    return f"{role}_{obj}_obj_{act}_act"


@dataclass(frozen=True)
class EpisodeImage:
    """One image of an episode, as the official dict describes it (boxes exactly as written in the file)."""

    im_path: str
    crop_bbox: tuple[float, float, float, float]
    sub_bbox: tuple[float, float, float, float]
    obj_bbox: tuple[float, float, float, float]
    sub_class: str
    obj_class: str
    act_class: str
    obj_id: int
    sub_id: int
    act_id: int

    @property
    def relative_path(self) -> str:
        """``im_path`` without the leading ``./`` (some third-party files omit it)."""
        return self.im_path.removeprefix("./")

    def to_json(self) -> dict[str, Any]:
        """The official dict, keys in the release's order."""
        return {key: list(value) if key in _BOX_KEYS else value
                for key, value in ((k, getattr(self, k)) for k in IMAGE_KEYS)}


@dataclass(frozen=True)
class Episode:
    """``[positives(7), negatives(7), concept]``; the last image of each side is its query."""

    positives: tuple[EpisodeImage, ...]
    negatives: tuple[EpisodeImage, ...]
    concept: str | int

    @property
    def positive_shots(self) -> tuple[EpisodeImage, ...]:
        return self.positives[:-1]

    @property
    def negative_shots(self) -> tuple[EpisodeImage, ...]:
        return self.negatives[:-1]

    @property
    def positive_query(self) -> EpisodeImage:
        return self.positives[-1]

    @property
    def negative_query(self) -> EpisodeImage:
        return self.negatives[-1]

    @property
    def action(self) -> str:
        """The concept's action: from ``"act++obj"``, or the most common positive action for an integer concept."""
        if isinstance(self.concept, str):
            return self.concept.split("++", 1)[0]
        return Counter(image.act_class for image in self.positives).most_common(1)[0][0]

    @property
    def object(self) -> str:
        """The concept's object: from ``"act++obj"``, or the most common positive object for an integer concept."""
        if isinstance(self.concept, str):
            return self.concept.split("++", 1)[1]
        return Counter(image.obj_class for image in self.positives).most_common(1)[0][0]

    @property
    def concept_name(self) -> str:
        """``"act++obj"`` whichever variant the file uses."""
        return f"{self.action}++{self.object}"

    def images(self) -> tuple[EpisodeImage, ...]:
        return self.positives + self.negatives

    def to_json(self) -> list:
        return [[i.to_json() for i in self.positives], [i.to_json() for i in self.negatives], self.concept]


def parse_episodes(data: Any, file: str | os.PathLike = "<episodes>", *, side_size: int = SIDE_SIZE) -> list[Episode]:
    """Validated ``Episode`` records from the decoded JSON of an episode file.

    >>> image = {"im_path": "./a.jpg", "crop_bbox": [0, 0, 10, 10], "sub_bbox": [0, 0, 5, 5],
    ...          "obj_bbox": [5, 5, 9, 9], "sub_class": "person", "obj_class": "orange", "act_class": "eat",
    ...          "obj_id": 33, "sub_id": 1, "act_id": 17}
    >>> [episode] = parse_episodes([[[image] * 7, [dict(image, act_class="peel")] * 7, "eat++orange"]])
    >>> episode.action, episode.object, episode.negative_query.act_class
    ('eat', 'orange', 'peel')
    """
    file = str(file)
    if not isinstance(data, list):
        raise FormatError(file, "an episode file is a JSON list of episodes", expected="list",
                          found=type(data).__name__)
    return [_parse_episode(item, file, index, side_size) for index, item in enumerate(data)]


def _parse_episode(item: Any, file: str, index: int, side_size: int) -> Episode:
    if not isinstance(item, list) or len(item) != 3:
        raise FormatError(file, "an episode is [positives, negatives, concept]", record=index,
                          expected="a 3-element list", found=item if not isinstance(item, list) else f"{len(item)} elements")
    positives, negatives, concept = item
    if isinstance(concept, bool) or not isinstance(concept, (str, int)):
        raise FormatError(file, "bad concept", record=index, field="[2]", expected='"act++obj" or an integer id',
                          found=concept)
    if isinstance(concept, str) and (concept.count("++") != 1 or not all(concept.split("++"))):
        raise FormatError(file, "bad concept", record=index, field="[2]", expected='"act++obj"', found=concept)
    sides = []
    for side_index, (side, images) in enumerate((("positives", positives), ("negatives", negatives))):
        if not isinstance(images, list) or len(images) != side_size:
            raise FormatError(file, f"{side} must hold {side_size - 1} shots and 1 query", record=index,
                              field=f"[{side_index}]", expected=f"a list of {side_size} image dicts",
                              found=images if not isinstance(images, list) else f"{len(images)} items")
        sides.append(tuple(_parse_image(image, file, index, f"[{side_index}][{i}]") for i, image in enumerate(images)))
    return Episode(sides[0], sides[1], concept)


def _parse_image(image: Any, file: str, record: int, where: str) -> EpisodeImage:
    if not isinstance(image, dict):
        raise FormatError(file, "an episode image is a dict", record=record, field=where, expected="dict",
                          found=image)
    missing = [key for key in IMAGE_KEYS if key not in image]
    if missing:
        raise FormatError(file, "image dict lacks keys", record=record, field=where, expected=", ".join(IMAGE_KEYS),
                          found=f"missing {', '.join(missing)}")
    if not isinstance(image["im_path"], str) or not image["im_path"]:
        raise FormatError(file, "bad image path", record=record, field=f"{where}.im_path",
                          expected="a non-empty string", found=image["im_path"])
    values: dict[str, Any] = {"im_path": image["im_path"]}
    for key in _BOX_KEYS:
        box = image[key]
        if (not isinstance(box, list) or len(box) != 4
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in box)):
            raise FormatError(file, "bad box", record=record, field=f"{where}.{key}", expected="4 finite numbers",
                              found=box)
        if box[2] < box[0] or box[3] < box[1]:
            raise FormatError(file, "bad box", record=record, field=f"{where}.{key}", expected="x1 <= x2 and y1 <= y2",
                              found=box)
        values[key] = tuple(box)
    for key in _CLASS_KEYS:
        if not isinstance(image[key], str) or not image[key]:
            raise FormatError(file, "bad class name", record=record, field=f"{where}.{key}",
                              expected="a non-empty string", found=image[key])
        values[key] = image[key]
    for key in _ID_KEYS:
        if isinstance(image[key], bool) or not isinstance(image[key], int) or image[key] < -1:
            raise FormatError(file, "bad training-vocabulary id", record=record, field=f"{where}.{key}",
                              expected="an integer >= -1 (-1 = unseen in training)", found=image[key])
        values[key] = image[key]
    return EpisodeImage(**values)


def read_episode_file(path: str | os.PathLike) -> list[Episode]:
    """Parse and validate one official episode file.

    The bytes are decoded by msgspec into typed records whose types carry most of the checks (compiled code,
    about 8x faster than ``json`` plus Python checks on a full test file); the rest (box corner order, the
    concept's ``act++obj`` form) are checked on the decoded records. A file failing anything is parsed again
    by :func:`parse_episodes`, which words the error (file, episode, field, expected, found) as it always has.
    """
    path = Path(path)
    typed = _decode_typed(read_bytes(path, "episode file"))
    if typed is None:
        return parse_episodes(read_json(path, what="episode file"), path)
    return [Episode(tuple(_episode_image(i) for i in positives), tuple(_episode_image(i) for i in negatives),
                    concept) for positives, negatives, concept in typed]


def count_episodes(path: str | os.PathLike) -> int:
    """The number of episodes of an episode file, which is validated exactly as :func:`read_episode_file` does
    (without building its records: what ``evaluate bongard_accuracy`` needs from the reference files)."""
    path = Path(path)
    typed = _decode_typed(read_bytes(path, "episode file"))
    return len(read_episode_file(path)) if typed is None else len(typed)


def _episode_image(record) -> EpisodeImage:
    return EpisodeImage(record.im_path, record.crop_bbox, record.sub_bbox, record.obj_bbox, record.sub_class,
                        record.obj_class, record.act_class, record.obj_id, record.sub_id, record.act_id)


def _decode_typed(data: bytes, side_size: int = SIDE_SIZE) -> list | None:
    """``[(positives, negatives, concept)]`` of typed image records, or ``None`` when any check fails."""
    import msgspec

    try:
        episodes = _typed_decoder(side_size).decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    for positives, negatives, concept in episodes:
        if isinstance(concept, str) and (concept.count("++") != 1 or not all(concept.split("++"))):
            return None
        for side in (positives, negatives):
            for image in side:
                for x1, y1, x2, y2 in (image.crop_bbox, image.sub_bbox, image.obj_bbox):
                    if x2 < x1 or y2 < y1:
                        return None
    return episodes


@functools.lru_cache(maxsize=4)
def _typed_decoder(side_size: int):
    """A msgspec decoder of episode files whose types hold :func:`parse_episodes`'s per-field checks:
    non-empty strings, ids >= -1, four finite numbers (not booleans) per box, ``side_size`` images per side, a
    string or integer concept."""
    from typing import Annotated

    import msgspec

    name = Annotated[str, msgspec.Meta(min_length=1)]
    vocabulary_id = Annotated[int, msgspec.Meta(ge=-1)]
    box = tuple[int | float, int | float, int | float, int | float]  # JSON has no NaN; 1e400 fails to decode

    types = {"im_path": name, "sub_class": name, "obj_class": name, "act_class": name,
             **dict.fromkeys(_BOX_KEYS, box), **dict.fromkeys(_ID_KEYS, vocabulary_id)}
    typed_image = msgspec.defstruct("TypedImage", [(key, types[key]) for key in IMAGE_KEYS], gc=False)
    side = Annotated[list[typed_image], msgspec.Meta(min_length=side_size, max_length=side_size)]
    return msgspec.json.Decoder(list[tuple[side, side, str | int]])


def dumps_episodes(episodes: Sequence[Episode]) -> str:
    """The file text: plain ``json.dumps`` of the episode lists, as the official release writes it."""
    return json.dumps([episode.to_json() for episode in episodes])


def write_episode_file(path: str | os.PathLike, episodes: Iterable[Episode]) -> Path:
    """Write ``episodes`` in the official format; the file appears only once completely written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(path, dumps_episodes(list(episodes)))
