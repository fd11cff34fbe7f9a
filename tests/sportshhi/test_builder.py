"""Builder: sample -> Hub folder -> load_dataset keeps every interaction, box and context frame; errors."""

from __future__ import annotations

import shutil

import datasets
import numpy as np
import pytest

from hoi_bench.errors import MissingFilesError
from sportshhi import formats
from sportshhi.builder import (
    KeyframeRecord,
    build_sportshhi_folder,
    context_frame_indices,
    release_annotation_files,
)
from sportshhi.samples import FRAME_SIZE


def _load(folder, **kwargs):
    return datasets.load_dataset(str(folder), "hhi", cache_dir=str(folder.parent / "cache"), **kwargs)


def _native_rows(root, split):
    actions = formats.read_action_list(root / formats.ACTION_LIST_FILE)
    ann = formats.read_annotation_csv(root / formats.annotation_file(split), actions)
    return sorted((key, tuple(s), tuple(o), int(label), int(p1), int(p2)) for key, s, o, label, p1, p2 in zip(
        ann.keys, ann.subject_boxes.tolist(), ann.object_boxes.tolist(), ann.labels, ann.subject_ids,
        ann.object_ids))


def test_round_trip_keeps_every_interaction_and_box(sample, hub_folder):
    loaded = _load(hub_folder)
    assert sorted(loaded) == ["train", "validation"]
    names = loaded["train"].features["interactions"].feature["label"].names
    actions = formats.read_action_list(sample.root / formats.ACTION_LIST_FILE).sorted_by_id()
    assert names == list(actions.names)
    for split in ("train", "validation"):
        rows = []
        for row in loaded[split]:
            boxes = row["human_boxes"]
            for item in row["interactions"]:
                assert names[item["label"]] == actions.name_of(item["label_id"])
                rows.append((row["keyframe_key"], tuple(boxes[item["subject_index"]]),
                             tuple(boxes[item["object_index"]]), item["label_id"], item["subject_person_id"],
                             item["object_person_id"]))
        assert sorted(rows) == _native_rows(sample.root, split)


def test_rows_are_the_annotated_keyframes_with_gt_people_and_detections(sample, hub_folder):
    loaded = _load(hub_folder)
    assert loaded["train"].num_rows == 2 * sample.keyframes_per_video
    assert loaded["validation"].num_rows == sample.keyframes_per_video
    gt = formats.read_proposals(sample.root / formats.gt_proposal_file("validation"))
    detections = formats.read_proposals(sample.root / formats.detector_proposal_file("validation"))
    for row in loaded["validation"]:
        key = row["keyframe_key"]
        assert key == formats.keyframe_key(row["video_id"], row["keyframe"])
        assert row["frame_index"] == 5 * row["keyframe"]
        humans = np.array(row["human_boxes"])
        assert len(humans) == len(gt[key])  # every GT person once, annotated or not
        assert np.allclose(np.sort(humans, axis=0), np.sort(gt[key][:, :4], axis=0), atol=1e-6)
        assert row["human_person_ids"].count(-1) == len(humans) - len(set(row["human_person_ids"]) - {-1})
        assert np.allclose(row["detected_boxes"], detections[key][:, :4])
        assert np.allclose(row["detected_scores"], detections[key][:, 4], atol=1e-6)
        scale = np.array([row["width"], row["height"]] * 2)
        assert (row["width"], row["height"]) == FRAME_SIZE
        assert np.allclose(row["human_boxes_pixels"], humans * scale, atol=1e-3)


def test_context_frames_are_the_official_clip_with_file_bytes(sample, hub_folder):
    table = _load(hub_folder)["train"].cast_column("context", datasets.List(datasets.Image(decode=False)))
    last = sample.keyframes_per_video
    for row in table:
        t = row["keyframe"]
        expected = [5 * t - 4, 5 * t - 2, 5 * t, min(5 * t + 2, 5 * last)]
        assert row["context_frame_indices"] == expected
        for frame, cell in zip(expected, row["context"]):
            assert cell["bytes"] == (sample.root / formats.frame_file(row["video_id"], frame)).read_bytes()


