"""``hoi_map`` / ``vcoco_map`` on inputs the official evaluators score though ``build`` refuses them (issue 19): a box
inverted by a hair, a training file listing an image twice. Both protocols are official, so both score them as
upstream does and count each kind in one warning; the typed reader and the Python validators agree."""

from __future__ import annotations

import json
import warnings

import pytest

from hoi_bench import cli
from hoi_bench.errors import FormatError
from hoi_bench.input_warnings import InputWarning
from hoi_sg_dataset import fast_json
from hoi_sg_dataset.evaluation import hoi_map
from hoi_sg_dataset.formats import parse_annotations, read_annotations
from hoi_sg_dataset.predictions import hoi_map_files, load_sets, vcoco_map_files
from tests.hoi_sg_dataset import reference_hoi_map as reference

PERSON, CUP, HOLD = 1, 47, 37
HUMAN, THING = [10, 10, 50, 90], [40, 40, 80, 80]
HAIR = [60, 60, 59.9999999, 70]  # x2 < x1 by 1e-7


def gt_record(name="HICO_test2015_00000001.jpg", boxes=(HUMAN, THING), hois=1) -> dict:
    return {"file_name": name,
            "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": HOLD}] * hois,
            "annotations": [{"bbox": list(b), "category_id": PERSON if k == 0 else CUP}
                            for k, b in enumerate(boxes)]}


def prediction(boxes=(HUMAN, THING), score=0.9) -> dict:
    return {"file_name": "HICO_test2015_00000001.jpg",
            "predictions": [{"bbox": list(b), "category_id": PERSON if k == 0 else CUP} for k, b in enumerate(boxes)],
            "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": HOLD, "score": score}]}


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("protocol", ["qpic", "ho-rcnn"])
def test_a_gt_box_inverted_by_a_hair_is_scored_and_counted_on_both_reading_routes(tmp_path, protocol):
    gt = [gt_record(boxes=(HUMAN, THING, HAIR))]
    gt_file, pred_file = write(tmp_path, "gt.json", gt), write(tmp_path, "pred.json", [prediction()])
    with pytest.raises(FormatError, match="box corners out of order"):
        read_annotations(gt_file, "hico")  # what build reads: refused
    with pytest.warns(InputWarning, match=r"references: 1 boxes have x2 < x1 or y2 < y1 \(first: image 0, boxes\[2\]"):
        typed = hoi_map_files(gt_file, pred_file, protocol=protocol)
    plain_gt, plain_pred, _ = load_sets(gt_file, pred_file, "hico")
    with pytest.warns(InputWarning):
        plain = hoi_map(plain_gt, plain_pred, protocol=protocol)
    assert typed["warnings"] == plain["warnings"] and len(typed["warnings"]) == 1
    expected = reference.qpic_hico(gt, [prediction()]) if protocol == "qpic" else None
    assert typed["mAP"] == plain["mAP"] and (expected is None or typed["mAP"] == expected["mAP"])
    assert typed["ap_per_triplet"][f"{PERSON}_{CUP}_{HOLD}"] == pytest.approx(1.0, abs=1e-15)


def test_a_predicted_box_inverted_by_a_hair_is_scored_as_upstream_and_counted(tmp_path):
    """Upstream's IoU takes any four numbers: the subject [10, 10, 9.9999999, 90] is 0.9999999 px wide, IoU about
    1/41 with the GT person, no match."""
    inverted = prediction(boxes=([10, 10, 9.9999999, 90], THING))
    gt_file, pred_file = write(tmp_path, "gt.json", [gt_record()]), write(tmp_path, "pred.json", [inverted])
    with pytest.warns(InputWarning, match=r"1 boxes have x2 < x1 or y2 < y1"):
        result = hoi_map_files(gt_file, pred_file)
    assert result["mAP"] == reference.qpic_hico([gt_record()], [inverted])["mAP"] == 0.0
    with pytest.warns(InputWarning, match=r"1 boxes have x2 < x1"):
        assert vcoco_map_files(*_vcoco_files(tmp_path, inverted))["mAP_all"] == 0.0


