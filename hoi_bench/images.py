"""Image I/O shared by builders and drawing code: embedded bytes for parquet, sizes without full decodes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image

from hoi_bench.errors import FormatError


def image_size(path: str | os.PathLike) -> tuple[int, int]:
    """(width, height) read from the file header, without decoding the pixels."""
    try:
        with Image.open(path) as image:
            return image.size
    except (OSError, SyntaxError) as error:
        raise FormatError(str(path), f"not a readable image: {error}") from error


def embedded_image(path: str | os.PathLike) -> dict:
    """The value of a ``datasets.Image()`` cell holding the file's own bytes (no re-encoding, portable parquet)."""
    path = Path(path)
    return {"bytes": path.read_bytes(), "path": path.name}


def encode_png(image: Image.Image | np.ndarray) -> bytes:
    """PNG bytes of a PIL image or an H×W(×C) uint8 array.

    >>> encode_png(np.zeros((2, 3, 3), dtype=np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def load_rgb(source: str | os.PathLike | bytes | dict | Image.Image) -> Image.Image:
    """An RGB PIL image from a path, raw bytes, a ``datasets.Image`` cell dict or a PIL image."""
    if isinstance(source, Image.Image):
        return source.convert("RGB")
    if isinstance(source, dict):
        source = source["bytes"] if source.get("bytes") is not None else source["path"]
    if isinstance(source, bytes):
        return Image.open(io.BytesIO(source)).convert("RGB")
    with Image.open(source) as image:
        return image.convert("RGB")
