"""``--model detr``: the QPIC-style HOI detector (``hoi_bench.detection``) on HICO-DET(-SG) and V-COCO(-SG).

Reads a built ``hoi_sg`` folder with images; each row is one image with its boxes and HOIs. Training targets
are QPIC's (one per distinct (human, object) pair, all its verbs one multi-hot row; V-COCO pairs without an
object get class 80 and an all-zero box) after QPIC's augmentation; test images are resized to
``--image-size`` (QPIC: shorter side 800). Post-processed outputs become a PPDM/QPIC prediction file the way
QPIC's evaluators rank triplets (validity mask, stable sort, top 100), scored with ``hoi_map`` or
``vcoco_map``; on V-COCO with ``--vcoco-official`` also turned into the official detection list and scored
with ``vcoco_role_map``.
"""

from __future__ import annotations

import argparse
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hoi_bench.errors import HoiBenchError
from hoi_bench.files import write_json_atomic
from hoi_bench.training import RowsAsReferences, load_split

#: QPIC's recipe (``main.py`` defaults and README commands) where it differs from the pair baseline's flags
QPIC_TRAINING = {"batch_size": 2, "eval_batch_size": 2, "weight_decay": 1e-4,
                 "max_grad_norm": 0.1, "lr_scheduler_type": "step"}
#: shorter side of the test images: QPIC's 800, or the sample images' 96 pixels for ``tiny-random``
TEST_SIZE = {"tiny-random": 96}
QPIC_TEST_SIZE = 800
REQUIRED_COLUMNS = ("image", "file_name", "boxes", "box_labels", "hois")


def add_detector_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--model detr`` flags, named after QPIC's (``main.py``) with dashes."""
    group = parser.add_argument_group(
        "HOI detector (--model detr; QPIC's flag names)",
        "With --model detr, training flags left unset take QPIC's recipe: --batch-size 2, --eval-batch-size 2, "
        "--weight-decay 1e-4, --max-grad-norm 0.1, --lr-scheduler-type step (x0.1 after 2/3 of --max-steps); "
        "the pair models keep 16, 16, 1e-4, 1.0, cosine.")
    group.add_argument("--num-queries", type=int, default=100, help="interaction queries (QPIC --num_queries)")
    group.add_argument("--hidden-dim", type=int, help="transformer width (QPIC --hidden_dim 256; tiny: 64)")
    group.add_argument("--enc-layers", type=int, help="encoder layers (QPIC --enc_layers 6; tiny: 2)")
    group.add_argument("--dec-layers", type=int, help="decoder layers (QPIC --dec_layers 6; tiny: 2)")
    group.add_argument("--nheads", type=int, help="attention heads (QPIC --nheads 8; tiny: 4)")
    group.add_argument("--dim-feedforward", type=int, help="FFN width (QPIC --dim_feedforward 2048; tiny: 128)")
    group.add_argument("--dropout", type=float, default=0.1, help="transformer dropout (QPIC --dropout)")
    group.add_argument("--no-aux-loss", action="store_true",
                       help="no losses on the earlier decoder layers (QPIC --no_aux_loss)")
    group.add_argument("--lr-backbone", type=float, default=1e-5, help="backbone learning rate (QPIC --lr_backbone)")
    for name, default, what in (("obj-class", 1.0, "object class"), ("verb-class", 1.0, "verb class"),
                                ("bbox", 2.5, "L1 box"), ("giou", 1.0, "GIoU")):
        group.add_argument(f"--set-cost-{name}", type=float, default=default,
                           help=f"matching cost weight of the {what} (QPIC --set_cost_{name.replace('-', '_')})")
    for name, default in (("obj", 1.0), ("verb", 1.0), ("bbox", 2.5), ("giou", 1.0)):
        group.add_argument(f"--{name}-loss-coef", type=float, default=default,
                           help=f"loss weight (QPIC --{name}_loss_coef)")
    group.add_argument("--eos-coef", type=float, default=0.1,
                       help="weight of the 'no object' class in loss_obj_ce (QPIC --eos_coef)")
    group.add_argument("--verb-loss-type", choices=("focal", "bce"), default="focal",
                       help="verb loss (QPIC --verb_loss_type)")
    group.add_argument("--no-augment", action="store_true",
                       help="train on test-resized images (no flip, jitter, multi-scale resize or crop)")
    group.add_argument("--correct-mat", type=Path, metavar="NPY",
                       help="V-COCO verb x object validity mask (QPIC's corre_vcoco.npy, 29 x 80); without it "
                            "every combination is allowed (HICO-DET's comes from its 600 HOI classes)")
    group.add_argument("--vcoco-official", nargs=3, type=Path, metavar=("VSRL", "INSTANCES", "IDS"),
                       help="V-COCO: also score the official role AP (vcoco_role_map) from the VSRL file, "
                            "instances_vcoco_all_2014.json and the image id file of the evaluated split")


