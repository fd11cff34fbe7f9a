"""The openimages x1.6 fix and the pic train/val fallback, checked against hand-computed values."""

from __future__ import annotations

from bongard_hoi.formats import EpisodeImage
from bongard_hoi.geometry import place_image, resolve_image_path


def _record(path, crop, sub, obj):
    return EpisodeImage(path, crop, sub, obj, "person", "horse", "ride", -1, 1, 40)


def test_openimages_boxes_are_scaled_by_1_6_and_clamped_to_image_and_crop():
    # 200x100 picture; crop 10,5,130,70 -> 16,8,208,112 -> clamped 16,8,200,100 (crop 184 x 92)
    placed = place_image(_record("./openimages/images/a.jpg", (10, 5, 130, 70), (0, 0, 100, 60), (50, 10, 125, 40)),
                         200, 100)
    assert placed.crop_bbox == (16, 8, 200, 100)
    assert placed.sub_bbox == (0.0, 0.0, 160.0, 92)
    assert placed.obj_bbox == (80.0, 16.0, 184, 64.0)
    assert placed.openimages_fixed and placed.clamped


def test_other_sources_keep_their_boxes_and_only_clip_the_crop_to_the_image():
    placed = place_image(_record("./hake_images_20190730/a.jpg", (10, 5, 130, 70), (0, 0, 100, 60), (1, 2, 3, 4)),
                         120, 100)
    assert placed.crop_bbox == (10, 5, 120, 70)
    assert placed.sub_bbox == (0, 0, 100, 60) and placed.obj_bbox == (1, 2, 3, 4)
    assert not placed.openimages_fixed and placed.clamped
    assert placed.boxes_in_image() == ((10, 5, 110, 65), (11, 7, 13, 9))


def test_pic_paths_fall_back_to_the_other_folder_only_when_missing(tmp_path):
    (tmp_path / "pic/image/train").mkdir(parents=True)
    (tmp_path / "pic/image/val").mkdir(parents=True)
    (tmp_path / "pic/image/train/1.jpg").write_bytes(b"x")
    (tmp_path / "pic/image/val/2.jpg").write_bytes(b"x")
    assert resolve_image_path(tmp_path, "pic/image/val/1.jpg") == (tmp_path / "pic/image/train/1.jpg", True)
    assert resolve_image_path(tmp_path, "pic/image/train/2.jpg") == (tmp_path / "pic/image/val/2.jpg", True)
    assert resolve_image_path(tmp_path, "pic/image/val/2.jpg") == (tmp_path / "pic/image/val/2.jpg", False)
    assert resolve_image_path(tmp_path, "pic/image/val/3.jpg") == (None, False)
    assert resolve_image_path(tmp_path, "hico/3.jpg") == (None, False)
