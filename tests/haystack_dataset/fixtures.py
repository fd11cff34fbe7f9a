"""Hand-checked fixtures and test-only helpers of the Haystack tests (loaded as ``haystack_fixtures`` by conftest).

``GOLDEN_ANNOTATION`` / ``GOLDEN_ROWS`` are the fixture of the reference notes (one image, n = 4), run through the
released ``calc_metrics.py``: P-AUC 0.75, PDD 0.25, PDO 0.305556 for "on" in official mode.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from haystack_dataset.formats import SceneGraphAnnotation, annotation_to_json
from hoi_bench.files import write_json_atomic

GOLDEN_ANNOTATION = {
    "thing_classes": ["person", "dog"], "stuff_classes": ["grass"],
    "predicate_classes": ["on", "holding", "chasing", "leaning on"], "test_image_ids": [7],
    "data": [{"file_name": "val2017/000000000007.jpg", "height": 100, "width": 100, "image_id": 7,
              "pan_seg_file_name": "panoptic_val2017/000000000007.png",
              "segments_info": [{"id": 1, "category_id": 0, "iscrowd": 0, "isthing": 1, "area": 10},
                                {"id": 2, "category_id": 0, "iscrowd": 0, "isthing": 1, "area": 10},
                                {"id": 3, "category_id": 1, "iscrowd": 0, "isthing": 1, "area": 10},
                                {"id": 4, "category_id": 2, "iscrowd": 0, "isthing": 0, "area": 70}],
              "annotations": [{"bbox": [0, 0, 10, 10], "bbox_mode": 0, "category_id": 0},
                              {"bbox": [10, 0, 20, 10], "bbox_mode": 0, "category_id": 0},
                              {"bbox": [20, 0, 30, 10], "bbox_mode": 0, "category_id": 1},
                              {"bbox": [0, 0, 100, 100], "bbox_mode": 0, "category_id": 2}],
              "relations": [[0, 3, 0], [1, 3, 0], [2, 3, 0], [0, 2, 0], [0, 2, 1], [1, 2, 2]],
              "neg_relations": [[3, 0, 0], [1, 0, 0], [2, 1, 0], [1, 2, 1], [2, 0, 2], [0, 1, -1]]}],
}

GOLDEN_ROWS = np.array([
    [7, 0, 3, .50, .10, .05, .30],
    [7, 1, 3, .20, .05, .05, .60],
    [7, 2, 3, .10, .30, .40, .15],
    [7, 0, 2, .25, .35, .10, .20],
    [7, 3, 0, .40, .05, .05, .10],
    [7, 1, 0, .05, .50, .30, .10],
    [7, 1, 2, .30, .20, .25, .05],
    [7, 2, 0, .10, .10, .60, .10],
])
"""Output rows of the golden fixture; pair (2, 1) is deliberately missing."""


def write_annotation(path: str | os.PathLike, annotation: SceneGraphAnnotation) -> Path:
    """Write ``annotation`` as native JSON (atomically), for round-trip tests."""
    return write_json_atomic(path, annotation_to_json(annotation))
