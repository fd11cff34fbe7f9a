"""Builder round trip on the synthetic native layout: every episode, box and label survives; crops are right."""

from __future__ import annotations

import json

import numpy as np
import pytest
from datasets import load_dataset
from PIL import Image

from bongard_hoi.builder import build_hub
from bongard_hoi.formats import SPLITS, episode_file_name, read_episode_file
from bongard_hoi.predictions import episode_counts
from bongard_hoi.samples import ANNOTATION_DIR, IMAGE_DIR, SAMPLE_EPISODE_COUNTS, write_sample
from hoi_bench.errors import MissingFilesError


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return write_sample(tmp_path_factory.mktemp("bongard") / "native")


@pytest.fixture(scope="module")
def folder(sample, tmp_path_factory):
    return build_hub(sample, tmp_path_factory.mktemp("hub") / "bongard_hoi")


@pytest.fixture(scope="module")
def built(folder, tmp_path_factory):
    return load_dataset(str(folder), "episodes", cache_dir=str(tmp_path_factory.mktemp("cache")))


def test_episode_counts_are_read_from_the_built_folder_and_the_native_files(sample, folder):
    assert episode_counts(folder) == SAMPLE_EPISODE_COUNTS
    assert episode_counts(sample / ANNOTATION_DIR) == SAMPLE_EPISODE_COUNTS


def test_sample_build_keeps_every_episode_box_and_label(sample, built):
    assert {split: len(built[split]) for split in built} == SAMPLE_EPISODE_COUNTS
    for split in SPLITS:
        episodes = read_episode_file(sample / ANNOTATION_DIR / episode_file_name(split))
        for row, episode in zip(built[split], episodes, strict=True):
            assert (row["concept"], row["action"], row["object"]) == (episode.concept, episode.action, episode.object)
            assert row["query_labels"] == [0, 1]
            cells = row["positive_shots"] + [row["positive_query"]] + row["negative_shots"] + [row["negative_query"]]
            for cell, image in zip(cells, episode.images(), strict=True):
                assert cell["im_path"] == image.im_path
                assert (cell["act_class"], cell["obj_class"], cell["act_id"], cell["obj_id"]) == (
                    image.act_class, image.obj_class, image.act_id, image.obj_id)
                x1, y1, x2, y2 = cell["crop_bbox"]
                assert cell["image"].size == (x2 - x1, y2 - y1)
                if "openimages" in image.im_path:
                    assert cell["crop_bbox"][:2] == [int(image.crop_bbox[0] * 1.6), int(image.crop_bbox[1] * 1.6)]
                    limits = (x2 - x1, y2 - y1) * 2
                    assert cell["sub_bbox"] == pytest.approx([min(v * 1.6, m) for v, m in zip(image.sub_bbox, limits)])
                    assert cell["obj_bbox"] == pytest.approx([min(v * 1.6, m) for v, m in zip(image.obj_bbox, limits)])
                else:
                    assert cell["crop_bbox"] == list(image.crop_bbox)
                    assert cell["sub_bbox"] == list(image.sub_bbox) and cell["obj_bbox"] == list(image.obj_bbox)


def test_sample_covers_the_openimages_clamp_and_the_pic_fallback(sample, built):
    paths = [cell["im_path"] for row in built["train"] for cell in row["positive_shots"] + row["negative_shots"]]
    paths += [cell["im_path"] for split in built for row in built[split]
              for cell in (row["positive_query"], row["negative_query"])]
    assert any("openimages" in p for p in paths)
    assert any(p.startswith("./pic/image/val/") and not (sample / IMAGE_DIR / p[2:]).exists() for p in paths)
    clamped = [cell for split in built for row in built[split] for cell in row["positive_shots"]
               if "openimages" in cell["im_path"]
               and cell["crop_bbox"][2] == Image.open(sample / IMAGE_DIR / cell["im_path"][2:]).width]
    assert clamped


def _openimages_layout(root):
    """A 200x100 openimages picture, black except a white 8x8 block at (40..48, 24..32), and one episode."""
    pixels = np.zeros((100, 200, 3), dtype=np.uint8)
    pixels[24:32, 40:48] = 255
    (root / IMAGE_DIR / "openimages/images").mkdir(parents=True)
    Image.fromarray(pixels).save(root / IMAGE_DIR / "openimages/images/a.png")
    image = {"im_path": "./openimages/images/a.png", "crop_bbox": [10, 5, 130, 70], "sub_bbox": [0, 0, 100, 60],
             "obj_bbox": [50, 10, 125, 40], "sub_class": "person", "obj_class": "horse", "act_class": "ride",
             "obj_id": -1, "sub_id": 1, "act_id": 40}
    episode = [[image] * 7, [dict(image, act_class="hold", act_id=48)] * 7, "ride++horse"]
    (root / ANNOTATION_DIR).mkdir()
    (root / ANNOTATION_DIR / "bongard_hoi_train.json").write_text(json.dumps([episode]))
    return root


