"""Pair heads on batches without candidate pairs: training must go on, on one process or many."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from hoi_bench.backbones import tiny_random_backbone
from hoi_bench.heads import PairClassifier, loss_over_pairs


def _head() -> PairClassifier:
    torch.manual_seed(0)
    return PairClassifier(tiny_random_backbone(16), crops_per_pair=3, geometry_dim=9, num_classes=5,
                          num_labels=4)


def _batch(pairs: int):
    return (torch.rand(pairs, 3, 3, 16, 16), torch.rand(pairs, 9), torch.randint(0, 4, (pairs, 2)),
            torch.softmax(torch.rand(pairs, 5), dim=1))


@pytest.mark.parametrize("loss", [F.cross_entropy, F.binary_cross_entropy_with_logits])
def test_a_batch_without_pairs_gives_zero_loss_and_a_zero_gradient_for_every_parameter(loss):
    head = _head()
    crops, geometry, labels, targets = _batch(0)
    value = loss_over_pairs(loss, head(crops, geometry, labels), targets)
    value.backward()  # raised "does not require grad" when the empty output was not tied to the parameters
    assert value.item() == 0.0
    parameters = list(head.parameters())
    assert all(p.grad is not None and not p.grad.any() for p in parameters)  # DDP waits for every gradient


def test_a_batch_with_pairs_gets_the_plain_loss():
    head = _head()
    crops, geometry, labels, targets = _batch(3)
    logits = head(crops, geometry, labels)
    assert torch.equal(loss_over_pairs(F.cross_entropy, logits, targets), F.cross_entropy(logits, targets))


def _backbone(kind: str):
    """Tiny random transformers models of both loading kinds (no download)."""
    from transformers import Dinov2Config, Dinov2Model, ResNetBackbone, ResNetConfig

    from hoi_bench.backbones import Backbone, Preprocessing

    if kind == "backbone":
        config = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic",
                              out_features=["stage2"])
        return Backbone(ResNetBackbone(config), 16, Preprocessing(size=16), "local/resnet", "backbone")
    config = Dinov2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                          image_size=16, patch_size=8)
    return Backbone(Dinov2Model(config), 16, Preprocessing(size=16, mean=(0.5,) * 3, std=(0.5,) * 3),
                    "local/dinov2", "model")


@pytest.mark.parametrize("kind", ["model", "backbone"])
def test_a_saved_head_loads_back_offline_with_the_same_outputs(kind, tmp_path):
    torch.manual_seed(0)
    head = PairClassifier(_backbone(kind), crops_per_pair=3, geometry_dim=9, num_classes=5, num_labels=4,
                          pair_bias=torch.rand(4, 4, 5)).eval()
    head.save_pretrained(tmp_path)
    loaded = PairClassifier.from_pretrained(tmp_path)
    crops, geometry, labels, _ = _batch(3)
    assert torch.equal(loaded(crops, geometry, labels), head(crops, geometry, labels))
    assert loaded.backbone.to_config() == head.backbone.to_config()


def test_loading_a_head_with_missing_weights_fails(tmp_path):
    from safetensors.torch import load_file, save_file

    head = _head()
    head.save_pretrained(tmp_path)
    weights = load_file(tmp_path / "model.safetensors")
    kept = {name: tensor for name, tensor in weights.items() if not name.startswith("classifier.")}
    save_file(kept, tmp_path / "model.safetensors")
    with pytest.raises(RuntimeError, match="Missing key"):
        PairClassifier.from_pretrained(tmp_path)
