"""Arrays to PNG and JPEG bytes, as TFDS's ``Image.encode_example`` stores them.

TFDS encodes with ``tf.image.encode_png`` / ``tf.image.encode_jpeg`` (quality 95, 4:2:0
chroma); ``specs/features.md`` §5 is normative. The bytes are not TensorFlow's (no two PNG
encoders agree byte for byte), but they decode to the same pixels: PNG is lossless, and the
JPEG is written with the same quality and subsampling by libjpeg-turbo (``simplejpeg``,
the ``images`` extra). PNG needs no extra: it is written here, unfiltered rows deflated at
zlib's default level, so the same array always gives the same bytes.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from types import ModuleType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from readplan.errors import FeatureError, MissingExtraError

__all__ = ["JPEG_QUALITY", "encode_image"]

JPEG_QUALITY = 95
"""``tf.image.encode_jpeg``'s default quality, which TFDS uses."""

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Channels -> PNG IHDR colour type: gray, gray+alpha, RGB, RGBA.
_COLOUR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}
_JPEG_COLOURSPACE = {1: "GRAY", 3: "RGB"}


def encode_image(array: npt.NDArray[Any], encoding: Literal["png", "jpeg"], where: str) -> bytes:
    """``array`` (``(h, w, c)``, uint8 or uint16 for PNG) as a PNG or JPEG file's bytes."""
    if encoding == "jpeg":
        return _jpeg(array, where)
    return _png(array, where)


def _png(array: npt.NDArray[Any], where: str) -> bytes:
    height, width, channels = array.shape
    if channels not in _COLOUR_TYPE or array.dtype not in (np.uint8, np.uint16):
        raise FeatureError(
            f"{where}: a PNG holds 1 to 4 channels of uint8 or uint16, not {channels} of "
            f"{array.dtype}",
            feature=where,
            feature_type="Image",
        )
    depth = 8 * array.dtype.itemsize
    samples = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder(">"))
    rows = samples.reshape(-1).view(np.uint8).reshape(height, -1)
    # Filter type 0 (none) before every row.
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", width, height, depth, _COLOUR_TYPE[channels], 0, 0, 0)
    return (
        _PNG_MAGIC
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw))
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _jpeg(array: npt.NDArray[Any], where: str) -> bytes:
    channels = array.shape[-1]
    if channels not in _JPEG_COLOURSPACE or array.dtype != np.uint8:
        raise FeatureError(
            f"{where}: a JPEG holds 1 or 3 channels of uint8, not {channels} of {array.dtype}; "
            "use encoding_format='png'",
            feature=where,
            feature_type="Image",
        )
    encoded: bytes = _simplejpeg().encode_jpeg(
        np.ascontiguousarray(array),
        quality=JPEG_QUALITY,
        colorspace=_JPEG_COLOURSPACE[channels],
        colorsubsampling="420",
    )
    return encoded


def _simplejpeg() -> ModuleType:
    try:
        return importlib.import_module("simplejpeg")
    except ImportError as err:
        raise MissingExtraError(
            "encoding JPEG images needs the simplejpeg package, which is not installed; "
            "install readplan's image extra: pip install 'readplan[images]' (or give the "
            "image as JPEG bytes or a file path)",
            extra="images",
            package="simplejpeg",
        ) from err
