"""The episode sampler: hard negatives, the overlap limit, determinism and the seen/unseen split labels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bongard_hoi.builder import episode_features
from bongard_hoi.episodes import (HoiInstance, TrainingVocabulary, episodes_dataset, group_by_split,
                                  instances_from_annotations, instances_from_rows, sample_episodes,
                                  write_episode_set)
from bongard_hoi.formats import read_episode_file, split_name

ACTIONS = {"cup": ("drink_with", "hold", "wash"), "horse": ("ride", "feed", "hold"), "kite": ("fly", "hold")}


def _instances(images_per_pair: int = 40, seed: int = 1) -> list[HoiInstance]:
    rng = np.random.default_rng(seed)
    instances, number = [], 0
    for obj, actions in ACTIONS.items():
        for action in actions:
            for _ in range(images_per_pair):
                number += 1
                x, y = int(rng.integers(0, 200)), int(rng.integers(0, 110))
                instances.append(HoiInstance(f"imgs/{number:05d}.jpg", (x, y, x + 50, y + 120),
                                             (x + 30, y + 60, x + 90, y + 100), action, obj, 320, 240))
    # an image holding two concepts of one object: it may never be a negative of either
    instances.append(HoiInstance("imgs/both.jpg", (0, 0, 10, 10), (5, 5, 20, 20), "ride", "horse"))
    instances.append(HoiInstance("imgs/both.jpg", (30, 0, 40, 10), (35, 5, 50, 20), "feed", "horse"))
    return instances


def _images(episode):
    return {image.im_path for image in episode.images()}


def test_positives_share_the_concept_and_negatives_only_its_object():
    sampled = sample_episodes(_instances(), 40, role="train", seed=3)
    assert len(sampled) == 40
    for item in sampled:
        episode = item.episode
        assert len(episode.positives) == len(episode.negatives) == 7 and len(_images(episode)) == 14
        assert all((i.act_class, i.obj_class) == (episode.action, episode.object) for i in episode.positives)
        assert all(i.obj_class == episode.object and i.act_class != episode.action for i in episode.negatives)
        assert not any(i.im_path == "./imgs/both.jpg" for i in episode.negatives)


@pytest.mark.parametrize(("role", "tau"), [("train", 3), ("test", 2), ("test", 0)])
def test_no_two_episodes_share_more_than_tau_images(role, tau):
    max_overlap = None if tau in (2, 3) else tau
    sampled = sample_episodes(_instances(), 60, role=role, max_overlap=max_overlap, seed=5)
    assert sampled
    image_sets = [_images(item.episode) for item in sampled]
    assert max(len(a & b) for a, b in itertools.combinations(image_sets, 2)) <= tau


def test_overlap_zero_runs_out_of_images_and_says_so(caplog):
    sampled = sample_episodes(_instances(), 100, role="test", max_overlap=0, seed=5)
    assert len(sampled) < 100
    assert "kept" in caplog.text and "shared more than 0 images" in caplog.text


def test_same_seed_same_files_other_seed_other_episodes(tmp_path):
    first = write_episode_set(tmp_path / "a", sample_episodes(_instances(), 30, seed=11))
    second = write_episode_set(tmp_path / "b", sample_episodes(_instances(), 30, seed=11))
    third = write_episode_set(tmp_path / "c", sample_episodes(_instances(), 30, seed=12))
    assert first["train"].read_bytes() == second["train"].read_bytes()
    assert first["train"].read_bytes() != third["train"].read_bytes()
    assert len(read_episode_file(first["train"])) == 30


def test_split_labels_and_ids_follow_the_training_vocabulary():
    vocabulary = TrainingVocabulary(actions=("hold", "ride", "wash"), objects=("cup", "horse"))
    sampled = sample_episodes(_instances(), 60, role="test", vocabulary=vocabulary, seed=2)
    seen_splits = set()
    for item in sampled:
        episode = item.episode
        expected = split_name("test", episode.object in vocabulary.objects, episode.action in vocabulary.actions)
        assert item.split == expected
        seen_splits.add(item.split)
        for image in episode.images():
            assert image.act_id == (vocabulary.actions.index(image.act_class)
                                    if image.act_class in vocabulary.actions else -1)
            assert image.obj_id == (vocabulary.objects.index(image.obj_class)
                                    if image.obj_class in vocabulary.objects else -1)
    assert seen_splits == {"test_seen_obj_seen_act", "test_seen_obj_unseen_act", "test_unseen_obj_seen_act",
                           "test_unseen_obj_unseen_act"}
    grouped = group_by_split(sampled)
    assert sum(len(v) for v in grouped.values()) == len(sampled)


def test_crops_hold_both_boxes_and_stay_inside_the_image():
    for item in sample_episodes(_instances(), 10, seed=4):
        for image in item.episode.images():
            x1, y1, x2, y2 = image.crop_bbox
            assert 0 <= x1 < x2 and 0 <= y1 < y2
            if image.im_path != "./imgs/both.jpg":
                assert x2 <= 320 and y2 <= 240
            for box in (image.sub_bbox, image.obj_bbox):
                assert 0 <= box[0] <= box[2] <= x2 - x1 and 0 <= box[1] <= box[3] <= y2 - y1


def test_episodes_become_a_dataset_with_the_builder_features():
    sampled = sample_episodes(_instances(), 12, seed=4)
    dataset = episodes_dataset(sampled)
    assert dataset["train"].features == episode_features()
    assert list(dataset["train"]["episode"]) == list(range(12))
    assert dataset["train"][0]["positive_query"]["im_path"] == sampled[0].episode.positive_query.im_path


@pytest.mark.anchors
def test_episodes_from_a_real_hico_det_sg_file(anchors_dir):
    from hoi_sg_dataset.formats import read_annotations

    instances = instances_from_annotations(read_annotations(anchors_dir / "hoi_sg" / "test_hico_sg3.json"))
    assert instances[0].image.startswith("hico_20160224_det/images/")
    sampled = sample_episodes(instances, 50, role="test", seed=0)
    assert len(sampled) == 50
    image_sets = [_images(item.episode) for item in sampled]
    assert max(len(a & b) for a, b in itertools.combinations(image_sets, 2)) <= 2
    for item in sampled:
        assert all(i.obj_class == item.episode.object and i.act_class != item.episode.action
                   for i in item.episode.negatives)


def test_hoi_sg_rows_give_the_same_instances_as_the_annotation_records_plus_image_sizes():
    from hoi_sg_dataset.builder import record_to_row
    from hoi_sg_dataset.samples import sample_plan

    records = sample_plan().hico_trainval
    rows = [dict(record_to_row(r, "hico"), width=128, height=96) for r in records]
    from_rows = instances_from_rows(rows, "hico")
    from_records = instances_from_annotations(records, "hico")
    assert [(i.image, i.action, i.object) for i in from_rows] == [(i.image, i.action, i.object) for i in from_records]
    assert all((i.width, i.height) == (128, 96) for i in from_rows)
    sampled = sample_episodes(from_rows, 5, shots=2, role="test",
                              vocabulary=TrainingVocabulary.from_instances(from_records), seed=1)
    assert sampled and all(i.crop_bbox[2] <= 128 and i.crop_bbox[3] <= 96 for s in sampled for i in s.episode.images())
