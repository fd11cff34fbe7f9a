"""Native PSG / Haystack files: validation errors name record and field; round trips; panoptic decoding."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from haystack_fixtures import GOLDEN_ANNOTATION, write_annotation
from haystack_dataset.formats import (
    annotation_to_json,
    id_to_rgb,
    image_key,
    parse_annotation,
    read_annotation,
    read_panoptic,
    rgb_to_id,
)
from haystack_dataset.samples import write_sample
from hoi_bench.errors import FormatError


def changed(**changes):
    raw = copy.deepcopy(GOLDEN_ANNOTATION)
    raw["data"][0].update(changes)
    return raw


def test_haystack_file_is_detected_and_keeps_minus_one_entries():
    ann = parse_annotation(changed())
    assert ann.has_negatives and ann.images[0].neg_relations[-1].tolist() == [0, 1, -1]


def test_psg_file_refuses_minus_one_predicates():
    raw = changed(relations=[[0, 3, -1]])
    del raw["data"][0]["neg_relations"]
    with pytest.raises(FormatError, match=r"relations\[0\].*0 <= predicate < 4"):
        parse_annotation(raw)


@pytest.mark.parametrize(("changes", "pattern"), [
    ({"relations": [[0, 9, 0]]}, r"record 0: field 'relations\[0\]': object index past segments_info"),
    ({"relations": [[0, 1, 4]]}, r"predicate index out of range \(expected -1 <= predicate < 4, found \[0, 1, 4\]\)"),
    ({"relations": [[0, 1]]}, r"not a triplet of integers"),
    ({"annotations": []}, r"annotations must be parallel to segments_info"),
    ({"relations": "x"}, r"field 'relations': not a list"),
    ({"height": None}, r"field 'height': not a positive integer"),
])
def test_bad_records_name_record_and_field(changes, pattern):
    with pytest.raises(FormatError, match=pattern):
        parse_annotation(changed(**changes))


def test_bad_box_and_class_are_named():
    raw = changed()
    raw["data"][0]["annotations"][1]["bbox"] = [20, 0, 10, 10]
    with pytest.raises(FormatError, match=r"annotations\[1\]\.bbox.*bad box"):
        parse_annotation(raw)
    raw = changed()
    raw["data"][0]["segments_info"][2]["category_id"] = 3
    with pytest.raises(FormatError, match=r"segments_info\[2\]\.category_id.*0 <= category_id < 3"):
        parse_annotation(raw)


def test_duplicate_image_ids_are_refused_across_id_types():
    raw = copy.deepcopy(GOLDEN_ANNOTATION)
    raw["data"].append(copy.deepcopy(raw["data"][0]) | {"image_id": "7"})
    with pytest.raises(FormatError, match="duplicate image id"):
        parse_annotation(raw)


def test_write_then_read_gives_the_same_json(tmp_path):
    ann = parse_annotation(changed())
    path = write_annotation(tmp_path / "a.json", ann)
    assert annotation_to_json(read_annotation(path)) == annotation_to_json(ann)
    assert json.loads(path.read_text())["data"][0]["neg_relations"][-1] == [0, 1, -1]


def test_unreadable_json_is_a_format_error(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(FormatError, match="bad.json: field 'line 1 column 2': malformed JSON"):
        read_annotation(tmp_path / "bad.json")


def test_image_keys_normalise_string_int_and_float_ids():
    assert image_key(107902) == image_key("107902") == image_key(107902.0) == "107902"
    with pytest.raises(FormatError, match="not an integer"):
        image_key(7.5)


def test_panoptic_ids_round_trip_through_png(tmp_path):
    from PIL import Image

    ids = np.array([[0, 1, 256], [65536, 16777215, 3648962]], dtype=np.uint32)
    assert np.array_equal(rgb_to_id(id_to_rgb(ids)), ids)
    Image.fromarray(id_to_rgb(ids)).save(tmp_path / "p.png")
    assert np.array_equal(read_panoptic(tmp_path / "p.png"), ids)


def test_sample_is_deterministic(tmp_path):
    first = write_sample(tmp_path / "a")
    second = write_sample(tmp_path / "b")
    assert first.psg_file.read_bytes() == second.psg_file.read_bytes()
    assert first.haystack_file.read_bytes() == second.haystack_file.read_bytes()
    haystack = read_annotation(first.haystack_file)
    assert haystack.has_negatives and all(isinstance(i.image_id, int) for i in haystack.images)
    psg = read_annotation(first.psg_file)
    assert all(isinstance(i.image_id, str) for i in psg.images) and len(psg.test_image_ids) == 8


@pytest.mark.parametrize(("change", "pattern"), [
    ({"relations": [[0, 1, True]]}, r"record 0: field 'relations\[0\]\[2\]': not a triplet of integers"),
    ({"segments_info": [{"id": 1, "category_id": 0}]}, r"record 0: field 'segments_info\[0\]\.isthing': missing key"),
    ({"image_id": [7]}, r"record 0: field 'image_id': wrong type"),
])
def test_typed_decoding_errors_name_record_and_field(change, pattern):
    with pytest.raises(FormatError, match=pattern):
        parse_annotation(changed(**change))


def test_annotation_file_json_gz_and_records_false(tmp_path):
    import gzip

    path = tmp_path / "annotation.json.gz"
    path.write_bytes(gzip.compress(json.dumps(changed()).encode()))
    full = read_annotation(path)
    lean = read_annotation(path, records=False)
    assert full.images[0].segments_info and not lean.images[0].segments_info
    assert np.array_equal(full.images[0].boxes, lean.images[0].boxes)
    assert np.array_equal(full.images[0].neg_relations, lean.images[0].neg_relations)


def test_boxes_beyond_float32_are_refused():
    raw = changed()
    raw["data"][0]["annotations"][0]["bbox"] = [0, 0, 1e39, 10]
    with pytest.raises(FormatError, match=r"annotations\[0\]\.bbox.*bad box.*within float32 range"):
        parse_annotation(raw)
