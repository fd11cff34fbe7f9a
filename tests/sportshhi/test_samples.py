"""The synthetic release: native layout, deterministic bytes, labels that follow the pair geometry."""

from __future__ import annotations

import numpy as np

from sportshhi import formats
from sportshhi.samples import sample_interaction_label, write_sample


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_arguments_give_the_same_bytes(sample, tmp_path):
    again = write_sample(tmp_path / "again")
    assert _files(again.root) == _files(sample.root)


def test_every_release_file_is_written(sample):
    names = set(_files(sample.root))
    assert formats.ACTION_LIST_FILE in names
    for split in ("train", "validation"):
        assert {formats.annotation_file(split), formats.gt_proposal_file(split),
                formats.detector_proposal_file(split)} <= names
    for video in sample.videos["train"] + sample.videos["validation"]:
        frames = [n for n in names if n.startswith(f"frames/{video}/")]
        assert len(frames) == 5 * sample.keyframes_per_video


def test_labels_follow_the_geometry_rule_and_absent_pairs_do_not_interact(sample):
    actions = formats.read_action_list(sample.root / formats.ACTION_LIST_FILE)
    for split in ("train", "validation"):
        ann = formats.read_annotation_csv(sample.root / formats.annotation_file(split), actions)
        for s, o, label in zip(ann.subject_boxes, ann.object_boxes, ann.labels):
            assert sample_interaction_label(s, o) == label
        gt = formats.read_proposals(sample.root / formats.gt_proposal_file(split))
        annotated = {(k, tuple(s), tuple(o)) for k, s, o in zip(ann.keys, ann.subject_boxes.tolist(),
                                                                 ann.object_boxes.tolist())}
        assert len(np.unique(ann.labels)) == 4
        for key, boxes in gt.items():
            boxes = boxes[:, :4].astype(np.float64).round(4)
            for i in range(len(boxes)):
                for j in range(len(boxes)):
                    interacts = (key, tuple(boxes[i]), tuple(boxes[j])) in annotated
                    assert interacts == (i != j and sample_interaction_label(boxes[i], boxes[j]) is not None)


def test_size_arguments_scale_the_release(tmp_path):
    layout = write_sample(tmp_path / "big", train_videos=3, keyframes_per_video=4, seed=1)
    assert len(layout.videos["train"]) == 3
    ann = formats.read_annotation_csv(layout.root / formats.annotation_file("train"))
    assert set(ann.keyframes.tolist()) <= {1, 2, 3, 4}