def apply_model_defaults(args: argparse.Namespace, defaults: dict[str, Any]) -> None:
    """Fill the training flags left unset (None) with ``defaults``, QPIC's for ``--model detr``."""
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


class HoiDetrBaseline(RowsAsReferences):
    """The detector on the rows of a built ``hoi_sg`` config (see the module docstring)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from hoi_bench.detection.transforms import Resizing
        from hoi_sg_dataset.scoring import dataset_of
        from hoi_sg_dataset.vocabulary import coco_objects, hico_verbs, vcoco_verbs

        self.args = args
        self.dataset = dataset_of(args.config)
        self.name = f"{args.config}-detr"
        self.objects = coco_objects()
        self.verbs = hico_verbs() if self.dataset == "hico" else vcoco_verbs()
        # V-COCO: one more class, index 80, for the HOIs annotated without object
        self.no_object = len(self.objects) if self.dataset == "vcoco" else None
        self.num_obj_classes = len(self.objects) + (self.no_object is not None)
        self.test_size = args.image_size or TEST_SIZE.get(args.backbone, QPIC_TEST_SIZE)
        self.resizing = Resizing(self.test_size / QPIC_TEST_SIZE)
        self.correct_mat = correct_mat(self.dataset, args.correct_mat)
        self.references: dict[str, Any] = {}
        self.epoch = 0
        self.criterion = None
        self.postprocess = None

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next training rows belong to (seeds their augmentation)."""
        self.epoch = epoch

    def split(self, name: str):
        rows = load_split(self.args, name)
        missing = [column for column in REQUIRED_COLUMNS if column not in rows.column_names]
        if missing:
            hint = (" (built with --no-images: rebuild without it)" if missing == ["image"]
                    else f"; is it a hoi_sg folder? its columns are {rows.column_names}")
            raise HoiBenchError(f"{self.args.data} ({self.args.config}, {name}): --model detr needs the columns "
                                f"{', '.join(REQUIRED_COLUMNS)}; missing {', '.join(missing)}{hint}")
        return rows

    def build_model(self):
        from hoi_bench.backbones import TINY_RANDOM
        from hoi_bench.detection import (
            HoiDetector,
            HungarianMatcherHOI,
            PostProcessHOI,
            SetCriterionHOI,
            detr_config,
            weight_dict,
        )
        from hoi_bench.detection.model import load_backbone_weights

        args = self.args
        body = detr_config(args.backbone, num_queries=args.num_queries, hidden_dim=args.hidden_dim,
                           enc_layers=args.enc_layers, dec_layers=args.dec_layers, nheads=args.nheads,
                           dim_feedforward=args.dim_feedforward, dropout=args.dropout)
        detr_source = args.init_from if args.init_from and not is_saved_detector(args.init_from) else None
        if detr_source is not None:  # the body's shape is the DETR checkpoint's: built here, copied later
            body = detr_body_config(detr_source, args.dropout)
        model = HoiDetector(body, num_obj_classes=self.num_obj_classes, num_verb_classes=len(self.verbs),
                            subject_category_id=self.objects.index(1), aux_loss=not args.no_aux_loss)
        if detr_source is None and args.backbone != TINY_RANDOM and args.init_from is None:
            load_backbone_weights(model, args.backbone)
        layers = model.detr.config.decoder_layers
        matcher = HungarianMatcherHOI(cost_obj_class=args.set_cost_obj_class,
                                      cost_verb_class=args.set_cost_verb_class,
                                      cost_bbox=args.set_cost_bbox, cost_giou=args.set_cost_giou)
        weights = weight_dict(obj_loss_coef=args.obj_loss_coef, verb_loss_coef=args.verb_loss_coef,
                              bbox_loss_coef=args.bbox_loss_coef, giou_loss_coef=args.giou_loss_coef,
                              aux_layers=0 if args.no_aux_loss else layers - 1)
        self.criterion = SetCriterionHOI(self.num_obj_classes, args.num_queries, len(self.verbs), matcher,
                                         weights, args.eos_coef,
                                         ["obj_labels", "verb_labels", "sub_obj_boxes", "obj_cardinality"],
                                         verb_loss_type=args.verb_loss_type)
        self.postprocess = PostProcessHOI(subject_category_id=self.objects.index(1))
        return self.trainable(model)

    def trainable(self, model):
        """DETR's backbone rule (stem and first stage frozen); all of a random ``tiny-random`` backbone;
        none of it with ``--freeze-backbone``."""
        from hoi_bench.backbones import TINY_RANDOM
        from hoi_bench.detection.model import freeze_like_detr

        freeze_like_detr(model, train_all=self.args.backbone == TINY_RANDOM and not self.args.init_from)
        if self.args.freeze_backbone:
            model.detr.backbone.requires_grad_(False)
        return model

    def load_pretrained(self, model, source: str):
        """``--init-from``: a detector saved by a run (its classes must be this config's), or DETR's COCO
        detector mapped as QPIC's ``convert_parameters.py`` does."""
        from hoi_bench.detection import HoiDetector, init_from_detr, load_detr_detector

        if is_saved_detector(source):
            loaded = HoiDetector.from_pretrained(source)
            for what, found, expected in (("object classes", loaded.num_obj_classes, self.num_obj_classes),
                                          ("verb classes", loaded.num_verb_classes, len(self.verbs))):
                if found != expected:
                    raise HoiBenchError(f"--init-from {source}: the detector has {found} {what}, "
                                        f"{self.args.config} needs {expected} ({self.dataset} vocabulary)")
            return self.trainable(loaded)
        init_from_detr(model, load_detr_detector(source), detr_class_rows(self.objects, self.no_object))
        return model

    def parameter_groups(self, model, learning_rate: float) -> list[dict[str, Any]]:
        """QPIC's two groups: the backbone at ``--lr-backbone``, everything else at the learning rate."""
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        return [{"params": [p for name, p in named if "backbone" not in name], "lr": learning_rate},
                {"params": [p for name, p in named if "backbone" in name], "lr": self.args.lr_backbone}]

    def train_dataset(self, streaming: bool):
        if streaming:
            raise HoiBenchError("--model detr reads the training split as a Dataset; drop --streaming")
        return self.split("train")

    def transform(self, rows: dict[str, list]) -> dict[str, list]:
        return self.detector_rows(rows, train=False)

    def train_transform(self, rows: dict[str, list]) -> dict[str, list]:
        return self.detector_rows(rows, train=True)

    def detector_rows(self, rows: dict[str, list], *, train: bool) -> dict[str, list]:
        """Images resized (augmented for training) as HWC arrays, QPIC targets, original sizes, file names."""
        from hoi_bench.detection.targets import pair_targets
        from hoi_bench.detection.transforms import augment, resize

        out: dict[str, list] = {"pixels": [], "targets": [], "orig_size": [], "file_name": []}
        for index, name in enumerate(rows["file_name"]):
            image = rows["image"][index].convert("RGB")
            boxes = np.asarray(rows["boxes"][index], dtype=np.float32).reshape(-1, 4)
            alive = np.ones(len(boxes), dtype=bool)
            original = (image.height, image.width)
            if train and not self.args.no_augment:
                seed = [self.args.seed, self.epoch, zlib.crc32(name.encode())]
                image, boxes, alive = augment(image, boxes, np.random.default_rng(seed), self.resizing)
            else:
                image, boxes = resize(image, boxes, self.test_size, self.resizing.max_size)
            triplets = [(h["subject"], h["object"], h["verb"]) for h in rows["hois"][index]]
            out["targets"].append(pair_targets(boxes, rows["box_labels"][index], triplets, alive,
                                               width=image.width, height=image.height,
                                               num_verbs=len(self.verbs), no_object_label=self.no_object))
            out["pixels"].append(np.asarray(image))
            out["orig_size"].append(original)
            out["file_name"].append(name)
        return out

    def collate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Normalised images padded to the batch's largest, with DETR's pixel mask (``DetrImageProcessor``)."""
        import torch

        encoded = image_processor()(images=[row["pixels"] for row in rows], return_tensors="pt")
        return {"pixel_values": encoded["pixel_values"], "pixel_mask": encoded["pixel_mask"],
                "targets": [row["targets"] for row in rows],
                "orig_size": torch.as_tensor([row["orig_size"] for row in rows], dtype=torch.float32),
                "file_name": [row["file_name"] for row in rows]}

    def loss(self, model, batch: dict[str, Any]) -> dict:
        outputs = model(batch["pixel_values"], batch["pixel_mask"])
        device = batch["pixel_values"].device
        targets = [{key: value.to(device) for key, value in target.items()} for target in batch["targets"]]
        losses = self.criterion(_float_outputs(outputs), targets)
        return {"loss": self.criterion.total(losses), **{k: v.detach() for k, v in losses.items()}}

    def predict(self, model, batch: dict[str, Any]) -> list[dict[str, Any]]:
        from hoi_bench.detection import rank_triplets

        outputs = _float_outputs(model(batch["pixel_values"], batch["pixel_mask"]))
        results = self.postprocess(outputs, batch["orig_size"].to(batch["pixel_values"].device))
        records = []
        for name, result in zip(batch["file_name"], results):
            ranked = rank_triplets(result, self.correct_mat, self.args.max_hois_per_image)
            records.append({"file_name": name, "boxes": result["boxes"].float().numpy(),
                            "labels": result["labels"].numpy(), "subject_ids": ranked.subject_ids,
                            "object_ids": ranked.object_ids, "verbs": ranked.verbs, "scores": ranked.scores})
        return records

    def finish(self, split: str, records: list[dict[str, Any]], predictions_dir: Path):
        from hoi_sg_dataset.builder import row_to_record
        from hoi_sg_dataset.scoring import score_prediction_file, without_images

        references = [row_to_record(row, self.dataset) for row in without_images(self.references[split])]
        entries = detector_prediction_entries(records, [r.file_name for r in references], self.objects,
                                              self.verbs, self.no_object)
        path = write_json_atomic(predictions_dir / f"{split}.json", entries)
        metrics = score_prediction_file(path, references, self.dataset)
        if self.dataset == "vcoco" and self.args.vcoco_official is not None:
            metrics["role_ap"] = role_ap(path, references, predictions_dir / f"{split}.vcoco_detections.json",
                                         self.args.vcoco_official)
        return path, metrics


def _float_outputs(outputs: dict) -> dict:
    """The detector's outputs in float32 (losses and post-processing are computed outside mixed precision)."""
    def cast(value):
        if isinstance(value, list):
            return [cast(item) for item in value]
        if isinstance(value, dict):
            return {key: cast(item) for key, item in value.items()}
        return value.float()

    return cast(outputs)


