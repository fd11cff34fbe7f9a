"""Episode files: the nine official anchors parse and write back byte for byte; malformed files get clear errors."""

from __future__ import annotations

import copy
import json

import pytest

from bongard_hoi.formats import (
    SPLITS,
    count_episodes,
    dumps_episodes,
    episode_file_name,
    parse_episodes,
    read_episode_file,
    split_name,
    split_of_file,
    write_episode_file,
)
from hoi_bench.errors import ConfigError, FormatError


@pytest.mark.anchors
@pytest.mark.parametrize("split", SPLITS)
def test_official_anchor_files_parse_and_write_back_identically(anchors_dir, split):
    path = anchors_dir / "bongard_hoi" / episode_file_name(split)
    episodes = read_episode_file(path)
    assert len(episodes) == 2
    for episode in episodes:
        assert len(episode.positive_shots) == len(episode.negative_shots) == 6
        assert isinstance(episode.concept, str) and episode.concept == f"{episode.action}++{episode.object}"
        assert all(image.obj_class == episode.object for image in episode.images())
        assert all(image.act_class == episode.action for image in episode.positives)
        assert all(image.act_class != episode.action for image in episode.negatives)
    assert dumps_episodes(episodes) == path.read_text(encoding="utf-8")


@pytest.mark.anchors
def test_unseen_classes_carry_id_minus_one_and_keep_their_names(anchors_dir):
    episodes = read_episode_file(anchors_dir / "bongard_hoi" / episode_file_name("test_unseen_obj_unseen_act"))
    query = episodes[0].positive_query
    assert (query.obj_class, query.obj_id, query.act_class, query.act_id) == ("tennis_racket", -1, "swing", -1)


def _image(**changes):
    image = {"im_path": "./hake_images_20190730/a.jpg", "crop_bbox": [0, 0, 10, 10], "sub_bbox": [0, 0, 5, 5],
             "obj_bbox": [5, 5, 9, 9], "sub_class": "person", "obj_class": "orange", "act_class": "eat",
             "obj_id": 33, "sub_id": 1, "act_id": 17}
    image.update(changes)
    return image


def _episode(concept="eat++orange"):
    return [[_image() for _ in range(7)], [_image(act_class="peel", act_id=0) for _ in range(7)], concept]


def test_integer_concept_variant_takes_action_and_object_from_the_positives():
    data = [_episode(concept=12)]
    data[0][0][0]["im_path"] = "hake_images_20190730/a.jpg"
    [episode] = parse_episodes(data)
    assert (episode.concept, episode.action, episode.object, episode.concept_name) == (12, "eat", "orange",
                                                                                       "eat++orange")
    assert episode.positives[0].relative_path == episode.positives[1].relative_path == "hake_images_20190730/a.jpg"


def test_write_then_read_keeps_every_field(tmp_path):
    data = [_episode(), _episode(concept=3)]
    path = write_episode_file(tmp_path / "bongard_hoi_train.json", parse_episodes(data))
    assert json.loads(path.read_text()) == data
    assert [p.name for p in tmp_path.iterdir()] == ["bongard_hoi_train.json"]


@pytest.mark.parametrize(("mutate", "record", "field", "expected"), [
    (lambda d: d[0].pop(), 0, None, "a 3-element list"),
    (lambda d: d[0][0].pop(), 0, "[0]", "a list of 7 image dicts"),
    (lambda d: d[0][1][3].pop("obj_bbox"), 0, "[1][3]", "im_path, crop_bbox"),
    (lambda d: d[1][0][2].update(sub_bbox=[0, 0, 5]), 1, "[0][2].sub_bbox", "4 finite numbers"),
    (lambda d: d[1][1][6].update(crop_bbox=[9, 0, 5, 5]), 1, "[1][6].crop_bbox", "x1 <= x2"),
    (lambda d: d[0][0][0].update(act_id=True), 0, "[0][0].act_id", "an integer >= -1"),
    (lambda d: d[1].__setitem__(2, "eat+orange"), 1, "[2]", '"act++obj"'),
])
def test_malformed_episode_lists_name_record_field_and_expectation(mutate, record, field, expected):
    data = [_episode(), _episode()]
    mutate(data)
    with pytest.raises(FormatError) as caught:
        parse_episodes(copy.deepcopy(data), "bongard_hoi_train.json")
    error = caught.value
    assert (error.file, error.record, error.field) == ("bongard_hoi_train.json", record, field)
    assert expected in str(error)


def test_a_file_that_is_not_a_list_or_not_json_is_rejected(tmp_path):
    with pytest.raises(FormatError, match="expected list, found 'dict'"):
        parse_episodes({"episodes": []})
    bad = tmp_path / "bongard_hoi_train.json"
    bad.write_text("[[")
    with pytest.raises(FormatError, match="malformed JSON"):
        read_episode_file(bad)


def test_split_names_follow_the_official_file_names():
    assert [split_of_file(episode_file_name(s)) for s in SPLITS] == list(SPLITS)
    assert split_name("val", object_seen=False, action_seen=True) == "val_unseen_obj_seen_act"
    with pytest.raises(ConfigError, match="unknown episode file name 'train.json'"):
        split_of_file("train.json")


_MALFORMED = [  # (mutation, what the error names): every check the typed decoder must not let through
    (lambda d: d[0].pop(), "a 3-element list"),
    (lambda d: d[0][0].pop(), "a list of 7 image dicts"),
    (lambda d: d[0][1][3].pop("obj_bbox"), "im_path, crop_bbox"),
    (lambda d: d[1][0][2].update(sub_bbox=[0, 0, 5]), "4 finite numbers"),
    (lambda d: d[1][1][6].update(crop_bbox=[9, 0, 5, 5]), "x1 <= x2"),
    (lambda d: d[0][0][0].update(act_id=True), "an integer >= -1"),
    (lambda d: d[0][0][0].update(obj_id=-2), "an integer >= -1"),
    (lambda d: d[0][0][0].update(act_class=""), "a non-empty string"),
    (lambda d: d[0][1][0].update(im_path=""), "a non-empty string"),
    (lambda d: d[0][1][0].update(crop_bbox=[0, 0, True, 5]), "4 finite numbers"),
    (lambda d: d[1].__setitem__(2, "eat+orange"), '"act++obj"'),
    (lambda d: d[1].__setitem__(2, False), '"act++obj" or an integer id'),
]


@pytest.mark.parametrize(("mutate", "expected"), _MALFORMED)
def test_episode_files_read_fast_but_keep_every_check_and_message(tmp_path, mutate, expected):
    data = [_episode(), _episode(concept=3)]
    path = tmp_path / "bongard_hoi_train.json"
    path.write_text(json.dumps(data))
    assert read_episode_file(path) == parse_episodes(copy.deepcopy(data), path)  # typed route, same records
    assert count_episodes(path) == 2
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError) as by_file:
        read_episode_file(path)
    with pytest.raises(FormatError) as by_list:
        parse_episodes(copy.deepcopy(data), path)
    assert str(by_file.value) == str(by_list.value) and expected in str(by_file.value)
    with pytest.raises(FormatError):
        count_episodes(path)
