"""The example files each metric Space ships in ``metrics/<name>/examples/``, made from the packages' samples.

``python tests/space_examples.py`` rewrites them all. Each file is named after the ``hoi-bench evaluate`` option
it fills (``references.json`` for ``--references``; a folder for an option that takes several files). The predictions are the demo's simple rules
(verb prior, frequency prior, colour prototypes, proximity prior), so the numbers mean something and the files
stay small (none above 130 KB).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

METRICS = Path(__file__).resolve().parents[1] / "metrics"


def _write_json(path: Path, payload) -> None:
    path.write_text(json.dumps(payload, separators=(",", ":")) + "\n", encoding="utf-8")


HICO_IMAGES = VCOCO_IMAGES = 30
"""Test images of the HICO-DET and V-COCO examples (each verb-prior pair of an image is a prediction: keep the
files small)."""


def _vcoco_split():
    from hoi_sg_dataset.samples import sample_plan
    from hoi_sg_dataset.splits import make_split

    plan = sample_plan()
    return make_split(plan.vcoco_trainval, plan.vcoco_test, "vcoco", seed=564)


def hoi_map(out: Path, work: Path) -> None:
    """HICO-DET of the sample (its original split, so rare and non-rare triplets both occur): test GT of the first
    images, verb-prior predictions, train GT (rare / non-rare)."""
    from hoi_sg_dataset.formats import write_annotations
    from hoi_sg_dataset.predictions import verb_prior_predictions
    from hoi_sg_dataset.samples import sample_plan

    plan = sample_plan()
    test = plan.hico_test[:HICO_IMAGES]
    write_annotations(out / "references.json", test, "hico")
    write_annotations(out / "train_references.json", plan.hico_trainval, "hico")
    _write_json(out / "predictions.json", verb_prior_predictions(plan.hico_trainval, test))


def vcoco_map(out: Path, work: Path) -> None:
    """V-COCO-SG split 1 of the sample: test GT and verb-prior predictions."""
    from hoi_sg_dataset.formats import write_annotations
    from hoi_sg_dataset.predictions import verb_prior_predictions

    split = _vcoco_split()
    test = split.test[:VCOCO_IMAGES]
    write_annotations(out / "references.json", test, "vcoco")
    _write_json(out / "predictions.json", verb_prior_predictions(split.trainval, test))


def vcoco_role_map(out: Path, work: Path) -> None:
    """The official evaluator's files for V-COCO-SG split 1 of the sample: VSRL, COCO instances, image ids, and
    the verb-prior predictions converted as ``hoi-bench convert vcoco-detections`` does."""
    from hoi_sg_dataset.formats import write_annotations
    from hoi_sg_dataset.predictions import verb_prior_predictions
    from hoi_sg_dataset.vcoco_role_convert import detections_from_predictions

    split = _vcoco_split()
    test = split.test[:VCOCO_IMAGES]
    write_official_vcoco_files(test, out)
    references = write_annotations(work / "test_vcoco.json", test, "vcoco")
    predictions = work / "predictions_vcoco.json"
    _write_json(predictions, verb_prior_predictions(split.trainval, test))
    _write_json(out / "detections.json", detections_from_predictions(references, predictions))


def write_official_vcoco_files(records, out: Path) -> tuple[Path, Path, Path]:
    """V-COCO's official ``vsrl.json``, ``instances.json`` and ``image_ids.txt`` of QPIC-format test ``records``
    of the sample (one COCO annotation per box, each person's roles from its HOIs); returns their paths."""
    import importlib.util

    helpers = Path(__file__).resolve().parent / "hoi_sg_dataset" / "role_ap_inputs.py"
    spec = importlib.util.spec_from_file_location("role_ap_inputs", helpers)
    role_ap_inputs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(role_ap_inputs)
    annotation, instances_json, vsrl_json = (role_ap_inputs.annotation, role_ap_inputs.instances_json,
                                             role_ap_inputs.vsrl_json)
    from hoi_sg_dataset.role_ap import ROLES
    from hoi_sg_dataset.samples import HEIGHT, PERSON, WIDTH
    from hoi_sg_dataset.vocabulary import coco_objects, vcoco_verbs

    verbs = vcoco_verbs()
    persons, annotations, sizes = [], [], {}
    for record in records:
        image_id = int(record.file_name.rsplit("_", 1)[1].split(".")[0])
        sizes[image_id] = (WIDTH, HEIGHT)
        ann_ids = [image_id * 100 + k + 1 for k in range(len(record.annotations))]
        for ann_id, box in zip(ann_ids, record.annotations):
            x1, y1, x2, y2 = (float(v) for v in box.bbox)
            annotations.append(annotation(ann_id, image_id, [x1, y1, x2 - x1, y2 - y1], box.category_id))
        labels: dict[int, dict[str, list[int]]] = {}
        for hoi in record.hoi_annotation:
            name = verbs.name_of(hoi.category_id)
            action, _, role = name.partition("_")
            roles = labels.setdefault(hoi.subject_id, {}).setdefault(action, [])
            if role:
                roles[:] = roles or [0] * len(ROLES[action])
                roles[ROLES[action].index(role)] = 0 if hoi.object_id < 0 else ann_ids[hoi.object_id]
        for index, box in enumerate(record.annotations):
            if box.category_id == PERSON:
                persons.append({"image_id": image_id, "ann_id": ann_ids[index], "labels": labels.get(index, {})})
    _write_json(out / "vsrl.json", vsrl_json(persons))
    instances = instances_json(annotations, sizes)
    objects = coco_objects()
    others = sorted({a["category_id"] for a in annotations} - {PERSON})
    instances["categories"] = [{"id": c, "name": objects.name_of(c)} for c in [PERSON, *others]]  # person first
    _write_json(out / "instances.json", instances)
    (out / "image_ids.txt").write_text("".join(f"{i}\n" for i in sorted(sizes)), encoding="utf-8")
    return out / "vsrl.json", out / "instances.json", out / "image_ids.txt"


def _haystack_prior(work: Path):
    from haystack_dataset.formats import psg_classes
    from haystack_dataset.frequency_prior import FrequencyPrior
    from haystack_dataset.samples import write_sample

    layout = write_sample(work / "haystack")
    classes = psg_classes()
    psg = json.loads(layout.psg_file.read_text(encoding="utf-8"))

    def rows(records):
        return [{"image_id": r["image_id"], "segments": [{"category": s["category_id"]} for s in r["segments_info"]],
                 "relations": [{"subject": s, "object": o, "predicate": p} for s, o, p in r["relations"]]}
                for r in records]

    train = [r for r in psg["data"] if r["image_id"] not in psg["test_image_ids"]]
    prior = FrequencyPrior.fit(rows(train), len(classes["thing_classes"]) + len(classes["stuff_classes"]),
                               len(classes["predicate_classes"]))
    return layout, psg, prior, rows


def haystack(out: Path, work: Path) -> None:
    """The Haystack sample's annotation and a frequency prior's NPY output (p_auc, pdd and pdo share them)."""
    from haystack_dataset.predictions import write_haystack_npy

    layout, _, prior, rows = _haystack_prior(work)
    haystack_file = json.loads(layout.haystack_file.read_text(encoding="utf-8"))
    shutil.copy(layout.haystack_file, out / "annotations.json")
    write_haystack_npy(out / "predictions.npy", prior.haystack_rows(rows(haystack_file["data"])))


def sg_recall(out: Path, work: Path) -> None:
    """The PSG sample's test images and a frequency prior's PredCls recall predictions."""
    from haystack_dataset.predictions import write_recall_predictions

    _, psg, prior, rows = _haystack_prior(work)
    test = [r for r in psg["data"] if r["image_id"] in psg["test_image_ids"]]
    _write_json(out / "annotations.json", {**psg, "data": test})
    written = write_recall_predictions(work / "predictions.json", prior.recall_predictions(rows(test)))
    predictions = json.loads(written.read_text(encoding="utf-8"))
    for image in predictions:  # four decimals are plenty for a ranking and quarter the file
        image["predicate_scores"] = [[round(v, 4) for v in row] for row in image["predicate_scores"]]
    _write_json(out / "predictions.json", predictions)


def bongard_accuracy(out: Path, work: Path) -> None:
    """The four test episode files of the Bongard-HOI sample and the colour-prototype rule's predictions."""
    import numpy as np

    from bongard_hoi.formats import TEST_SPLITS, episode_file_name, read_episode_file
    from bongard_hoi.geometry import resolve_image_path
    from bongard_hoi.samples import ANNOTATION_DIR, IMAGE_DIR, write_sample
    from bongard_hoi.simple_rule import colour_histogram

    root = write_sample(work / "bongard")
    (out / "references").mkdir()
    records = []
    for split in TEST_SPLITS:
        source = root / ANNOTATION_DIR / episode_file_name(split)
        shutil.copy(source, out / "references" / source.name)
        for index, episode in enumerate(read_episode_file(source)):
            def histogram(image):
                return colour_histogram(resolve_image_path(root / IMAGE_DIR, image.relative_path)[0])

            prototypes = [np.mean([histogram(i) for i in shots], axis=0)
                          for shots in (episode.positive_shots, episode.negative_shots)]
            for side, query in (("positive", episode.positive_query), ("negative", episode.negative_query)):
                scores = [-float(np.abs(histogram(query) - p).sum()) for p in prototypes]
                records.append({"split": split, "episode": index, "query": side, "prediction": scores})
    _write_json(out / "predictions.json", records)


def hhi_map(out: Path, work: Path) -> None:
    """The SportsHHI sample's validation GT, its action list and the proximity-prior rule's predictions."""
    from sportshhi import formats
    from sportshhi.rule import class_priors, proximity_predictions
    from sportshhi.samples import write_sample

    root = write_sample(work / "sportshhi").root
    actions = formats.read_action_list(root / formats.ACTION_LIST_FILE)
    train = formats.read_annotation_csv(root / formats.annotation_file("train"), actions)
    shutil.copy(root / formats.annotation_file("validation"), out / "references.csv")
    shutil.copy(root / formats.ACTION_LIST_FILE, out / "action_list.pbtxt")
    humans = formats.read_proposals(root / formats.gt_proposal_file("validation"))
    formats.write_prediction_csv(out / "predictions.csv", proximity_predictions(humans, class_priors(train)))


WRITERS: dict[str, Callable[[Path, Path], None]] = {
    "hoi_map": hoi_map, "vcoco_map": vcoco_map, "vcoco_role_map": vcoco_role_map, "p_auc": haystack,
    "pdd": haystack, "pdo": haystack, "sg_recall": sg_recall, "bongard_accuracy": bongard_accuracy,
    "hhi_map": hhi_map,
}
def write_examples(name: str, folder: Path) -> Path:
    """Write ``name``'s example files into ``folder`` (replaced)."""
    with tempfile.TemporaryDirectory() as scratch:
        stage = Path(scratch) / "examples"
        stage.mkdir()
        WRITERS[name](stage, Path(scratch))
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(stage, folder)
    return folder


if __name__ == "__main__":
    here = Path(__file__).resolve().parent  # tests/sportshhi etc. would shadow the packages
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    for metric in sys.argv[1:] or sorted(WRITERS):
        written = write_examples(metric, METRICS / metric / "examples")
        sizes = ", ".join(f"{p.relative_to(written)} {p.stat().st_size // 1024} KB"
                          for p in sorted(written.rglob("*")) if p.is_file())
        print(f"{metric}: {sizes}")
