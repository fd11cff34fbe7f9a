"""Where an episode image really is and which pixels it shows: the pic folder fallback and the openimages fix.

Two upstream quirks live here (see NVlabs/Bongard-HOI PRs #2, #5, #7, #9 and issues #1, #4, #8):

- HAKE's openimages annotations are in a frame 1/1.6 of the real image. The official loader multiplies
  ``crop_bbox`` by 1.6 (``int``), clamps it to the image size, and scales ``sub_bbox``/``obj_bbox`` by 1.6,
  clamping them to the crop's width (x) and height (y).
- Some ``pic/image/val/...`` paths point at files stored under ``pic/image/train/`` and the reverse; loaders
  fall back to the other folder.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from bongard_hoi.formats import EpisodeImage

OPENIMAGES_SCALE = 1.6
_PIC_FOLDERS = ("pic/image/train/", "pic/image/val/")


def is_openimages(im_path: str) -> bool:
    """Whether the official loader applies the x1.6 fix to this path (it tests ``"openimages" in im_path``)."""
    return "openimages" in im_path


def resolve_image_path(image_root: str | os.PathLike, relative_path: str) -> tuple[Path | None, bool]:
    """``(path, fell_back)``: the file for ``relative_path`` under ``image_root``, trying the other pic folder.

    Returns ``(None, False)`` when neither exists.
    """
    root = Path(image_root)
    path = root / relative_path
    if path.is_file():
        return path, False
    for folder, other in (_PIC_FOLDERS, _PIC_FOLDERS[::-1]):
        if relative_path.startswith(folder):
            alternative = root / (other + relative_path[len(folder):])
            if alternative.is_file():
                return alternative, True
    return None, False


@dataclass(frozen=True)
class PlacedImage:
    """An episode image's geometry after the upstream fixes: crop in image pixels, boxes in crop pixels."""

    crop_bbox: tuple[int, int, int, int]
    sub_bbox: tuple[float, float, float, float]
    obj_bbox: tuple[float, float, float, float]
    openimages_fixed: bool
    clamped: bool

    def boxes_in_image(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """``(sub_bbox, obj_bbox)`` shifted from crop to whole-image pixels."""
        x, y = self.crop_bbox[0], self.crop_bbox[1]
        return tuple(_shift(self.sub_bbox, x, y)), tuple(_shift(self.obj_bbox, x, y))


def _shift(box, x, y):
    return (box[0] + x, box[1] + y, box[2] + x, box[3] + y)


def place_image(image: EpisodeImage, width: int, height: int) -> PlacedImage:
    """Apply the official crop rules to ``image`` on a ``width`` x ``height`` picture.

    >>> from bongard_hoi.formats import EpisodeImage
    >>> record = EpisodeImage("./openimages/images/x.jpg", (10, 0, 100, 50), (0, 0, 60, 50), (50, 5, 95, 40),
    ...                       "person", "horse", "ride", -1, 1, 40)
    >>> placed = place_image(record, 150, 120)
    >>> placed.crop_bbox, placed.sub_bbox, placed.obj_bbox
    ((16, 0, 150, 80), (0.0, 0.0, 96.0, 80.0), (80.0, 8.0, 134, 64.0))
    """
    x1, y1, x2, y2 = image.crop_bbox
    sub, obj = image.sub_bbox, image.obj_bbox
    if is_openimages(image.im_path):
        s = OPENIMAGES_SCALE
        x1, y1 = min(int(x1 * s), width), min(int(y1 * s), height)
        x2, y2 = min(int(x2 * s), width), min(int(y2 * s), height)
        crop_w, crop_h = x2 - x1, y2 - y1
        limits = (crop_w, crop_h, crop_w, crop_h)
        sub = tuple(min(v * s, limit) for v, limit in zip(sub, limits))
        obj = tuple(min(v * s, limit) for v, limit in zip(obj, limits))
        clamped = (x2, y2) != (int(image.crop_bbox[2] * s), int(image.crop_bbox[3] * s))
        return PlacedImage((x1, y1, x2, y2), sub, obj, True, clamped)
    raw = (int(x1), int(y1), int(x2), int(y2))
    crop = (max(raw[0], 0), max(raw[1], 0), min(raw[2], width), min(raw[3], height))
    return PlacedImage(crop, tuple(sub), tuple(obj), False, crop != raw)


def crop_bytes(path: str | os.PathLike, crop_bbox: tuple[int, int, int, int]) -> bytes:
    """The crop of the picture at ``path`` as image bytes (JPEG quality 95 for JPEG sources, PNG otherwise)."""
    with Image.open(path) as picture:
        source_format = picture.format
        region = picture.convert("RGB").crop(crop_bbox)
    buffer = io.BytesIO()
    if source_format == "JPEG":
        region.save(buffer, format="JPEG", quality=95)
    else:
        region.save(buffer, format="PNG")
    return buffer.getvalue()
