"""Small valid inputs for every `hoi-bench evaluate` / `show` / `stats` command, for the suites that run them all.

``write_command_inputs(root)`` writes the files and returns, per command, the argv of one run that succeeds
(without ``--output``), so a suite can swap in a broken input or a bad output path one at a time. The inputs are
tiny and chosen so that some reported values are undefined (an AP without GT, a mean over nothing): exactly the
numbers that must come out as JSON ``null``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HICO_GT = [{
    "file_name": "HICO_test2015_00000001.jpg",
    "hoi_annotation": [{"subject_id": 0, "object_id": 1, "category_id": 37}],
    "annotations": [{"bbox": [10, 10, 50, 90], "category_id": 1}, {"bbox": [40, 40, 80, 80], "category_id": 47}],
}]
HICO_PRED = [{
    "file_name": "HICO_test2015_00000001.jpg",
    "predictions": HICO_GT[0]["annotations"],
    "hoi_prediction": [{"subject_id": 0, "object_id": 1, "category_id": 37, "score": 0.9}],
}]
VCOCO_GT = [dict(HICO_GT[0], file_name="COCO_val2014_000000000001.jpg",
                 hoi_annotation=[{"subject_id": 0, "object_id": 1, "category_id": 0}])]
VCOCO_PRED = [dict(HICO_PRED[0], file_name="COCO_val2014_000000000001.jpg",
                   hoi_prediction=[{"subject_id": 0, "object_id": 1, "category_id": 0, "score": 0.9}])]
BONGARD_TESTS = ("test_seen_obj_seen_act", "test_seen_obj_unseen_act", "test_unseen_obj_seen_act",
                 "test_unseen_obj_unseen_act")


def _json(path: Path, payload) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload))
    return path


def _bongard_image(act: str) -> dict:
    return {"im_path": "./hake_images_20190730/a.jpg", "crop_bbox": [0, 0, 10, 10], "sub_bbox": [0, 0, 5, 5],
            "obj_bbox": [5, 5, 9, 9], "sub_class": "person", "obj_class": "orange", "act_class": act,
            "obj_id": 33, "sub_id": 1, "act_id": 17}


def write_command_inputs(root: Path) -> dict[str, list[str]]:
    """Write inputs under ``root``; map ``"<verb> <name>"`` to the argv of a successful run (no ``--output``)."""
    from bongard_hoi.formats import episode_file_name, parse_episodes, write_episode_file
    from haystack_dataset.evaluation import haystack_scores
    from haystack_dataset.formats import read_annotation
    from haystack_dataset.samples import write_sample as write_haystack_sample
    from hoi_bench.files import write_json_atomic
    from sportshhi import formats as hhi_formats
    from sportshhi.samples import write_sample as write_sportshhi_sample
    from tests.hoi_sg_dataset import role_ap_inputs

    commands: dict[str, list[str]] = {}
    hico = root / "hico"
    commands["evaluate hoi_map"] = ["evaluate", "hoi_map", "--references", str(_json(hico / "gt.json", HICO_GT)),
                                    "--predictions", str(_json(hico / "pred.json", HICO_PRED))]
    vcoco = root / "vcoco"
    commands["evaluate vcoco_map"] = ["evaluate", "vcoco_map",
                                      "--references", str(_json(vcoco / "gt.json", VCOCO_GT)),
                                      "--predictions", str(_json(vcoco / "pred.json", VCOCO_PRED))]
    commands["stats hoi_sg"] = ["stats", "hoi_sg", "--split-file", str(hico / "gt.json"), "--json"]

    layout = write_haystack_sample(root / "haystack")
    haystack = read_annotation(layout.haystack_file)
    n = len(haystack.predicate_classes)
    generator = np.random.default_rng(0)
    rows = [[image.image_id, s, o, *generator.random(n)] for image in haystack.images
            for s, o in {(int(r[0]), int(r[1])) for r in (*image.relations, *image.neg_relations)}]
    npy = root / "haystack" / "output.npy"
    np.save(npy, np.asarray(rows, dtype=np.float64))
    commands["evaluate haystack"] = ["evaluate", "haystack", "--annotations", str(layout.haystack_file),
                                     "--predictions", str(npy), "--rank-mode", "official"]
    metrics = write_json_atomic(root / "haystack" / "metrics.json",
                                haystack_scores(haystack, np.asarray(rows)))
    commands["show haystack"] = ["show", "haystack", "--metrics", str(metrics), "--out",
                                 str(root / "haystack" / "chart.png")]
    psg = read_annotation(layout.psg_file)
    test_ids = set(psg.test_image_ids)
    recall = [{"image_id": image.image_id, "pairs": [[int(r[0]), int(r[1])] for r in image.relations],
               "predicate_scores": generator.random((len(image.relations), n + 1)).tolist()}
              for image in psg.images if image.image_id in test_ids]
    commands["evaluate sg_recall"] = ["evaluate", "sg_recall", "--annotations", str(layout.psg_file),
                                      "--predictions", str(_json(root / "haystack" / "recall.json", recall))]

    release = write_sportshhi_sample(root / "sportshhi", train_videos=1, validation_videos=1, keyframes_per_video=2)
    validation = release.root / hhi_formats.annotation_file("validation")
    gt = hhi_formats.read_annotation_csv(validation)
    predictions = root / "sportshhi_predictions.csv"
    hhi_formats.write_prediction_csv(predictions, [
        (v, t, tuple(s), tuple(o), int(label), 0.5 + 0.01 * i)
        for i, (v, t, s, o, label) in enumerate(zip(gt.video_ids, gt.keyframes, gt.subject_boxes, gt.object_boxes,
                                                    gt.labels))])
    commands["evaluate hhi"] = ["evaluate", "hhi", "--references", str(validation), "--predictions",
                                str(predictions), "--action-list", str(release.root / hhi_formats.ACTION_LIST_FILE)]

    episode = [[_bongard_image("eat")] * 7, [_bongard_image("peel")] * 7, "eat++orange"]
    references = root / "bongard"
    for split in BONGARD_TESTS:
        write_episode_file(references / episode_file_name(split), parse_episodes([episode] * 2))
    records = [{"split": s, "episode": e, "query": q, "prediction": q} for s in BONGARD_TESTS for e in range(2)
               for q in ("positive", "negative")]
    commands["evaluate bongard"] = ["evaluate", "bongard", "--predictions",
                                    str(_json(root / "bongard_predictions.json", records)),
                                    "--references", str(references)]

    persons = [{"image_id": 1, "ann_id": 11, "labels": {"hold": [21]}}]
    scene = [role_ap_inputs.annotation(11, 1, [0, 0, 10, 10]),
             role_ap_inputs.annotation(21, 1, [20, 20, 10, 10], role_ap_inputs.BALL)]
    detections = [role_ap_inputs.detection(1, [0, 0, 9, 9], {"hold": 0.9}, {"hold_obj": [20, 20, 29, 29, 0.9]})]
    paths = role_ap_inputs.write_inputs(root / "vcoco_role", persons, scene, {1: (100, 100)}, detections)
    commands["evaluate vcoco_role_map"] = ["evaluate", "vcoco_role_map", "--vsrl", str(paths["vsrl.json"]),
                                           "--instances", str(paths["instances.json"]),
                                           "--image-ids", str(paths["ids.txt"]),
                                           "--detections", str(paths["detections.json"])]
    return commands


def strict_json(text: str):
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity``: what JSON parsers outside Python do."""

    def refuse(token: str):
        raise ValueError(f"invalid JSON: bare {token} token")

    return json.loads(text, parse_constant=refuse)
