"""Draw a SportsHHI keyframe: human boxes, interactions as subject -> object arrows, optional predictions.

The picture is the keyframe (enlarged to at least 640 px wide) with a panel on its right. On the frame: each
person's box with its index on a tag just outside the box, each interaction as an arrow from subject to object
with a short tag (``G1``, ``P1``) at its middle. In the panel: a key (person box, ground truth, prediction) and
one line per tag with the class name (and the prediction's score), so no text covers a box.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HUMAN_COLOUR = (255, 255, 255)
GT_COLOUR = (40, 220, 40)
PREDICTION_COLOUR = (255, 140, 40)
PANEL_COLOUR = (24, 24, 28)
TEXT_COLOUR = (235, 235, 235)
MIN_WIDTH = 640
MIN_PANEL_WIDTH = 320
FONT_SIZE = 16


def _font(size: int) -> ImageFont.ImageFont:
    """Pillow's bundled scalable font at ``size`` px (the bitmap default when FreeType is unavailable)."""
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError, ImportError):
        return ImageFont.load_default()


def draw_keyframe(
    image: Image.Image,
    human_boxes: np.ndarray,
    interactions: Sequence[tuple[int, int, str]],
    predictions: Sequence[tuple[np.ndarray, np.ndarray, str, float]] = (),
) -> Image.Image:
    """A picture of ``image`` with the keyframe's annotations, and a key and labels panel to its right.

    ``human_boxes`` are normalised xyxy; ``interactions`` are (subject index, object index, class name);
    ``predictions`` are (subject box, object box, class name, score), drawn in another colour.

    >>> people = np.array([[0.1, 0.2, 0.2, 0.6], [0.5, 0.2, 0.6, 0.6]])
    >>> out = draw_keyframe(Image.new("RGB", (128, 72)), people, [(0, 1, "pass")])
    >>> out.size[1], out.size[0] - 640 >= MIN_PANEL_WIDTH  # the frame is 640 px wide, the panel beside it
    (360, True)
    """
    factor = max(1, int(np.ceil(MIN_WIDTH / image.width)))
    frame = image.convert("RGB").resize((image.width * factor, image.height * factor), Image.NEAREST)
    font, small = _font(FONT_SIZE), _font(FONT_SIZE - 2)
    texts = _panel_lines(interactions, predictions)
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    panel_width = max([MIN_PANEL_WIDTH] + [int(_text_size(measure, text, font)[0]) + 30 for text, _ in texts])
    height = max(frame.height, 12 + (len(texts) + 5) * (FONT_SIZE + 6))
    canvas = Image.new("RGB", (frame.width + panel_width, height), PANEL_COLOUR)
    canvas.paste(frame, (0, 0))
    draw = ImageDraw.Draw(canvas)
    scale = np.array([frame.width, frame.height] * 2, dtype=np.float64)
    pixels = np.asarray(human_boxes, dtype=np.float64).reshape(-1, 4) * scale
    for index, box in enumerate(pixels):
        draw.rectangle(box.tolist(), outline=HUMAN_COLOUR, width=2)
    arrows = [(f"G{n + 1}", pixels[s], pixels[o], GT_COLOUR, 3) for n, (s, o, _) in enumerate(interactions)]
    for n, (subject_box, object_box, _, _) in enumerate(predictions):
        s, o = np.asarray(subject_box) * scale, np.asarray(object_box) * scale
        draw.rectangle(s.tolist(), outline=PREDICTION_COLOUR, width=1)
        draw.rectangle(o.tolist(), outline=PREDICTION_COLOUR, width=1)
        arrows.append((f"P{n + 1}", s, o, PREDICTION_COLOUR, 2))
    for _, subject, obj, colour, width in arrows:
        _arrow(draw, subject, obj, colour, width)
    for index, box in enumerate(pixels):
        _box_tag(draw, box, str(index), small, frame.size)
    placed: list[tuple[float, float, float, float]] = []
    for tag, subject, obj, colour, _ in arrows:
        middle = ((subject[0] + subject[2] + obj[0] + obj[2]) / 4, (subject[1] + subject[3] + obj[1] + obj[3]) / 4)
        _tag(draw, _free_spot(draw, middle, tag, small, placed), tag, small, colour, (0, 0, 0), centred=True)
    _panel(draw, frame.width, font, texts)
    return canvas


