"""Draw one episode as a sheet: positives | negatives | queries, with the human and object boxes and labels.

Works on a dataset row (``load_dataset(FOLDER, "episodes")[split][n]``, or a row made by ``episode_row``); an
image cell without pixels (episodes sampled without images) is drawn as a grey tile with its boxes. Captions wrap
onto as many lines under the tile as the longest one needs (:func:`caption_lines`): none is cut off.
"""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from hoi_bench.images import load_rgb

TILE = 150
LINE_HEIGHT = 13
GAP = 8
HEADER = 22
SUBJECT_COLOUR = (40, 110, 255)
OBJECT_COLOUR = (255, 60, 40)
SIDE_COLOURS = {"positives": (30, 150, 60), "negatives": (200, 40, 40), "queries": (90, 90, 90)}


def caption_lines(caption: str, font, width: int = TILE - 4) -> list[str]:
    """``caption`` broken into lines no wider than ``width`` pixels in ``font``: at spaces, and inside a word only
    when the word alone is wider; joined with spaces they give the caption back.

    >>> font = ImageFont.load_default()
    >>> caption_lines("negative: hold_and_ride_on surfboard", font, width=90)
    ['negative:', 'hold_and_ride_on', 'surfboard']
    """
    def fits(text: str) -> bool:
        return font.getlength(text) <= width

    lines: list[str] = []
    for word in caption.split():
        candidate = f"{lines[-1]} {word}" if lines else word
        if lines and fits(candidate):
            lines[-1] = candidate
            continue
        while not fits(word) and len(word) > 1:
            cut = max(n for n in range(1, len(word) + 1) if fits(word[:n]) or n == 1)
            lines.append(word[:cut])
            word = word[cut:]
        lines.append(word)
    return lines or [""]


