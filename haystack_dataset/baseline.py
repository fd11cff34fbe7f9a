"""PredCls relation baselines for PSG / Haystack: a pair classifier trained on ``psg``, and a frequency prior.

PredCls: the ground-truth segments (boxes and classes) are given; a model scores every ordered pair of
segments over ``no relation`` + the 56 predicates.

- ``--model classifier`` (default): backbone features of the subject, object and union crops, the pair's box
  geometry and embeddings of the two segment classes → 57 logits, plus the log frequency prior as a fixed
  bias (the "frequency bias" of Neural Motifs). Trained on ``psg`` ``train`` with a soft cross-entropy (a pair
  with several predicates spreads its target over them; unlabelled pairs are ``no relation``).
- ``--model prior``: ``haystack_dataset.frequency_prior.FrequencyPrior`` fitted on ``psg`` ``train``, no
  training.

Outputs (``OUTPUT/predictions/``): the Haystack NPY on the ``haystack`` config (``[image_id, subject, object,
56 scores]``, softmax with the no-relation column dropped and no renormalisation, as OpenPSG's dumper) scored
with P-AUC / PDD / PDO, and the recall JSON on ``psg`` ``test`` scored with R@k / mR@k / ngR@k.

On a GPU, after ``hoi-bench build haystack --data-dir RAW --out HUB`` (both configs)::

    accelerate launch -m haystack_dataset.baseline --data HUB --output-dir runs/haystack-predcls \\
        --backbone facebook/dinov2-small --max-steps 30000 --batch-size 8 --learning-rate 5e-5 \\
        --mixed-precision bf16 --resume latest
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from hoi_bench.pair_baseline import PairBaseline, add_pair_arguments, pair_crops_or_blank, subsample_pairs
from hoi_bench.training import BaselineScript, add_baseline_arguments, backbone_from_args, load_split

HAYSTACK_SPLIT = "haystack/test"
PSG_SPLIT = "psg/test"
MODELS = {"classifier": "pair classifier (trained)", "prior": "the frequency prior alone (no training)"}


class PredClsBaseline(PairBaseline):
    """Rows of a built Haystack/PSG folder; one row = one image with its segments and relations."""

    meta_keys = ("image_id", "pairs")

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        self.name = f"haystack-predcls-{args.model}"

    @property
    def train_pair_limit(self) -> int:
        return self.args.max_pairs_per_image

    def split(self, name: str, *, streaming: bool = False):
        """The rows of ``CONFIG/SPLIT`` (this baseline reads two configs)."""
        config, split = name.split("/")
        args = argparse.Namespace(**{**vars(self.args), "config": config})
        return load_split(args, split, streaming=streaming)

    def build_model(self):
        import torch

        from hoi_bench.backbones import PAIR_GEOMETRY_DIM, Preprocessing
        from hoi_bench.heads import PairClassifier, PairPrior

        prior = fit_prior(self.split(f"{self.args.config}/train"))
        log_table = torch.log(torch.as_tensor(_prior_table(prior), dtype=torch.float32).clamp_min(1e-6))
        if self.args.model == "prior":
            self.preprocessing = Preprocessing(size=1)
            return PairPrior(log_table)
        backbone = backbone_from_args(self.args)
        self.preprocessing = backbone.preprocessing
        return PairClassifier(backbone, crops_per_pair=3, geometry_dim=PAIR_GEOMETRY_DIM,
                              num_classes=log_table.shape[-1], num_labels=log_table.shape[0],
                              pair_bias=None if self.args.no_frequency_bias else log_table)

    def train_dataset(self, streaming: bool):
        if self.args.model == "prior":
            return None
        return self.split(f"{self.args.config}/train", streaming=streaming)

    def pair_rows(self, rows: dict[str, list], limit: int | None) -> dict[str, list]:
        import torch

        from hoi_bench.backbones import pair_geometry

        out = self.columns()
        num_predicates = len(self._predicate_names())
        for index in range(len(rows["image_id"])):
            segments = rows["segments"][index]
            boxes = [s["box"] for s in segments]
            categories = [s["category"] for s in segments]
            labelled: dict[tuple[int, int], list[int]] = {}
            for r in rows["relations"][index]:
                if r["predicate"] >= 0:
                    labelled.setdefault((r["subject"], r["object"]), []).append(r["predicate"])
            pairs = [(s, o) for s in range(len(segments)) for o in range(len(segments)) if s != o]
            if limit is not None and len(pairs) > limit:
                pairs = subsample_pairs(pairs, labelled, limit, str(rows["image_id"][index]))
            out["crops"].append(pair_crops_or_blank(lambda index=index: rows["image"][index],
                                                    [(boxes[s], boxes[o]) for s, o in pairs],
                                                    self.preprocessing, needed=self.args.model != "prior"))
            targets = torch.zeros(len(pairs), 1 + num_predicates)
            for row, pair in enumerate(pairs):
                predicates = labelled.get(pair)
                if predicates:
                    targets[row, [1 + p for p in predicates]] = 1.0 / len(predicates)
                else:
                    targets[row, 0] = 1.0
            out["geometry"].append(torch.tensor([pair_geometry(boxes[s], boxes[o], rows["width"][index],
                                                               rows["height"][index]) for s, o in pairs],
                                                dtype=torch.float32).view(len(pairs), -1))
            out["labels"].append(torch.tensor([[categories[s], categories[o]] for s, o in pairs],
                                              dtype=torch.long).view(len(pairs), 2))
            out["targets"].append(targets)
            out["image_id"].append(rows["image_id"][index])
            out["pairs"].append(pairs)
        return out

    def _predicate_names(self) -> list[str]:
        from haystack_dataset.formats import psg_classes

        return psg_classes()["predicate_classes"]

    def pair_loss(self, logits, targets):
        import torch.nn.functional as F

        return F.cross_entropy(logits, targets)

    def finish(self, split: str, records: list[dict[str, Any]], predictions_dir: Path):
        from haystack_dataset.predictions import (
            RecallPrediction,
            read_haystack_npy,
            read_recall_predictions,
            write_haystack_npy,
            write_recall_predictions,
        )

        config = split.split("/")[0]
        annotation = annotation_from_rows(self.references[split], negatives=config == "haystack")
        if config == "haystack":
            from haystack_dataset.evaluation import haystack_scores

            path = write_haystack_npy(predictions_dir / "haystack_test.npy", haystack_rows(records))
            report = haystack_scores(annotation, read_haystack_npy(path), rank_mode=self.args.rank_mode)
            return path, {"rank_mode": report["rank_mode"], **report["mean"],
                          "reported_predicates": len(report["per_predicate"])}
        from haystack_dataset.recall import psg_recall

        predictions = []
        for record in sorted(records, key=lambda r: str(r["image_id"])):
            order = np.argsort(-record["scores"][:, 1:].max(axis=1), kind="stable") \
                if len(record["pairs"]) else np.zeros(0, dtype=np.int64)
            predictions.append(RecallPrediction(record["image_id"], record["pairs"][order],
                                                record["scores"][order]))
        path = write_recall_predictions(predictions_dir / f"{config}_test_recall.json", predictions)
        recall = psg_recall(annotation, read_recall_predictions(path))  # its warnings are also InputWarnings
        return path, {key: value for key, value in recall.items() if key != "warnings"}


def fit_prior(train_rows):
    """``FrequencyPrior`` of the package fitted on the training rows (segment categories and relations)."""
    from haystack_dataset.formats import psg_classes
    from haystack_dataset.frequency_prior import FrequencyPrior

    classes = psg_classes()
    rows = train_rows.select_columns(["segments", "relations"])
    return FrequencyPrior.fit(rows, len(classes["thing_classes"]) + len(classes["stuff_classes"]),
                              len(classes["predicate_classes"]))


def _prior_table(prior) -> np.ndarray:
    """``(C, C, 1 + n)`` prior probabilities for every (subject class, object class)."""
    classes = prior.pair_counts.shape[0]
    subject, obj = np.meshgrid(np.arange(classes), np.arange(classes), indexing="ij")
    return prior.scores(subject.ravel(), obj.ravel()).reshape(classes, classes, -1)


def haystack_rows(records: list[dict[str, Any]]) -> np.ndarray:
    """The Haystack NPY array: ``[image_id, subject, object, predicate scores]``, no no-relation column."""
    parts = [np.column_stack([np.full(len(r["pairs"]), float(r["image_id"])), r["pairs"], r["scores"][:, 1:]])
             for r in sorted(records, key=lambda r: str(r["image_id"])) if len(r["pairs"])]
    width = 3 + (records[0]["scores"].shape[1] - 1 if records else 0)
    return np.concatenate(parts) if parts else np.zeros((0, width))


def annotation_from_rows(dataset, *, negatives: bool):
    """The ``SceneGraphAnnotation`` (validated by the package's parser) of a built split, for its metrics.

    The rows carry everything the metrics read: image ids, segment classes and boxes, positive and negative
    relations. File names are the built ones; panoptic file names are not needed by the metrics.
    """
    from haystack_dataset.formats import parse_annotation, psg_classes

    classes = psg_classes()
    data = []
    for row in dataset.select_columns(["image_id", "file_name", "height", "width", "segments", "relations",
                                       "negative_relations"]):
        record = {
            "file_name": row["file_name"], "height": row["height"], "width": row["width"],
            "image_id": int(row["image_id"]) if negatives else row["image_id"],
            "pan_seg_file_name": row["file_name"].rsplit(".", 1)[0] + ".png",
            "segments_info": [{"id": s["id"], "category_id": s["category"], "iscrowd": int(s["iscrowd"]),
                               "isthing": int(s["isthing"]), "area": s["area"]} for s in row["segments"]],
            "annotations": [{"bbox": s["box"], "bbox_mode": 0, "category_id": s["category"]}
                            for s in row["segments"]],
            "relations": [[r["subject"], r["object"], r["predicate"]] for r in row["relations"]],
        }
        if negatives:
            record["neg_relations"] = [[r["subject"], r["object"], r["predicate"]]
                                       for r in row["negative_relations"]]
        data.append(record)
    raw = {key: classes[key] for key in ("thing_classes", "stuff_classes", "predicate_classes")}
    raw["data"] = data
    if not negatives:
        raw["test_image_ids"] = [record["image_id"] for record in data]
    return parse_annotation(raw, source=f"<rows of {dataset.info.config_name or 'dataset'}>",
                            require_negatives=negatives)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The baseline's flags: data, backbone, training loop, and the relation model."""
    add_baseline_arguments(parser, config="psg",
                           max_steps=30000, batch_size=8, eval_batch_size=8, learning_rate=1e-4)
    group = add_pair_arguments(parser, "PredCls relation model", unit="image", max_pairs=64, models=MODELS)
    group.add_argument("--no-frequency-bias", action="store_true",
                       help="do not add the log frequency prior to the classifier's logits")
    group.add_argument("--rank-mode", choices=("paper", "official"), default="paper",
                       help="PDD/PDO rank mode passed to the Haystack metrics")
    group.add_argument("--eval-splits", nargs="*", default=[HAYSTACK_SPLIT, PSG_SPLIT],
                       choices=(HAYSTACK_SPLIT, PSG_SPLIT), help="CONFIG/SPLIT to predict on")


SCRIPT = BaselineScript("haystack_dataset.baseline", __doc__, configure_parser, PredClsBaseline)
run, train, parse_args, main = SCRIPT.run, SCRIPT.train, SCRIPT.parse_args, SCRIPT.main


DEMO_STEPS = 10


def demo(context) -> None:
    """``hoi-bench demo`` step: train the PredCls classifier a few steps on the sample's ``psg`` train split,
    then score its Haystack NPY with the ``p_auc``/``pdd``/``pdo`` modules and its recall JSON with
    ``sg_recall``."""
    import warnings

    import evaluate

    from haystack_dataset.evaluation import HaystackInputWarning, annotated_relations, relation_scores
    from haystack_dataset.predictions import read_haystack_npy, read_recall_predictions
    from hoi_bench import metric_path
    from hoi_bench.training import demo_hub_folder

    def build(hub: Path) -> Path:
        from haystack_dataset.builder import build
        from haystack_dataset.samples import write_sample

        return build(write_sample(base / "native").root, hub, synthetic=True)

    base = context.out_dir / "work" / "haystack"
    hub = demo_hub_folder(context.out_dir / "haystack", build)
    args = parse_args(["--data", str(hub), "--output-dir", str(base / "predcls"),
                       "--cache-dir", str(base / "cache"), "--max-steps", str(DEMO_STEPS),
                       "--batch-size", "4", "--learning-rate", "1e-3",
                       "--checkpointing-steps", str(DEMO_STEPS)])
    with warnings.catch_warnings():
        # the tiny sample has predicates without negatives; the metrics warn and report NaN P-AUC for them
        warnings.simplefilter("ignore", HaystackInputWarning)
        results = run(args)
        label = f"(PredCls classifier, {results['steps']} steps)"
        baseline = PredClsBaseline(args)
        npy = Path(results["splits"][HAYSTACK_SPLIT]["predictions"])
        annotation = annotation_from_rows(baseline.split(HAYSTACK_SPLIT), negatives=True)
        relations = annotated_relations(annotation)
        n = len(annotation.predicate_classes)
        scores, present = relation_scores(relations, read_haystack_npy(npy), n)
        for name in ("p_auc", "pdd", "pdo"):
            value = evaluate.load(metric_path(name)).compute(
                predictions=[], references=[], scores=scores, predicates=relations.predicate,
                labels=relations.label, present=present, predicate_names=annotation.predicate_classes)
            context.result("haystack", "test", f"{name.upper().replace('_', '-')} {label}", value[name])
    recall_file = Path(results["splits"][PSG_SPLIT]["predictions"])
    psg_test = baseline.split(PSG_SPLIT)
    references = [{"image_id": row["image_id"], "boxes": [s["box"] for s in row["segments"]],
                   "labels": [s["category"] for s in row["segments"]],
                   "relations": [[r["subject"], r["object"], r["predicate"]] for r in row["relations"]]}
                  for row in psg_test.select_columns(["image_id", "segments", "relations"])]
    predictions = [{"image_id": str(p.image_id), "pairs": p.pairs.tolist(), "predicate_scores":
                    p.predicate_scores.tolist(), "boxes": [], "labels": [], "object_scores": []}
                   for p in read_recall_predictions(recall_file)]
    recall = evaluate.load(metric_path("sg_recall")).compute(predictions=predictions, references=references)
    for name in ("R@20", "mR@20"):
        context.result("psg", "test", f"{name} {label}", recall[name])
    context.say(f"PredCls classifier trained {results['steps']} steps in {results['train_seconds']:.0f} s; "
                f"outputs {npy.name}, {recall_file.name}")
    context.artifacts["haystack PredCls NPY"] = npy
    context.artifacts["psg PredCls recall JSON"] = recall_file


if __name__ == "__main__":
    main()
