"""Image backbones for the baselines and the crop/resize/normalise steps feeding them (torch, no torchvision).

A backbone is any ``transformers`` vision model named by its checkpoint (``microsoft/resnet-50``,
``facebook/dinov2-small``, ...), loaded with ``AutoModel`` (or ``AutoBackbone`` for multi-stage backbones)
and reduced to one feature vector per image. ``tiny-random`` builds a two-stage ResNet from a small config
with random weights and downloads nothing, so tests and ``hoi-bench demo`` run offline on a CPU.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from hoi_bench.errors import ConfigError, HoiBenchError

logger = logging.getLogger(__name__)

TINY_RANDOM = "tiny-random"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
KINDS = ("model", "backbone")
PAIR_GEOMETRY_DIM = 9


@dataclass(frozen=True)
class Preprocessing:
    """How crops are prepared for a backbone: square side in pixels, the normalisation it was trained with."""

    size: int
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD


class Backbone(nn.Module):
    """A ``transformers`` vision model whose ``forward(pixel_values)`` returns ``(batch, feature_dim)``.

    Pooling: the model's ``pooler_output`` when it has one (ResNet, ConvNeXt), else the first token of a
    ``(batch, tokens, dim)`` output (ViT/DINOv2 CLS token), else the spatial mean of the last feature map
    (``AutoBackbone`` stages).
    """

    def __init__(self, model: nn.Module, feature_dim: int, preprocessing: Preprocessing, name: str,
                 kind: str = "model") -> None:
        super().__init__()
        self.model = model
        self.feature_dim = feature_dim
        self.preprocessing = preprocessing
        self.name = name
        self.kind = kind

    def to_config(self) -> dict:
        """Everything but the weights, as JSON: the checkpoint name, how it was loaded, the crops it expects
        and the ``transformers`` config of the model (so :meth:`from_config` rebuilds it without a download).
        """
        return {"name": self.name, "kind": self.kind, "feature_dim": self.feature_dim,
                "preprocessing": {"size": self.preprocessing.size, "mean": list(self.preprocessing.mean),
                                  "std": list(self.preprocessing.std)},
                "model_config": self.model.config.to_dict()}

    @classmethod
    def from_config(cls, config: dict) -> Backbone:
        """The backbone :meth:`to_config` describes, with randomly initialised weights (load them next).

        >>> backbone = tiny_random_backbone(16)
        >>> Backbone.from_config(backbone.to_config()).to_config() == backbone.to_config()
        True
        """
        from transformers import AutoConfig, AutoModel

        settings = dict(config["model_config"])
        model_config = AutoConfig.for_model(settings.pop("model_type"), **settings)
        if config["kind"] == "backbone":
            from transformers.models.auto.modeling_auto import MODEL_FOR_BACKBONE_MAPPING

            model = MODEL_FOR_BACKBONE_MAPPING[type(model_config)](model_config)
        else:
            model = AutoModel.from_config(model_config)
        preprocessing = config["preprocessing"]
        return cls(model, int(config["feature_dim"]),
                   Preprocessing(size=int(preprocessing["size"]), mean=tuple(preprocessing["mean"]),
                                 std=tuple(preprocessing["std"])),
                   config["name"], config["kind"])

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        outputs = self.model(pixel_values=pixel_values)
        pooled = getattr(outputs, "pooler_output", None)
        if pooled is not None:
            return pooled.flatten(1)
        feature_maps = getattr(outputs, "feature_maps", None)
        if feature_maps is not None:
            return feature_maps[-1].mean(dim=(2, 3))
        hidden = outputs.last_hidden_state
        return hidden[:, 0] if hidden.dim() == 3 else hidden.mean(dim=(2, 3))


def tiny_random_backbone(size: int = 32) -> Backbone:
    """A two-stage ResNet (about 6k parameters, 16-d features) with random weights: no download, fast on CPU.

    >>> backbone = tiny_random_backbone()
    >>> backbone(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 16])
    """
    from transformers import ResNetConfig, ResNetModel

    config = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                          layer_type="basic")
    return Backbone(ResNetModel(config), config.hidden_sizes[-1], Preprocessing(size=size), TINY_RANDOM)


def load_backbone(name: str, *, kind: str = "model", size: int | None = None) -> Backbone:
    """The backbone named ``name``: ``tiny-random`` or a ``transformers`` checkpoint name or local folder.

    ``kind="model"`` loads with ``AutoModel`` (pooled output), ``kind="backbone"`` with ``AutoBackbone`` (last
    stage, average-pooled). ``size`` overrides the crop side; by default it comes from the checkpoint's image
    processor config (``crop_size`` or ``size``), as do the normalisation mean and std.
    """
    if kind not in KINDS:
        raise ConfigError("backbone kind", kind, KINDS)
    if name == TINY_RANDOM:
        return tiny_random_backbone(size or 32)
    from transformers import AutoConfig, AutoImageProcessor, AutoModel

    try:
        config = AutoConfig.from_pretrained(name)
    except OSError as error:
        raise HoiBenchError(f"--backbone {name}: not a local checkpoint folder, and not in the Hugging Face "
                            f"cache or reachable on the Hub ({error}); use 'tiny-random' to run without "
                            f"a download") from error
    if kind == "backbone":
        # AutoBackbone.from_pretrained first asks the Hub whether ``name`` exists (transformers 5), which
        # fails offline and for local folders; the concrete backbone class it maps to loads from either
        from transformers.models.auto.modeling_auto import MODEL_FOR_BACKBONE_MAPPING

        if type(config) not in MODEL_FOR_BACKBONE_MAPPING:
            raise ConfigError("backbone with --backbone-kind backbone", name,
                              ["checkpoints of a model type AutoBackbone supports (resnet, dinov2, ...)"])
        model = MODEL_FOR_BACKBONE_MAPPING[type(config)].from_pretrained(name)
        feature_dim = model.channels[-1]
    else:
        model = AutoModel.from_pretrained(name)
        feature_dim = _feature_dim(config)
    processor = AutoImageProcessor.from_pretrained(name)
    preprocessing = Preprocessing(
        size=size or _processor_side(processor),
        mean=tuple(getattr(processor, "image_mean", None) or IMAGENET_MEAN),
        std=tuple(getattr(processor, "image_std", None) or IMAGENET_STD),
    )
    logger.info("backbone %s: %d-d features, %d px crops", name, feature_dim, preprocessing.size)
    return Backbone(model, feature_dim, preprocessing, name, kind)


def _feature_dim(config) -> int:
    for attribute in ("hidden_sizes", "hidden_size", "embed_dim"):
        value = getattr(config, attribute, None)
        if value:
            return int(value[-1]) if isinstance(value, (list, tuple)) else int(value)
    raise ConfigError("backbone config without a feature size", type(config).__name__,
                      ["configs with hidden_sizes, hidden_size or embed_dim"])


def _processor_side(processor) -> int:
    """The square side the checkpoint's image processor produces (``crop_size``, else ``size``), else 224."""
    for attribute in ("crop_size", "size"):
        value = getattr(processor, attribute, None)
        if value is not None and not isinstance(value, (int, float)):  # a dict or transformers' SizeDict
            get = value.get if isinstance(value, dict) else lambda key, v=value: getattr(v, key, None)
            value = get("height") or get("shortest_edge")
        if value:
            return int(value)
    return 224


