"""The `hhi_map` evaluate module: same numbers as sportshhi.evaluation, installable for evaluate.load."""

from __future__ import annotations

from pathlib import Path

import evaluate
import numpy as np

import hoi_bench
from hoi_bench.metric_modules import install_metrics
from sportshhi.evaluation import hhi_metrics

A, B, C = [0.1, 0.1, 0.3, 0.8], [0.5, 0.1, 0.7, 0.8], [0.35, 0.2, 0.45, 0.9]


def _row(key, subjects, objects, labels, scores=None):
    row = {"keyframe": key, "subject_boxes": subjects, "object_boxes": objects, "labels": labels}
    return row if scores is None else dict(row, scores=scores)


def test_module_matches_the_numpy_metric_in_both_modes():
    metric = evaluate.load(hoi_bench.metric_path("hhi_map"))
    references = [_row("v,0001", [A, B], [B, C], [2, 3]), _row("v,0002", [C], [A], [2]),
                  _row("v,0003", [], [], [])]
    predictions = [_row("v,0001", [A, B, C], [B, C, A], [2, 2, 3], [0.9, 0.6, 0.4]),
                   _row("v,0002", [], [], [], []), _row("v,0009", [A], [B], [2], [0.99])]
    for kwargs in ({}, {"official": True}, {"official": True, "iou_threshold": 0.5}, {"ks": [1, 2]}):
        result = metric.compute(predictions=predictions, references=references, **kwargs)
        expected = hhi_metrics(["v,0001", "v,0001", "v,0002"], np.array([A, B, C]), np.array([B, C, A]),
                               [2, 3, 2],
                               ["v,0001"] * 3 + ["v,0009"], np.array([A, B, C, A]), np.array([B, C, A, B]),
                               [2, 2, 3, 2], [0.9, 0.6, 0.4, 0.99], **kwargs)
        assert result == expected


def test_install_metrics_makes_the_bare_name_loadable(tmp_path):
    # issue 14 moved the install into evaluate's download cache (the bare-name load itself is tested, in a fresh
    # process, by tests/hoi_bench/test_metric_modules.py): the cached file is this module's code
    installed = install_metrics(["hhi_map"], downloads_cache=tmp_path / "downloads",
                                modules_cache=tmp_path / "modules")
    cached = Path(installed["hhi_map"])
    assert cached.parent == tmp_path / "downloads"
    assert cached.read_bytes() == (Path(hoi_bench.metric_path("hhi_map")) / "hhi_map.py").read_bytes()