def test_streaming_yields_the_same_keyframes(hub_folder):
    streamed = _load(hub_folder, streaming=True)["validation"]
    first = next(iter(streamed))
    assert first["keyframe_key"] == _load(hub_folder)["validation"][0]["keyframe_key"]
    assert len(first["context"]) == 4 and first["image"].size == FRAME_SIZE
    assert sum(1 for _ in streamed) == _load(hub_folder)["validation"].num_rows


def test_clip_length_is_a_config_option(sample, tmp_path):
    folder = build_sportshhi_folder(sample.root, tmp_path / "hub", clip_len=0)
    row = _load(folder)["validation"][0]
    assert row["context"] == [] and row["context_frame_indices"] == []
    assert "no context frames (clip_len=0)" in (folder / "README.md").read_text()


def test_context_clip_is_clipped_to_the_video():
    assert context_frame_indices(0, 4, 2, first=1, last=100) == [1, 1, 1, 2]
    assert context_frame_indices(10, 8, 1, first=1, last=52) == [46, 47, 48, 49, 50, 51, 52, 52]


def test_missing_frames_are_listed_in_one_error_and_nothing_is_written(sample, tmp_path):
    root = tmp_path / "release"
    shutil.copytree(sample.root, root)
    video = sample.videos["validation"][0]
    gone = [formats.frame_file(video, 5), formats.frame_file(video, 13)]
    for path in gone:
        (root / path).unlink()
    with pytest.raises(MissingFilesError) as caught:
        build_sportshhi_folder(root, tmp_path / "hub")
    assert caught.value.missing == sorted(gone)
    assert "2 frames missing" in str(caught.value)
    assert not (tmp_path / "hub").exists()


def test_missing_annotation_files_are_listed_before_reading(sample, tmp_path):
    root = tmp_path / "release"
    shutil.copytree(sample.root, root)
    (root / formats.detector_proposal_file("train")).unlink()
    (root / formats.annotation_file("validation")).unlink()
    with pytest.raises(MissingFilesError) as caught:
        build_sportshhi_folder(root, tmp_path / "hub")
    assert sorted(caught.value.missing) == sorted([formats.detector_proposal_file("train"),
                                                   formats.annotation_file("validation")])


def test_card_states_license_gating_and_missing_test_split(hub_folder):
    readme = (hub_folder / "README.md").read_text()
    assert "license: cc-by-nc-4.0" in readme
    assert "gated" in readme and "no test split" in readme
    assert "@inproceedings{wu2024sportshhi" in readme and "### `hhi`" in readme
    assert "4 context frames at interval 2" in readme


def test_card_records_the_checksum_of_every_annotation_file(sample, hub_folder):
    import hashlib

    readme = (hub_folder / "README.md").read_text()
    for name in release_annotation_files():
        assert f"| `{name}` | `{hashlib.sha256((sample.root / name).read_bytes()).hexdigest()}` |" in readme


def test_gt_proposals_add_unannotated_people_but_not_duplicates():
    a, b = np.array([0.1, 0.1, 0.3, 0.8]), np.array([0.5, 0.1, 0.7, 0.8])
    near_a = [0.1, 0.1, 0.3, 0.79, 1.0]  # the same person as a (IoU ~0.99), as a float32 pickle would hold it
    bystander = [0.8, 0.2, 0.9, 0.7, 1.0]
    record = KeyframeRecord("v", 3, [(a, b, 2, 7, 8), (b, a, 3, 8, 7)], np.array([near_a, bystander]),
                            np.zeros((0, 5)))
    boxes, person_ids, pairs = record.humans()
    assert boxes.tolist() == [a.tolist(), b.tolist(), bystander[:4]]
    assert person_ids == [7, 8, -1]
    assert pairs == [(0, 1), (1, 0)]
    without_proposals = KeyframeRecord("v", 3, [(a, b, 2, 7, 8)], np.zeros((0, 5)), np.zeros((0, 5)))
    assert without_proposals.humans()[0].tolist() == [a.tolist(), b.tolist()]