@lru_cache(maxsize=1)
def image_processor():
    """The ``DetrImageProcessor`` (built once per process, not per batch) that only rescales, normalises with
    ImageNet's mean/std and pads (the images are already resized as QPIC resizes them)."""
    import transformers

    from hoi_bench.backbones import IMAGENET_MEAN, IMAGENET_STD

    # the PIL backend is the one that needs no torchvision (transformers >= 5 names it apart)
    processor = getattr(transformers, "DetrImageProcessorPil", None) or transformers.DetrImageProcessor
    return processor(do_resize=False, do_rescale=True, do_normalize=True, do_pad=True,
                              image_mean=list(IMAGENET_MEAN), image_std=list(IMAGENET_STD))


def is_saved_detector(source: str) -> bool:
    """Whether ``source`` is a local model folder written by a ``--model detr`` run (its ``config.json`` holds
    the DETR body as ``detr_config``)."""
    import json

    config = Path(source) / "config.json"
    if not config.is_file():
        return False
    try:
        return "detr_config" in json.loads(config.read_text())
    except (ValueError, UnicodeDecodeError):
        return False


def detr_body_config(source: str, dropout: float) -> dict:
    """The ``DetrConfig`` dict of a DETR checkpoint's body, for a detector its weights can be copied into."""
    from transformers import AutoConfig

    from hoi_bench.detection.detr_init import NO_TIMM_REVISION

    local = Path(source).exists()
    try:
        config = AutoConfig.from_pretrained(source, revision=None if local else NO_TIMM_REVISION)
    except (OSError, ValueError) as error:
        raise HoiBenchError(f"--init-from {source}: neither a detector saved by a --model detr run nor a DETR "
                            f"checkpoint ({error})") from error
    if config.model_type != "detr":
        raise HoiBenchError(f"--init-from {source}: expected a DETR detector (DetrForObjectDetection) or a "
                            f"detector saved by a --model detr run, found model_type {config.model_type!r}")
    body = config.to_dict()
    body["dropout"] = dropout
    return body


