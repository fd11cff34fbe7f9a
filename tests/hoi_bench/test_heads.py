"""Pair heads on batches without candidate pairs: training must go on, on one process or many."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from hoi_bench.backbones import tiny_random_backbone
from hoi_bench.heads import PairClassifier, loss_over_pairs


def _head() -> PairClassifier:
    torch.manual_seed(0)
    return PairClassifier(tiny_random_backbone(16), crops_per_pair=3, geometry_dim=9, num_classes=5, num_labels=4)


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