def _vcoco_files(tmp_path, entry):
    """The same image as V-COCO GT and predictions, with V-COCO's verb hold_obj (0)."""
    gt = gt_record(name="COCO_val2014_000000000001.jpg")
    gt["hoi_annotation"] = [dict(h, category_id=0) for h in gt["hoi_annotation"]]
    pred = dict(entry, file_name="COCO_val2014_000000000001.jpg",
                hoi_prediction=[dict(h, category_id=0) for h in entry["hoi_prediction"]])
    return write(tmp_path, "vgt.json", [gt]), write(tmp_path, "vpred.json", [pred])


def test_a_train_file_listing_an_image_twice_counts_both_listings_for_rare(tmp_path):
    """5 HOIs per listing: 10 training instances make the triplet non-rare (QPIC counts every listing); counted
    once it would be rare."""
    gt_file, pred_file = write(tmp_path, "gt.json", [gt_record()]), write(tmp_path, "pred.json", [prediction()])
    train = [gt_record("HICO_train2015_00000001.jpg", hois=5)] * 2
    train_file = write(tmp_path, "train.json", train)
    with pytest.raises(FormatError, match="image listed twice"):
        read_annotations(train_file, "hico")  # what build reads: refused
    with pytest.warns(InputWarning, match=r"1 records repeat an image listed before \(first: 'HICO_train2015_0000"):
        result = hoi_map_files(gt_file, pred_file, train_references=train_file)
    assert result["mAP_non_rare"] == result["mAP"] and result["mAP_rare"] is None
    assert len(result["warnings"]) == 1
    typed = fast_json.decode_references(train_file.read_bytes(), "hico", allow_repeated_images=True)[1]
    plain = parse_annotations(train, "hico", allow_repeated_images=True)
    assert len(typed.hois) == 10 and sum(len(r.hoi_annotation) for r in plain) == 10


def test_cli_prints_the_warning_lines_and_writes_them(tmp_path, capsys):
    gt_file = write(tmp_path, "gt.json", [gt_record(boxes=(HUMAN, THING, HAIR))])
    pred_file = write(tmp_path, "pred.json", [prediction()])
    out = tmp_path / "out.json"
    assert cli.main(["evaluate", "hoi_map", "--references", str(gt_file), "--predictions", str(pred_file),
                     "--output", str(out)]) == 0
    printed = capsys.readouterr()
    lines = [line for line in printed.out.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and "x2 < x1" in lines[0] and "InputWarning" not in printed.err
    assert json.loads(out.read_text())["warnings"] == [lines[0].removeprefix("warning: ")]



def test_every_reading_route_gives_the_same_numbers_and_warning_lines(tmp_path, forked_pieces):
    """Python validators, the typed reader, the typed reader in forked pieces and the columnar NPZ: an inverted GT
    box and prediction entries for images the GT lacks give the same result and the same warning lines."""
    from hoi_sg_dataset.columnar import write_prediction_npz
    from hoi_sg_dataset.predictions import read_prediction_set

    names = [f"HICO_test2015_{n:08d}.jpg" for n in range(1, 9)]
    gt = [gt_record(name, boxes=(HUMAN, THING, HAIR)) for name in names[:4]]
    entries = [dict(prediction(score=0.1 * (k + 1)), file_name=name) for k, name in enumerate(names)]
    gt_file, pred_file = write(tmp_path, "gt.json", gt), write(tmp_path, "pred.json", entries)
    npz_file = write_prediction_npz(tmp_path / "p.npz", *read_prediction_set(pred_file, "hico"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        plain = hoi_map(*load_sets(gt_file, pred_file, "hico")[:2])
    plain_notes = [str(w.message) for w in caught]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        typed = hoi_map_files(gt_file, pred_file)
        pieces = hoi_map_files(gt_file, pred_file, workers=2)
        npz = hoi_map_files(gt_file, npz_file)
    assert forked_pieces == [(2, "decoded")]
    unknown, inverted = typed["warnings"]
    assert unknown.startswith(f"{pred_file}: 4 prediction entries are for images the references do not have")
    assert inverted.startswith("references: 4 boxes have x2 < x1")
    assert pieces == typed and npz["mAP"] == plain["mAP"] == typed["mAP"]
    assert npz["warnings"] == [unknown.replace(str(pred_file), str(npz_file)), inverted]
    assert plain_notes == [unknown, inverted] and plain["warnings"] == [inverted]  # load_sets issued the first
