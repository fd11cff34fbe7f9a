"""Learning check of the QPIC-style detector on a CPU: overfit the first 32 images of the sample's HICO-DET
train split and watch the loss terms fall and the qpic mAP on those same images rise.

It runs the whole path the ``--model detr`` baseline uses — QPIC targets from the ``hoi_sg`` rows, Hungarian
matching, the losses, post-processing, triplet ranking, the PPDM/QPIC prediction file and ``hoi_map`` — with a
small DETR (``tiny-random``: two-stage ResNet, 2 + 2 transformer layers, d 64), no augmentation, and prints
every ``--every`` steps the main loss terms, the mAP and the wall time since the start.

    python benchmarks/detector_overfit.py [--images 32] [--steps 4000] [--every 100] [--target 0.9]
        [--num-queries 8] [--learning-rate 1e-3] [--lr-drop 1500] [--batch-size 8] [--threads 1]

Exit status 0 when the mAP reached ``--target`` (it stops there), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

TERMS = ("loss_obj_ce", "loss_verb_ce", "loss_sub_bbox", "loss_obj_bbox", "loss_sub_giou", "loss_obj_giou")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--num-queries", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--lr-backbone", type=float, help="default: --learning-rate (the tiny backbone is random)")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--lr-drop", type=int, default=1500,
                        help="multiply the learning rates by 0.1 after this many steps (QPIC's StepLR, in steps)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, help="folder for the sample and its Hub folder (default: temporary)")
    return parser.parse_args(argv)


def hub_folder(work: Path) -> Path:
    from hoi_sg_dataset.hub_folder import build_hoi_sg
    from hoi_sg_dataset.samples import write_sample

    hub = work / "hub"
    if not (hub / "README.md").is_file():
        build_hoi_sg(write_sample(work / "sample").root, hub, ["hico_split1"], synthetic=True)
    return hub


def baseline_args(hub: Path, work: Path, options: argparse.Namespace) -> argparse.Namespace:
    from hoi_sg_dataset.baseline import make_baseline
    from hoi_sg_dataset.baseline import parse_args as baseline_parse

    args = baseline_parse(["--model", "detr", "--data", str(hub), "--config", "hico_split1",
                           "--backbone", "tiny-random", "--output-dir", str(work / "run"),
                           "--cache-dir", str(work / "cache"), "--num-queries", str(options.num_queries),
                           "--no-augment", "--seed", str(options.seed), "--dropout", str(options.dropout),
                           "--lr-backbone", str(options.lr_backbone or options.learning_rate)])
    return make_baseline(args)


def main(argv=None) -> int:
    import torch

    options = parse_args(argv)
    torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    with tempfile.TemporaryDirectory() as scratch:
        work = options.work or Path(scratch)
        started = time.perf_counter()
        baseline = baseline_args(hub_folder(work), work, options)
        rows = baseline.split("train").select(range(options.images))
        baseline.references = {"train": rows}
        model = baseline.build_model()
        items = rows.with_transform(baseline.train_transform)
        batches = [baseline.collate([items[i] for i in range(k, min(k + options.batch_size, len(rows)))])
                   for k in range(0, len(rows), options.batch_size)]
        evaluation = [baseline.collate([item]) for item in (rows.with_transform(baseline.transform)[i]
                                                            for i in range(len(rows)))]
        optimizer = torch.optim.AdamW(baseline.parameter_groups(model, options.learning_rate),
                                      weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, options.lr_drop)
        print(f"{len(rows)} images, {sum(len(t['obj_labels']) for b in batches for t in b['targets'])} "
              f"(human, object) pairs, {sum(p.numel() for p in model.parameters()):,} parameters, "
              f"{options.num_queries} queries, setup {time.perf_counter() - started:.1f} s")
        print(f"{'step':>5} {'loss':>9} " + " ".join(f"{t[5:]:>9}" for t in TERMS) + f" {'mAP':>7} {'wall s':>7}")
        reached = 0.0
        for step in range(1, options.steps + 1):
            batch = batches[(step - 1) % len(batches)]
            model.train()
            losses = baseline.loss(model, batch)
            optimizer.zero_grad()
            losses["loss"].backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            scheduler.step()
            if step % options.every and step != options.steps:
                continue
            model.eval()
            with torch.no_grad():
                records = [record for item in evaluation for record in baseline.predict(model, item)]
            _, metrics = baseline.finish("train", records, work / "predictions")
            reached = metrics["mAP"]
            print(f"{step:>5} {losses['loss'].item():>9.3f} "
                  + " ".join(f"{losses[t].item():>9.4f}" for t in TERMS)
                  + f" {reached:>7.4f} {time.perf_counter() - started:>7.1f}", flush=True)
            if reached >= options.target:
                break
        verdict = "reached" if reached >= options.target else "did not reach"
        print(f"qpic mAP {reached:.4f} on the {len(rows)} training images: {verdict} {options.target} "
              f"in {time.perf_counter() - started:.0f} s")
    return 0 if reached >= options.target else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
