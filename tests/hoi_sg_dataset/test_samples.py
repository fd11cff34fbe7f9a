"""The synthetic sample: real folder layout, upstream quirks, official seeds pass VERIFY, verbs learnable."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hoi_sg_dataset.formats import read_annotations
from hoi_sg_dataset.samples import sample_plan, write_sample
from hoi_sg_dataset.splits import (
    OFFICIAL_SEEDS,
    RATIOS,
    combinations_of,
    make_split,
    split_combinations,
    verify,
)


def _digest(root):
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def test_sample_is_deterministic(sample_root, tmp_path):
    assert _digest(write_sample(tmp_path / "again").root) == _digest(sample_root)


def test_sample_has_the_native_layout_and_counts(sample_root):
    hico, vcoco = sample_root / "hico_20160224_det", sample_root / "v-coco"
    counts = {
        folder: len(list((base / "images" / folder).glob("*.jpg")))
        for base, folders in ((hico, ("train2015", "test2015")), (vcoco, ("train2014", "val2014")))
        for folder in folders
    }
    assert counts == {"train2015": 300, "test2015": 100, "train2014": 220, "val2014": 100}
    for base, dataset in ((hico, "hico"), (vcoco, "vcoco")):
        for split in ("trainval", "test"):
            records = read_annotations(base / "annotations" / f"{split}_{dataset}.json", dataset)
            assert all((base / "images" / r.origin_split / r.file_name).is_file() for r in records)


def test_sample_carries_the_upstream_quirks():
    plan = sample_plan()
    assert all(
        r.img_id is not None and all(h.hoi_category_id for h in r.hoi_annotation) for r in plan.hico_trainval
    )
    assert all(
        r.img_id is None and all(h.hoi_category_id is None for h in r.hoi_annotation) for r in plan.hico_test
    )
    vcoco = plan.vcoco_trainval + plan.vcoco_test
    assert any(not r.hoi_annotation for r in vcoco)
    assert any(h.object_id == -1 for r in vcoco for h in r.hoi_annotation)
    assert any(type(b.bbox[0]) is int for r in vcoco for b in r.annotations)
    assert any(type(b.bbox[0]) is float for r in vcoco for b in r.annotations)
    assert any(len(r.hoi_annotation) > 1 for r in plan.hico_trainval)


@pytest.mark.parametrize("dataset", ["hico", "vcoco"])
def test_official_seeds_pass_verify_and_leave_test_images(dataset):
    plan = sample_plan()
    trainval, test = (
        (plan.hico_trainval, plan.hico_test) if dataset == "hico" else (plan.vcoco_trainval, plan.vcoco_test)
    )
    combos = combinations_of(trainval + test)
    for seed in OFFICIAL_SEEDS[dataset]:
        held_out, kept = split_combinations(combos, RATIOS[dataset], seed)
        assert verify(kept, held_out)
        split = make_split(trainval, test, dataset, seed=seed)
        with_objects = [r for r in split.test if any(h.object_id >= 0 for h in r.hoi_annotation)]
        assert len(with_objects) >= 25 and len(set(combinations_of(split.test))) >= 4


def _geometry(record, hoi):
    px1, py1, px2, py2 = record.annotations[hoi.subject_id].bbox
    ox1, oy1, ox2, oy2 = record.annotations[hoi.object_id].bbox
    pw, ph = px2 - px1, py2 - py1
    return [
        (ox1 - px1) / pw,
        (ox2 - px2) / pw,
        (oy1 - py1) / ph,
        (oy2 - py2) / ph,
        (ox2 - ox1) / pw,
        (oy2 - oy1) / ph,
    ]


@pytest.mark.parametrize(
    "dataset, seeds", [("hico", OFFICIAL_SEEDS["hico"]), ("vcoco", OFFICIAL_SEEDS["vcoco"])]
)
def test_verb_of_held_out_combinations_is_learnable_from_box_geometry(dataset, seeds):
    """A 1-nearest-neighbour rule on person-relative box geometry, fit on SG train, names the verbs of test
    combinations it never saw: what a baseline pair classifier is expected to exploit."""
    plan = sample_plan()
    trainval, test = (
        (plan.hico_trainval, plan.hico_test) if dataset == "hico" else (plan.vcoco_trainval, plan.vcoco_test)
    )

    def table(records):
        rows = [
            (_geometry(r, h), h.category_id) for r in records for h in r.hoi_annotation if h.object_id >= 0
        ]
        return np.array([g for g, _ in rows]), np.array([v for _, v in rows])

    for seed in seeds:
        split = make_split(trainval, test, dataset, seed=seed)
        x_train, y_train = table(split.trainval)
        x_test, y_test = table(split.test)
        nearest = ((x_test[:, None] - x_train[None]) ** 2).sum(-1).argmin(axis=1)
        assert (y_train[nearest] == y_test).mean() >= 0.9