def _panel_lines(interactions, predictions) -> list[tuple[str, tuple[int, int, int]]]:
    """One line per arrow tag: ``G<n>`` for ground truth, ``P<n>`` for predictions (with their score)."""
    lines = [(f"G{n + 1}  {subject} -> {obj}  {name}", GT_COLOUR)
             for n, (subject, obj, name) in enumerate(interactions)]
    lines += [(f"P{n + 1}  score {score:.2f}  {name}", PREDICTION_COLOUR)
              for n, (_, _, name, score) in enumerate(predictions)]
    return lines


def _free_spot(draw: ImageDraw.ImageDraw, at: tuple[float, float], text: str, font,
               placed: list[tuple[float, float, float, float]]) -> tuple[float, float]:
    """``at``, moved down until the tag there overlaps no tag placed before (mutual pairs share a middle)."""
    width, height = _text_size(draw, text, font)
    x, y = at
    for _ in range(12):
        box = (x - width / 2 - 3, y - height / 2 - 2, x + width / 2 + 3, y + height / 2 + 2)
        if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
            break
        y += height + 6
    placed.append(box)
    return x, y


def _panel(draw: ImageDraw.ImageDraw, left: int, font, texts: list[tuple[str, tuple[int, int, int]]]) -> None:
    """The key and one line per arrow tag, in the panel right of the frame."""
    x, y, step = left + 14, 10, FONT_SIZE + 6
    draw.text((x, y), "key", fill=TEXT_COLOUR, font=font)
    y += step
    for colour, text, width in ((HUMAN_COLOUR, "person box (index on its tag)", 2),
                                (GT_COLOUR, "ground truth: subject -> object", 3),
                                (PREDICTION_COLOUR, "prediction: subject -> object", 2)):
        middle = y + FONT_SIZE // 2
        draw.line([(x, middle), (x + 34, middle)], fill=colour, width=width + 1)
        draw.text((x + 44, y), text, fill=TEXT_COLOUR, font=font)
        y += step
    y += step // 2
    for text, colour in texts:
        draw.text((x, y), text, fill=colour, font=font)
        y += step


def _box_tag(draw: ImageDraw.ImageDraw, box: np.ndarray, text: str, font, frame_size: tuple[int, int]) -> None:
    """A person's index on a tag just above the box (below it when the box touches the top of the frame)."""
    width, height = _text_size(draw, text, font)
    x = min(max(float(box[0]), 0.0), frame_size[0] - width - 6)
    y = float(box[1]) - height - 6
    if y < 0:
        y = min(float(box[3]) + 2, frame_size[1] - height - 4)
    _tag(draw, (x, y), text, font, (0, 0, 0), HUMAN_COLOUR)


def _tag(draw: ImageDraw.ImageDraw, at: tuple[float, float], text: str, font, text_colour, fill,
         centred: bool = False) -> None:
    width, height = _text_size(draw, text, font)
    x, y = (at[0] - width / 2 - 3, at[1] - height / 2 - 2) if centred else at
    draw.rectangle([x, y, x + width + 6, y + height + 4], fill=fill)
    draw.text((x + 3, y + 1), text, fill=text_colour, font=font)


def _text_size(draw: ImageDraw.ImageDraw, text: str, font) -> tuple[float, float]:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    return right - left, bottom


def _arrow(draw: ImageDraw.ImageDraw, subject: np.ndarray, obj: np.ndarray,
           colour: tuple[int, int, int], width: int = 2) -> None:
    start = np.array([(subject[0] + subject[2]) / 2, (subject[1] + subject[3]) / 2])
    end = np.array([(obj[0] + obj[2]) / 2, (obj[1] + obj[3]) / 2])
    draw.line([tuple(start), tuple(end)], fill=colour, width=width)
    direction = end - start
    length = float(np.hypot(*direction))
    if length < 1e-6:
        return
    unit = direction / length
    normal = np.array([-unit[1], unit[0]])
    head = [tuple(end), tuple(end - 12 * unit + 6 * normal), tuple(end - 12 * unit - 6 * normal)]
    draw.polygon(head, fill=colour)
