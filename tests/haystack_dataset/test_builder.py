"""Builder → Hub folder → load_dataset keeps every relation, negative relation and mask; missing files are named."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from datasets import load_dataset

from haystack_dataset.builder import MANUAL_DOWNLOAD_INSTRUCTIONS, build
from haystack_dataset.formats import read_annotation, read_panoptic, rgb_to_id, segment_masks
from hoi_bench.errors import FormatError, MissingFilesError
from hoi_bench.images import encode_png


def _triplets(rows):
    return sorted((r["subject"], r["object"], r["predicate"]) for r in rows)


def test_round_trip_keeps_every_relation_negative_and_mask(sample, hub_folder, tmp_path):
    haystack = load_dataset(str(hub_folder), "haystack", split="test", cache_dir=str(tmp_path / "c1"))
    psg = load_dataset(str(hub_folder), "psg", cache_dir=str(tmp_path / "c2"))
    native_h = read_annotation(sample.haystack_file).by_key()
    native_p = read_annotation(sample.psg_file).by_key()
    assert len(haystack) == len(native_h) == len(sample.test_image_ids)
    assert sorted(psg["test"]["image_id"]) == sorted(sample.test_image_ids)
    assert len(psg["train"]) + len(psg["test"]) == len(native_p)
    assert not set(psg["train"]["image_id"]) & set(psg["test"]["image_id"])
    for row in haystack:
        image = native_h[row["image_id"]]
        assert _triplets(row["relations"]) == sorted(map(tuple, image.relations.tolist()))
        assert _triplets(row["negative_relations"]) == sorted(map(tuple, image.neg_relations.tolist()))
        ids = rgb_to_id(np.asarray(row["panoptic_segmentation"].convert("RGB")))
        expected = segment_masks(read_panoptic(sample.image_root / image.pan_seg_file_name), image.segments_info)
        got = segment_masks(ids, [{"id": s["id"]} for s in row["segments"]])
        assert np.array_equal(got, expected)
        assert [s["area"] for s in row["segments"]] == got.reshape(len(got), -1).sum(axis=1).tolist()
        np.testing.assert_allclose([s["box"] for s in row["segments"]], image.boxes)
    for split in ("train", "test"):
        for row in psg[split]:
            assert _triplets(row["relations"]) == sorted(map(tuple, native_p[row["image_id"]].relations.tolist()))
            assert row["negative_relations"] == []
    assert any(r["predicate"] == -1 for row in haystack for r in row["negative_relations"])


def test_card_explains_the_three_states_and_lists_both_configs(hub_folder):
    card = (hub_folder / "README.md").read_text()
    assert "config_name: psg" in card and "config_name: haystack" in card
    assert "**unlabelled**" in card and "**negative**" in card and "lorenz2023haystack" in card
    assert card.count("sha256 `") == 2 and "`haystack/annotation_v1.json`" in card


def test_missing_images_are_listed_before_anything_is_written(sample, tmp_path):
    copy = tmp_path / "native"
    shutil.copytree(sample.root, copy)
    victims = sorted((copy / "coco" / "val2017").iterdir())[:2]
    for victim in victims:
        victim.unlink()
    with pytest.raises(MissingFilesError, match=r"2 image or panoptic files missing, first: coco/val2017/"):
        build(copy, tmp_path / "out", ["haystack"])
    assert not (tmp_path / "out").exists()


def test_missing_annotation_file_names_it(tmp_path):
    with pytest.raises(MissingFilesError, match="psg/psg.json"):
        build(tmp_path, tmp_path / "out", ["psg"])
    assert "annotation_v1.json" in MANUAL_DOWNLOAD_INSTRUCTIONS and "panoptic_val2017" in MANUAL_DOWNLOAD_INSTRUCTIONS


def test_segment_absent_from_png_is_named(sample, tmp_path):
    copy = tmp_path / "native"
    shutil.copytree(sample.root, copy)
    image = read_annotation(copy / "haystack/annotation_v1.json").images[0]
    png = copy / "coco" / image.pan_seg_file_name
    ids = read_panoptic(png)
    ids[ids == image.segments_info[1]["id"]] = image.segments_info[0]["id"]
    from haystack_dataset.formats import id_to_rgb

    png.write_bytes(encode_png(id_to_rgb(ids)))
    with pytest.raises(FormatError, match=rf"segments_info\[1\]\.id.*found {image.segments_info[1]['id']}"):
        build(copy, tmp_path / "out", ["haystack"])


def test_other_file_names_are_accepted_through_overrides(sample, tmp_path):
    copy = tmp_path / "native"
    shutil.copytree(sample.root / "coco", copy / "images")
    shutil.copy(sample.haystack_file, copy / "hay.json")
    out = build(copy, tmp_path / "hub", ["haystack"], annotation_files={"haystack": "hay.json"}, image_root="images")
    ds = load_dataset(str(out), "haystack", split="test", cache_dir=str(tmp_path / "cache"))
    assert len(ds) == len(sample.test_image_ids)


def test_a_broken_second_config_leaves_the_folder_untouched(sample, tmp_path):
    copy = tmp_path / "native"
    shutil.copytree(sample.root, copy)
    (copy / "haystack" / "annotation_v1.json").unlink()
    with pytest.raises(MissingFilesError, match="annotation_v1.json"):
        build(copy, tmp_path / "hub", ["psg", "haystack"])
    assert not (tmp_path / "hub").exists()


@pytest.mark.parametrize("escape", ["absolute", "dotdot", "symlink"])
def test_image_paths_leaving_the_data_folder_are_refused_naming_the_record(sample, tmp_path, escape):
    import json

    copy = tmp_path / "native"
    shutil.copytree(sample.root, copy)
    outside = tmp_path / "secret.txt"
    outside.write_text("not an image")
    annotation = copy / "haystack" / "annotation_v1.json"
    raw = json.loads(annotation.read_text())
    if escape == "absolute":
        raw["data"][1]["file_name"] = str(outside)
    elif escape == "dotdot":
        raw["data"][1]["file_name"] = "../../secret.txt"
    else:
        (copy / "coco" / "val2017" / "link.jpg").symlink_to(outside)
        raw["data"][1]["file_name"] = "val2017/link.jpg"
    annotation.write_text(json.dumps(raw))
    with pytest.raises(FormatError, match=r"annotation_v1.json: record 1: field 'file_name': path leaves the data "
                                          r"folder"):
        build(copy, tmp_path / "out", ["haystack"])
    assert not (tmp_path / "out").exists()


def test_psg_file_without_test_image_ids_is_refused(sample, tmp_path):
    import json

    copy = tmp_path / "native"
    shutil.copytree(sample.root, copy)
    raw = json.loads(sample.psg_file.read_text())
    del raw["test_image_ids"]
    (copy / "psg" / "psg.json").write_text(json.dumps(raw))
    with pytest.raises(FormatError, match=r"psg.json: field 'test_image_ids': no test split"):
        build(copy, tmp_path / "out", ["psg"])
