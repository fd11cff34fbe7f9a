"""Draw a SportsHHI keyframe: human boxes, interactions as subject -> object arrows, optional predictions.

The picture is the keyframe (enlarged to at least 640 px wide) with a panel on its right. On the frame: each
person's box with its index on a tag just outside the box, each interaction as an arrow from subject to object
with a short tag (``G1``, ``P1``) near its middle. In the panel: a key (person box, ground truth, prediction) and
one line per tag with the class name (and the prediction's score), so no text covers a box.

On a crowded keyframe (players overlapping, several interactions per pair) the tags are placed by
:func:`place_tags`: each takes the first of its preferred spots (above its box, below it, ...; the arrow's middle,
then spots stepping away from it) that lies inside the frame and overlaps no tag placed before, else the free
spot of the frame nearest to its first choice; so no tag hides another or runs off the frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
    tags = place_tags(pixels, [(tag, subject, obj) for tag, subject, obj, _, _ in arrows], frame.size,
                      lambda text: _text_size(draw, text, small))
    colours = [HUMAN_COLOUR] * len(pixels) + [colour for _, _, _, colour, _ in arrows]
    for (text, rect), colour in zip(tags, colours):
        if colour == HUMAN_COLOUR:
            _tag(draw, rect, text, small, (0, 0, 0), HUMAN_COLOUR)
        else:
            _tag(draw, rect, text, small, colour, (0, 0, 0))
    _panel(draw, frame.width, font, texts)
    return canvas


Rect = tuple[float, float, float, float]
TAG_PAD = (6, 4)  # a tag's rectangle: its text plus this many pixels of width and height


def place_tags(boxes: np.ndarray, arrows: Sequence[tuple[str, np.ndarray, np.ndarray]], frame_size: tuple[int, int],
               text_size: Callable[[str], tuple[float, float]]) -> list[tuple[str, Rect]]:
    """``(text, (x1, y1, x2, y2))`` of every tag: first each person's index (``boxes``: pixel xyxy), then each
    arrow's tag (``arrows``: tag, subject box, object box), no two overlapping and all inside the frame
    (``frame_size``: width, height) whenever the frame has room for them.

    >>> boxes = np.array([[10, 40, 60, 120], [12, 42, 62, 122]])  # two players almost on top of each other
    >>> tags = place_tags(boxes, [("G1", boxes[0], boxes[1])], (200, 150), lambda text: (8 * len(text), 10))
    >>> [text for text, _ in tags], _overlaps([rect for _, rect in tags])
    (['0', '1', 'G1'], False)
    """
    width, height = frame_size
    placed: list[Rect] = []
    out: list[tuple[str, Rect]] = []

    def put(text: str, spots: list[tuple[float, float]]) -> None:
        w, h = text_size(text)
        w, h = w + TAG_PAD[0], h + TAG_PAD[1]
        inside = [(min(max(x, 0.0), width - w), min(max(y, 0.0), height - h)) for x, y in spots]
        rect = (_first_free(inside, (w, h), placed) or _first_free(_scan(inside[0], (w, h), frame_size), (w, h), placed)
                or (*inside[0], inside[0][0] + w, inside[0][1] + h))  # a frame too full: the first choice
        placed.append(rect)
        out.append((text, rect))

    for index, box in enumerate(np.asarray(boxes, dtype=np.float64).reshape(-1, 4)):
        w, h = (size + pad for size, pad in zip(text_size(str(index)), TAG_PAD))
        x1, y1, x2, y2 = (float(v) for v in box)
        put(str(index), [(x1, y1 - h - 2), (x1, y2 + 2), (x2 - w, y1 - h - 2), (x2 - w, y2 + 2),
                         (x1 - w - 2, y1), (x2 + 2, y1), (x1 + 2, y1 + 2)])
    for text, subject, obj in arrows:
        w, h = (size + pad for size, pad in zip(text_size(text), TAG_PAD))
        mx = (subject[0] + subject[2] + obj[0] + obj[2]) / 4 - w / 2
        my = (subject[1] + subject[3] + obj[1] + obj[3]) / 4 - h / 2
        spots = [(mx, my)]
        for step in range(1, 7):
            spots += [(mx, my + step * (h + 2)), (mx, my - step * (h + 2)),
                      (mx + step * (w + 2), my), (mx - step * (w + 2), my)]
        put(text, spots)
    return out


def _first_free(spots: Sequence[tuple[float, float]], size: tuple[float, float], placed: Sequence[Rect]
                ) -> Rect | None:
    """The rectangle of ``size`` at the first of ``spots`` that overlaps nothing in ``placed``."""
    for x, y in spots:
        rect = (x, y, x + size[0], y + size[1])
        if not any(_intersect(rect, other) for other in placed):
            return rect
    return None


def _scan(first: tuple[float, float], size: tuple[float, float], frame: tuple[int, int]) -> list[tuple[float, float]]:
    """Every spot of a grid over the frame where a tag of ``size`` fits, nearest to ``first`` first."""
    (w, h), (width, height) = size, frame
    xs = np.arange(0.0, max(width - w, 0.0) + 1e-9, max(h / 2, 1.0))
    ys = np.arange(0.0, max(height - h, 0.0) + 1e-9, max(h / 2, 1.0))
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    order = np.argsort(np.hypot(grid[:, 0] - first[0], grid[:, 1] - first[1]), kind="stable")
    return [(float(x), float(y)) for x, y in grid[order]]


def _intersect(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _overlaps(rects: Sequence[Rect]) -> bool:
    """Whether any two of ``rects`` intersect."""
    return any(_intersect(a, b) for i, a in enumerate(rects) for b in rects[i + 1:])


def _panel_lines(interactions, predictions) -> list[tuple[str, tuple[int, int, int]]]:
    """One line per arrow tag: ``G<n>`` for ground truth, ``P<n>`` for predictions (with their score)."""
    lines = [(f"G{n + 1}  {subject} -> {obj}  {name}", GT_COLOUR)
             for n, (subject, obj, name) in enumerate(interactions)]
    lines += [(f"P{n + 1}  score {score:.2f}  {name}", PREDICTION_COLOUR)
              for n, (_, _, name, score) in enumerate(predictions)]
    return lines


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


def _tag(draw: ImageDraw.ImageDraw, rect: Rect, text: str, font, text_colour, fill) -> None:
    """A filled tag rectangle ``rect`` with ``text`` inside it."""
    draw.rectangle(list(rect), fill=fill)
    draw.text((rect[0] + TAG_PAD[0] / 2, rect[1] + 1), text, fill=text_colour, font=font)


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
