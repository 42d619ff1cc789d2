"""PNG and JPEG bytes to arrays, bit-identical to TensorFlow's ``tf.image.decode_image``.

TFDS decodes ``Image`` features with ``decode_image(data, channels=shape[-1], dtype=...)``.
PNG has one exact decoding, so Pillow matches. TensorFlow decodes JPEG with libjpeg's fast
integer IDCT and fancy (smooth) chroma upsampling; libjpeg-turbo reproduces both through
``simplejpeg`` (``fastdct=True, fastupsample=False``), whereas Pillow's default (accurate
IDCT) differs by up to 10 levels. Channel conversions are those of TensorFlow's PNG and
JPEG readers; the ones readplan has not verified against TensorFlow are refused rather
than approximated. ``specs/features.md`` §4 is normative.
"""

from __future__ import annotations

import functools
import importlib
import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import U8Array
from readplan._internal.buffer_pool import BufferPool
from readplan.errors import FeatureError, MissingExtraError
from readplan.metadata._bmp_gif import decode_bmp, decode_gif
from readplan.metadata._feature_types import Shape
from readplan.metadata._png import decode_png

__all__ = ["decode_image", "image_format", "import_simplejpeg"]

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8\xff"
_OTHER_MAGIC = ((b"GIF8", "GIF"), (b"BM", "BMP"), (b"RIFF", "WebP"))
# PNG IHDR colour type -> channels decoded (a palette expands to RGB or RGBA).
_PNG_CHANNELS = {0: 1, 2: 3, 3: 4, 4: 2, 6: 4}


@functools.cache
def _import(module: str, package: str, what: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            f"decoding {what} images needs the {package} package, which is not installed; "
            "install readplan's image extra: pip install 'readplan[images]' (or read the "
            "feature undecoded with decoders={name: readplan.SkipDecoding()})",
            extra="images",
            package=package,
        ) from err


def import_simplejpeg() -> ModuleType:
    """The JPEG decoder, or a MissingExtraError naming the extra that brings it."""
    return _import("simplejpeg", "simplejpeg", "JPEG")


def image_format(data: bytes) -> str:
    """``"png"``, ``"jpeg"``, or the name of another format (``"GIF"``) / ``"unknown"``."""
    if data.startswith(_PNG_MAGIC):
        return "png"
    if data.startswith(_JPEG_MAGIC):
        return "jpeg"
    for magic, name in _OTHER_MAGIC:
        if data.startswith(magic):
            return name
    return "unknown"


def decode_image(
    data: bytes,
    *,
    channels: int | None,
    dtype: str,
    where: str,
    shape: Shape = (None, None, None),
    max_bytes: int | None = None,
) -> npt.NDArray[Any]:
    """Decode one encoded image to ``(height, width, channels)`` of ``dtype``.

    ``channels`` None keeps the image's own channel count. A GIF gives ``(frames, height,
    width, 3)``. ``where`` names the feature in error messages. Before any pixel is
    decoded, the header's height and width must agree with ``shape``'s known dimensions and
    the decoded image must fit in ``max_bytes`` (None: no bound); otherwise it is refused
    (``specs/features.md`` §6).
    """
    if dtype == "float32":
        # TFDS stores a float image as the 4 bytes of each float in an RGBA PNG.
        rgba = decode_image(
            data, channels=4, dtype="uint8", where=where, shape=shape, max_bytes=max_bytes
        )
        return np.ascontiguousarray(rgba).view("<f4").astype(np.float32)
    kind = image_format(data)

    def refuse(why: str) -> FeatureError:
        return _refuse(where, why)

    sample_bytes = 2 if dtype == "uint16" else 1
    if kind in _HEADERS:
        height, width, stored = _HEADERS[kind](data, refuse)
        pixel_bytes = max(stored, channels or 0) * sample_bytes
        _check_size(height, width, pixel_bytes, shape, max_bytes, where)
    if kind == "png":
        pil_png = _import("PIL.PngImagePlugin", "Pillow", "PNG")
        return decode_png(data, channels, dtype, refuse, pil_png)
    if kind == "jpeg":
        pixels = _jpeg(data, channels, where)
    elif kind == "BMP":
        pixels = decode_bmp(data, channels, refuse)
    elif kind == "GIF":
        pixels = decode_gif(data, channels, refuse, max_bytes)
    else:
        raise _refuse(
            where,
            f"the bytes are a {kind} image (first bytes {data[:8].hex()}); TensorFlow decodes "
            "PNG, JPEG, GIF and BMP",
        )
    # TensorFlow decodes these to 8 bits and shifts them to 16 (x * 256) when asked.
    return pixels.astype(np.uint16) << np.uint16(8) if dtype == "uint16" else pixels


def _refuse(where: str, why: str) -> FeatureError:
    return FeatureError(
        f"feature {where}: {why}; read it undecoded with decoders={{...: SkipDecoding()}} "
        "and decode it yourself",
        feature=where,
        feature_type="Image",
    )


# --- sizes from headers -----------------------------------------------------------------------


