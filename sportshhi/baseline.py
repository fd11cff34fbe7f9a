"""HHICls baseline for SportsHHI: classify every ordered pair of ground-truth human boxes of a keyframe.

Pair features: backbone features of the subject, object and union crops in the keyframe, plus the union crop
in each context frame (the temporal context of the official clip), concatenated with the pair's box geometry,
then an MLP to ``1 + classes`` logits (index 0 = no interaction; softmax cross-entropy, as the official HHICls
head). Predictions: every ordered pair (self-pairs excluded) and every class whose probability exceeds
``--score-threshold`` (the official 0.002), written as the 12-column prediction CSV with
``sportshhi.formats.write_prediction_csv`` and scored by the package's ``hhi_map`` evaluation.

On a GPU, after ``hoi-bench build sportshhi --data-dir RAW --out HUB``::

    accelerate launch -m sportshhi.baseline --data HUB --output-dir runs/sportshhi-hhicls \\
        --backbone facebook/dinov2-small --max-steps 20000 --batch-size 4 --learning-rate 5e-5 \\
        --mixed-precision bf16 --max-pairs-per-keyframe 32 --resume latest
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hoi_bench.pair_baseline import PairBaseline, add_pair_arguments, pair_crops_or_blank, subsample_pairs
from hoi_bench.training import BaselineScript, add_baseline_arguments, backbone_from_args, load_split


class HHIClsBaseline(PairBaseline):
    """Keyframes from the ``hhi`` config of a built SportsHHI folder; one row = one keyframe."""

    name = "sportshhi-hhicls"
    tensor_keys = ("crops", "geometry", "targets")
    meta_keys = ("video_id", "keyframe", "pairs", "boxes")

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        self.label_ids: np.ndarray | None = None  # class index (dataset ClassLabel order) -> 1-based label id

    @property
    def train_pair_limit(self) -> int:
        return self.args.max_pairs_per_keyframe

    def build_model(self):
        from hoi_bench.backbones import PAIR_GEOMETRY_DIM
        from hoi_bench.heads import PairClassifier

        backbone = backbone_from_args(self.args)
        self.preprocessing = backbone.preprocessing
        classes = self._classes()
        return PairClassifier(backbone, crops_per_pair=3 + self.args.context_frames,
                              geometry_dim=PAIR_GEOMETRY_DIM, num_classes=1 + len(classes))

    def _classes(self) -> list[str]:
        if self.label_ids is None:
            features = self.split(self.args.train_split).features
            names = features["interactions"].feature["label"].names
            self.label_ids = _label_ids(self.args, names)
            self._names = list(names)
        return self._names

    def train_dataset(self, streaming: bool):
        return self.split(self.args.train_split, streaming=streaming)

    def pair_rows(self, rows: dict[str, list], limit: int | None) -> dict[str, list]:
        import torch

        from hoi_bench.backbones import crop_resized, image_tensor, pair_geometry, union_box

        out = self.columns()
        for index in range(len(rows["keyframe_key"])):
            boxes = rows["human_boxes_pixels"][index]
            width, height = rows["width"][index], rows["height"][index]
            labels = {(i["subject_index"], i["object_index"]): i["label"] + 1
                      for i in rows["interactions"][index]}
            pairs = [(s, o) for s in range(len(boxes)) for o in range(len(boxes)) if s != o]
            if limit is not None and len(pairs) > limit:
                pairs = subsample_pairs(pairs, labels, limit, rows["keyframe_key"][index])
            frames = _context(rows["context"][index], self.args.context_frames, rows["image"][index])
            context = [image_tensor(frame) for frame in frames]

            def context_crops(subject, obj, context=context):
                union = union_box(subject, obj)
                return [crop_resized(frame, union, self.preprocessing).unsqueeze(0) for frame in context]

            out["crops"].append(pair_crops_or_blank(
                lambda index=index: rows["image"][index], [(boxes[s], boxes[o]) for s, o in pairs],
                self.preprocessing, needed=True, extra=context_crops, crops_per_pair=3 + len(context)))
            geometry = [pair_geometry(boxes[s], boxes[o], width, height) for s, o in pairs]
            out["geometry"].append(torch.tensor(geometry, dtype=torch.float32).view(len(pairs), -1))
            out["targets"].append(torch.tensor([labels.get(p, 0) for p in pairs], dtype=torch.long))
            out["video_id"].append(rows["video_id"][index])
            out["keyframe"].append(int(rows["keyframe"][index]))
            out["pairs"].append(pairs)
            out["boxes"].append(rows["human_boxes"][index])
        return out

    def pair_loss(self, logits, targets):
        import torch.nn.functional as F

        return F.cross_entropy(logits, targets)

    def finish(self, split: str, records: list[dict[str, Any]], predictions_dir: Path):
        from sportshhi.formats import PredictionRow, write_prediction_csv

        rows = []
        for record in sorted(records, key=lambda r: (r["video_id"], r["keyframe"])):
            for (s, o), probabilities in zip(record["pairs"], record["scores"]):
                for index in np.flatnonzero(probabilities[1:] > self.args.score_threshold):
                    if self.label_ids[index] > 0:
                        score = float(probabilities[1 + index])
                        rows.append(PredictionRow(record["video_id"], record["keyframe"],
                                                  tuple(record["boxes"][s]), tuple(record["boxes"][o]),
                                                  int(self.label_ids[index]), score))
        path = predictions_dir / f"{split}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_prediction_csv(path, rows)
        references = predictions_dir / f"{split}_references.csv"
        return path, score_predictions(path, self.references[split], references, self.args)


def _label_ids(args: argparse.Namespace, names: Sequence[str]) -> np.ndarray:
    """1-based action-list id of every class index: from ``--action-list`` when given, else from the training
    interactions (classes never seen in training get 0 and are never predicted)."""
    if args.action_list is not None:
        from sportshhi.formats import read_action_list

        actions = read_action_list(args.action_list)
        return np.array([actions.label_ids[actions.names.index(name)] for name in names], dtype=np.int64)
    ids = np.zeros(len(names), dtype=np.int64)
    for interactions in load_split(args, args.train_split)["interactions"]:
        for interaction in interactions:
            ids[interaction["label"]] = interaction["label_id"]
    return ids


def _context(frames: list, count: int, keyframe):
    """``count`` context frames spread over the clip (the keyframe repeated when the clip is shorter)."""
    if count == 0:
        return []
    if not frames:
        return [keyframe] * count
    positions = np.linspace(0, len(frames) - 1, count).round().astype(int)
    return [frames[i] for i in positions]


def reference_annotations(dataset):
    """The official annotation CSV contents (``sportshhi.formats.Annotations``) of a built split's rows."""
    from sportshhi.formats import Annotations

    rows = []
    for row in dataset.select_columns(["video_id", "frame_index", "human_boxes", "interactions"]):
        for i in row["interactions"]:
            rows.append((row["video_id"], row["frame_index"], row["human_boxes"][i["subject_index"]],
                         row["human_boxes"][i["object_index"]], i["label_id"], i["subject_person_id"],
                         i["object_person_id"]))
    return Annotations(
        video_ids=np.array([r[0] for r in rows], dtype=object),
        frame_ids=np.array([r[1] for r in rows], dtype=np.int64),
        subject_boxes=np.array([r[2] for r in rows], dtype=np.float64).reshape(-1, 4),
        object_boxes=np.array([r[3] for r in rows], dtype=np.float64).reshape(-1, 4),
        labels=np.array([r[4] for r in rows], dtype=np.int64),
        subject_ids=np.array([r[5] for r in rows], dtype=np.int64),
        object_ids=np.array([r[6] for r in rows], dtype=np.int64))


