"""QPIC's training augmentation and test resize, applied to an image and its boxes together.

QPIC (``datasets/hico.py``, ``make_hico_transforms``) trains with: horizontal flip (p 0.5); colour jitter
0.4/0.4/0.4; then, with equal chance, either a resize of the shorter side to one of 480, 512, ..., 800 (longer
side at most 1333), or a resize to one of 400/500/600, a random crop of 384–600 pixels and the multi-scale
resize. Test images are resized to a shorter side of 800 (at most 1333). Here every pixel figure is multiplied
by ``scale`` (``--image-size`` / 800), so small images and CPU runs keep QPIC's proportions.

Written here rather than with an augmentation library because QPIC's crop has its own rules (crop size drawn
per side, boxes clamped to the crop, a box left with no area dropped along with every pair that uses it) that
the libraries' box-safe crops do not reproduce. Randomness comes from the ``numpy.random.Generator`` passed
in, so a row's augmentation is a function of (seed, epoch, row) and a resumed run sees the same pictures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageEnhance

QPIC_SCALES = tuple(range(480, 801, 32))
QPIC_MAX_SIZE = 1333
QPIC_CROP_RESIZES = (400, 500, 600)
QPIC_CROP = (384, 600)
QPIC_TEST_SIZE = 800
JITTER = 0.4


@dataclass(frozen=True)
class Resizing:
    """QPIC's pixel figures scaled by ``scale``: training scales, crop sizes, test size, longest side."""

    scale: float = 1.0

    def px(self, value: int) -> int:
        return max(1, round(value * self.scale))

    @property
    def test_size(self) -> int:
        return self.px(QPIC_TEST_SIZE)

    @property
    def max_size(self) -> int:
        return self.px(QPIC_MAX_SIZE)


def resized_shape(width: int, height: int, size: int, max_size: int | None) -> tuple[int, int]:
    """DETR's ``get_size_with_aspect_ratio``: ``(new width, new height)`` with the shorter side ``size``,
    lowered so the longer side stays within ``max_size``.

    >>> resized_shape(128, 96, 800, 1333)
    (1066, 800)
    >>> resized_shape(400, 100, 800, 1333)
    (1332, 333)
    """
    if max_size is not None:
        short, long = min(width, height), max(width, height)
        if long / short * size > max_size:
            size = round(max_size * short / long)
    if width < height:
        return size, int(size * height / width)
    return int(size * width / height), size


def resize(image: Image.Image, boxes: np.ndarray, size: int, max_size: int | None
           ) -> tuple[Image.Image, np.ndarray]:
    """Shorter side to ``size`` (longer within ``max_size``); boxes scaled with the image."""
    width, height = resized_shape(image.width, image.height, size, max_size)
    ratio = np.array([width / image.width, height / image.height] * 2, dtype=np.float32)
    return image.resize((width, height), Image.BILINEAR), boxes * ratio


def hflip(image: Image.Image, boxes: np.ndarray) -> tuple[Image.Image, np.ndarray]:
    """Mirror left–right; ``x1, x2`` become ``width − x2, width − x1``."""
    flipped = boxes[:, [2, 1, 0, 3]] * np.array([-1, 1, -1, 1], dtype=np.float32)
    return image.transpose(Image.FLIP_LEFT_RIGHT), flipped + np.array([image.width, 0, image.width, 0],
                                                                         dtype=np.float32)


def crop(image: Image.Image, boxes: np.ndarray, top: int, left: int, height: int, width: int
         ) -> tuple[Image.Image, np.ndarray, np.ndarray]:
    """The region, its boxes clamped to it, and which boxes still have an area (DETR's ``crop``).

    >>> _, kept, alive = crop(Image.new("RGB", (10, 10)), np.array([[2., 2, 6, 6], [8, 8, 9, 9]]), 0, 0, 5, 5)
    >>> kept.tolist(), alive.tolist()
    ([[2.0, 2.0, 5.0, 5.0], [5.0, 5.0, 5.0, 5.0]], [True, False])
    """
    moved = boxes - np.array([left, top, left, top], dtype=np.float32)
    corners = np.minimum(moved.reshape(-1, 2, 2), np.array([width, height], dtype=np.float32)).clip(min=0)
    alive = np.all(corners[:, 1, :] > corners[:, 0, :], axis=1)
    return image.crop((left, top, left + width, top + height)), corners.reshape(-1, 4), alive


def colour_jitter(image: Image.Image, rng: np.random.Generator, strength: float = JITTER) -> Image.Image:
    """Brightness, contrast and saturation each scaled by a factor in [1 − s, 1 + s], in random order."""
    enhancers = (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color)
    for index in rng.permutation(len(enhancers)):
        image = enhancers[index](image).enhance(rng.uniform(1 - strength, 1 + strength))
    return image


def augment(image: Image.Image, boxes: np.ndarray, rng: np.random.Generator, resizing: Resizing
            ) -> tuple[Image.Image, np.ndarray, np.ndarray]:
    """QPIC's training augmentation. Returns the image, the boxes (pixels of the new image) and which boxes
    survived the crop (a box with no area left is dropped, and so is every pair using it)."""
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    alive = np.ones(len(boxes), dtype=bool)
    if rng.random() < 0.5:
        image, boxes = hflip(image, boxes)
    image = colour_jitter(image, rng)
    scales = [resizing.px(s) for s in QPIC_SCALES]
    if rng.random() < 0.5:
        image, boxes = resize(image, boxes, int(rng.choice(scales)), resizing.max_size)
    else:
        image, boxes = resize(image, boxes, resizing.px(int(rng.choice(QPIC_CROP_RESIZES))), None)
        low, high = (resizing.px(v) for v in QPIC_CROP)
        width = int(rng.integers(low, max(low, min(image.width, high)) + 1))
        height = int(rng.integers(low, max(low, min(image.height, high)) + 1))
        width, height = min(width, image.width), min(height, image.height)
        top = int(rng.integers(0, image.height - height + 1))
        left = int(rng.integers(0, image.width - width + 1))
        image, boxes, alive = crop(image, boxes, top, left, height, width)
        image, boxes = resize(image, boxes, int(rng.choice(scales)), resizing.max_size)
    return image, boxes, alive