def detr_class_rows(objects, no_object: int | None) -> list[int | None]:
    """DETR classifier row of each object class: its COCO id (DETR's rows are COCO ids), None for V-COCO's
    "no object" annotation class (a fresh row, as QPIC's ``convert_parameters.py --dataset vcoco``)."""
    return list(objects.raw_ids) + ([None] if no_object is not None else [])


def correct_mat(dataset: str, path: Path | None) -> np.ndarray:
    """QPIC's verb x object validity mask: HICO-DET's 600 HOI classes (117 x 80); V-COCO's ``path``
    (``corre_vcoco.npy``, 29 x 80) or all ones, plus QPIC's all-ones column for "no object" (29 x 81)."""
    from hoi_sg_dataset.vocabulary import coco_objects, hico_hoi_classes, hico_verbs, vcoco_verbs

    objects = coco_objects()
    if dataset == "hico":
        verbs = hico_verbs()
        mask = np.zeros((len(verbs), len(objects)))
        for hoi in hico_hoi_classes():
            mask[verbs.index(hoi.verb_id), objects.index(hoi.object_id)] = 1
        return mask
    verbs = vcoco_verbs()
    if path is None:
        mask = np.ones((len(verbs), len(objects)))
    else:
        try:
            mask = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise HoiBenchError(f"{path}: not a readable .npy array (QPIC's corre_vcoco.npy): {error}") from error
        if mask.shape != (len(verbs), len(objects)):
            raise HoiBenchError(f"{path}: expected a {len(verbs)} x {len(objects)} verb x object mask "
                                f"(QPIC's corre_vcoco.npy), found shape {mask.shape}")
    return np.concatenate([mask, np.ones((len(verbs), 1))], axis=1)


