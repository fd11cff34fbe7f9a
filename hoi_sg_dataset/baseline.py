"""HICO-DET-SG / V-COCO-SG baselines on ground-truth boxes: the object prior and a pair classifier.

Both score every candidate (human box, other box) pair of a test image (plus a "no object" pair per human on
V-COCO, whose HOIs may have ``object_id = -1``) and write a PPDM/QPIC prediction file, scored with the
package's ``hoi_map`` (HICO-DET configs) or ``vcoco_map`` (V-COCO configs).

- ``--model object-prior``: no training. The score of verb v for a pair is the frequency of v among the
  training HOIs whose object has the pair's object class. On an SG split every test (object, verb) combination
  is absent from training, so this prior scores the right verb 0 and its mAP is near zero — the point of the
  SG splits (Kumar et al.).
- ``--model detr``: the QPIC-style detector of ``hoi_bench.detection`` (``hoi_sg_dataset.detector``): it finds
  the boxes itself, as the models the SG paper reports do, and is trained with QPIC's recipe by default.
- ``--model pair`` (default): backbone features of the human, object and union crops plus the pair's box
  geometry → verb logits (sigmoid, multi-label; unannotated pairs have no verb). It never sees the object
  class (unless ``--object-labels``), so what it learns about a verb can carry over to unseen combinations.

On a GPU, after ``hoi-bench build hoi_sg --data-dir RAW --out HUB``::

    accelerate launch -m hoi_sg_dataset.baseline --data HUB --config hico_split1 \\
        --output-dir runs/hico_split1-pair --backbone microsoft/resnet-50 --max-steps 20000 --batch-size 16 \\
        --learning-rate 1e-4 --mixed-precision bf16 --resume latest
    python -m hoi_sg_dataset.baseline --data HUB --config hico_split1 --output-dir runs/hico_split1-prior \\
        --model object-prior
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoi_bench.errors import HoiBenchError
from hoi_bench.files import write_json_atomic
from hoi_bench.pair_baseline import PairBaseline, add_pair_arguments, pair_crops_or_blank, subsample_pairs
from hoi_bench.training import BaselineScript, add_baseline_arguments, backbone_from_args, load_split
from hoi_sg_dataset.scoring import dataset_of, module_inputs, score_prediction_file, without_images

MODELS = {"pair": "pair classifier on GT boxes (trained)", "object-prior": "the object prior (no training)",
          "detr": "QPIC-style HOI detector on DETR (detects boxes and verbs; QPIC's recipe as defaults)"}
#: training flags whose default depends on --model (None on the command line means "this model's default")
MODEL_TRAINING_DEFAULTS = {"pair": {"batch_size": 16, "eval_batch_size": 16, "max_grad_norm": 1.0,
                                    "lr_scheduler_type": "cosine", "weight_decay": 1e-4}}
MODEL_TRAINING_DEFAULTS["object-prior"] = MODEL_TRAINING_DEFAULTS["pair"]
CONFIGS = tuple(f"{d}_split{n}" for d in ("hico", "vcoco") for n in (1, 2, 3)) + ("hico", "vcoco")
PERSON_RAW_ID = 1


class HoiPairBaseline(PairBaseline):
    """Rows of a built ``hoi_sg`` folder; one row = one image with its boxes and HOIs."""

    meta_keys = ("file_name", "pairs")

    def __init__(self, args: argparse.Namespace) -> None:
        from hoi_sg_dataset.vocabulary import coco_objects, hico_verbs, vcoco_verbs

        super().__init__(args)
        self.dataset = dataset_of(args.config)
        self.name = f"{args.config}-{args.model}"
        self.objects = coco_objects()
        self.verbs = hico_verbs() if self.dataset == "hico" else vcoco_verbs()
        self.person = self.objects.index(PERSON_RAW_ID)
        self.no_object = len(self.objects.names)  # label index of the "no object" side of a V-COCO pair

    @property
    def train_pair_limit(self) -> int:
        return self.args.max_pairs_per_image

    def build_model(self):
        import torch

        from hoi_bench.backbones import PAIR_GEOMETRY_DIM, Preprocessing
        from hoi_bench.heads import PairClassifier, PairPrior

        if self.args.model == "object-prior":
            self.preprocessing = Preprocessing(size=1)
            table = verb_given_object(self.split("train"), len(self.objects.names) + 1, len(self.verbs.names))
            return PairPrior(torch.log(torch.as_tensor(table, dtype=torch.float32)).unsqueeze(0))
        backbone = backbone_from_args(self.args)
        self.preprocessing = backbone.preprocessing
        return PairClassifier(backbone, crops_per_pair=3, geometry_dim=PAIR_GEOMETRY_DIM,
                              num_classes=len(self.verbs.names),
                              num_labels=len(self.objects.names) + 1 if self.args.object_labels else 0)

    def train_dataset(self, streaming: bool):
        if self.args.model == "object-prior":
            return None
        rows = self.split("train", streaming=streaming)
        if "image" not in rows.features:
            raise HoiBenchError(f"{self.args.data} ({self.args.config}): --model pair needs images, and this "
                                f"folder was built without them (hoi-bench build hoi_sg --no-images)")
        return rows

    def pair_rows(self, rows: dict[str, list], limit: int | None) -> dict[str, list]:
        import torch

        from hoi_bench.backbones import pair_geometry

        out = self.columns()
        verbs = len(self.verbs.names)
        for index in range(len(rows["file_name"])):
            boxes, labels = rows["boxes"][index], rows["box_labels"][index]
            annotated: dict[tuple[int, int], list[int]] = {}
            for hoi in rows["hois"][index]:
                annotated.setdefault((hoi["subject"], hoi["object"]), []).append(hoi["verb"])
            pairs = candidate_pairs(labels, self.person, with_no_object=self.dataset == "vcoco")
            if limit is not None and len(pairs) > limit:
                pairs = subsample_pairs(pairs, annotated, limit, rows["file_name"][index])
            # a "no object" pair (o = -1) uses the human box on both sides
            sides = [(boxes[s], boxes[o if o >= 0 else s]) for s, o in pairs]
            out["crops"].append(pair_crops_or_blank(lambda index=index: rows["image"][index], sides,
                                                    self.preprocessing, needed=self.args.model == "pair"))
            targets = torch.zeros(len(pairs), verbs)
            for row, pair in enumerate(pairs):
                targets[row, annotated.get(pair, [])] = 1.0
            if "width" in rows:
                width, height = rows["width"][index], rows["height"][index]
            else:  # a folder built with --no-images (enough for the object prior): the boxes' extent
                width, height = max(b[2] for b in boxes), max(b[3] for b in boxes)
            geometry = [pair_geometry(human, obj, width, height) for human, obj in sides]
            out["geometry"].append(torch.tensor(geometry, dtype=torch.float32).view(len(pairs), -1))
            object_labels = [[0, labels[o] if o >= 0 else self.no_object] for _, o in pairs]
            out["labels"].append(torch.tensor(object_labels, dtype=torch.long).view(len(pairs), 2))
            out["targets"].append(targets)
            out["file_name"].append(rows["file_name"][index])
            out["pairs"].append(pairs)
        return out

    def pair_loss(self, logits, targets):
        import torch.nn.functional as F

        return F.binary_cross_entropy_with_logits(logits, targets)

    def scores(self, logits):
        """Verb probabilities: the prior's table holds log-probabilities; the classifier is multi-label."""
        return logits.exp() if self.args.model == "object-prior" else logits.sigmoid()

    def finish(self, split: str, records: list[dict[str, Any]], predictions_dir: Path):
        from hoi_sg_dataset.builder import row_to_record

        references = [row_to_record(row, self.dataset)
                      for row in without_images(self.references[split])]
        entries = prediction_entries(records, references, self.verbs, self.args.max_hois_per_image)
        path = write_json_atomic(predictions_dir / f"{split}.json", entries)
        return path, score_prediction_file(path, references, self.dataset)


