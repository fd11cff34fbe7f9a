"""HOI predictions as columnar NPZ: `hoi-bench convert hoi-predictions` round trips, `evaluate` gives the JSON's
numbers from it, and a broken archive is one clear error line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoi_bench import cli
from hoi_sg_dataset.columnar import read_prediction_npz
from hoi_sg_dataset.predictions import read_prediction_set
from hoi_sg_dataset.formats import write_annotations
from hoi_sg_dataset.predictions import verb_prior_predictions
from hoi_sg_dataset.samples import sample_plan
from hoi_sg_dataset.splits import make_split
from tests.hoi_sg_dataset.test_fast_json import same_set


@pytest.fixture(scope="module", params=["hico", "vcoco"])
def files(request, tmp_path_factory):
    dataset = request.param
    base = tmp_path_factory.mktemp(f"columnar-{dataset}")
    plan = sample_plan()
    if dataset == "hico":
        trainval, test, seed = plan.hico_trainval, plan.hico_test, 368
    else:
        trainval, test, seed = plan.vcoco_trainval, plan.vcoco_test, 564
    split = make_split(trainval, test, dataset, seed=seed)
    pred = base / "pred.json"
    pred.write_text(json.dumps(verb_prior_predictions(split.trainval, split.test)[2:]))
    return dataset, write_annotations(base / "test.json", split.test, dataset), pred


def run(*argv) -> int:
    return cli.main(list(argv))


def test_npz_round_trips_and_evaluates_to_the_json_numbers(files, tmp_path):
    dataset, gt, pred = files
    npz, back = tmp_path / "pred.npz", tmp_path / "back.json"
    assert run("convert", "hoi-predictions", "--predictions", str(pred), "--out", str(npz)) == 0
    assert run("convert", "hoi-predictions", "--predictions", str(npz), "--out", str(back)) == 0
    names, from_json = read_prediction_set(pred, dataset)
    npz_names, from_npz = read_prediction_npz(npz, dataset)
    assert npz_names == names
    same_set(from_npz, from_json)
    assert json.loads(back.read_text()) == json.loads(pred.read_text())
    verb = "hoi_map" if dataset == "hico" else "vcoco_map"
    outputs = []
    for source in (pred, npz):
        out = tmp_path / f"{source.suffix}.result.json"
        argv = ["evaluate", verb, "--references", str(gt), "--predictions", str(source), "--output", str(out)]
        assert run(*argv) == 0
        outputs.append(json.loads(out.read_text()))
    assert outputs[0] == outputs[1]


def broken_archives(tmp_path, good):
    with np.load(good) as archive:
        arrays = {name: archive[name] for name in archive.files}

    def variant(name, **change):
        path = tmp_path / f"{name}.npz"
        np.savez(path, **{**arrays, **change})
        return path

    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    without = {k: v for k, v in arrays.items() if k != "scores"}
    missing = tmp_path / "missing.npz"
    np.savez(missing, **without)
    bad_scores = arrays["scores"].copy()
    bad_scores[3] = np.nan
    bad_boxes = arrays["boxes"].copy()
    bad_boxes[0, 2] = 1e39
    bad_hois = arrays["hois"].copy()
    bad_hois[0, 0] = 10**6
    counts = arrays["hoi_counts"].copy()
    counts[0] += 1
    return [
        (junk, "unreadable .npz file"),
        (variant("format", format=np.array("something else")), "not a hoi-bench HOI prediction NPZ"),
        (missing, "missing arrays"),
        (variant("counts", hoi_counts=counts), "counts do not add up"),
        (variant("nan", scores=bad_scores), "field 'scores[3]'"),
        (variant("far", boxes=bad_boxes), "field 'boxes[0]'"),
        (variant("index", hois=bad_hois), "field 'hois[0]'"),
        (variant("pickled", file_names=np.array(arrays["file_names"].tolist(), dtype=object)), ".npz"),
    ]


def test_broken_archive_is_one_clear_line_with_exit_code_2(files, tmp_path, capsys):
    dataset, gt, pred = files
    good = tmp_path / "good.npz"
    assert run("convert", "hoi-predictions", "--predictions", str(pred), "--out", str(good)) == 0
    verb = "hoi_map" if dataset == "hico" else "vcoco_map"
    capsys.readouterr()
    for path, needle in broken_archives(tmp_path, good):
        assert run("evaluate", verb, "--references", str(gt), "--predictions", str(path)) == 2, path
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"hoi-bench: error: {path}") and "\n" not in err, err
        assert needle in err, err
