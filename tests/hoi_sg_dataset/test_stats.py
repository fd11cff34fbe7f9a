"""Statistics: Table 1's test columns from the six official SG test files."""

from __future__ import annotations

import pytest

from hoi_sg_dataset.formats import read_annotations
from hoi_sg_dataset.stats import combination_names, combination_table, split_stats

TABLE_1 = {  # file: (images, HOI triplets, combinations, images per origin split)
    "test_hico_sg1.json": (8515, 14475, 60, {"train2015": 6609, "test2015": 1906}),
    "test_hico_sg2.json": (7656, 14811, 60, {"train2015": 5924, "test2015": 1732}),
    "test_hico_sg3.json": (6229, 8994, 60, {"train2015": 4777, "test2015": 1452}),
    "test_vcoco_sg1.json": (2850, 3872, 60, {"train2014": 1465, "val2014": 1385}),
    "test_vcoco_sg2.json": (3066, 4322, 61, {"train2014": 1598, "val2014": 1468}),
    "test_vcoco_sg3.json": (3888, 6244, 76, {"train2014": 2061, "val2014": 1827}),
}


@pytest.mark.anchors
@pytest.mark.parametrize("name", sorted(TABLE_1))
def test_stats_of_official_test_files_match_table_1(anchors_dir, name):
    dataset = "hico" if "hico" in name else "vcoco"
    stats = split_stats(read_annotations(anchors_dir / "hoi_sg" / name, dataset), dataset)
    assert (stats.images, stats.hoi_triplets, stats.combinations, stats.images_per_origin) == TABLE_1[name]


@pytest.mark.anchors
def test_vcoco_quirk_counts_of_sg1(anchors_dir):
    stats = split_stats(read_annotations(anchors_dir / "hoi_sg" / "test_vcoco_sg1.json"), "vcoco")
    assert (stats.no_object_hois, stats.empty_images, stats.quirk_combinations, stats.boxes) == (
        715,
        27,
        3,
        28378,
    )
    assert not {"stand", "walk", "run", "smile"} & set(stats.verbs)


def test_combination_names_and_table():
    assert combination_names([(19, 3), (1, 4)], "vcoco") == ["ride_instr horse", "walk person"]
    assert combination_table([(19, 77), (5, 112)], "hico") == [
        ("9", "wash", "airplane"),
        ("140", "ride", "horse"),
    ]
