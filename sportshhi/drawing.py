"""Draw a SportsHHI keyframe: human boxes, interactions as subject -> object arrows, optional predictions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

HUMAN_COLOUR = (255, 255, 255)
GT_COLOUR = (40, 220, 40)
PREDICTION_COLOUR = (255, 90, 40)
MIN_WIDTH = 640
_OUTLINED = {"stroke_width": 1, "stroke_fill": (0, 0, 0)}  # legible on any background


def draw_keyframe(
    image: Image.Image,
    human_boxes: np.ndarray,
    interactions: Sequence[tuple[int, int, str]],
    predictions: Sequence[tuple[np.ndarray, np.ndarray, str, float]] = (),
) -> Image.Image:
    """A copy of ``image`` (enlarged to at least 640 px wide) with the keyframe's annotations drawn on it.

    ``human_boxes`` are normalised xyxy; ``interactions`` are (subject index, object index, class name);
    ``predictions`` are (subject box, object box, class name, score), drawn in another colour.

    >>> people = np.array([[0.1, 0.2, 0.2, 0.6], [0.5, 0.2, 0.6, 0.6]])
    >>> out = draw_keyframe(Image.new("RGB", (128, 72)), people, [(0, 1, "pass")])
    >>> out.size
    (640, 360)
    """
    factor = max(1, int(np.ceil(MIN_WIDTH / image.width)))
    canvas = image.convert("RGB").resize((image.width * factor, image.height * factor), Image.NEAREST)
    draw = ImageDraw.Draw(canvas)
    scale = np.array([canvas.width, canvas.height] * 2, dtype=np.float64)
    pixels = np.asarray(human_boxes, dtype=np.float64).reshape(-1, 4) * scale
    for index, box in enumerate(pixels):
        draw.rectangle(box.tolist(), outline=HUMAN_COLOUR, width=2)
        draw.text((box[0] + 3, box[1] + 2), str(index), fill=HUMAN_COLOUR)
    for line, (subject, obj, name) in enumerate(interactions):
        _arrow(draw, pixels[subject], pixels[obj], GT_COLOUR)
        draw.text((4, 4 + 12 * line), f"{subject} -> {obj}: {name}", fill=GT_COLOUR, **_OUTLINED)
    offset = 4 + 12 * len(interactions)
    for line, (subject_box, object_box, name, score) in enumerate(predictions):
        s, o = np.asarray(subject_box) * scale, np.asarray(object_box) * scale
        draw.rectangle(s.tolist(), outline=PREDICTION_COLOUR, width=1)
        draw.rectangle(o.tolist(), outline=PREDICTION_COLOUR, width=1)
        _arrow(draw, s, o, PREDICTION_COLOUR)
        draw.text((4, offset + 12 * line), f"pred {score:.2f}: {name}", fill=PREDICTION_COLOUR, **_OUTLINED)
    return canvas


def _arrow(draw: ImageDraw.ImageDraw, subject: np.ndarray, obj: np.ndarray,
           colour: tuple[int, int, int]) -> None:
    start = np.array([(subject[0] + subject[2]) / 2, (subject[1] + subject[3]) / 2])
    end = np.array([(obj[0] + obj[2]) / 2, (obj[1] + obj[3]) / 2])
    draw.line([tuple(start), tuple(end)], fill=colour, width=2)
    direction = end - start
    length = float(np.hypot(*direction))
    if length < 1e-6:
        return
    unit = direction / length
    normal = np.array([-unit[1], unit[0]])
    head = [tuple(end), tuple(end - 10 * unit + 5 * normal), tuple(end - 10 * unit - 5 * normal)]
    draw.polygon(head, fill=colour)
