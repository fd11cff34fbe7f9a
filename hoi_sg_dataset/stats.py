"""Statistics of an annotation or split file: what Table 1 of the HICO-DET-SG / V-COCO-SG paper reports.

``images`` and ``hoi_triplets`` (HOI instances) are Table 1's columns; ``combinations`` counts the distinct
(object, verb) pairs of HOIs with an object. For V-COCO-SG test files ``quirk_combinations`` adds the pairs
that the official generator's last-box quirk gave to HOIs without object (``splits`` module docstring).

>>> from hoi_sg_dataset.formats import parse_annotations
>>> records = parse_annotations([{"file_name": "HICO_test2015_00000002.jpg",
...     "annotations": [{"bbox": [1, 2, 30, 40], "category_id": 1},
...                     {"bbox": [5, 6, 70, 80], "category_id": 19}],
...     "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 77}]}], "hico")
>>> s = split_stats(records, "hico")
>>> s.images, s.hoi_triplets, s.combinations, s.images_per_origin
(1, 1, 1, {'test2015': 1})
>>> combination_names([(19, 77)], "hico")
['ride horse']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from hoi_sg_dataset.formats import Dataset, ImageRecord
from hoi_sg_dataset.splits import Combination, combinations_of
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_lookup, hico_verbs, vcoco_verbs


@dataclass
class SplitStats:
    """Counts of one annotation file; ``as_dict`` gives the JSON that ``hoi-bench stats --json`` prints."""

    dataset: str
    images: int
    hoi_triplets: int
    combinations: int
    boxes: int
    no_object_hois: int
    empty_images: int
    quirk_combinations: int
    images_per_origin: dict[str, int] = field(default_factory=dict)
    verbs: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def split_stats(records: Sequence[ImageRecord], dataset: Dataset) -> SplitStats:
    """Table 1 counts (and a few more) of ``records``."""
    combos = set(combinations_of(records))
    quirk = set()
    verbs = set()
    hois = boxes = no_object = empty = 0
    origins: Counter[str] = Counter()
    for record in records:
        hois += len(record.hoi_annotation)
        boxes += len(record.annotations)
        empty += not record.hoi_annotation
        origins[record.origin_split or "unknown"] += 1
        for hoi in record.hoi_annotation:
            verbs.add(hoi.category_id)
            if hoi.object_id < 0:
                no_object += 1
                quirk.add((record.annotations[-1].category_id, hoi.category_id))
    names = verb_vocabulary(dataset)
    return SplitStats(
        dataset=dataset,
        images=len(records),
        hoi_triplets=hois,
        combinations=len(combos),
        boxes=boxes,
        no_object_hois=no_object,
        empty_images=empty,
        quirk_combinations=len(quirk - combos),
        images_per_origin=dict(sorted(origins.items(), key=lambda kv: _ORIGIN_ORDER.get(kv[0], 9))),
        verbs=[names.name_of(v) if v in names else str(v) for v in sorted(verbs)],
    )


_ORIGIN_ORDER = {"train2015": 0, "test2015": 1, "train2014": 0, "val2014": 1}


def verb_vocabulary(dataset: Dataset):
    return hico_verbs() if dataset == "hico" else vcoco_verbs()


def combination_names(combinations: Iterable[Combination], dataset: Dataset) -> list[str]:
    """``"<verb> <object>"`` for each ``(object, verb)``, in the given order."""
    objects, verbs = coco_objects(), verb_vocabulary(dataset)
    return [f"{_name(verbs, v)} {_name(objects, o)}" for o, v in combinations]


def combination_table(combinations: Iterable[Combination], dataset: Dataset) -> list[tuple[str, str, str]]:
    """``(hoi id or "", verb, object)`` rows sorted by object then verb, for cards and the CLI."""
    objects, verbs = coco_objects(), verb_vocabulary(dataset)
    lookup = hico_hoi_lookup() if dataset == "hico" else {}
    rows = sorted(combinations, key=lambda c: (objects.index(c[0]) if c[0] in objects else c[0], c[1]))
    return [(str(lookup.get((v, o), "")), _name(verbs, v), _name(objects, o)) for o, v in rows]


def _name(vocabulary, raw: int) -> str:
    return vocabulary.name_of(raw) if raw in vocabulary else str(raw)