def test_openimages_crop_matches_hand_computed_pixels(tmp_path):
    data = _openimages_layout(tmp_path / "native")
    folder = build_hub(data, tmp_path / "hub", splits=("train",))
    row = load_dataset(str(folder), "episodes", split="train", cache_dir=str(tmp_path / "cache"))[0]
    cell = row["positive_query"]
    # crop x1.6 = 16,8,208,112 clamped to 16,8,200,100; the white block moves to (24..32, 16..24) in the crop
    assert cell["crop_bbox"] == [16, 8, 200, 100]
    assert cell["sub_bbox"] == [0.0, 0.0, 160.0, 92.0] and cell["obj_bbox"] == [80.0, 16.0, 184.0, 64.0]
    crop = np.asarray(cell["image"])
    assert crop.shape == (92, 184, 3)
    assert crop[16:24, 24:32].min() == 255 and crop[:16].max() == 0 and crop[24:].max() == 0


def test_whole_images_keep_original_bytes_with_boxes_in_image_pixels(tmp_path):
    data = _openimages_layout(tmp_path / "native")
    folder = build_hub(data, tmp_path / "hub", crop=False, splits=("train",))
    row = load_dataset(str(folder), "episodes", split="train", cache_dir=str(tmp_path / "cache"))[0]
    cell = row["negative_shots"][0]
    assert cell["image"].size == (200, 100)
    assert cell["sub_bbox"] == [16.0, 8.0, 176.0, 100.0] and cell["obj_bbox"] == [96.0, 24.0, 200.0, 72.0]
    assert row["negative_query"]["act_class"] == "hold"


def test_missing_images_are_listed_before_anything_is_written(tmp_path):
    data = _openimages_layout(tmp_path / "native")
    (data / IMAGE_DIR / "openimages/images/a.png").unlink()
    with pytest.raises(MissingFilesError, match="1 images missing, first: openimages/images/a.png"):
        build_hub(data, tmp_path / "hub", splits=("train",))
    with pytest.raises(MissingFilesError, match="8 episode files missing"):
        build_hub(data, tmp_path / "hub")
    assert not (tmp_path / "hub").exists()


@pytest.mark.slow
def test_reference_layout_stores_each_picture_once_and_resolves_to_the_embedded_bytes(sample, built, tmp_path):
    folder = build_hub(sample, tmp_path / "refs", configs=("episode_refs", "images"), splits=("train",))
    refs = load_dataset(str(folder), "episode_refs", split="train", cache_dir=str(tmp_path / "cache"))
    pictures = load_dataset(str(folder), "images", split="train", cache_dir=str(tmp_path / "cache"))
    where = {key: index for index, key in enumerate(pictures["image_id"])}
    assert len(where) == len(pictures)
    for ref_row, row in zip(refs, built["train"], strict=True):
        for ref_cell, cell in zip(ref_row["positive_shots"] + [ref_row["negative_query"]],
                                  row["positive_shots"] + [row["negative_query"]], strict=True):
            assert ref_cell["image_id"].startswith(cell["im_path"][2:] + "#")
            assert ref_cell["sub_bbox"] == cell["sub_bbox"] and ref_cell["crop_bbox"] == cell["crop_bbox"]
            picture = pictures[where[ref_cell["image_id"]]]["image"]
            assert np.array_equal(np.asarray(picture), np.asarray(cell["image"]))
    assert len(pictures) < len(built["train"]) * 14


def test_card_names_each_split_with_the_checksum_of_its_episode_file(sample, folder):
    import hashlib

    card = (folder / "README.md").read_text()
    digest = hashlib.sha256((sample / ANNOTATION_DIR / "bongard_hoi_train.json").read_bytes()).hexdigest()
    assert f"| train | 24 | `{digest}` |" in card
    assert "openimages x1.6" in card and "configs:" in card


def test_integer_concept_files_build_with_the_concept_taken_from_the_positives(tmp_path):
    data = _openimages_layout(tmp_path / "native")
    path = data / ANNOTATION_DIR / "bongard_hoi_train.json"
    episodes = json.loads(path.read_text())
    episodes[0][2] = 7
    episodes[0][0][0]["im_path"] = "openimages/images/a.png"  # third-party files may drop the "./"
    path.write_text(json.dumps(episodes))
    folder = build_hub(data, tmp_path / "hub", splits=("train",))
    row = load_dataset(str(folder), "episodes", split="train", cache_dir=str(tmp_path / "cache"))[0]
    assert (row["concept"], row["concept_id"], row["action"], row["object"]) == ("ride++horse", 7, "ride", "horse")
    assert row["positive_shots"][0]["crop_bbox"] == [16, 8, 200, 100]
