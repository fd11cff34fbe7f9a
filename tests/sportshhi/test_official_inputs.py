"""Inputs the released hhi_eval scores though they look wrong (issue 19): scored as it scores them, each kind counted
in one warning line and in the result's ``warnings``; the default (paper) reader keeps refusing boxes outside the
image."""

from __future__ import annotations

import json
import warnings

import pytest

from hoi_bench import cli
from hoi_bench.errors import FormatError
from hoi_bench.input_warnings import InputWarning
from sportshhi import formats
from sportshhi.evaluation import hhi_metrics, score_tables

SUBJECT, OBJECT = [0.1, 0.1, 0.3, 0.8], [0.5, 0.1, 0.7, 0.8]
LABEL = 2


def gt_line(video="v1", frame=5, subject=SUBJECT, obj=OBJECT, label=LABEL) -> str:
    return ",".join(map(str, [video, frame, *subject, *obj, label, 1, 2]))


def prediction_line(video="v1", keyframe=1, subject=SUBJECT, obj=OBJECT, label=LABEL, score=0.9) -> str:
    return ",".join(map(str, [video, keyframe, *subject, *obj, label, score]))


def files(tmp_path, gt_lines, prediction_lines):
    gt, pred = tmp_path / "gt.csv", tmp_path / "pred.csv"
    gt.write_text("".join(line + "\n" for line in gt_lines))
    pred.write_text("".join(line + "\n" for line in prediction_lines))
    return gt, pred


def test_identical_gt_rows_count_twice_with_a_counted_warning():
    """Two byte-identical GT rows are two GT instances (the released code): one TP of two GT is AP 0.5."""
    with pytest.warns(InputWarning, match="1 evaluated GT rows repeat an earlier row exactly"):
        result = hhi_metrics(["v,1", "v,1"], [SUBJECT] * 2, [OBJECT] * 2, [LABEL] * 2,
                             ["v,1"], [SUBJECT], [OBJECT], [LABEL], [0.9], class_whitelist=[LABEL], ks=[1])
    assert result["mAP"] == 0.5 and result["recall@1"] == 0.5 and len(result["warnings"]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        single = hhi_metrics(["v,1"], [SUBJECT], [OBJECT], [LABEL],
                             ["v,1"], [SUBJECT], [OBJECT], [LABEL], [0.9], class_whitelist=[LABEL], ks=[1])
    assert single["mAP"] == 1.0 and single["warnings"] == []


def test_predictions_for_videos_the_gt_lacks_are_ignored_and_counted(tmp_path):
    gt, pred = files(tmp_path, [gt_line()], [prediction_line(), prediction_line(video="elsewhere", score=0.95),
                                             prediction_line(video="elsewhere", keyframe=3)])
    with pytest.warns(InputWarning, match=r"2 predictions are for videos the GT does not have .*'elsewhere'"):
        result = score_tables(formats.read_annotation_csv(gt), formats.read_prediction_csv(pred),
                              class_whitelist=[LABEL])
    assert result["mAP"] == 1.0 and len(result["warnings"]) == 1


def test_boxes_outside_the_image_are_refused_by_default_and_scored_in_official_mode(tmp_path):
    outside = [-0.01, 0.1, 0.3, 0.8]
    gt, pred = files(tmp_path, [gt_line(subject=outside)], [prediction_line(subject=outside)])
    for read in (formats.read_annotation_csv, formats.read_prediction_csv):
        with pytest.raises(FormatError, match="box outside the normalised image"):
            read(gt if read is formats.read_annotation_csv else pred)
    annotations = formats.read_annotation_csv(gt, allow_outside_image=True)
    predictions = formats.read_prediction_csv(pred, allow_outside_image=True)
    assert annotations.subject_boxes[0, 0] == predictions.subject_boxes[0, 0] == -0.01
    with pytest.warns(InputWarning) as caught:
        result = score_tables(annotations, predictions, official=True, class_whitelist=[LABEL])
    notes = [str(w.message) for w in caught]
    assert any(n.startswith("1 GT rows have a box coordinate outside") for n in notes)
    assert any(n.startswith("1 prediction rows have a box coordinate outside") for n in notes)
    assert result["mAP"] == 1.0 and len(result["warnings"]) == 2


def test_cli_official_scores_outside_boxes_with_warning_lines_and_default_exits_2(sample, tmp_path, capsys):
    outside = [-0.01, 0.1, 0.3, 0.8]
    gt, pred = files(tmp_path, [gt_line(subject=outside)], [prediction_line(subject=outside)])
    action_list = sample.root / formats.ACTION_LIST_FILE
    out = tmp_path / "out.json"
    argv = ["evaluate", "hhi", "--references", str(gt), "--predictions", str(pred), "--action-list",
            str(action_list), "--output", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "box outside the normalised image" in err and not out.exists()
    assert cli.main([*argv, "--official"]) == 0
    printed = capsys.readouterr()
    lines = [line for line in printed.out.splitlines() if line.startswith("warning:")]
    assert len(lines) == 2 and all("outside the normalised image" in line for line in lines)
    assert "InputWarning" not in printed.err
    assert json.loads(out.read_text())["warnings"] == [line.removeprefix("warning: ") for line in lines]