def _check_size(
    height: int, width: int, pixel_bytes: int, shape: Shape, max_bytes: int | None, where: str
) -> None:
    """Refuse, from its header, an image ``shape`` cannot hold or ``max_bytes`` bounds."""
    declared = tuple(shape[:2])
    if any(want not in (None, got) for want, got in zip(declared, (height, width))):
        raise FeatureError(
            f"feature {where}: the image's header says {height} x {width} pixels (height x "
            f"width), but features.json declares shape {tuple(shape)}; nothing was decoded",
            feature=where,
            feature_type="Image",
        )
    needed = height * width * pixel_bytes
    if max_bytes is not None and needed > max_bytes:
        raise FeatureError(
            f"feature {where}: the image's header says {height} x {width} pixels, which "
            f"decode to {needed} bytes, more than the {max_bytes} bytes it may take "
            "(max_value_bytes bounds a decoded value, a Sequence's images together); nothing "
            "was decoded. If the image is genuine, pass a larger max_value_bytes to the "
            "decoder or set $READPLAN_MAX_VALUE_BYTES (specs/features.md §6)",
            feature=where,
            feature_type="Image",
        )


def _png_size(data: bytes, refuse: Callable[[str], FeatureError]) -> tuple[int, int, int]:
    """Height, width and decoded channels (at most), from the PNG's IHDR chunk."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise refuse("the PNG has no IHDR header; it is truncated or damaged")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return height, width, _PNG_CHANNELS.get(data[25], 4)


def _jpeg_size(data: bytes, refuse: Callable[[str], FeatureError]) -> tuple[int, int, int]:
    """Height, width and decoded channels (at most), from the JPEG's frame header."""
    simplejpeg = _import("simplejpeg", "simplejpeg", "JPEG")
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as err:
        raise refuse(f"the JPEG header does not decode ({err})") from err
    return height, width, 1 if colorspace == "Gray" else 4 if colorspace in _FOUR else 3


def _bmp_size(data: bytes, refuse: Callable[[str], FeatureError]) -> tuple[int, int, int]:
    """Height and width (a negative height is a top-down BMP) and 4 channels at most."""
    if len(data) < 26:
        raise refuse(f"the BMP is {len(data)} bytes, shorter than its headers")
    width, height = struct.unpack("<ii", data[18:26])
    return abs(height), max(width, 0), 4


def _gif_size(data: bytes, refuse: Callable[[str], FeatureError]) -> tuple[int, int, int]:
    """The logical screen's height and width: one frame of 3 channels (more frames are
    bounded as they are read)."""
    if len(data) < 13:  # signature and logical screen descriptor
        raise refuse("the GIF is truncated at byte 6")
    width, height = struct.unpack("<HH", data[6:10])
    return height, width, 3


_HEADERS = {"png": _png_size, "jpeg": _jpeg_size, "BMP": _bmp_size, "GIF": _gif_size}
_FOUR = ("CMYK", "YCCK")


# --- JPEG -----------------------------------------------------------------------------------

# JPEGs decoded one at a time (a data source's records, items) into memory that is handed out
# again once nothing holds it: a fresh array of an image's size costs a page fault per page
# the first time it is written (on a virtual machine that gives freed memory back to its host,
# a third of a 224 x 224 decode), and decode workers take those faults one at a time.  Each
# record's image is its own buffer (a view of it), so holding one image holds nothing more.
# Smaller images come from the allocator's free lists, already mapped.
_POOLED_FROM = 64 << 10
_DECODED_JPEGS = BufferPool(keep=1024, max_bytes=64 << 20)


def _pooled(shape: tuple[int, int, int]) -> U8Array | None:
    """Memory for a decoded image of ``shape`` from the pool, when it is large enough to be
    worth it (else None: the decoder allocates its own)."""
    if shape[0] * shape[1] * shape[2] < _POOLED_FROM:
        return None
    return _DECODED_JPEGS.empty(shape)


def _jpeg(data: bytes, channels: int | None, where: str) -> U8Array:
    simplejpeg = _import("simplejpeg", "simplejpeg", "JPEG")
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as err:
        raise _refuse(where, f"the JPEG header does not decode ({err})") from err
    four = colorspace in ("CMYK", "YCCK")
    if colorspace not in ("Gray", "YCbCr", "RGB") and not four:
        raise _refuse(where, f"JPEG colour space {colorspace} is not supported")
    if channels is None:
        channels = 1 if colorspace == "Gray" else 3
    if channels not in (1, 3) or (four and channels == 1):
        raise _refuse(
            where,
            f"TensorFlow does not decode a {colorspace} JPEG to {channels} channels (a JPEG "
            "gives 1 or 3, a CMYK/YCCK JPEG 3)",
        )
    out = None if four else _pooled((height, width, channels))
    try:
        # libjpeg's fast integer IDCT with fancy upsampling: what TensorFlow uses.
        pixels: U8Array = simplejpeg.decode_jpeg(
            data,
            colorspace="CMYK" if four else "GRAY" if channels == 1 else "RGB",
            fastdct=True,
            fastupsample=False,
            buffer=out,
        )
    except ValueError as err:
        raise _refuse(where, f"the JPEG does not decode ({err})") from err
    if four:
        # TensorFlow's conversion of (Adobe, inverted) CMYK: each of C, M, Y times K / 255.
        ink = pixels.astype(np.uint16)
        return (ink[:, :, :3] * ink[:, :, 3:] // 255).astype(np.uint8)
    return pixels