def candidate_pairs(box_labels: Sequence[int], person: int, *, with_no_object: bool) -> list[tuple[int, int]]:
    """Every (human box, other box) pair, plus (human, -1) "no object" pairs when asked (V-COCO).

    >>> candidate_pairs([0, 5, 0], person=0, with_no_object=False)
    [(0, 1), (0, 2), (2, 0), (2, 1)]
    """
    pairs = []
    for s, label in enumerate(box_labels):
        if label != person:
            continue
        pairs += [(s, o) for o in range(len(box_labels)) if o != s]
        if with_no_object:
            pairs.append((s, -1))
    return pairs


def verb_given_object(train_rows, num_objects: int, num_verbs: int) -> np.ndarray:
    """``(objects + 1, verbs)`` table: frequency of each verb among the training HOIs with that object class
    (last row: HOIs without object). A row with no training HOI is all zeros.

    >>> rows = [{"box_labels": [0, 2], "hois": [{"subject": 0, "object": 1, "verb": 1},
    ...                                          {"subject": 0, "object": -1, "verb": 0}]}]
    >>> verb_given_object(rows, num_objects=4, num_verbs=2)[[2, 3]].tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    counts = np.zeros((num_objects, num_verbs))
    for row in (train_rows.select_columns(["box_labels", "hois"]) if hasattr(train_rows, "select_columns")
                else train_rows):
        for hoi in row["hois"]:
            obj = row["box_labels"][hoi["object"]] if hoi["object"] >= 0 else num_objects - 1
            counts[obj, hoi["verb"]] += 1
    totals = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)


def prediction_entries(records: list[dict[str, Any]], references: list, verbs, max_hois: int) -> list[dict]:
    """PPDM/QPIC prediction-file entries: the GT boxes of each image and its best-scored (pair, verb) HOIs.

    Written through ``hoi_sg_dataset.predictions.prediction_json`` from a ``HoiSet`` (raw COCO ids, the GT
    file's verb ids); (pair, verb) scores of 0 are left out.
    """
    from hoi_sg_dataset.evaluation import HoiSet
    from hoi_sg_dataset.predictions import prediction_json

    by_name = {r["file_name"]: r for r in records}
    boxes, labels, hois, scores = [], [], [], []
    for reference in references:
        record = by_name.get(reference.file_name)
        boxes.append(np.asarray(reference.boxes, dtype=np.float64).reshape(-1, 4))
        labels.append(np.asarray(reference.box_labels, dtype=np.int64))
        if record is None or not len(record["pairs"]):
            hois.append(np.zeros((0, 3), dtype=np.int64))
            scores.append(np.zeros(0))
            continue
        pair_scores = np.asarray(record["scores"], dtype=np.float64)
        flat = np.argsort(-pair_scores, axis=None, kind="stable")[:max_hois]
        flat = flat[pair_scores.ravel()[flat] > 0]
        pair_index, verb_index = np.unravel_index(flat, pair_scores.shape)
        pairs = np.asarray(record["pairs"], dtype=np.int64).reshape(-1, 2)
        raw_verbs = np.array([verbs.raw_id(int(v)) for v in verb_index], dtype=np.int64)
        hois.append(np.column_stack([pairs[pair_index], raw_verbs]).reshape(-1, 3))
        scores.append(pair_scores[pair_index, verb_index])
    hoi_set = HoiSet.from_images(boxes=boxes, box_labels=labels, hois=hois, scores=scores, what="predictions")
    return prediction_json(hoi_set, [r.file_name for r in references])


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The baselines' flags: data, backbone, training loop, the HOI model and the detector."""
    from hoi_sg_dataset.detector import add_detector_arguments

    add_baseline_arguments(parser, config="hico_split1", configs=CONFIGS, max_steps=20000,
                           learning_rate=1e-4, **{name: None for name in MODEL_TRAINING_DEFAULTS["pair"]})
    group = add_pair_arguments(parser, "HOI model", unit="image", max_pairs=32, models=MODELS)
    group.add_argument("--object-labels", action="store_true",
                       help="also feed the object class to the pair classifier (it can then learn the prior)")
    group.add_argument("--max-hois-per-image", type=int, default=100,
                       help="best-scored (pair, verb) predictions written per image (QPIC keeps 100)")
    group.add_argument("--eval-splits", nargs="*", default=["test"], help="splits to predict on")
    add_detector_arguments(parser)


def make_baseline(args: argparse.Namespace):
    """The baseline ``--model`` names, after filling the training flags left to the model's defaults (QPIC's
    recipe for ``detr``: batch 2, AdamW at 1e-4 with weight decay 1e-4, clipping 0.1, step decay)."""
    from hoi_sg_dataset.detector import QPIC_TRAINING, HoiDetrBaseline, apply_model_defaults

    apply_model_defaults(args, QPIC_TRAINING if args.model == "detr" else MODEL_TRAINING_DEFAULTS[args.model])
    return HoiDetrBaseline(args) if args.model == "detr" else HoiPairBaseline(args)


SCRIPT = BaselineScript("hoi_sg_dataset.baseline", __doc__, configure_parser, make_baseline)
run, train, parse_args, main = SCRIPT.run, SCRIPT.train, SCRIPT.parse_args, SCRIPT.main


DEMO_CONFIG = "hico_split1"
DEMO_STEPS = 40


def demo(context) -> None:
    """``hoi-bench demo`` step: the object prior and a pair classifier trained a few steps on the sample's
    ``hico_split1``, both scored on its SG test split with the ``hoi_map`` evaluate module. The pair run is
    the demo's tracked run: TensorBoard (when installed), an evaluation halfway, the best model kept, and a
    ``save_pretrained`` model folder with its card."""
    import evaluate
    from accelerate.utils import is_tensorboard_available

    from hoi_bench import metric_path
    from hoi_bench.training import demo_hub_folder

    def build(hub: Path) -> Path:
        from hoi_sg_dataset.hub_folder import build_hoi_sg
        from hoi_sg_dataset.samples import write_sample

        return build_hoi_sg(write_sample(base / "sample").root, hub, [DEMO_CONFIG], synthetic=True)

    base = context.out_dir / "work" / "hoi_sg"
    hub = demo_hub_folder(context.out_dir / "hoi_sg", build)
    common = ["--data", str(hub), "--config", DEMO_CONFIG, "--cache-dir", str(base / "cache")]
    tracking = ["--report-to", "tensorboard"] if is_tensorboard_available() else []
    runs = {
        "object prior": common + ["--model", "object-prior",
                                  "--output-dir", str(base / f"{DEMO_CONFIG}-object-prior")],
        f"pair classifier, {DEMO_STEPS} steps": common + [
            "--output-dir", str(base / f"{DEMO_CONFIG}-pair"), "--max-steps", str(DEMO_STEPS),
            "--learning-rate", "3e-3", "--checkpointing-steps", str(DEMO_STEPS),
            "--eval-steps", str(DEMO_STEPS // 2), "--metric-for-best", "mAP", "--validation-size", "0.25",
            *tracking],
    }
    metric = evaluate.load(metric_path("hoi_map"))
    for label, argv in runs.items():
        args = parse_args(argv)
        results = run(args)
        path = Path(results["splits"]["test"]["predictions"])
        predictions, references = module_inputs(path, load_split(args, "test"), dataset_of(DEMO_CONFIG))
        value = metric.compute(predictions=predictions, references=references)["mAP"]
        context.result(f"hoi_sg/{DEMO_CONFIG}", "test (SG)", f"mAP ({label})", value)
        context.say(f"{label}: mAP {value:.3f} on the SG test split; predictions {path}")
        context.artifacts[f"hoi_sg {label} predictions"] = path
    pair_run = base / f"{DEMO_CONFIG}-pair"
    context.say(f"pair classifier evaluated at step {DEMO_STEPS // 2} and at the end, best model by mAP on a "
                f"held-out quarter of the train images in "
                f"{pair_run / 'best'}; its model folder {pair_run / 'model'} (model card, config, weights) "
                f"loads with hoi_bench.heads.PairClassifier.from_pretrained"
                + ("" if tracking else "; pip install 'hoi-bench[tracking]' to log the run to TensorBoard"))
    context.artifacts["hoi_sg pair classifier model"] = pair_run / "model"
    if tracking:
        context.suggest("tensorboard", "--logdir", pair_run)


DETECTOR_DEMO_STEPS = 30


def detector_demo(context) -> None:
    """``hoi-bench demo`` step: the tiny detector trained a few steps on the sample's ``hico_split1`` and its
    test prediction file scored with the ``hoi_map`` evaluate module (the code path a GPU run takes, on a CPU)."""
    import evaluate

    from hoi_bench import metric_path
    from hoi_bench.training import demo_hub_folder

    def build(hub: Path) -> Path:
        from hoi_sg_dataset.hub_folder import build_hoi_sg
        from hoi_sg_dataset.samples import write_sample

        return build_hoi_sg(write_sample(base / "sample").root, hub, [DEMO_CONFIG], synthetic=True)

    base = context.out_dir / "work" / "hoi_sg"
    hub = demo_hub_folder(context.out_dir / "hoi_sg", build)
    out = base / f"{DEMO_CONFIG}-detr"
    args = parse_args(["--data", str(hub), "--config", DEMO_CONFIG, "--cache-dir", str(base / "cache"),
                       "--model", "detr", "--backbone", "tiny-random", "--num-queries", "16", "--batch-size", "8",
                       "--learning-rate", "1e-3", "--lr-backbone", "1e-3", "--max-steps", str(DETECTOR_DEMO_STEPS),
                       "--checkpointing-steps", str(DETECTOR_DEMO_STEPS), "--output-dir", str(out)])
    results = run(args)
    path = Path(results["splits"]["test"]["predictions"])
    predictions, references = module_inputs(path, load_split(args, "test"), dataset_of(DEMO_CONFIG))
    value = evaluate.load(metric_path("hoi_map")).compute(predictions=predictions, references=references)["mAP"]
    label = f"mAP (QPIC-style detector, {DETECTOR_DEMO_STEPS} steps)"
    context.result(f"hoi_sg/{DEMO_CONFIG}", "test (SG)", label, value)
    context.say(f"detector (tiny DETR, QPIC's matcher and losses), {DETECTOR_DEMO_STEPS} steps: mAP {value:.3f} on the SG "
                f"test split, from boxes it detected itself; predictions {path}; model {out / 'model'} "
                f"(hoi_bench.detection.HoiDetector.from_pretrained). A few CPU steps only show the path works: "
                f"benchmarks/detector_overfit.py shows it learning")
    context.artifacts["hoi_sg detector predictions"] = path


if __name__ == "__main__":
    main()