def score_predictions(predictions: Path, dataset, references: Path,
                      args: argparse.Namespace) -> dict[str, Any]:
    """Write the split's GT as the official annotation CSV, read both files back with the package's readers
    (which validate them) and score with ``sportshhi.evaluation.hhi_metrics`` (paper mode)."""
    from sportshhi.evaluation import hhi_metrics
    from sportshhi.formats import read_annotation_csv, read_prediction_csv, write_annotation_csv

    write_annotation_csv(references, reference_annotations(dataset))
    gt, predicted = read_annotation_csv(references), read_prediction_csv(predictions)
    return hhi_metrics(gt.keys, gt.subject_boxes, gt.object_boxes, gt.labels, predicted.keys,
                       predicted.subject_boxes, predicted.object_boxes, predicted.labels, predicted.scores)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The baseline's flags: data, backbone, training loop, and the pair classifier."""
    add_baseline_arguments(parser, config="hhi",
                           max_steps=20000, batch_size=4, eval_batch_size=4, learning_rate=1e-4)
    group = add_pair_arguments(parser, "HHICls pair classifier", unit="keyframe", max_pairs=32)
    group.add_argument("--context-frames", type=int, default=4,
                       help="context frames whose union crop joins each pair (0: keyframe only)")
    group.add_argument("--score-threshold", type=float, default=0.002,
                       help="write a (pair, class) row when its probability exceeds this (official: 0.002)")
    group.add_argument("--action-list", type=Path,
                       help="sports_action_list.pbtxt giving label ids (default: ids seen in training)")
    group.add_argument("--train-split", default="train")
    group.add_argument("--eval-splits", nargs="*", default=["validation"],
                       help="splits to predict on (SportsHHI has no public test split: validation is it)")


