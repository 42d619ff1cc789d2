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
import io
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import U8Array
from readplan.errors import FeatureError, MissingExtraError
from readplan.metadata._feature_types import Shape

__all__ = ["decode_image", "image_format"]

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8\xff"
_OTHER_MAGIC = ((b"GIF8", "GIF"), (b"BM", "BMP"), (b"RIFF", "WebP"))
# PNG IHDR colour types -> channels as stored.
_PNG_GRAY, _PNG_RGB, _PNG_PALETTE, _PNG_GRAY_ALPHA, _PNG_RGBA = 0, 2, 3, 4, 6
_PNG_CHANNELS = {_PNG_GRAY: 1, _PNG_RGB: 3, _PNG_GRAY_ALPHA: 2, _PNG_RGBA: 4}
_OPAQUE = 255


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

    ``channels`` None keeps the image's own channel count. ``where`` names the feature in
    error messages. Before any pixel is decoded, the header's height and width must agree
    with ``shape``'s known dimensions and the decoded image must fit in ``max_bytes``
    (None: no bound); otherwise it is refused (``specs/features.md`` §5).
    """
    if dtype == "float32":
        # TFDS stores a float image as the 4 bytes of each float in an RGBA PNG.
        rgba = decode_image(
            data, channels=4, dtype="uint8", where=where, shape=shape, max_bytes=max_bytes
        )
        return np.ascontiguousarray(rgba).view("<f4").astype(np.float32)
    kind = image_format(data)
    if kind == "png":
        _check_size(_png_size(data, channels, dtype, where), shape, max_bytes, where)
        return _png(data, channels, dtype, where)
    if kind == "jpeg":
        if dtype != "uint8":
            raise _refuse(where, f"a JPEG decodes to uint8, but the feature's dtype is {dtype}")
        _check_size(_jpeg_size(data, channels, where), shape, max_bytes, where)
        return _jpeg(data, channels, where)
    raise _refuse(
        where,
        f"the bytes are a {kind} image (first bytes {data[:8].hex()}); readplan decodes "
        "PNG and JPEG",
    )


def _refuse(where: str, why: str) -> FeatureError:
    return FeatureError(
        f"feature {where}: {why}; read it undecoded with decoders={{...: SkipDecoding()}} "
        "and decode it yourself",
        feature=where,
        feature_type="Image",
    )


def _check_size(
    size: tuple[int, int, int], shape: Shape, max_bytes: int | None, where: str
) -> None:
    """Refuse, from its header, an image ``shape`` cannot hold or ``max_bytes`` bounds.

    ``size`` is the header's (height, width, bytes per decoded pixel).
    """
    height, width, pixel_bytes = size
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
            "decoder or set $READPLAN_MAX_VALUE_BYTES (specs/features.md §5)",
            feature=where,
            feature_type="Image",
        )


# --- PNG ------------------------------------------------------------------------------------


def _png_size(data: bytes, channels: int | None, dtype: str, where: str) -> tuple[int, int, int]:
    """Height, width and decoded bytes per pixel, from the PNG's IHDR chunk."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise _refuse(where, "the PNG has no IHDR header; it is truncated or damaged")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    # A palette expands to RGB(A); the output has the wanted channels or the stored ones.
    native = _PNG_CHANNELS.get(data[25], 4)
    return height, width, max(native, channels or 0) * (2 if dtype == "uint16" else 1)