def image_tensor(image: Image.Image | np.ndarray) -> torch.Tensor:
    """``(3, H, W)`` uint8 tensor of an RGB image.

    >>> image_tensor(Image.new("RGB", (4, 2))).shape
    torch.Size([3, 2, 4])
    """
    if isinstance(image, Image.Image):
        image = np.array(image.convert("RGB"))
    return torch.from_numpy(np.array(image, dtype=np.uint8, copy=True)).permute(2, 0, 1)


def crop_resized(image: torch.Tensor, box, preprocessing: Preprocessing) -> torch.Tensor:
    """The region ``box`` (xyxy pixels) of a ``(3, H, W)`` uint8 image as a normalised square float crop.

    The box is clipped to the image and widened to at least one pixel, so degenerate annotation boxes still
    give a valid crop.

    >>> white = torch.full((3, 10, 20), 255, dtype=torch.uint8)
    >>> crop = crop_resized(white, [2, 2, 8, 6], Preprocessing(size=4))
    >>> crop.shape, round(float(crop[0, 0, 0]), 3)
    (torch.Size([3, 4, 4]), 2.249)
    """
    _, height, width = image.shape
    x1, y1, x2, y2 = (float(v) for v in box)
    left = int(min(max(np.floor(x1), 0), width - 1))
    top = int(min(max(np.floor(y1), 0), height - 1))
    right = int(max(min(np.ceil(x2), width), left + 1))
    bottom = int(max(min(np.ceil(y2), height), top + 1))
    region = image[:, top:bottom, left:right].float().div_(255.0).unsqueeze(0)
    side = preprocessing.size
    resized = F.interpolate(region, size=(side, side), mode="bilinear", align_corners=False,
                            antialias=True)[0]
    mean = torch.tensor(preprocessing.mean).view(3, 1, 1)
    std = torch.tensor(preprocessing.std).view(3, 1, 1)
    return (resized - mean) / std


