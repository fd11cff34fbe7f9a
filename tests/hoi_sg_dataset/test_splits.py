"""Algorithm 1: official seeds reproduce the published held-out combinations; image assignment and quirks."""

from __future__ import annotations

import numpy as np
import pytest

from hoi_bench.errors import DataError
from hoi_sg_dataset.formats import BoxAnnotation, HoiAnnotation, ImageRecord, read_annotations
from hoi_sg_dataset.splits import (
    OFFICIAL_SEEDS,
    assign_images,
    combinations_of,
    make_split,
    official_split_paths,
    search_seeds,
    split_combinations,
    verify,
    write_split,
)
from hoi_sg_dataset.vocabulary import hico_hoi_classes

HICO_COMBINATIONS = sorted((c.object_id, c.verb_id) for c in hico_hoi_classes())


@pytest.mark.anchors
@pytest.mark.parametrize("number", [1, 2, 3])
def test_official_hico_seed_reproduces_the_60_held_out_combinations(anchors_dir, number):
    seed = OFFICIAL_SEEDS["hico"][number - 1]
    held_out, kept = split_combinations(HICO_COMBINATIONS, 0.9, seed)
    published = read_annotations(anchors_dir / "hoi_sg" / f"test_hico_sg{number}.json")
    assert len(held_out) == 60 and set(held_out) == set(combinations_of(published))
    assert verify(kept, held_out)


def test_seed_search_finds_the_published_hico_seeds_in_order():
    assert search_seeds(HICO_COMBINATIONS, 0.9, start=368, count=3) == [368, 680, 750]
    assert search_seeds(HICO_COMBINATIONS, 0.9, start=0, count=6) == [110, 140, 295, 368, 680, 750]


@pytest.mark.parametrize("ratio, seed", [(0.9, 368), (0.7, 564), (0.7, 2065), (0.33, 5)])
def test_selection_equals_sklearn_train_test_split(ratio, seed):
    model_selection = pytest.importorskip("sklearn.model_selection")
    combos = HICO_COMBINATIONS[:77]
    train, test = model_selection.train_test_split(np.array(combos), train_size=ratio, random_state=seed)
    held_out, kept = split_combinations(combos, ratio, seed)
    assert [tuple(x) for x in test.tolist()] == held_out and [tuple(x) for x in train.tolist()] == kept


def test_verify_needs_object_and_verb_seen_in_training():
    assert verify([(1, 9), (2, 37)], [(1, 37)])
    assert not verify([(1, 9), (2, 9)], [(1, 37)])
    assert not verify([(1, 9), (2, 37)], [(3, 9)])


def test_seed_search_gives_up_with_a_clear_error():
    with pytest.raises(DataError, match="no seed"):
        search_seeds([(1, 1), (2, 2), (3, 3)], 0.7, limit=50)


def test_too_few_combinations_to_hold_out():
    with pytest.raises(DataError, match="cannot hold out"):
        split_combinations([(1, 1)], 0.9, 0)


def _image(name, boxes, hois):
    return ImageRecord(
        name, [BoxAnnotation([0, 0, 10, 10], c) for c in boxes], [HoiAnnotation(s, o, v) for s, o, v in hois]
    )


def test_images_go_to_test_train_or_are_dropped_in_file_order():
    held = {(19, 77)}
    all_held = _image("HICO_train2015_00000001.jpg", [1, 19], [(0, 1, 77)])
    none_held = _image("HICO_train2015_00000002.jpg", [1, 19], [(0, 1, 37)])
    mixed = _image("HICO_test2015_00000001.jpg", [1, 19], [(0, 1, 77), (0, 1, 37)])
    later = _image("HICO_test2015_00000002.jpg", [1, 19], [(0, 1, 77)])
    train, test, dropped = assign_images([all_held, none_held], [mixed, later], held, "hico")
    assert (train, test, dropped) == ([none_held], [all_held, later], 1)


def test_official_quirks_empty_images_to_test_and_no_object_hoi_takes_last_box():
    empty = _image("COCO_val2014_000000000001.jpg", [1], [])
    # stand (verb 1) has no object; the last box is a horse (19) and (horse, stand) is held out
    standing = _image("COCO_val2014_000000000002.jpg", [1, 19], [(0, -1, 1)])
    held = {(19, 1)}
    assert assign_images([], [empty, standing], held, "vcoco", official_quirks=True)[1] == [empty, standing]
    train, test, dropped = assign_images([], [empty, standing], held, "vcoco", official_quirks=False)
    assert (train, test, dropped) == ([empty, standing], [], 0)


def test_without_quirks_no_object_hois_are_neutral():
    riding_and_standing = _image("COCO_val2014_000000000003.jpg", [1, 19], [(0, 1, 3), (0, -1, 1)])
    assert assign_images([], [riding_and_standing], {(19, 3)}, "vcoco", official_quirks=False)[1] == [
        riding_and_standing
    ]
    assert assign_images([], [riding_and_standing], {(19, 3)}, "vcoco", official_quirks=True)[2] == 1


def test_make_split_searches_a_seed_and_writes_official_names(tmp_path):
    objects, verbs = (2, 4, 19, 41), (37, 77, 9, 58)
    records = [
        _image(f"HICO_train2015_{i:08d}.jpg", [1, o], [(0, 1, v)])
        for i, (o, v) in enumerate((o, v) for o in objects for v in verbs)
    ]
    split = make_split(records[:12], records[12:], "hico")
    assert split.seed >= 368 and verify(split.train_combinations, split.test_combinations)
    assert len(split.test_combinations) == 2 and len(split.test) == 2 and len(split.trainval) == 14
    trainval_path, test_path = write_split(split, tmp_path, "sg1")
    assert (trainval_path, test_path) == official_split_paths(tmp_path, "hico", "sg1")
    assert str(test_path).endswith("SGsplits/HICO-DET-SG/test/test_hico_sg1.json")
    assert read_annotations(test_path) == split.test
    flat = write_split(split, tmp_path / "flat", "sg9", flat=True)
    assert [p.name for p in flat] == ["trainval_hico_sg9.json", "test_hico_sg9.json"]