def _png(data: bytes, channels: int | None, dtype: str, where: str) -> npt.NDArray[Any]:
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise _refuse(where, "the PNG has no IHDR header; it is truncated or damaged")
    depth, color = data[24], data[25]
    wanted_depth = 16 if dtype == "uint16" else 8
    if color == _PNG_PALETTE:
        if dtype != "uint8":
            raise _refuse(where, f"a palette PNG decodes to uint8, not {dtype}")
    elif depth != wanted_depth or color not in _PNG_CHANNELS:
        raise _refuse(
            where,
            f"PNG bit depth {depth} colour type {color} is not decoded to {dtype} by readplan "
            "(supported: 8-bit gray/gray+alpha/RGB/RGBA/palette to uint8, 16-bit gray to "
            "uint16)",
        )
    png = _import("PIL.PngImagePlugin", "Pillow", "PNG")
    try:
        # The plugin's class, not PIL.Image.open: readplan bounded the size from the header
        # already (Pillow's own bound, MAX_IMAGE_PIXELS, would raise its own error type).
        with png.PngImageFile(io.BytesIO(data)) as image:
            image.load()
            has_trns = "transparency" in image.info
            if color == _PNG_PALETTE:
                image = image.convert("RGBA" if has_trns else "RGB")
            pixels = np.asarray(image)
    except (OSError, ValueError, SyntaxError) as err:
        raise _refuse(where, f"the PNG does not decode ({err})") from err
    if wanted_depth == 16:
        pixels = pixels.astype(np.uint16)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    native = pixels.shape[2]
    return _convert_channels(pixels, native if channels is None else channels, has_trns, where)


def _convert_channels(
    pixels: npt.NDArray[Any], channels: int, has_trns: bool, where: str
) -> npt.NDArray[Any]:
    native = pixels.shape[2]
    if channels == native:
        return pixels
    gray = native <= 2
    color = pixels[:, :, :1].repeat(3, axis=2) if gray else pixels[:, :, :3]
    has_alpha = native in (2, 4)
    if channels in (1, 3):
        if channels == 1 and not gray:
            raise _refuse(where, "converting a colour PNG to one channel is not supported")
        # TensorFlow strips alpha (and tRNS transparency) without compositing.
        return np.ascontiguousarray(pixels[:, :, :1] if channels == 1 else color)
    if channels in (2, 4):
        if channels == 2 and not gray:
            raise _refuse(where, "converting a colour PNG to gray+alpha is not supported")
        if has_trns and not has_alpha:
            raise _refuse(where, "turning PNG tRNS transparency into alpha is not supported")
        alpha = pixels[:, :, -1:] if has_alpha else np.full_like(pixels[:, :, :1], _OPAQUE)
        base = pixels[:, :, :1] if channels == 2 else color
        return np.concatenate([base, alpha], axis=2)
    raise _refuse(where, f"a PNG cannot be decoded to {channels} channels (1, 2, 3 or 4)")


# --- JPEG -----------------------------------------------------------------------------------


def _jpeg_size(data: bytes, channels: int | None, where: str) -> tuple[int, int, int]:
    """Height, width and decoded bytes per pixel, from the JPEG's frame header."""
    simplejpeg = _import("simplejpeg", "simplejpeg", "JPEG")
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as err:
        raise _refuse(where, f"the JPEG header does not decode ({err})") from err
    return height, width, max(1 if colorspace == "Gray" else 3, channels or 0)


def _jpeg(data: bytes, channels: int | None, where: str) -> U8Array:
    simplejpeg = _import("simplejpeg", "simplejpeg", "JPEG")
    try:
        _, _, colorspace, _ = simplejpeg.decode_jpeg_header(data)
    except ValueError as err:
        raise _refuse(where, f"the JPEG header does not decode ({err})") from err
    if colorspace not in ("Gray", "YCbCr", "RGB"):
        raise _refuse(where, f"JPEG colour space {colorspace} is not supported")
    if channels is None:
        channels = 1 if colorspace == "Gray" else 3
    if channels not in (1, 3):
        raise _refuse(where, f"a JPEG decodes to 1 or 3 channels, not {channels}")
    try:
        # libjpeg's fast integer IDCT with fancy upsampling: what TensorFlow uses.
        pixels: U8Array = simplejpeg.decode_jpeg(
            data,
            colorspace="GRAY" if channels == 1 else "RGB",
            fastdct=True,
            fastupsample=False,
        )
    except ValueError as err:
        raise _refuse(where, f"the JPEG does not decode ({err})") from err
    return pixels
