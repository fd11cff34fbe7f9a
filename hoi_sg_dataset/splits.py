"""Algorithm 1 of HICO-DET-SG / V-COCO-SG: hold out object-verb combinations, then split the images.

What the official generator (FujitsuResearch/hoi_sg ``hico.py`` / ``vcoco.py`` at 6d5d649) does, step by step:

1. list the distinct (object category, verb) combinations of trainval + test in the row-major order of its
   object x verb count matrix (HOIs without object are not counted);
2. ``train_test_split(combinations, train_size=ratio, random_state=seed)``: ``n_train = floor(ratio * n)``,
   ``perm = numpy.random.RandomState(seed).permutation(n)``, the first ``n - n_train`` entries of ``perm`` are
   the held-out (test) combinations;
3. VERIFY: every held-out combination's object and verb also occur in some training combination (only the
   *combination* is new). With no seed given, seeds are scanned upward from 368 (HICO) / 0 (V-COCO) for the
   first passing one; the published seeds 368, 680, 750 are the first three passing HICO seeds;
4. every image of trainval, then of test, goes to test if all its HOIs are held-out combinations, to train if
   none is, and is dropped otherwise; records are copied unchanged.

Two quirks of the official step 4 are reproduced by ``official_quirks=True`` (the default, needed to
regenerate the published files): an image with an empty HOI list satisfies "all HOIs held out" and goes to
test; a V-COCO HOI without object (``object_id = -1``) takes the category of the image's *last* box. With
``official_quirks=False`` HOIs without object are neutral and images with no held-out combination (including
empty ones) go to train.

It works on any dataset in the PPDM/QPIC format, so new splits can be made with other seeds or ratios.

>>> combos = [(o, v) for o in (2, 4, 19) for v in (37, 77, 9)]
>>> held_out, kept = split_combinations(combos, ratio=0.7, seed=0)
>>> len(held_out), len(kept), verify(kept, held_out)
(3, 6, True)
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hoi_bench.errors import DataError
from hoi_sg_dataset.formats import Dataset, ImageRecord, iter_combinations, write_annotations

logger = logging.getLogger(__name__)

Combination = tuple[int, int]
"""``(object category id, verb id)``, raw upstream ids."""

OFFICIAL_SEEDS: dict[str, tuple[int, ...]] = {"hico": (368, 680, 750), "vcoco": (564, 966, 2065)}
RATIOS: dict[str, float] = {"hico": 0.9, "vcoco": 0.7}
SEARCH_START: dict[str, int] = {"hico": 368, "vcoco": 0}
SPLIT_FOLDERS: dict[str, str] = {"hico": "HICO-DET-SG", "vcoco": "V-COCO-SG"}
MAX_SEARCH = 100_000


@dataclass(frozen=True)
class SgSplit:
    """One systematic-generalization split: the held-out combinations and the images on each side."""

    dataset: Dataset
    seed: int
    ratio: float
    train_combinations: tuple[Combination, ...]
    test_combinations: tuple[Combination, ...]
    trainval: list[ImageRecord]
    test: list[ImageRecord]
    dropped: int
    official_quirks: bool


def combinations_of(records: Iterable[ImageRecord]) -> list[Combination]:
    """Distinct ``(object, verb)`` pairs of ``records`` in the official matrix's row-major order.

    Sorting raw ids gives the same order as the official matrices: HICO rows are contiguous COCO indices, a
    monotone map of the raw ids; V-COCO rows are the raw ids themselves; columns are raw verb ids.
    """
    return sorted(set(iter_combinations(records)))


def split_combinations(
    combinations: Sequence[Combination], ratio: float, seed: int
) -> tuple[list[Combination], list[Combination]]:
    """``(held_out, kept)`` exactly as ``sklearn.model_selection.train_test_split(X, train_size=ratio,
    random_state=seed)`` returns ``(X_test, X_train)`` for ``X = combinations``."""
    n = len(combinations)
    n_train = math.floor(ratio * n)
    n_test = n - n_train
    if n_train == 0 or n_test == 0:
        raise DataError(
            f"cannot hold out a fraction {1 - ratio:g} of {n} combinations "
            f"(expected 0 < floor(ratio * n) < n, found {n_train} training combinations)"
        )
    permutation = np.random.RandomState(seed).permutation(n)
    held_out = [combinations[i] for i in permutation[:n_test]]
    kept = [combinations[i] for i in permutation[n_test:]]
    return held_out, kept


def verify(kept: Iterable[Combination], held_out: Iterable[Combination]) -> bool:
    """The official ``checker``: each held-out combination's object and verb are both seen in training."""
    kept = list(kept)
    objects = {o for o, _ in kept}
    verbs = {v for _, v in kept}
    return all(o in objects and v in verbs for o, v in held_out)