def union_box(a, b) -> list[float]:
    """Smallest xyxy box holding both boxes.

    >>> union_box([0, 0, 2, 2], [1, 1, 5, 3])
    [0.0, 0.0, 5.0, 3.0]
    """
    return [float(min(a[0], b[0])), float(min(a[1], b[1])), float(max(a[2], b[2])), float(max(a[3], b[3]))]


def pair_geometry(subject, obj, width: float, height: float) -> list[float]:
    """Nine numbers describing where two xyxy boxes are relative to each other and to the image.

    Normalised centre offset (dx, dy) in units of the subject size, log size ratios, IoU, and each box's
    normalised centre; used by every pair classifier as the "box geometry" input.

    >>> [round(v, 3) for v in pair_geometry([0, 0, 10, 10], [10, 0, 20, 10], 20, 10)]
    [1.0, 0.0, 0.0, 0.0, 0.0, 0.25, 0.5, 0.75, 0.5]
    """
    sw, sh = max(subject[2] - subject[0], 1e-3), max(subject[3] - subject[1], 1e-3)
    ow, oh = max(obj[2] - obj[0], 1e-3), max(obj[3] - obj[1], 1e-3)
    scx, scy = (subject[0] + subject[2]) / 2, (subject[1] + subject[3]) / 2
    ocx, ocy = (obj[0] + obj[2]) / 2, (obj[1] + obj[3]) / 2
    ix = max(0.0, min(subject[2], obj[2]) - max(subject[0], obj[0]))
    iy = max(0.0, min(subject[3], obj[3]) - max(subject[1], obj[1]))
    inter = ix * iy
    iou = inter / (sw * sh + ow * oh - inter)
    return [float(v) for v in ((ocx - scx) / sw, (ocy - scy) / sh, np.log(ow / sw), np.log(oh / sh), iou,
                               scx / max(width, 1e-3), scy / max(height, 1e-3),
                               ocx / max(width, 1e-3), ocy / max(height, 1e-3))]




def pair_crops(image: torch.Tensor, subject, obj, preprocessing: Preprocessing) -> torch.Tensor:
    """``(3, 3, S, S)``: the subject, object and union crops of a box pair in a ``(3, H, W)`` uint8 image."""
    boxes = (subject, obj, union_box(subject, obj))
    return torch.stack([crop_resized(image, box, preprocessing) for box in boxes])
