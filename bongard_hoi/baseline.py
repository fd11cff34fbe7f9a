"""ProtoNet-style few-shot baseline for Bongard-HOI, trained episodically on ``train``, scored on test splits.

Each episode's 6 positive and 6 negative shots are embedded by a backbone + projection; their means are the
two prototypes, and each of the two queries is scored by minus its squared distance to each prototype (Snell
et al., 2017; the NVlabs "ProtoNet" config). Loss: cross-entropy of both queries. The prediction file is the
JSON list ``bongard_accuracy`` reads: ``{"split", "episode", "query", "prediction": [positive, negative]}``
with the two softmax scores.

On a GPU, after ``hoi-bench build bongard_hoi --data-dir RAW --out HUB``::

    accelerate launch -m bongard_hoi.baseline --data HUB --output-dir runs/bongard-protonet \\
        --backbone microsoft/resnet-50 --max-steps 20000 --batch-size 16 --learning-rate 1e-4 \\
        --mixed-precision bf16 --resume latest
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hoi_bench.training import (
    Baseline,
    BaselineScript,
    add_baseline_arguments,
    backbone_from_args,
    load_split,
)

TEST_SPLITS = ("test_seen_obj_seen_act", "test_seen_obj_unseen_act", "test_unseen_obj_seen_act",
               "test_unseen_obj_unseen_act")
QUERIES = ("positive", "negative")
PREDICTIONS_FILE = "bongard_predictions.json"


class ProtoNetBaseline(Baseline):
    """Episodes from the ``episodes`` config of a built Bongard-HOI folder; one row = one episode."""

    name = "bongard_hoi-protonet"

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.preprocessing = None
        self.carved: str | None = None  # the split --validation-size carves from the training episodes

    def build_model(self):
        from hoi_bench.heads import PrototypeClassifier

        backbone = backbone_from_args(self.args)
        self.preprocessing = backbone.preprocessing
        return PrototypeClassifier(backbone, embedding_dim=self.args.embedding_dim)

    def train_dataset(self, streaming: bool):
        return load_split(self.args, self.args.train_split, streaming=streaming)

    def eval_datasets(self) -> dict[str, Any]:
        return {split: load_split(self.args, split) for split in self.args.eval_splits}

    def held_out(self, split: str, rows):
        """Episodes carved from the training split (``--validation-size``): scored from their own query
        labels, as ``bongard_accuracy`` scores the training split."""
        self.carved = split
        return rows

    def transform(self, rows: dict[str, list]) -> dict[str, list]:
        import torch

        def pixels(cell: dict):
            return _whole_image(cell["image"], self.preprocessing)

        return {
            "positive_shots": [torch.stack([pixels(c) for c in shots]) for shots in rows["positive_shots"]],
            "negative_shots": [torch.stack([pixels(c) for c in shots]) for shots in rows["negative_shots"]],
            "queries": [torch.stack([pixels(p), pixels(n)])
                        for p, n in zip(rows["positive_query"], rows["negative_query"])],
            "labels": [torch.tensor(labels) for labels in rows["query_labels"]],
            "episode": rows["episode"],
        }

    def collate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        batch = {key: torch.stack([row[key] for row in rows])
                 for key in ("positive_shots", "negative_shots", "queries", "labels")}
        batch["episode"] = [int(row["episode"]) for row in rows]
        return batch

    def loss(self, model, batch):
        import torch.nn.functional as F

        logits = model(batch["positive_shots"], batch["negative_shots"], batch["queries"])
        return F.cross_entropy(logits.flatten(0, 1).float(), batch["labels"].flatten())

    def predict(self, model, batch) -> list[dict[str, Any]]:
        logits = model(batch["positive_shots"], batch["negative_shots"], batch["queries"])
        scores = logits.float().softmax(-1).tolist()
        return [{"episode": episode, "scores": episode_scores} for episode, episode_scores in
                zip(batch["episode"], scores)]

    def finish(self, split: str, records: list[dict[str, Any]], predictions_dir: Path):
        if split == self.carved:
            return self._finish_carved(split, records, predictions_dir)
        entries = prediction_entries(split, records)
        path = predictions_dir / f"{split}.json"
        _write_predictions(path, entries)
        result = _score(path, self.args)
        return path, {key: result[key][split] for key in ("accuracy", "episode_accuracy")}

    def _finish_carved(self, split: str, records: list[dict[str, Any]], predictions_dir: Path):
        """The carved episodes' prediction file (entries of the training split) and their accuracy."""
        from bongard_hoi.evaluation import bongard_accuracy, decisions_from_scores

        entries = prediction_entries(self.args.train_split, records)
        path = predictions_dir / f"{split}.json"
        _write_predictions(path, entries)
        decisions = decisions_from_scores([entry["prediction"] for entry in entries])
        truth = [QUERIES.index(entry["query"]) for entry in entries]
        result = bongard_accuracy(decisions, truth, [self.args.train_split] * len(entries),
                                  episodes=[entry["episode"] for entry in entries])
        return path, {key: result[key][self.args.train_split] for key in ("accuracy", "episode_accuracy")}

    def finalize(self, predictions_dir: Path, splits: dict[str, dict[str, Any]]) -> dict[str, Any]:
        splits = {name: entry for name, entry in splits.items() if name != self.carved}
        if not splits:
            return {}
        entries = []
        for split in splits:
            entries += json.loads((predictions_dir / f"{split}.json").read_text())
        path = predictions_dir / PREDICTIONS_FILE
        _write_predictions(path, entries)
        return {"predictions": str(path), **_score(path, self.args)}


