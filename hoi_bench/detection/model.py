"""A QPIC-style HOI detector: ``transformers``' DETR body plus QPIC's four interaction heads.

(No ``from __future__ import annotations`` here: ``PyTorchModelHubMixin`` reads the constructor's annotations
as types to decode ``config.json``.)
"""

import torch
from torch import nn

from hoi_bench.heads import HubModule

#: the tiny random DETR body of ``--backbone tiny-random``: a two-stage ResNet and 2 + 2 transformer layers
TINY_DETR = {"d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
             "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128}
TINY_RESNET = {"embedding_size": 16, "hidden_sizes": [32, 64], "depths": [1, 1], "layer_type": "basic",
               "out_features": ["stage2"]}


class MLP(nn.Module):
    """DETR's box head: ``layers`` of Linear with ReLU between them (same parameter names as
    ``DetrMLPPredictionHead``, so DETR's ``bbox_predictor`` weights load into it unchanged)."""

    def __init__(self, input_dim: int, hidden_dim: int, output_dim: int, num_layers: int) -> None:
        super().__init__()
        sizes = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + sizes, sizes + [output_dim]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index, layer in enumerate(self.layers):
            x = layer(x) if index == len(self.layers) - 1 else torch.relu(layer(x))
        return x


class HoiDetector(HubModule):
    """QPIC's ``DETRHOI`` on ``transformers.DetrModel``.

    ``forward(pixel_values, pixel_mask)`` returns QPIC's dict: ``pred_obj_logits`` (B×Q×(K+1), the last class
    is "no object"), ``pred_verb_logits`` (B×Q×V), ``pred_sub_boxes`` and ``pred_obj_boxes`` (B×Q×4,
    normalised cx, cy, w, h), and with ``aux_loss`` ``aux_outputs``: the same four keys for every earlier
    decoder layer, first layer first.

    ``detr_config`` is a ``DetrConfig`` as a dict (``config.json`` holds it, so ``from_pretrained`` rebuilds
    the body offline); ``subject_category_id`` is the subject's class in the object vocabulary (0 = person in
    COCO order), a parameter so other triplet benchmarks can reuse the model.
    """

    def __init__(self, detr_config: dict, num_obj_classes: int, num_verb_classes: int,
                 subject_category_id: int = 0, aux_loss: bool = True) -> None:
        from transformers import DetrConfig, DetrModel

        super().__init__()
        config = DetrConfig.from_dict({**detr_config, "auxiliary_loss": aux_loss})
        self.detr = DetrModel(config)
        freeze_like_detr(self)
        hidden = config.d_model
        self.num_queries = config.num_queries
        self.num_obj_classes = num_obj_classes
        self.num_verb_classes = num_verb_classes
        self.subject_category_id = subject_category_id
        self.aux_loss = aux_loss
        self.obj_class_embed = nn.Linear(hidden, num_obj_classes + 1)
        self.verb_class_embed = nn.Linear(hidden, num_verb_classes)
        self.sub_bbox_embed = MLP(hidden, hidden, 4, 3)
        self.obj_bbox_embed = MLP(hidden, hidden, 4, 3)

    def forward(self, pixel_values: torch.Tensor, pixel_mask: torch.Tensor | None = None) -> dict:
        body = self.detr(pixel_values=pixel_values, pixel_mask=pixel_mask, return_dict=True)
        hidden = body.intermediate_hidden_states if self.aux_loss else body.last_hidden_state.unsqueeze(0)
        obj_logits = self.obj_class_embed(hidden)
        verb_logits = self.verb_class_embed(hidden)
        sub_boxes = self.sub_bbox_embed(hidden).sigmoid()
        obj_boxes = self.obj_bbox_embed(hidden).sigmoid()
        out = {"pred_obj_logits": obj_logits[-1], "pred_verb_logits": verb_logits[-1],
               "pred_sub_boxes": sub_boxes[-1], "pred_obj_boxes": obj_boxes[-1]}
        if self.aux_loss:
            out["aux_outputs"] = [
                {"pred_obj_logits": a, "pred_verb_logits": b, "pred_sub_boxes": c, "pred_obj_boxes": d}
                for a, b, c, d in zip(obj_logits[:-1], verb_logits[:-1], sub_boxes[:-1], obj_boxes[:-1])]
        return out


def freeze_like_detr(model: HoiDetector, *, train_all: bool = False) -> None:
    """DETR's backbone training rule: the stem and the first ResNet stage frozen, the later stages trained
    (facebookresearch/detr ``models/backbone.py``; QPIC keeps it). ``transformers`` means to do the same for
    its own ResNet but tests the names ``stage.1``..``stage.3``, which its ResNet's ``encoder.stages.N`` never
    contain, so every backbone weight would stay frozen. ``train_all``: train the whole backbone (a random
    one, as ``tiny-random``'s, has nothing to keep)."""
    for name, parameter in model.detr.backbone.model.named_parameters():
        later_stage = any(f"stages.{stage}." in name for stage in (1, 2, 3))
        parameter.requires_grad_(train_all or later_stage)


def detr_config(backbone: str, *, num_queries: int = 100, hidden_dim: int | None = None,
                enc_layers: int | None = None, dec_layers: int | None = None, nheads: int | None = None,
                dim_feedforward: int | None = None, dropout: float = 0.1) -> dict:
    """The ``DetrConfig`` dict of a DETR body on ``backbone``: ``tiny-random`` (small random ResNet, 2 + 2
    transformer layers, no download) or a ``transformers`` ResNet checkpoint (e.g. ``microsoft/resnet-50``;
    its weights are copied in by :func:`load_backbone_weights`). ``None`` keeps DETR's own values (QPIC's: d 256,
    6 + 6 layers, 8 heads, FFN 2048) or the tiny ones."""
    from transformers import AutoConfig, DetrConfig, ResNetConfig

    from hoi_bench.backbones import TINY_RANDOM
    from hoi_bench.errors import HoiBenchError

    if backbone == TINY_RANDOM:
        sizes = dict(TINY_DETR)
        backbone_config = ResNetConfig(**TINY_RESNET)
    else:
        sizes = {}
        try:
            backbone_config = AutoConfig.from_pretrained(backbone)
        except (OSError, ValueError) as error:
            raise HoiBenchError(f"--backbone {backbone}: cannot read its config ({error})") from error
        if backbone_config.model_type != "resnet":
            raise HoiBenchError(f"--backbone {backbone}: the detector's body takes a ResNet (DETR's), found "
                                f"model_type {backbone_config.model_type!r}")
        backbone_config.out_features = [backbone_config.stage_names[-1]]
        backbone_config.out_indices = [len(backbone_config.stage_names) - 1]
    chosen = {"d_model": hidden_dim, "encoder_layers": enc_layers, "decoder_layers": dec_layers,
              "encoder_attention_heads": nheads, "decoder_attention_heads": nheads,
              "encoder_ffn_dim": dim_feedforward, "decoder_ffn_dim": dim_feedforward}
    sizes.update({key: value for key, value in chosen.items() if value is not None})
    config = DetrConfig(backbone_config=backbone_config, num_queries=num_queries, dropout=dropout, **sizes)
    return config.to_dict()


def load_backbone_weights(model: HoiDetector, backbone: str) -> None:
    """Copy a ResNet checkpoint's ImageNet weights into the detector's backbone (DETR's starting point when it
    does not start from DETR itself). Every weight of the backbone must be found."""
    from transformers import AutoBackbone

    from hoi_bench.errors import HoiBenchError

    target = model.detr.backbone.model
    try:
        source = AutoBackbone.from_pretrained(backbone, out_features=list(target.config.out_features))
    except (OSError, ValueError) as error:
        raise HoiBenchError(f"--backbone {backbone}: cannot load its weights ({error})") from error
    weights = {name: value for name, value in source.state_dict().items() if not name.endswith("num_batches_tracked")}
    missing, unexpected = target.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise HoiBenchError(f"--backbone {backbone}: its weights do not fit the detector's backbone (missing "
                            f"{missing[:3]}, unexpected {unexpected[:3]})")
