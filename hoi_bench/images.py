"""Image I/O shared by builders and drawing code: embedded bytes for parquet, sizes without full decodes.

Every image a builder embeds or measures is checked first: it must be an image file Pillow can decode, of at most
``MAX_IMAGE_PIXELS`` pixels and ``MAX_IMAGE_BYTES`` bytes. A text file named ``.jpg``, a truncated JPEG or a
decompression bomb (a small file that decodes to gigabytes) is a ``FormatError`` naming the file at build time,
instead of a parquet file that fails when loaded or a build that runs out of memory.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from hoi_bench.errors import FormatError, OutputPathError

MAX_IMAGE_PIXELS = 2**26
"""Largest image accepted, in pixels (67 megapixels, e.g. 9,600 x 7,000): far above any benchmark's images,
far below a decompression bomb. Pillow's own limit (89 megapixels) only warns and lets 179 megapixels through."""
MAX_IMAGE_BYTES = 2**28
"""Largest image file accepted (256 MiB)."""


def image_size(path: str | os.PathLike, *, record: int | str | None = None) -> tuple[int, int]:
    """(width, height) read from the file header, without decoding the pixels; checked against the limits."""
    path = Path(path)
    _check_file_size(path, record)
    try:
        with open_checked(path, path, record) as image:
            return image.size
    except (OSError, SyntaxError) as error:
        raise FormatError(str(path), f"not a readable image: {error}", record=record) from error


def embedded_image(path: str | os.PathLike, *, record: int | str | None = None) -> dict:
    """The value of a ``datasets.Image()`` cell holding the file's own bytes (no re-encoding, portable parquet).

    The bytes are checked to decode as an image within the limits (a JPEG is decoded at 1/8 scale, which
    reads every byte of it at a fraction of the cost); ``record`` names the annotation record in errors.
    """
    path = Path(path)
    _check_file_size(path, record)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise FormatError(str(path), f"not a readable image file: {error.strerror or error}", record=record) from error
    check_image_bytes(data, path, record=record)
    return {"bytes": data, "path": path.name}


def check_image_bytes(data: bytes, file: str | os.PathLike, *, record: int | str | None = None) -> tuple[int, int]:
    """(width, height) of the image ``data``, after checking that it decodes within the limits.

    >>> check_image_bytes(encode_png(np.zeros((2, 3, 3), dtype=np.uint8)), "x.png")
    (3, 2)
    >>> check_image_bytes(b"hello", "notes.jpg")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    hoi_bench.errors.FormatError: notes.jpg: not an image file (first bytes b'hello') (expected a JPEG, PNG or ...)
    """
    try:
        with open_checked(io.BytesIO(data), file, record) as image:
            size = image.size
            image.draft(image.mode, (max(1, size[0] // 8), max(1, size[1] // 8)))
            image.load()
    except (OSError, SyntaxError) as error:
        raise FormatError(str(file), f"image does not decode: {error}", record=record,
                          expected="a complete image file") from error
    return size


@contextlib.contextmanager
def open_checked(source: str | os.PathLike | io.BytesIO, file: str | os.PathLike,
                 record: int | str | None = None) -> Iterator[Image.Image]:
    """``Image.open(source)`` with the pixel limit checked from the header; not-an-image as ``FormatError``.

    For readers that decode the pixels themselves (a panoptic PNG read as a segment-id map): a file past
    :data:`MAX_IMAGE_PIXELS` is refused before any pixel is decoded. ``file`` and ``record`` name it in errors.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own, lower limit applies below
        try:
            image = Image.open(source)
        except Image.DecompressionBombError as error:
            raise _too_large(file, record, "more than twice Pillow's limit") from error
        except Image.UnidentifiedImageError as error:
            head = source.getvalue()[:8] if isinstance(source, io.BytesIO) else _head(Path(source))
            raise FormatError(str(file), f"not an image file (first bytes {head!r})", record=record,
                              expected="a JPEG, PNG or other image Pillow reads") from error
    with image:
        width, height = image.size
        if width * height > MAX_IMAGE_PIXELS:
            raise _too_large(file, record, f"{width} x {height} = {width * height:,}")
        yield image


def _too_large(file, record, pixels: str) -> FormatError:
    return FormatError(str(file), f"image of {pixels} pixels: too large to decode safely (a decompression bomb "
                       "or a wrong file)", record=record, expected=f"at most {MAX_IMAGE_PIXELS:,} pixels")


def _check_file_size(path: Path, record) -> None:
    try:
        size = path.stat().st_size
    except OSError as error:
        raise FormatError(str(path), f"not a readable image file: {error.strerror or error}", record=record) from error
    if size > MAX_IMAGE_BYTES:
        raise FormatError(str(path), f"image file of {size:,} bytes: too large", record=record,
                          expected=f"at most {MAX_IMAGE_BYTES:,} bytes")


def _head(path: Path) -> bytes:
    with open(path, "rb") as stream:
        return stream.read(8)


def check_png_path(path: str | os.PathLike, what: str = "--out") -> Path:
    """``path`` if its name ends in ``.png``; else ``OutputPathError``, before any work, for commands that write
    PNG bytes (a drawing named ``frame.jpg`` would be a PNG under a JPEG name).

    >>> check_png_path("frame.PNG")
    PosixPath('frame.PNG')
    >>> check_png_path("frame.jpg")
    Traceback (most recent call last):
    hoi_bench.errors.OutputPathError: --out 'frame.jpg': a PNG is written, but the name ends in .jpg (expected a file name ending in .png)
    """
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise OutputPathError(path, what, f"a PNG is written, but the name ends in {path.suffix or 'no extension'}",
                              expected="a file name ending in .png")
    return path


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
