"""SportsHHI keyframe tags on a crowded keyframe: overlapping players, several interactions per pair, players at
the frame's edges. Every tag rectangle lies inside the frame and none intersects another."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from sportshhi.drawing import _font, _text_size, draw_keyframe, place_tags

FRAME = (640, 360)


def crowded_keyframe() -> tuple[np.ndarray, list[tuple[int, int, str]]]:
    """Eight players in a scrum (boxes overlapping by most of their width), two touching the frame's top and
    left and right edges, and twelve interactions among them (mutual pairs share an arrow middle)."""
    boxes = np.array([[0.00, 0.00, 0.12, 0.55], [0.05, 0.02, 0.17, 0.60], [0.10, 0.30, 0.22, 0.95],
                      [0.40, 0.35, 0.52, 0.95], [0.42, 0.33, 0.54, 0.93], [0.44, 0.36, 0.56, 0.96],
                      [0.88, 0.00, 1.00, 0.50], [0.86, 0.45, 1.00, 1.00]])
    pairs = [(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3), (4, 5), (5, 4), (3, 5), (6, 7), (7, 6), (0, 6)]
    return boxes, [(s, o, "basketball - pass") for s, o in pairs]


def test_tags_of_a_crowded_keyframe_stay_inside_and_apart():
    boxes, interactions = crowded_keyframe()
    pixels = boxes * np.array(FRAME * 2, dtype=np.float64)
    arrows = [(f"G{n + 1}", pixels[s], pixels[o]) for n, (s, o, _) in enumerate(interactions)]
    arrows += [(f"P{n + 1}", pixels[o], pixels[s]) for n, (s, o, _) in enumerate(interactions[:6])]
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    font = _font(14)
    tags = place_tags(pixels, arrows, FRAME, lambda text: _text_size(measure, text, font))
    assert [text for text, _ in tags] == [str(i) for i in range(len(boxes))] + [tag for tag, _, _ in arrows]
    rects = [rect for _, rect in tags]
    for x1, y1, x2, y2 in rects:
        assert 0 <= x1 < x2 <= FRAME[0] and 0 <= y1 < y2 <= FRAME[1], (x1, y1, x2, y2)
    clashes = [(tags[i][0], tags[j][0]) for i in range(len(rects)) for j in range(i + 1, len(rects))
               if rects[i][0] < rects[j][2] and rects[j][0] < rects[i][2]
               and rects[i][1] < rects[j][3] and rects[j][1] < rects[i][3]]
    assert clashes == []


def test_a_box_index_sits_next_to_its_box_when_there_is_room():
    pixels = np.array([[100.0, 100.0, 200.0, 300.0]])
    (text, (x1, y1, x2, y2)), = place_tags(pixels, [], FRAME, lambda text: (8.0, 12.0))
    assert text == "0" and x1 == 100 and y2 <= 100 and y1 >= 80  # just above the box's top-left corner


def test_the_drawn_crowded_keyframe_keeps_every_tag_on_the_frame():
    boxes, interactions = crowded_keyframe()
    out = draw_keyframe(Image.new("RGB", FRAME, (128, 128, 128)), boxes, interactions)
    assert out.width > FRAME[0] and out.height >= FRAME[1]