def prediction_entries(split: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``bongard_accuracy`` prediction entries of a split: two per episode, ``[positive, negative]``."""
    entries = []
    for record in sorted(records, key=lambda r: r["episode"]):
        for query, scores in zip(QUERIES, record["scores"]):
            entries.append({"split": split, "episode": record["episode"], "query": query,
                            "prediction": [float(scores[0]), float(scores[1])]})
    return entries


def _write_predictions(path: Path, entries: list[dict[str, Any]]) -> None:
    from hoi_bench.files import write_json_atomic

    write_json_atomic(path, entries)


def _score(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Read the file back with the package's reader (validating it), score it against the dataset folder."""
    from bongard_hoi.predictions import evaluate_prediction_file

    return evaluate_prediction_file(path, args.data)


def _whole_image(image, preprocessing):
    from hoi_bench.backbones import crop_resized, image_tensor

    width, height = image.size
    return crop_resized(image_tensor(image), [0, 0, width, height], preprocessing)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The baseline's flags: data, backbone, training loop, and the few-shot head."""
    add_baseline_arguments(parser, config="episodes",
                           max_steps=2000, batch_size=8, eval_batch_size=8, learning_rate=1e-4)
    group = parser.add_argument_group("ProtoNet")
    group.add_argument("--embedding-dim", type=int, default=128, help="size of the shot/query embedding")
    group.add_argument("--train-split", default="train", help="split to sample training episodes from")
    group.add_argument("--eval-splits", nargs="*", default=list(TEST_SPLITS),
                       help="splits to predict on (default: the four test splits)")


SCRIPT = BaselineScript("bongard_hoi.baseline", __doc__, configure_parser, ProtoNetBaseline)
run, train, parse_args, main = SCRIPT.run, SCRIPT.train, SCRIPT.parse_args, SCRIPT.main


DEMO_STEPS = 20


def demo(context) -> None:
    """``hoi-bench demo`` step: train ProtoNet for a few steps on the sample episodes, score it with the
    ``bongard_accuracy`` evaluate module."""
    import evaluate

    from hoi_bench import metric_path
    from hoi_bench.training import demo_hub_folder

    def build(hub: Path) -> Path:
        from bongard_hoi.builder import build_hub
        from bongard_hoi.samples import write_sample

        return build_hub(write_sample(base / "native"), hub, synthetic=True)

    base = context.out_dir / "work" / "bongard_hoi"
    hub = demo_hub_folder(context.out_dir / "bongard_hoi", build)
    results = run(parse_args(["--data", str(hub), "--output-dir", str(base / "protonet"), "--cache-dir",
                              str(base / "cache"), "--max-steps", str(DEMO_STEPS), "--batch-size", "4",
                              "--learning-rate", "1e-3", "--checkpointing-steps", str(DEMO_STEPS)]))
    path = Path(results["overall"]["predictions"])
    context.say(f"ProtoNet (tiny-random backbone) trained {results['steps']} steps in "
                f"{results['train_seconds']:.0f} s; predictions: {path}")
    entries = json.loads(path.read_text(encoding="utf-8"))
    metric = evaluate.load(metric_path("bongard_accuracy"), "scores")
    scored = metric.compute(predictions=[e["prediction"] for e in entries],
                            references=[QUERIES.index(e["query"]) for e in entries],
                            splits=[e["split"] for e in entries], episodes=[e["episode"] for e in entries])
    label = f"query accuracy (ProtoNet, {results['steps']} steps)"
    for split in TEST_SPLITS:
        context.result("bongard_hoi", split, label, scored["accuracy"][split])
    context.result("bongard_hoi", "test mean", label, scored["test_mean"])
    context.artifacts["bongard_hoi ProtoNet predictions"] = path


if __name__ == "__main__":
    main()
