"""Native files: round trips, and clear errors (file, line, field) for every malformed input of the issue."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from hoi_bench.errors import FormatError
from sportshhi import formats
from sportshhi.samples import sample_action_list_path

ROW = "v_-6Os86HzwCs_c001,105,0.4123,0.3011,0.4870,0.6522,0.5121,0.2877,0.5702,0.6400,3,2,5"


@pytest.fixture(scope="module")
def actions():
    return formats.read_action_list(sample_action_list_path())


def _csv(tmp_path, *lines, name="ann.csv"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_action_list_names_come_from_the_file(actions, tmp_path):
    assert len(actions) == 34 and actions.label_ids == tuple(range(1, 35))
    assert actions.name_of(2) == "basketball - sample - partner to the right"
    path = tmp_path / "list.pbtxt"
    formats.write_action_list(path, actions)
    assert formats.read_action_list(path) == actions
    custom = formats.parse_action_list('label {\n  name: "volleyball - spike"\n  id: 9\n}\n')
    assert custom.names == ("volleyball - spike",) and custom.label_ids == (9,)


@pytest.mark.parametrize("text, message", [
    ('label {\n  name: "a"\n}\n', "label without a positive integer id"),
    ('label {\n  label_id: 3\n}\n', "label without a name"),
    ('label { name: "a" label_id: 1 }\nlabel { name: "b" label_id: 1 }\n', "duplicate label id"),
    ('label {\n  name: "a"\n  label_id: 1\n', "unterminated label block"),
    ('item { name: "a" }', "unknown top-level field"),
])
def test_malformed_action_lists_are_refused(text, message):
    with pytest.raises(FormatError, match=message):
        formats.parse_action_list(text, "list.pbtxt")


def test_annotation_csv_keys_rows_by_frame_index_div_5(tmp_path, actions):
    second = ROW.replace(",105,", ",109,").replace(",3,2,5", ",2,5,2").replace("0.4123", "0.1")
    ann = formats.read_annotation_csv(_csv(tmp_path, ROW, second, ""), actions)
    assert len(ann) == 2
    assert ann.keyframes.tolist() == [21, 21]
    assert ann.keys.tolist() == ["v_-6Os86HzwCs_c001,0021"] * 2
    assert ann.subject_boxes[0].tolist() == [0.4123, 0.3011, 0.4870, 0.6522]
    assert ann.labels.tolist() == [3, 2]
    assert ann.subject_ids.tolist() == [2, 5] and ann.object_ids.tolist() == [5, 2]


def test_annotation_csv_round_trips_exactly(tmp_path, actions):
    ann = formats.read_annotation_csv(_csv(tmp_path, ROW), actions)
    out = tmp_path / "copy.csv"
    formats.write_annotation_csv(out, ann)
    again = formats.read_annotation_csv(out, actions)
    for field in ("frame_ids", "subject_boxes", "object_boxes", "labels", "subject_ids", "object_ids"):
        assert np.array_equal(getattr(ann, field), getattr(again, field))


@pytest.mark.parametrize("row, field, message", [
    (ROW.replace(",0.5702,", ",0.4000,"), "object_box", "box corners out of order"),
    (ROW.replace("0.4123", "-0.01"), "subject_box", "box outside the normalised image"),
    (ROW.replace(",0.6400,", ",1.2,"), "object_box", "box outside the normalised image"),
    (ROW.replace(",3,2,5", ",35,2,5"), "label", "label not in the action list"),
    (ROW.replace(",105,", ",abc,"), "frame_id", "not a number"),
    (ROW + ",7", None, "wrong number of columns"),
])
def test_bad_annotation_rows_name_file_line_and_field(tmp_path, actions, row, field, message):
    path = _csv(tmp_path, ROW.replace(",105,", ",200,"), row)
    with pytest.raises(FormatError, match=message) as caught:
        formats.read_annotation_csv(path, actions)
    assert caught.value.file == str(path) and caught.value.record == "line 2"
    assert caught.value.field == field
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)


def test_duplicate_ordered_pair_in_one_keyframe_is_refused_with_both_lines(tmp_path, actions):
    # Issue 12 changed the default: only the builder's reading (one_label_per_pair=True, like the official
    # training loader) refuses a second label on one pair; evaluation counts each row as a GT instance.
    other_label = ROW.replace(",3,2,5", ",2,2,5")
    same_keyframe = other_label.replace(",105,", ",107,")  # 107 // 5 == 21 too
    with pytest.raises(FormatError, match="duplicate ordered pair") as caught:
        formats.read_annotation_csv(_csv(tmp_path, ROW, same_keyframe), actions, one_label_per_pair=True)
    assert caught.value.record == "line 2" and "line 1" in str(caught.value)
    swapped = ROW.split(",")
    swapped = swapped[:2] + swapped[6:10] + swapped[2:6] + swapped[10:]
    path = _csv(tmp_path, ROW, ",".join(swapped), name="ok.csv")
    assert len(formats.read_annotation_csv(path, actions, one_label_per_pair=True)) == 2
    next_keyframe = ROW.replace(",105,", ",110,")
    path = _csv(tmp_path, ROW, next_keyframe, name="ok2.csv")
    assert len(formats.read_annotation_csv(path, actions, one_label_per_pair=True)) == 2


def test_one_ordered_pair_with_two_labels_reads_as_two_gt_rows(tmp_path, actions):
    same_pair_other_label = ROW.replace(",3,2,5", ",2,2,5").replace(",105,", ",107,")
    ann = formats.read_annotation_csv(_csv(tmp_path, ROW, same_pair_other_label), actions)
    assert ann.labels.tolist() == [3, 2] and ann.keys.tolist() == ["v_-6Os86HzwCs_c001,0021"] * 2


def test_prediction_csv_round_trip_and_validation(tmp_path, actions):
    rows = [formats.PredictionRow("v_a_c001", 21, (0.1, 0.2, 0.3, 0.9), (0.5, 0.2, 0.7, 0.9), 2, 0.75),
            ("v_a_c001", 22, (0.0, 0.0, 1.0, 1.0), (0.25, 0.5, 0.5, 0.75), 33, 1e-3)]
    path = tmp_path / "pred.csv"
    assert formats.write_prediction_csv(path, rows) == 2
    read = formats.read_prediction_csv(path, actions)
    assert read.keys.tolist() == ["v_a_c001,0021", "v_a_c001,0022"]
    assert read.subject_boxes.tolist() == [[0.1, 0.2, 0.3, 0.9], [0.0, 0.0, 1.0, 1.0]]
    assert read.labels.tolist() == [2, 33] and read.scores.tolist() == [0.75, 1e-3]
    bad = path.read_text().replace(",33,", ",40,")
    path.write_text(bad)
    with pytest.raises(FormatError, match="label not in the action list") as caught:
        formats.read_prediction_csv(path, actions)
    assert caught.value.record == "line 2"
    with pytest.raises(FormatError, match="12 columns"):
        formats.read_prediction_csv(_csv(tmp_path, ROW, name="thirteen.csv"))


def test_writing_bad_predictions_leaves_no_file(tmp_path):
    path = tmp_path / "pred.csv"
    with pytest.raises(FormatError, match="box corners out of order"):
        formats.write_prediction_csv(path, [("v", 1, (0.5, 0.2, 0.3, 0.9), (0.5, 0.2, 0.7, 0.9), 2, 0.5)])
    assert list(tmp_path.iterdir()) == []


def test_proposals_accept_n4_and_n5_arrays(tmp_path):
    path = tmp_path / "props.pkl"
    scored = np.array([[0.1, 0.2, 0.3, 0.9, 0.95], [0, 0, 1, 1, 0.2]])
    unscored = np.array([[0.1, 0.2, 0.3, 0.9]])
    formats.write_proposals(path, {"v_a_c001,0021": unscored, "v_a_c001,0022": scored})
    proposals = formats.read_proposals(path)
    assert proposals["v_a_c001,0021"].shape == (1, 5) and proposals["v_a_c001,0021"][0, 4] == 1.0
    assert np.allclose(proposals["v_a_c001,0022"][:, 4], [0.95, 0.2])


@pytest.mark.parametrize("data, message", [
    ({"v_a_c001-21": np.zeros((1, 4))}, "bad proposal key"),
    ({"v_a_c001,0021": np.zeros((2, 3))}, "N×4 or N×5"),
    ({"v_a_c001,0021": np.array([[0.5, 0.1, 0.2, 0.3]])}, "bad proposal box"),
    ([1, 2], "not a dict"),
])
def test_bad_proposals_are_refused(tmp_path, data, message):
    path = tmp_path / "props.pkl"
    path.write_bytes(pickle.dumps(data))
    with pytest.raises(FormatError, match=message):
        formats.read_proposals(path)


def test_proposal_pickles_cannot_run_code(tmp_path):
    class Exploit:
        def __reduce__(self):
            return (print, ("pwned",))

    path = tmp_path / "props.pkl"
    path.write_bytes(pickle.dumps({"v,0001": Exploit()}))
    with pytest.raises(FormatError, match="refusing to unpickle builtins.print"):
        formats.read_proposals(path)


def test_columnar_and_row_readers_agree(tmp_path, actions):
    rng = np.random.default_rng(0)
    corners = np.sort(rng.random((50, 2, 4)), axis=1)
    subject = np.stack([corners[:, 0, 0], corners[:, 0, 1], corners[:, 1, 0], corners[:, 1, 1]], axis=1)
    obj = np.stack([corners[:, 0, 2], corners[:, 0, 3], corners[:, 1, 2], corners[:, 1, 3]], axis=1)
    subject[0] = [0.0, 0.0, 1.0, 1.0]
    rows = [(f"v_{i % 3}_c001", i, tuple(s), tuple(o), int(rng.integers(1, 35)), float(rng.random()))
            for i, (s, o) in enumerate(zip(subject, obj))]
    path = tmp_path / "pred.csv"
    formats.write_prediction_csv(path, rows)
    columnar = formats._read_predictions_columnar(path, actions)
    by_row = formats._read_predictions_by_row(path, actions)
    assert columnar is not None
    for field in ("keyframes", "subject_boxes", "object_boxes", "labels", "scores"):
        assert np.array_equal(getattr(columnar, field), getattr(by_row, field))
    assert columnar.video_ids.tolist() == by_row.video_ids.tolist() == [r[0] for r in rows]
    assert np.array_equal(columnar.subject_boxes, subject)  # written floats read back exactly


def test_prediction_rows_with_spaces_still_read(tmp_path):
    path = _csv(tmp_path, "v_a_c001, 3, 0.1, 0.2, 0.3, 0.9, 0.5, 0.2, 0.7, 0.9, 2, 0.75", name="spaced.csv")
    assert formats.read_prediction_csv(path).scores.tolist() == [0.75]


def test_video_ids_that_would_break_the_csv_are_refused(tmp_path):
    with pytest.raises(FormatError, match="video id cannot be written"):
        formats.write_prediction_csv(tmp_path / "p.csv", [("v,1", 1, (0, 0, 1, 1), (0, 0, 1, 1), 2, 0.5)])


# ------------------------------------------------------------------- columnar readers (issue 11) and bad bytes


def test_annotation_reader_keeps_video_codes_and_reads_gzip(tmp_path, actions):
    import gzip

    other = ROW.replace("v_-6Os86HzwCs_c001", "v_b_c002").replace(",3,2,5", ",2,2,5")
    plain = formats.read_annotation_csv(_csv(tmp_path, ROW, other, ROW.replace(",105,", ",110,")), actions)
    assert plain.video_coding is not None  # decoded by the columnar path, no string per row
    assert plain.videos().names[plain.videos().codes].tolist() == plain.video_ids.tolist()
    assert plain.video_ids.tolist() == ["v_-6Os86HzwCs_c001", "v_b_c002", "v_-6Os86HzwCs_c001"]
    packed = tmp_path / "ann.csv.gz"
    packed.write_bytes(gzip.compress((tmp_path / "ann.csv").read_bytes()))
    again = formats.read_annotation_csv(packed, actions)
    assert again.keys.tolist() == plain.keys.tolist()
    assert np.array_equal(again.subject_boxes, plain.subject_boxes)


@pytest.mark.parametrize("reader", [formats.read_annotation_csv, formats.read_prediction_csv])
def test_a_csv_that_is_not_utf8_names_file_line_and_byte(tmp_path, reader):
    path = tmp_path / "latin1.csv"
    path.write_bytes(ROW.encode() + b"\n" + ROW.replace("v_-6Os86HzwCs", "v_caf\xe9").encode("latin-1") + b"\n")
    with pytest.raises(FormatError, match="not UTF-8 text") as caught:
        reader(path)
    assert caught.value.file == str(path) and caught.value.record == "line 2"
    assert "byte 0xe9" in str(caught.value)


def test_cells_arrow_would_call_null_still_get_the_row_readers_message(tmp_path, actions):
    path = _csv(tmp_path, "v_a_c001,3,0.1,0.2,0.3,0.9,0.5,0.2,0.7,0.9,2,NA", name="na.csv")
    with pytest.raises(FormatError, match="not a finite number|not a number") as caught:
        formats.read_prediction_csv(path, actions)
    assert caught.value.record == "line 1" and caught.value.field == "score"