def search_seeds(
    combinations: Sequence[Combination], ratio: float, start: int = 0, count: int = 1, limit: int = MAX_SEARCH
) -> list[int]:
    """The first ``count`` seeds ``>= start`` whose held-out combinations pass VERIFY."""
    found = []
    for seed in range(start, start + limit):
        if verify(*reversed(split_combinations(combinations, ratio, seed))):
            found.append(seed)
            if len(found) == count:
                return found
    raise DataError(
        f"no seed in [{start}, {start + limit}) passes VERIFY for {len(combinations)} combinations "
        f"at ratio {ratio} (expected {count}, found {len(found)}); "
        "every object and every verb needs several combinations"
    )


def held_out_flags(
    record: ImageRecord, held_out: set[Combination], dataset: Dataset, official_quirks: bool
) -> list[bool | None]:
    """Per HOI of ``record``: held out (True), not (False), or neutral (None: no object, quirks off)."""
    flags: list[bool | None] = []
    for hoi in record.hoi_annotation:
        if hoi.object_id >= 0:
            flags.append((record.annotations[hoi.object_id].category_id, hoi.category_id) in held_out)
        elif official_quirks:  # Python's annotations[-1]: the image's last box supplies the category
            flags.append((record.annotations[-1].category_id, hoi.category_id) in held_out)
        else:
            flags.append(None)
    return flags


def side_of(flags: Sequence[bool | None], official_quirks: bool) -> str | None:
    """``"test"``, ``"train"`` or ``None`` (mixed: dropped) for one image's HOI flags."""
    if official_quirks:
        held = sum(1 for f in flags if f)
        return "test" if held == len(flags) else "train" if held == 0 else None
    counted = [f for f in flags if f is not None]
    if counted and all(counted):
        return "test"
    return "train" if not any(counted) else None


def assign_images(
    trainval: Sequence[ImageRecord],
    test: Sequence[ImageRecord],
    held_out: Iterable[Combination],
    dataset: Dataset,
    official_quirks: bool = True,
) -> tuple[list[ImageRecord], list[ImageRecord], int]:
    """``(sg_trainval, sg_test, dropped)`` from every image of trainval then test, in file order."""
    held = set(held_out)
    sides: dict[str, list[ImageRecord]] = {"train": [], "test": []}
    dropped = 0
    for record in (*trainval, *test):
        side = side_of(held_out_flags(record, held, dataset, official_quirks), official_quirks)
        if side is None:
            dropped += 1
        else:
            sides[side].append(record)
    return sides["train"], sides["test"], dropped


def make_split(
    trainval: Sequence[ImageRecord],
    test: Sequence[ImageRecord],
    dataset: Dataset,
    *,
    seed: int | None = None,
    ratio: float | None = None,
    official_quirks: bool = True,
) -> SgSplit:
    """Run Algorithm 1 on the original ``trainval`` and ``test`` records; ``seed=None`` searches one."""
    ratio = RATIOS[dataset] if ratio is None else ratio
    combinations = combinations_of((*trainval, *test))
    if seed is None:
        seed = search_seeds(combinations, ratio, SEARCH_START[dataset])[0]
        logger.info("seed search: first seed >= %d passing VERIFY is %d", SEARCH_START[dataset], seed)
    held_out, kept = split_combinations(combinations, ratio, seed)
    if not verify(kept, held_out):
        logger.warning("seed %d fails VERIFY: some held-out object or verb never occurs in training", seed)
    sg_trainval, sg_test, dropped = assign_images(trainval, test, held_out, dataset, official_quirks)
    logger.info(
        "seed %d: %d of %d combinations held out; %d train, %d test images, %d mixed images dropped",
        seed,
        len(held_out),
        len(combinations),
        len(sg_trainval),
        len(sg_test),
        dropped,
    )
    return SgSplit(
        dataset, seed, ratio, tuple(kept), tuple(held_out), sg_trainval, sg_test, dropped, official_quirks
    )


def split_file_names(dataset: Dataset, name: str) -> tuple[str, str]:
    """Official file names, e.g. ``("trainval_hico_sg1.json", "test_hico_sg1.json")`` for name ``sg1``."""
    return f"trainval_{dataset}_{name}.json", f"test_{dataset}_{name}.json"


def official_split_paths(root: str | os.PathLike, dataset: Dataset, name: str) -> tuple[Path, Path]:
    """Where the hoi_sg repository keeps a split: ``SGsplits/<HICO-DET-SG|V-COCO-SG>/{trainval,test}/``."""
    base = Path(root) / "SGsplits" / SPLIT_FOLDERS[dataset]
    trainval_name, test_name = split_file_names(dataset, name)
    return base / "trainval" / trainval_name, base / "test" / test_name


def write_split(
    split: SgSplit, out_dir: str | os.PathLike, name: str, *, flat: bool = False
) -> tuple[Path, Path]:
    """Write the split's two files under the official names; ``flat`` puts both directly in ``out_dir``
    (as the official generator does), else in the hoi_sg repository's ``SGsplits/...`` layout."""
    if flat:
        trainval_path, test_path = (Path(out_dir) / n for n in split_file_names(split.dataset, name))
    else:
        trainval_path, test_path = official_split_paths(out_dir, split.dataset, name)
    write_annotations(trainval_path, split.trainval, split.dataset)
    write_annotations(test_path, split.test, split.dataset)
    return trainval_path, test_path