SCRIPT = BaselineScript("sportshhi.baseline", __doc__, configure_parser, HHIClsBaseline)
run, train, parse_args, main = SCRIPT.run, SCRIPT.train, SCRIPT.parse_args, SCRIPT.main


DEMO_STEPS = 15


def demo(context) -> None:
    """``hoi-bench demo`` step: train the HHICls pair classifier a few steps on the sample, score its
    prediction CSV with the ``hhi_map`` evaluate module."""
    import evaluate

    from hoi_bench import metric_path
    from hoi_bench.training import demo_hub_folder
    from sportshhi.formats import read_annotation_csv, read_prediction_csv

    def build(hub: Path) -> Path:
        from sportshhi.builder import build_sportshhi_folder
        from sportshhi.samples import write_sample

        return build_sportshhi_folder(write_sample(base / "sample").root, hub, synthetic=True)

    base = context.out_dir / "work" / "sportshhi"
    hub = demo_hub_folder(context.out_dir / "sportshhi", build)
    results = run(parse_args(["--data", str(hub), "--output-dir", str(base / "hhicls"), "--cache-dir",
                              str(base / "cache"), "--max-steps", str(DEMO_STEPS), "--learning-rate", "1e-3",
                              "--checkpointing-steps", str(DEMO_STEPS)]))
    split = results["splits"]["validation"]
    predictions_csv = Path(split["predictions"])
    references_csv = predictions_csv.with_name("validation_references.csv")
    predictions, references = module_inputs(read_prediction_csv(predictions_csv),
                                            read_annotation_csv(references_csv))
    value = evaluate.load(metric_path("hhi_map")).compute(predictions=predictions, references=references)
    label = f"(HHICls pair classifier, {results['steps']} steps)"
    context.result("sportshhi", "validation", f"mAP {label}", value["mAP"])
    context.result("sportshhi", "validation", f"Recall@20 {label}", value["recall@20"])
    context.say(f"HHICls trained {results['steps']} steps in {results['train_seconds']:.0f} s; "
                f"prediction CSV {predictions_csv}")
    context.artifacts["sportshhi HHICls prediction CSV"] = predictions_csv


def module_inputs(predicted, gt) -> tuple[list[dict], list[dict]]:
    """``hhi_map`` module inputs: one dict per keyframe (of either file), the shorter side padded with empty
    keyframes as the module's card asks."""
    keys = sorted(set(gt.keys) | set(predicted.keys))
    predictions, references = [], []
    for key in keys:
        mine, theirs = predicted.keys == key, gt.keys == key
        predictions.append({"keyframe": key, "subject_boxes": predicted.subject_boxes[mine].tolist(),
                            "object_boxes": predicted.object_boxes[mine].tolist(),
                            "labels": predicted.labels[mine].tolist(),
                            "scores": predicted.scores[mine].tolist()})
        references.append({"keyframe": key, "subject_boxes": gt.subject_boxes[theirs].tolist(),
                           "object_boxes": gt.object_boxes[theirs].tolist(),
                           "labels": gt.labels[theirs].tolist()})
    return predictions, references


if __name__ == "__main__":
    main()
