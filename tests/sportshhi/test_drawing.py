"""The keyframe drawing (issue 14): labels outside the boxes, a key for ground truth vs predictions."""

from __future__ import annotations

import numpy as np
from PIL import Image

from sportshhi.drawing import GT_COLOUR, HUMAN_COLOUR, PREDICTION_COLOUR, draw_keyframe

GREY = (128, 128, 128)


def _has(pixels: np.ndarray, colour) -> bool:
    return bool((pixels == np.array(colour, dtype=np.uint8)).all(axis=-1).any())


def test_key_and_class_names_sit_in_a_panel_beside_the_frame_and_no_text_covers_a_box():
    people = np.array([[0.05, 0.3, 0.2, 0.9], [0.7, 0.3, 0.85, 0.9]])
    prediction = (people[1], people[0], "volleyball - block", 0.75)
    out = np.asarray(draw_keyframe(Image.new("RGB", (640, 360), GREY), people, [(0, 1, "basketball - pass")],
                                   [prediction]))
    assert out.shape[1] > 640  # the panel is outside the frame
    panel, frame = out[:, 640:], out[:, :640]
    for colour in (GT_COLOUR, PREDICTION_COLOUR, HUMAN_COLOUR):  # key swatches and label lines
        assert _has(panel, colour), colour
    # person 0 spans x 32..128, y 108..324: its index tag is above the box, and the box's inside stays clear
    # away from the arrows (which run through the box centres at y = 216)
    assert _has(frame[80:108, 32:60], HUMAN_COLOUR)
    inside = frame[115:200, 40:120]
    assert (inside == np.array(GREY, dtype=np.uint8)).all()
