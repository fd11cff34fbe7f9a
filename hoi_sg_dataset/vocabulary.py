"""The label vocabularies of HICO-DET and V-COCO, in the id spaces their annotation files use.

Raw ids are kept as upstream writes them: COCO object ids 1..90 with gaps (80 used), HICO verb ids 1..117,
HICO HOI class ids 1..600, V-COCO verb ids 0..28 (QPIC order). ``ClassLabel`` features need contiguous
indices, so each vocabulary also maps raw ids to and from label indices.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import numpy as np


@dataclass(frozen=True)
class Vocabulary:
    """Label names with their raw upstream ids; ``index`` is the position used by ``ClassLabel``."""

    names: tuple[str, ...]
    raw_ids: tuple[int, ...]
    _index: dict[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {raw: i for i, raw in enumerate(self.raw_ids)})

    def index(self, raw_id: int) -> int:
        """ClassLabel index of ``raw_id``; raises ``KeyError`` for an id outside the vocabulary."""
        return self._index[raw_id]

    def raw_id(self, index: int) -> int:
        return self.raw_ids[index]

    def name_of(self, raw_id: int) -> str:
        return self.names[self._index[raw_id]]

    def __contains__(self, raw_id: object) -> bool:
        return raw_id in self._index

    def __len__(self) -> int:
        return len(self.names)

    def contains(self, values: np.ndarray) -> np.ndarray:
        """Boolean array: whether each raw id of the integer array ``values`` is in the vocabulary (a table
        lookup, for checking whole columns of ids at once).

        >>> Vocabulary(("a", "b"), (1, 3)).contains(np.array([0, 1, 3, 7, -1])).tolist()
        [False, True, True, False, False]
        """
        table = np.zeros(max(self.raw_ids, default=-1) + 1, dtype=bool)
        table[list(self.raw_ids)] = True
        inside = (values >= 0) & (values < len(table))
        return inside & table[np.where(inside, values, 0)]


@dataclass(frozen=True)
class HoiClass:
    """One of the 600 HICO-DET HOI classes: a (verb, object) combination."""

    hoi_id: int
    verb_id: int
    object_id: int


@lru_cache(maxsize=1)
def _raw() -> dict:
    text = resources.files("hoi_sg_dataset").joinpath("data/vocabulary.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def coco_objects() -> Vocabulary:
    """The 80 COCO object categories with their raw ids (1 = person, ..., 90 = toothbrush).

    >>> objects = coco_objects()
    >>> len(objects), objects.name_of(1), objects.name_of(90), 12 in objects
    (80, 'person', 'toothbrush', False)
    """
    names = _raw()["coco_categories"]
    used = [(i, n) for i, n in enumerate(names) if n != "N/A"]
    return Vocabulary(tuple(n for _, n in used), tuple(i for i, _ in used))


@lru_cache(maxsize=1)
def hico_verbs() -> Vocabulary:
    """The 117 HICO-DET verbs with raw ids 1..117.

    >>> hico_verbs().name_of(88), len(hico_verbs())
    ('sit_on', 117)
    """
    names = _raw()["hico_verbs"]
    return Vocabulary(tuple(names), tuple(range(1, len(names) + 1)))


@lru_cache(maxsize=1)
def vcoco_verbs() -> Vocabulary:
    """The 29 V-COCO verb roles with raw ids 0..28 (QPIC order).

    >>> vcoco_verbs().name_of(0), vcoco_verbs().name_of(28)
    ('hold_obj', 'snowboard_instr')
    """
    names = _raw()["vcoco_verbs"]
    return Vocabulary(tuple(names), tuple(range(len(names))))


@lru_cache(maxsize=1)
def hico_hoi_classes() -> tuple[HoiClass, ...]:
    """The 600 HICO-DET HOI classes, ``hoi_id`` 1..600 in the official order.

    >>> c = hico_hoi_classes()[241]
    >>> c.hoi_id, hico_verbs().name_of(c.verb_id), coco_objects().name_of(c.object_id)
    (242, 'sit_on', 'bed')
    """
    return tuple(HoiClass(*row) for row in _raw()["hico_hois"])


@lru_cache(maxsize=1)
def hico_hoi_lookup() -> dict[tuple[int, int], int]:
    """``(verb_id, object_id) -> hoi_id`` for the 600 HICO-DET classes."""
    return {(c.verb_id, c.object_id): c.hoi_id for c in hico_hoi_classes()}


def hico_hoi_names() -> list[str]:
    """``"<verb> <object>"`` names of the 600 HOI classes, index = hoi_id - 1 (for ``ClassLabel``)."""
    verbs, objects = hico_verbs(), coco_objects()
    return [f"{verbs.name_of(c.verb_id)} {objects.name_of(c.object_id)}" for c in hico_hoi_classes()]
