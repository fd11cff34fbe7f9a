"""PPDM/QPIC annotation files: every quirk read, byte-exact rewrite, and each bad input named precisely."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hoi_bench.files
from hoi_bench.errors import FormatError, MissingFilesError
from hoi_sg_dataset import formats
from hoi_sg_dataset.formats import (
    BoxAnnotation,
    HoiAnnotation,
    ImageRecord,
    parse_annotations,
    read_annotations,
    write_annotations,
)
from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_lookup, hico_verbs, vcoco_verbs

ANCHOR_FILES = {
    "test_hico_sg1.json": 8515,
    "test_hico_sg2.json": 7656,
    "test_hico_sg3.json": 6229,
    "test_vcoco_sg1.json": 2850,
    "test_vcoco_sg2.json": 3066,
    "test_vcoco_sg3.json": 3888,
}

HICO_TRAIN = {
    "file_name": "HICO_train2015_00000005.jpg",
    "img_id": 5,
    "annotations": [
        {"bbox": [81, 153, 202, 271], "category_id": 1},
        {"bbox": [0, 175, 312, 421], "category_id": 65},
    ],
    "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 88, "hoi_category_id": 242}],
}
HICO_TEST = {
    "file_name": "HICO_test2015_00000002.jpg",
    "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 77}],
    "annotations": [
        {"bbox": [226, 18, 340, 210], "category_id": 1},
        {"bbox": [174, 65, 393, 440], "category_id": 19},
    ],
}
VCOCO = {
    "annotations": [
        {"category_id": 1, "bbox": [154.49, 71.25, 312.81, 395.57]},
        {"category_id": 16, "bbox": [1, 186, 639, 356]},
    ],
    "hoi_annotation": [
        {"subject_id": 0, "object_id": -1, "category_id": 1},
        {"subject_id": 0, "object_id": 1, "category_id": 5},
    ],
    "file_name": "COCO_train2014_000000226162.jpg",
}
VCOCO_EMPTY = {
    "annotations": [{"category_id": 1, "bbox": [0.0, 0.0, 10.0, 10.0]}],
    "hoi_annotation": [],
    "file_name": "COCO_val2014_000000000042.jpg",
}


def _copy(record):
    return json.loads(json.dumps(record))


@pytest.mark.anchors
@pytest.mark.parametrize("name", sorted(ANCHOR_FILES))
def test_official_sg_files_read_and_rewrite_byte_for_byte(anchors_dir, tmp_path, name):
    source = anchors_dir / "hoi_sg" / name
    records = read_annotations(source)
    assert len(records) == ANCHOR_FILES[name]
    out = write_annotations(tmp_path / name, records)
    assert out.read_bytes() == source.read_bytes()


@pytest.mark.anchors
def test_hoi_class_table_agrees_with_every_hoi_category_id_in_the_anchors(anchors_dir):
    lookup = hico_hoi_lookup()
    seen = set()
    for number in (1, 2, 3):
        for record in read_annotations(anchors_dir / "hoi_sg" / f"test_hico_sg{number}.json", validate=False):
            for hoi in record.hoi_annotation:
                if hoi.hoi_category_id is not None:
                    pair = (hoi.category_id, record.annotations[hoi.object_id].category_id)
                    assert lookup[pair] == hoi.hoi_category_id
                    seen.add(hoi.hoi_category_id)
    assert len(lookup) == 600 and len(set(lookup.values())) == 600
    assert len(seen) == 155  # held-out classes named by the train-origin records of the three files


def test_vocabulary_sizes():
    assert (len(hico_verbs()), len(vcoco_verbs()), len(coco_objects())) == (117, 29, 80)
    assert max(coco_objects().raw_ids) == 90


def test_hico_records_with_and_without_optional_ids():
    train, test = parse_annotations([_copy(HICO_TRAIN), _copy(HICO_TEST)], "hico")
    assert (train.img_id, train.hoi_annotation[0].hoi_category_id) == (5, 242)
    assert (test.img_id, test.hoi_annotation[0].hoi_category_id) == (None, None)
    assert train.origin_split == "train2015" and test.origin_split == "test2015"
    assert train.boxes.tolist() == [[81, 153, 202, 271], [0, 175, 312, 421]]
    assert train.box_labels.tolist() == [1, 65] and test.hoi_triplets.tolist() == [[0, 1, 77]]


def test_vcoco_no_object_hoi_empty_hoi_list_and_int_crowd_box_kept_as_written():
    record, empty = parse_annotations([_copy(VCOCO), _copy(VCOCO_EMPTY)], "vcoco")
    assert record.hoi_triplets.tolist() == [[0, -1, 1], [0, 1, 5]]
    assert [type(v) for v in record.annotations[1].bbox] == [int] * 4
    assert [type(v) for v in record.annotations[0].bbox] == [float] * 4
    assert empty.hoi_annotation == [] and empty.hoi_triplets.shape == (0, 3)
    assert formats.record_to_json(record, "vcoco") == VCOCO


def test_dataset_is_detected_from_file_names(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([VCOCO]))
    assert read_annotations(path)[0].hoi_annotation[0].object_id == -1
    path.write_text(json.dumps([{**VCOCO, "file_name": "img.jpg"}]))
    with pytest.raises(FormatError, match="pass dataset="):
        read_annotations(path)


def test_unknown_record_keys_survive_a_rewrite(tmp_path):
    record = {**_copy(HICO_TEST), "source": "mine"}
    path = write_annotations(tmp_path / "x.json", parse_annotations([record], "hico"), "hico")
    assert json.loads(path.read_text()) == [record]


def _error(records, dataset="hico", source="bad.json") -> FormatError:
    with pytest.raises(FormatError) as caught:
        parse_annotations(records, dataset, source=source)
    return caught.value


def test_malformed_json_names_file_and_position(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[{"file_name": "a.jpg",\n "annotations": [}]')
    with pytest.raises(FormatError) as caught:
        read_annotations(path, "hico")
    assert caught.value.file == str(path) and caught.value.field == "line 2 column 18"
    assert "malformed JSON" in str(caught.value)


def test_missing_annotation_file_is_named(tmp_path):
    with pytest.raises(MissingFilesError, match="test_hico.json"):
        read_annotations(tmp_path / "test_hico.json", "hico")


def test_subject_index_past_the_box_list():
    record = _copy(HICO_TEST)
    record["hoi_annotation"][0]["subject_id"] = 2
    error = _error([_copy(HICO_TRAIN), record])
    assert (error.file, error.record, error.field, error.found) == (
        "bad.json",
        1,
        "hoi_annotation[0].subject_id",
        2,
    )
    assert error.expected == "0 <= subject_id < 2" and "HICO_test2015_00000002.jpg" in str(error)


def test_no_object_index_is_refused_for_hico():
    record = _copy(HICO_TEST)
    record["hoi_annotation"][0]["object_id"] = -1
    assert _error([record]).field == "hoi_annotation[0].object_id"


def test_unknown_verb_id():
    record = _copy(HICO_TEST)
    record["hoi_annotation"][0]["category_id"] = 118
    error = _error([record])
    assert (error.record, error.field, error.found, error.expected) == (
        0,
        "hoi_annotation[0].category_id",
        118,
        "a verb id in 1..117",
    )
    vcoco = _copy(VCOCO)
    vcoco["hoi_annotation"][1]["category_id"] = 29
    assert _error([vcoco], "vcoco").expected == "a verb id in 0..28"


def test_box_with_x2_left_of_x1():
    record = _copy(HICO_TRAIN)
    record["annotations"][1]["bbox"] = [312, 175, 0, 421]
    error = _error([record])
    assert (error.record, error.field, error.found) == (0, "annotations[1].bbox", [312, 175, 0, 421])
    assert "x1 <= x2" in error.expected


@pytest.mark.parametrize(
    "bbox", [[1, 2, 3], [1, 2, "3", 4], [1, 2, float("nan"), 4], [0, 0, float("inf"), 1], [True, 0, 1, 1]]
)
def test_malformed_boxes(bbox):
    record = _copy(HICO_TEST)
    record["annotations"][0]["bbox"] = bbox
    assert _error([record]).field == "annotations[0].bbox"


def test_unknown_object_category_and_inconsistent_hoi_class():
    record = _copy(HICO_TRAIN)
    record["annotations"][1]["category_id"] = 12
    assert _error([record]).field == "annotations[1].category_id"
    record = _copy(HICO_TRAIN)
    record["hoi_annotation"][0]["hoi_category_id"] = 243
    error = _error([record])
    assert (error.field, error.expected, error.found) == ("hoi_annotation[0].hoi_category_id", 242, 243)
    record = _copy(HICO_TRAIN)
    record["hoi_annotation"][0]["category_id"] = 1  # adjust + bed is no HICO class
    assert "none of the 600" in str(_error([record]))


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda r: r.pop("file_name"), "file_name"),
        (lambda r: r.pop("annotations"), "annotations"),
        (lambda r: r.update(hoi_annotation={}), "hoi_annotation"),
        (lambda r: r.update(img_id="5"), "img_id"),
        (lambda r: r["hoi_annotation"][0].pop("object_id"), "hoi_annotation[0].object_id"),
        (lambda r: r["annotations"][0].update(category_id=1.0), "annotations[0].category_id"),
    ],
)
def test_structural_errors_name_the_field(mutate, field):
    record = _copy(HICO_TRAIN)
    mutate(record)
    assert _error([record]).field == field


def test_top_level_must_be_a_list():
    assert _error({"images": []}).found == "dict"


def test_validate_false_accepts_other_vocabularies_but_still_checks_structure():
    record = _copy(HICO_TEST)
    record["hoi_annotation"][0]["category_id"] = 500
    assert parse_annotations([record], "hico", validate=False)[0].hoi_annotation[0].category_id == 500
    record["hoi_annotation"][0]["subject_id"] = 9
    with pytest.raises(FormatError):
        parse_annotations([record], "hico", validate=False)


def test_failed_write_leaves_the_previous_file(tmp_path, monkeypatch):
    path = write_annotations(tmp_path / "a.json", parse_annotations([_copy(HICO_TEST)], "hico"))
    before = path.read_bytes()

    def broken_replace(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(hoi_bench.files.os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_annotations(path, [])
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["a.json"]


_coord = st.integers(0, 500) | st.floats(0, 500, allow_nan=False, width=32)


@st.composite
def _vcoco_records(draw):
    boxes = []
    for _ in range(draw(st.integers(1, 4))):
        x1, y1, w, h = draw(_coord), draw(_coord), draw(_coord), draw(_coord)
        boxes.append(BoxAnnotation([x1, y1, x1 + w, y1 + h], draw(st.sampled_from(coco_objects().raw_ids))))
    hois = [
        HoiAnnotation(
            draw(st.integers(0, len(boxes) - 1)),
            draw(st.integers(-1, len(boxes) - 1)),
            draw(st.integers(0, 28)),
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    return ImageRecord(f"COCO_train2014_{draw(st.integers(0, 10**6)):012d}.jpg", boxes, hois)


@settings(max_examples=40, deadline=None)
@given(st.lists(_vcoco_records(), max_size=4, unique_by=lambda record: record.file_name))
def test_written_records_read_back_equal(tmp_path_factory, records):
    path = tmp_path_factory.mktemp("rt") / "test_vcoco.json"
    assert read_annotations(write_annotations(path, records, "vcoco"), "vcoco") == records
