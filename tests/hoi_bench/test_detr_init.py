"""QPIC's DETR initialisation (convert_parameters.py) on a tiny DetrForObjectDetection saved offline."""

from __future__ import annotations

import pytest
import torch

from hoi_bench.detection import HoiDetector, init_from_detr, load_detr_detector
from hoi_bench.detection.model import TINY_DETR, TINY_RESNET
from hoi_bench.errors import HoiBenchError

COCO_IDS = [1, 2, 5, 90]  # a small object vocabulary: COCO ids, as DETR's classifier rows are indexed


@pytest.fixture(scope="module")
def detr_folder(tmp_path_factory):
    """A tiny COCO detector shaped like facebook/detr-resnet-50 (91 classes + no object), random weights."""
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

    torch.manual_seed(0)
    config = DetrConfig(backbone_config=ResNetConfig(**TINY_RESNET), num_queries=6, num_labels=91, **TINY_DETR)
    folder = tmp_path_factory.mktemp("detr") / "detr-tiny"
    DetrForObjectDetection(config).save_pretrained(folder)
    return folder


def detector_for(detector, classes: int, verbs: int = 3) -> HoiDetector:
    body = detector.config.to_dict()
    return HoiDetector(body, num_obj_classes=classes, num_verb_classes=verbs, aux_loss=True)


def test_every_body_tensor_and_both_box_heads_are_copied(detr_folder):
    detector = load_detr_detector(str(detr_folder))
    model = detector_for(detector, len(COCO_IDS))
    sources = init_from_detr(model, detector, COCO_IDS)
    body = detector.model.state_dict()
    for name, value in model.detr.state_dict().items():
        assert torch.equal(value, body[name]), name
    for head in ("sub_bbox_embed", "obj_bbox_embed"):
        for name, value in getattr(model, head).state_dict().items():
            assert torch.equal(value, detector.bbox_predictor.state_dict()[name]), (head, name)
    assert sources["obj_bbox_embed.layers.2.weight"] == "bbox_predictor.layers.2.weight"


def test_object_rows_are_detrs_rows_at_the_coco_ids_then_no_object(detr_folder):
    detector = load_detr_detector(str(detr_folder))
    model = detector_for(detector, len(COCO_IDS))
    init_from_detr(model, detector, COCO_IDS)
    source = detector.class_labels_classifier
    for index, row in enumerate([*COCO_IDS, 91]):  # 92 rows: COCO ids 0..90, no object last
        assert torch.equal(model.obj_class_embed.weight[index], source.weight[row])
        assert model.obj_class_embed.bias[index] == source.bias[row]
    verbs_before = detector_for(detector, len(COCO_IDS)).verb_class_embed.weight.shape
    assert model.verb_class_embed.weight.shape == verbs_before  # fresh, not copied from anywhere


def test_vcoco_gets_a_fresh_row_before_no_object(detr_folder):
    detector = load_detr_detector(str(detr_folder))
    model = detector_for(detector, len(COCO_IDS) + 1)
    fresh = model.obj_class_embed.weight[len(COCO_IDS)].clone()
    init_from_detr(model, detector, [*COCO_IDS, None])
    source = detector.class_labels_classifier
    assert torch.equal(model.obj_class_embed.weight[len(COCO_IDS)], fresh)
    assert torch.equal(model.obj_class_embed.weight[-1], source.weight[91])
    assert torch.equal(model.obj_class_embed.weight[1], source.weight[2])


def test_a_body_of_another_shape_is_one_clear_error(detr_folder):
    detector = load_detr_detector(str(detr_folder))
    body = {**detector.config.to_dict(), "d_model": 32}
    with pytest.raises(HoiBenchError, match="does not fit"):
        init_from_detr(HoiDetector(body, num_obj_classes=4, num_verb_classes=3), detector, COCO_IDS)


def test_a_folder_that_is_not_a_detr_detector_is_refused(tmp_path):
    from transformers import ResNetConfig, ResNetModel

    ResNetModel(ResNetConfig(**{k: v for k, v in TINY_RESNET.items() if k != "out_features"})).save_pretrained(
        tmp_path / "resnet")
    with pytest.raises(HoiBenchError, match="expected a DetrForObjectDetection"):
        load_detr_detector(str(tmp_path / "resnet"))
    with pytest.raises(HoiBenchError, match="not a DETR detector"):
        load_detr_detector(str(tmp_path))
