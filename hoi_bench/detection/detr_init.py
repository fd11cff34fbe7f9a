"""Start a :class:`HoiDetector` from DETR's COCO detector the way QPIC's ``convert_parameters.py`` does.

From a ``DetrForObjectDetection`` (``facebook/detr-resnet-50`` at revision ``no_timm``, or a local folder):
the body (backbone, input projection, transformer, query embeddings) is copied; DETR's box MLP goes into both
box heads; the object classifier takes DETR's rows at the COCO ids of the detector's object vocabulary followed
by DETR's "no object" row; classes DETR does not have (V-COCO's "no object" annotation) get a freshly
initialised row, inserted before the "no object" row. The verb classifier stays fresh.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from hoi_bench.errors import HoiBenchError

#: DETR's Hub checkpoint revision holding a ``transformers`` ResNet backbone (no timm needed)
NO_TIMM_REVISION = "no_timm"


def load_detr_detector(source: str):
    """``DetrForObjectDetection`` of a local folder, or of a Hub id at revision ``no_timm``; anything else is
    one clear error naming ``source``."""
    from pathlib import Path

    from transformers import AutoConfig, DetrForObjectDetection

    local = Path(source).exists()
    revision = None if local else NO_TIMM_REVISION
    try:
        config = AutoConfig.from_pretrained(source, revision=revision)
    except (OSError, ValueError) as error:
        raise HoiBenchError(f"--init-from {source}: not a DETR detector folder or Hub id ({error})") from error
    if config.model_type != "detr" or "DetrForObjectDetection" not in (config.architectures or []):
        raise HoiBenchError(f"--init-from {source}: expected a DetrForObjectDetection checkpoint, found "
                            f"model_type {config.model_type!r}, architectures {config.architectures}")
    if getattr(config.backbone_config, "model_type", None) == "timm_backbone":
        raise HoiBenchError(f"--init-from {source}: this checkpoint needs timm (use_timm_backbone); use a "
                            f"'{NO_TIMM_REVISION}' revision or a folder saved with a transformers ResNet backbone")
    try:
        return DetrForObjectDetection.from_pretrained(source, revision=revision)
    except (OSError, ValueError, RuntimeError) as error:
        raise HoiBenchError(f"--init-from {source}: cannot load the DETR detector ({error})") from error


def init_from_detr(model, detector, coco_ids: Sequence[int | None]) -> dict[str, str]:
    """Copy ``detector``'s weights into ``model`` (a :class:`~hoi_bench.detection.HoiDetector`) in place.

    ``coco_ids[k]`` is the DETR class row of object class ``k`` (its COCO id), or None for a class DETR lacks
    (fresh row). Returns ``{model tensor name: where it came from}`` for the log. A body of another shape, or
    a classifier without the needed rows, is an error naming both shapes.
    """
    if len(coco_ids) != model.num_obj_classes:
        raise HoiBenchError(f"init_from_detr: {len(coco_ids)} COCO ids for {model.num_obj_classes} object "
                            f"classes")
    sources: dict[str, str] = {}
    body = detector.model.state_dict()
    target = model.detr.state_dict()
    mismatched = [name for name, value in target.items()
                  if name not in body or body[name].shape != value.shape]
    if mismatched:
        name = mismatched[0]
        found = tuple(body[name].shape) if name in body else "missing"
        raise HoiBenchError(f"--init-from: the DETR body does not fit this detector ({len(mismatched)} tensors "
                            f"differ, e.g. {name}: expected {tuple(target[name].shape)}, found {found}); pass "
                            f"the checkpoint's backbone and transformer sizes")
    model.detr.load_state_dict(body)
    sources.update({f"detr.{name}": f"model.{name}" for name in body})
    box = detector.bbox_predictor.state_dict()
    for head in ("sub_bbox_embed", "obj_bbox_embed"):
        getattr(model, head).load_state_dict(box)
        sources.update({f"{head}.{name}": f"bbox_predictor.{name}" for name in box})
    classifier = detector.class_labels_classifier
    rows = classifier.weight.shape[0]
    needed = [row for row in coco_ids if row is not None]
    if needed and max(needed) >= rows - 1:
        raise HoiBenchError(f"--init-from: DETR's classifier has {rows - 1} classes + no object; the object "
                            f"vocabulary needs COCO id {max(needed)}")
    with torch.no_grad():
        fresh = model.obj_class_embed
        weight, bias = fresh.weight.clone(), fresh.bias.clone()
        for index, row in enumerate([*coco_ids, rows - 1]):
            if row is None:
                continue
            weight[index], bias[index] = classifier.weight[row], classifier.bias[row]
            sources[f"obj_class_embed.weight[{index}]"] = f"class_labels_classifier.weight[{row}]"
        fresh.weight.copy_(weight)
        fresh.bias.copy_(bias)
    return sources