def detector_prediction_entries(records: list[dict[str, Any]], file_names: list[str], objects, verbs,
                                no_object: int | None) -> list[dict]:
    """PPDM/QPIC prediction-file entries of post-processed records, one per GT image in ``file_names`` order.

    Each entry holds the boxes its kept triplets use (subject boxes, then object boxes, in query order; QPIC's
    file lists all 2Q boxes, the unused ones change no metric), labels as COCO ids, verbs as the GT file's
    ids. A V-COCO triplet whose object is the "no object" class gets ``object_id`` −1 and no object box.
    """
    from hoi_sg_dataset.evaluation import HoiSet
    from hoi_sg_dataset.predictions import prediction_json

    by_name = {record["file_name"]: record for record in records}
    boxes, labels, hois, scores = [], [], [], []
    for name in file_names:
        record = by_name.get(name)
        if record is None:
            boxes.append(np.zeros((0, 4)))
            labels.append(np.zeros(0, dtype=np.int64))
            hois.append(np.zeros((0, 3), dtype=np.int64))
            scores.append(np.zeros(0))
            continue
        objects_of = record["labels"][record["object_ids"]]
        missing = (objects_of == no_object) if no_object is not None else np.zeros(len(objects_of), bool)
        used = np.unique(np.concatenate([record["subject_ids"], record["object_ids"][~missing]]))
        position = np.full(len(record["labels"]), -1, dtype=np.int64)
        position[used] = np.arange(len(used))
        boxes.append(record["boxes"][used].astype(np.float64))
        labels.append(np.array([objects.raw_id(int(k)) for k in record["labels"][used]], dtype=np.int64))
        object_ids = np.where(missing, -1, position[record["object_ids"]])
        raw_verbs = np.array([verbs.raw_id(int(v)) for v in record["verbs"]], dtype=np.int64)
        hois.append(np.column_stack([position[record["subject_ids"]], object_ids, raw_verbs]).reshape(-1, 3))
        scores.append(np.asarray(record["scores"], dtype=np.float64))
    hoi_set = HoiSet.from_images(boxes=boxes, box_labels=labels, hois=hois, scores=scores, what="predictions")
    return prediction_json(hoi_set, file_names)


def role_ap(predictions: Path, references: list, detections_path: Path, official: list[Path]) -> dict:
    """V-COCO's official role AP of a prediction file: the QPIC conversion to the detection list (written to
    ``detections_path``), then ``vcoco_role_map`` on the official files ``(VSRL, instances, image ids)``."""
    import tempfile

    from hoi_sg_dataset.formats import write_annotations
    from hoi_sg_dataset.vcoco_role_convert import detections_from_predictions
    from hoi_sg_dataset.vcoco_role_files import vcoco_role_map_files

    vsrl, instances, ids = official
    with tempfile.TemporaryDirectory() as scratch:
        gt = Path(scratch) / "references.json"
        write_annotations(gt, references, "vcoco")
        detections = detections_from_predictions(gt, predictions)
    write_json_atomic(detections_path, detections)
    result = vcoco_role_map_files([vsrl], instances, ids, detections_path)
    return {key: value for key, value in result.items() if not isinstance(value, (dict, list))}
