"""Bongard-HOI sheets: captions wrap under their tile, so no caption (the last query's included) is cut off."""

from __future__ import annotations

import numpy as np
from PIL import ImageFont

from bongard_hoi.sheet import GAP, HEADER, LINE_HEIGHT, TILE, caption_lines, draw_episode, episode_captions

LONG_ACT = "hold_and_swing_on_a_very_long_stick"


def cell(act: str, obj: str) -> dict:
    return {"image": None, "crop_bbox": [0, 0, 120, 90], "sub_bbox": [5, 5, 50, 80], "obj_bbox": [60, 10, 110, 60],
            "act_class": act, "obj_class": obj}


def episode(act: str = LONG_ACT) -> dict:
    return {"episode": 3, "concept": f"{act} surfboard",
            "positive_shots": [cell(act, "surfboard")] * 6, "negative_shots": [cell("ride", "surfboard")] * 6,
            "positive_query": cell(act, "surfboard"), "negative_query": cell("inspect", "surfboard_with_a_long_name")}


def test_every_caption_fits_its_tile_and_keeps_every_character():
    font = ImageFont.load_default()
    for _, caption in episode_captions(episode()):
        lines = caption_lines(caption, font)
        assert all(font.getlength(line) <= TILE - 4 for line in lines), lines
        assert "".join(lines).replace(" ", "") == caption.replace(" ", "")


def test_the_sheet_grows_for_the_longest_caption_and_draws_its_last_line():
    font = ImageFont.load_default()
    short = draw_episode(episode("ride"))
    long = draw_episode(episode())
    lines = max(len(caption_lines(caption, font)) for _, caption in episode_captions(episode()))
    assert lines >= 3
    assert long.height - short.height >= 2 * (lines - 2) * LINE_HEIGHT  # two rows of tiles, each taller
    # the negative query is the last tile of the queries column: the second line of its caption is drawn
    label_height = lines * LINE_HEIGHT + 3
    top = 2 * HEADER + (TILE + label_height) + GAP + TILE + 1  # its caption's first line
    queries_left = GAP + 2 * (3 * TILE + 2 * GAP + 2 * GAP)
    second_line = np.asarray(long.convert("L"))[top + LINE_HEIGHT:top + 2 * LINE_HEIGHT, queries_left:queries_left + TILE]
    assert (second_line < 100).any()