def _tile(cell: dict, lines: list[str], label_height: int, font) -> Image.Image:
    """One image letterboxed into a ``TILE`` square, boxes drawn, the caption's ``lines`` underneath."""
    x1, y1, x2, y2 = cell["crop_bbox"]
    picture = cell.get("image")
    if picture is None:
        size = (max(int(x2 - x1), 1), max(int(y2 - y1), 1))
        image = Image.new("RGB", size, (200, 200, 200))
    else:
        image = load_rgb(picture)
    scale = min(TILE / image.width, TILE / image.height)
    shown = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    tile = Image.new("RGB", (TILE, TILE + label_height), (255, 255, 255))
    offset = ((TILE - shown.width) // 2, (TILE - shown.height) // 2)
    tile.paste(shown, offset)
    draw = ImageDraw.Draw(tile)
    for key, colour in (("sub_bbox", SUBJECT_COLOUR), ("obj_bbox", OBJECT_COLOUR)):
        bx1, by1, bx2, by2 = (v * scale for v in cell[key])
        draw.rectangle([offset[0] + bx1, offset[1] + by1, offset[0] + bx2, offset[1] + by2], outline=colour, width=2)
    for number, line in enumerate(lines):
        draw.text((2, TILE + 1 + number * LINE_HEIGHT), line, fill=(0, 0, 0), font=font)
    return tile


def episode_captions(row: dict) -> list[tuple[dict, str]]:
    """``(cell, caption)`` of every image of the sheet: the positives, the negatives, then the two queries."""
    shots = [(cell, f"{cell['act_class']} {cell['obj_class']}")
             for cell in (*row["positive_shots"], *row["negative_shots"])]
    queries = [(cell, f"{side}: {cell['act_class']} {cell['obj_class']}")
               for side, cell in (("positive", row["positive_query"]), ("negative", row["negative_query"]))]
    return shots + queries


def draw_episode(row: dict, *, title: str | None = None) -> Image.Image:
    """The sheet of one episode row: 2x3 positives | 2x3 negatives | the two queries stacked."""
    font = ImageFont.load_default()
    tiles = [(cell, caption_lines(caption, font)) for cell, caption in episode_captions(row)]
    label_height = max(len(lines) for _, lines in tiles) * LINE_HEIGHT + 3
    tile_h = TILE + label_height
    panel_w = 3 * TILE + 2 * GAP
    width = 2 * panel_w + TILE + 4 * GAP + 2 * GAP
    height = HEADER * 2 + 2 * tile_h + GAP + 2 * GAP
    sheet = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    heading = title or f"episode {row['episode']}: {row['concept']}"
    draw.text((GAP, 4), heading + "   (blue: person, red: object)", fill=(0, 0, 0), font=font)
    shots = len(row["positive_shots"])
    panels = (("positives", tiles[:shots], GAP),
              ("negatives", tiles[shots:-2], GAP + panel_w + 2 * GAP))
    for name, cells, left in panels:
        draw.text((left, HEADER + 2), f"{name} ({row['concept'] if name == 'positives' else 'not ' + row['concept']})",
                  fill=SIDE_COLOURS[name], font=font)
        for index, (cell, lines) in enumerate(cells):
            x = left + (index % 3) * (TILE + GAP)
            y = 2 * HEADER + (index // 3) * (tile_h + GAP)
            sheet.paste(_tile(cell, lines, label_height, font), (x, y))
        draw.rectangle([left - 3, 2 * HEADER - 3, left + panel_w + 2, 2 * HEADER + 2 * tile_h + GAP + 2],
                       outline=SIDE_COLOURS[name], width=2)
    left = GAP + 2 * (panel_w + 2 * GAP)
    draw.text((left, HEADER + 2), "queries", fill=SIDE_COLOURS["queries"], font=font)
    for index, (cell, lines) in enumerate(tiles[-2:]):
        sheet.paste(_tile(cell, lines, label_height, font), (left, 2 * HEADER + index * (tile_h + GAP)))
    return sheet


def save_sheet(row: dict, path: str | os.PathLike) -> Path:
    """Draw ``row`` and write it as PNG to ``path`` (written to a temporary name, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.partial.png")
    draw_episode(row).save(temporary, format="PNG")
    os.replace(temporary, path)
    return path


def load_episode_row(source: str | os.PathLike, split: str, episode: int,
                     images: str | os.PathLike | None = None) -> dict:
    """Episode ``episode`` of ``split`` as a dataset row, from a built Hub folder or from episode files.

    ``source`` is a folder written by ``hoi-bench build``/``episodes --hub`` (has ``README.md``), a folder holding
    ``bongard_hoi_<split>.json`` (directly or under ``bongard_hoi_release/``). ``images`` is the image root
    (default ``<source>/images``); without one the tiles are grey, with the boxes drawn.
    """
    from bongard_hoi.builder import episode_row
    from bongard_hoi.formats import episode_file_name, read_episode_file
    from bongard_hoi.geometry import resolve_image_path
    from hoi_bench.errors import ConfigError, MissingFilesError, PredictionError

    root = Path(source)
    if (root / "README.md").is_file():
        import datasets

        splits = datasets.get_dataset_split_names(str(root), "episodes")
        if split not in splits:
            raise ConfigError("split", split, splits)
        rows = datasets.load_dataset(str(root), "episodes", split=split)
        if not 0 <= episode < len(rows):
            raise PredictionError(f"episode {episode} is out of range for split {split!r} (0..{len(rows) - 1})")
        return rows[episode]
    folder = root / "bongard_hoi_release" if (root / "bongard_hoi_release").is_dir() else root
    file = folder / episode_file_name(split)
    if not file.is_file():
        raise MissingFilesError(str(folder), [file.name], what="episode files")
    episodes = read_episode_file(file)
    if not 0 <= episode < len(episodes):
        raise PredictionError(f"episode {episode} is out of range for split {split!r} (0..{len(episodes) - 1})")
    chosen = episodes[episode]
    image_root = Path(images) if images is not None else root / "images"
    if not image_root.is_dir():
        return {"episode": episode, "concept": chosen.concept_name,
                "positive_shots": [_bare_cell(i) for i in chosen.positive_shots],
                "negative_shots": [_bare_cell(i) for i in chosen.negative_shots],
                "positive_query": _bare_cell(chosen.positive_query),
                "negative_query": _bare_cell(chosen.negative_query)}
    resolved, missing = {}, []
    for image in chosen.images():
        path, _ = resolve_image_path(image_root, image.relative_path)
        if path is None:
            missing.append(image.relative_path)
        else:
            resolved[image.im_path] = str(path)
    if missing:
        raise MissingFilesError(str(image_root), missing, what="images")
    return episode_row(episode, chosen, resolved, file=file)


def _bare_cell(image) -> dict:
    return {"image": None, "crop_bbox": list(image.crop_bbox), "sub_bbox": list(image.sub_bbox),
            "obj_bbox": list(image.obj_bbox), "act_class": image.act_class, "obj_class": image.obj_class}
