"""PNG bytes to the pixels TensorFlow's PNG reader gives (libpng with TF's transformations).

TensorFlow asks libpng for ``channels`` and 8 or 16 bits and lets it convert: palettes are
expanded (``tRNS`` giving alpha), 1/2/4-bit gray is scaled to 8 bits, colour becomes gray
by the fixed BT.601 weights (truncated at 8 bits, rounded at 16), gray is repeated to RGB,
alpha (or a ``tRNS`` colour key) is dropped or an opaque one added, and 16-bit samples keep
their high byte for 8-bit output (8-bit samples are multiplied by 257 for 16-bit output).
The samples themselves come from Pillow where it reads them at full precision, and from the
small decoder below where it does not (16-bit colour or alpha, colour keys).
``specs/features.md`` §4 is normative.
"""

from __future__ import annotations

import io
import math
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.errors import FeatureError

__all__ = ["decode_png"]

_GRAY, _RGB, _PALETTE, _GRAY_ALPHA, _RGBA = 0, 2, 3, 4, 6
_STORED_CHANNELS = {_GRAY: 1, _RGB: 3, _PALETTE: 1, _GRAY_ALPHA: 2, _RGBA: 4}
_DEPTHS = {_GRAY: (1, 2, 4, 8, 16), _RGB: (8, 16), _PALETTE: (1, 2, 4, 8), _GRAY_ALPHA: (8, 16)}
_DEPTHS[_RGBA] = (8, 16)
# libpng's png_set_rgb_to_gray(0.299, 0.587) as 15-bit fixed point (it truncates).
_GRAY_WEIGHTS = (9797, 19234, 32768 - 9797 - 19234)
# libpng ignores a gamma within 5% of 1 (PNG_GAMMA_THRESHOLD), in units of 1e-5.
_GAMMA_ONE, _GAMMA_THRESHOLD = 100000, 5000
_SRGB_GAMMA = 45455  # libpng's gamma for an sRGB chunk
# Adam7's seven passes: (first row, first column, row step, column step).
_ADAM7 = (
    (0, 0, 8, 8),
    (0, 4, 8, 8),
    (4, 0, 8, 4),
    (0, 2, 4, 4),
    (2, 0, 4, 2),
    (0, 1, 2, 2),
    (1, 0, 2, 1),
)

Refuse = Callable[[str], FeatureError]


@dataclass(frozen=True)
class _Header:
    width: int
    height: int
    depth: int
    color: int
    interlaced: bool
    chunks: dict[bytes, bytes]
    idat: bytes

    @property
    def has_trns(self) -> bool:
        return b"tRNS" in self.chunks


@dataclass(frozen=True)
class _Samples:
    """The image's samples as libpng expands them before TF's conversions."""

    pixels: npt.NDArray[Any]  # (h, w, c): uint8, or uint16 for 16-bit images
    keyed: npt.NDArray[np.bool_] | None  # pixels matching a gray/RGB tRNS colour key
    is_color: bool
    gamma: int | None  # the file's gamma (1e-5 units) when libpng applies it to colour -> gray
    filler: int  # the alpha TF adds: (1 << stored bit depth) - 1, not scaled to 8 bits
    significant_bits: bool  # an sBIT chunk (it changes libpng's 16-bit gamma tables)


def decode_png(
    data: bytes, channels: int | None, dtype: str, refuse: Refuse, pil: Any
) -> npt.NDArray[Any]:
    """``tf.image.decode_png``'s result for ``channels`` (None: the image's own) and dtype."""
    header = _read_header(data, refuse)
    samples = _samples(data, header, refuse, pil)
    return _convert(samples, channels, dtype, refuse)


def _read_header(data: bytes, refuse: Refuse) -> _Header:
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise refuse("the PNG has no IHDR header; it is truncated or damaged")
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", data[16:29])
    if color not in _DEPTHS or depth not in _DEPTHS[color]:
        raise refuse(f"the PNG header's bit depth {depth} with colour type {color} is invalid")
    chunks: dict[bytes, bytes] = {}
    idat = []
    offset = 8
    while offset + 8 <= len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        crc = data[offset + 8 + length : offset + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise refuse(f"the PNG's {kind!r} chunk at byte {offset} is truncated")
        intact = zlib.crc32(kind + body) == struct.unpack(">I", crc)[0]
        if not intact and not kind[:1].islower():
            raise refuse(f"the PNG's {kind!r} chunk at byte {offset} fails its CRC")
        if kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        elif intact and not idat:
            # libpng drops an ancillary chunk that fails its CRC, and ignores the ones
            # that come after the image data or repeat.
            chunks.setdefault(kind, body)
        offset += 12 + length
    return _Header(width, height, depth, color, interlace == 1, chunks, b"".join(idat))


def _pil_reads_exactly(header: _Header) -> bool:
    """Whether Pillow gives every sample at full precision (and colour keys are not needed)."""
    if header.color == _PALETTE:
        return True
    if header.has_trns:
        return False
    return header.depth == 8 or (header.depth == 16 and header.color == _GRAY)


def _samples(data: bytes, header: _Header, refuse: Refuse, pil: Any) -> _Samples:
    is_color = header.color in (_RGB, _PALETTE, _RGBA)
    gamma = _gamma_significant(header)
    filler = (1 << header.depth) - 1
    if _pil_reads_exactly(header):
        pixels = _pil_pixels(data, header, refuse, pil)
        return _Samples(pixels, None, is_color, gamma, filler, b"sBIT" in header.chunks)
    raw = _unpacked(header, refuse)
    keyed = None
    if header.has_trns:
        key = np.frombuffer(header.chunks[b"tRNS"], dtype=">u2")
        if key.size != raw.shape[2]:
            raise refuse(
                f"the PNG's tRNS chunk holds {key.size} values for {raw.shape[2]} channels"
            )
        keyed = np.all(raw == key.astype(raw.dtype), axis=2)
    if header.depth < 8:
        # libpng's expansion to 8 bits replicates the bits: value * 255 / (2**depth - 1).
        raw = raw * np.uint8(255 // ((1 << header.depth) - 1))
    return _Samples(raw, keyed, is_color, gamma, filler, b"sBIT" in header.chunks)


def _gamma_significant(header: _Header) -> int | None:
    """The file gamma libpng uses for colour to gray: sRGB's 1/2.2, or gAMA's unless it is
    within 5 % of 1 (then libpng ignores it)."""
    if b"sRGB" in header.chunks:
        return _SRGB_GAMMA
    gama = header.chunks.get(b"gAMA")
    if gama is None or len(gama) != 4:
        return None
    gamma: int = struct.unpack(">I", gama)[0]
    return gamma if abs(gamma - _GAMMA_ONE) > _GAMMA_THRESHOLD else None


def _pil_pixels(data: bytes, header: _Header, refuse: Refuse, pil: Any) -> npt.NDArray[Any]:
    try:
        # Pillow's PNG class, not PIL.Image.open: decode_image bounded the size from the
        # header (open's own MAX_IMAGE_PIXELS check would raise its own error type).
        with pil.PngImageFile(io.BytesIO(data)) as image:
            image.load()
            if header.color == _PALETTE:
                image = image.convert("RGBA" if header.has_trns else "RGB")
            pixels = np.asarray(image)
    except (OSError, ValueError, SyntaxError) as err:
        raise refuse(f"the PNG does not decode ({err})") from err
    if header.depth == 16:
        pixels = pixels.astype(np.uint16)
    return pixels[:, :, None] if pixels.ndim == 2 else pixels


# --- the samples of images Pillow reduces ------------------------------------------------------


def _unpacked(header: _Header, refuse: Refuse) -> npt.NDArray[Any]:
    """The stored samples, ``(h, w, channels)`` at the stored depth (uint8 or uint16)."""
    channels = _STORED_CHANNELS[header.color]
    bits = channels * header.depth
    bpp = max(1, bits // 8)
    passes = _ADAM7 if header.interlaced else ((0, 0, 1, 1),)
    sizes = []
    for y0, x0, dy, dx in passes:
        rows = -(-(header.height - y0) // dy) if header.height > y0 else 0
        cols = -(-(header.width - x0) // dx) if header.width > x0 else 0
        sizes.append((rows, cols, (cols * bits + 7) // 8))
    expected = sum(rows * (1 + rowbytes) for rows, cols, rowbytes in sizes if rows and cols)
    raw = _inflate(header.idat, expected, refuse)
    dtype = np.dtype(">u2") if header.depth == 16 else np.dtype(np.uint8)
    out = np.zeros((header.height, header.width, channels), dtype=dtype)
    offset = 0
    for (y0, x0, dy, dx), (rows, cols, rowbytes) in zip(passes, sizes):
        if not rows or not cols:
            continue
        size = rows * (1 + rowbytes)
        lines = _unfilter(raw[offset : offset + size], rows, rowbytes, bpp, refuse)
        offset += size
        out[y0::dy, x0::dx] = _samples_of(lines, cols, channels, header.depth, dtype)
    return out.astype(np.uint16) if header.depth == 16 else out


def _inflate(idat: bytes, expected: int, refuse: Refuse) -> bytes:
    inflater = zlib.decompressobj()
    try:
        # Never more than the header's rows need: a longer stream is refused, not expanded.
        raw = inflater.decompress(idat, expected + 1)
    except zlib.error as err:
        raise refuse(f"the PNG's image data does not decompress ({err})") from err
    if len(raw) != expected:
        raise refuse(
            f"the PNG's image data holds {len(raw)} bytes where its header needs {expected}"
        )
    return raw


def _unfilter(
    data: bytes, rows: int, rowbytes: int, bpp: int, refuse: Refuse
) -> npt.NDArray[np.uint8]:
    lines = np.frombuffer(data, dtype=np.uint8).reshape(rows, rowbytes + 1)
    out = np.empty((rows, rowbytes), dtype=np.uint8)
    previous = np.zeros(rowbytes, dtype=np.uint8)
    for y in range(rows):
        kind, line = int(lines[y, 0]), lines[y, 1:]
        if kind == 0:
            out[y] = line
        elif kind == 1:
            out[y] = _sub(line, bpp)
        elif kind == 2:
            out[y] = line + previous
        elif kind in (3, 4):
            out[y] = np.frombuffer(_average_or_paeth(kind, line, previous, bpp), dtype=np.uint8)
        else:
            raise refuse(f"the PNG's row {y} has filter type {kind} (0-4 exist)")
        previous = out[y]
    return out


def _sub(line: npt.NDArray[np.uint8], bpp: int) -> npt.NDArray[np.uint8]:
    # Each byte adds the one bpp to its left: a running sum per byte lane, modulo 256.
    padded = np.zeros(-(-line.size // bpp) * bpp, dtype=np.uint8)
    padded[: line.size] = line
    return np.cumsum(padded.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)[: line.size]


def _average_or_paeth(
    kind: int, line: npt.NDArray[np.uint8], previous: npt.NDArray[np.uint8], bpp: int
) -> bytes:
    # Each byte depends on the one just decoded to its left: one pass, byte by byte.
    raw, up = line.tolist(), previous.tolist()
    out = bytearray(len(raw))
    for i, value in enumerate(raw):
        left = out[i - bpp] if i >= bpp else 0
        if kind == 3:
            out[i] = (value + ((left + up[i]) >> 1)) & 0xFF
            continue
        corner = up[i - bpp] if i >= bpp else 0
        estimate = left + up[i] - corner
        to_left, to_up, to_corner = (
            abs(estimate - left),
            abs(estimate - up[i]),
            abs(estimate - corner),
        )
        if to_left <= to_up and to_left <= to_corner:
            predicted = left
        elif to_up <= to_corner:
            predicted = up[i]
        else:
            predicted = corner
        out[i] = (value + predicted) & 0xFF
    return bytes(out)


def _samples_of(
    lines: npt.NDArray[np.uint8], cols: int, channels: int, depth: int, dtype: np.dtype[Any]
) -> npt.NDArray[Any]:
    rows = lines.shape[0]
    if depth >= 8:
        return lines.view(dtype).reshape(rows, cols, channels)
    bits = np.unpackbits(lines, axis=1).reshape(rows, -1, depth)
    weights = (1 << np.arange(depth - 1, -1, -1)).astype(np.uint8)
    values: npt.NDArray[np.uint8] = (bits * weights).sum(axis=2, dtype=np.uint8)
    return values[:, :cols, None]


# --- TensorFlow's conversions ------------------------------------------------------------------


def _convert(
    samples: _Samples, channels: int | None, dtype: str, refuse: Refuse
) -> npt.NDArray[Any]:
    pixels = samples.pixels
    native = pixels.shape[2]
    wanted = native if channels is None else channels
    if wanted not in (1, 2, 3, 4):
        raise refuse(f"a PNG cannot be decoded to {wanted} channels (1, 2, 3 or 4)")
    top = np.iinfo(pixels.dtype).max
    color = pixels[:, :, :3] if samples.is_color else pixels[:, :, :1]
    if wanted <= 2 and samples.is_color:
        if samples.gamma is None:
            color = _to_gray(color)
        elif color.dtype == np.uint8:
            color = _to_gray_linear(color, samples.gamma)
        elif not samples.significant_bits:
            color = _to_gray_linear16(color, samples.gamma, to_8_bits=dtype == "uint8")
        else:
            raise refuse(
                "turning a 16-bit colour PNG with a gamma and an sBIT chunk into gray is "
                "done by libpng with gamma tables shifted by its significant bits, which "
                "readplan does not reproduce"
            )
    elif wanted >= 3 and not samples.is_color:
        color = color.repeat(3, axis=2)
    parts = [color]
    if wanted in (2, 4):
        if native in (2, 4):
            alpha = pixels[:, :, -1:]
        elif samples.keyed is not None:
            alpha = np.where(samples.keyed, 0, top).astype(pixels.dtype)[:, :, None]
        else:
            # TF asks libpng for an alpha of (1 << bit depth) - 1: 1 for a 1-bit image.
            alpha = np.full_like(pixels[:, :, :1], samples.filler)
        parts.append(alpha)
    out: npt.NDArray[Any] = (
        np.concatenate(parts, axis=2) if len(parts) > 1 else np.ascontiguousarray(color)
    )
    if dtype == "uint8" and out.dtype == np.uint16:
        out = (out >> 8).astype(np.uint8)  # libpng's png_set_strip_16: the high byte
    elif dtype == "uint16" and out.dtype == np.uint8:
        out = out.astype(np.uint16) * np.uint16(257)
    return out


def _gamma_table(gamma: int) -> npt.NDArray[np.uint8]:
    """libpng's 8-bit table for ``gamma`` (1e-5 units): ``floor(255 (i/255)^g + 0.5)``,
    0 and 255 kept, the identity for an insignificant gamma."""
    if abs(gamma - _GAMMA_ONE) <= _GAMMA_THRESHOLD:
        return np.arange(256, dtype=np.uint8)
    table = [
        i if i in (0, 255) else math.floor(255 * math.pow(i / 255.0, gamma * 0.00001) + 0.5)
        for i in range(256)
    ]
    return np.array(table, dtype=np.uint8)


def _reciprocal(gamma: int) -> int:
    return math.floor(1e10 / gamma + 0.5)  # libpng's png_reciprocal


def _to_gray_linear(rgb: npt.NDArray[np.uint8], gamma: int) -> npt.NDArray[np.uint8]:
    """libpng's 8-bit colour to gray with a file gamma: the channels are linearised by one
    table, weighted and rounded, and the result re-encoded by another; gray pixels (equal
    channels) are kept as they are."""
    to_linear = _gamma_table(_reciprocal(gamma))
    from_linear = _gamma_table(_reciprocal(_reciprocal(gamma)))
    linear = to_linear[rgb].astype(np.int64) @ np.array(_GRAY_WEIGHTS, dtype=np.int64)
    gray = from_linear[(linear + (1 << 14)) >> 15]
    same = (rgb[:, :, 0] == rgb[:, :, 1]) & (rgb[:, :, 0] == rgb[:, :, 2])
    return np.where(same, rgb[:, :, 0], gray).astype(np.uint8)[:, :, None]


# 16-bit images reduced to 8 bits use gamma tables of 11-bit inputs (PNG_MAX_GAMMA_8).
_SHIFT_TO_8_BITS = 16 - 11


def _gamma_table16(gamma: int, shift: int) -> npt.NDArray[np.uint16]:
    """libpng's 16-bit table for ``gamma`` over ``16 - shift``-bit inputs:
    ``floor(65535 (i/max)^g + 0.5)``, or the inputs scaled to 16 bits for an insignificant
    gamma."""
    top = (1 << (16 - shift)) - 1
    inputs = np.arange(top + 1, dtype=np.float64)
    if abs(gamma - _GAMMA_ONE) > _GAMMA_THRESHOLD:
        table = [
            math.floor(65535 * math.pow(i / top, gamma * 0.00001) + 0.5) for i in range(top + 1)
        ]
        return np.array(table, dtype=np.uint16)
    if shift == 0:
        return inputs.astype(np.uint16)
    return ((inputs.astype(np.int64) * 65535 + (top + 1) // 2) // top).astype(np.uint16)


def _table_16_to_8(gamma: int, shift: int) -> npt.NDArray[np.uint16]:
    """libpng's png_build_16to8_table: for each ``16 - shift``-bit input the 16-bit value
    ``257 i`` of the 8-bit output ``i`` whose gamma-corrected boundary it is below."""
    size = 1 << (16 - shift)
    table = np.full(size, 65535, dtype=np.uint16)
    last = 0
    for level in range(255):
        out = level * 257
        corrected = out + 128
        if 0 < corrected < 65535:
            corrected = math.floor(65535 * math.pow(corrected / 65535.0, gamma * 0.00001) + 0.5)
        bound = (corrected * (size - 1) + 32768) // 65535 + 1
        if bound > last:
            table[last:bound] = out
            last = bound
    return table


def _to_gray_linear16(
    rgb: npt.NDArray[np.uint16], gamma: int, to_8_bits: bool
) -> npt.NDArray[np.uint16]:
    """libpng's 16-bit colour to gray with a file gamma, through its 16-bit tables (of
    11-bit inputs when the image is then reduced to 8 bits); gray pixels go through the
    overall table (the identity at 16 bits)."""
    shift = _SHIFT_TO_8_BITS if to_8_bits else 0
    screen = _reciprocal(gamma)
    to_linear = _gamma_table16(_reciprocal(gamma), shift)
    from_linear = _gamma_table16(_reciprocal(screen), shift)
    overall = math.floor(1e15 / gamma / screen + 0.5)  # png_reciprocal2
    values = rgb.astype(np.int64)
    linear = to_linear[values >> shift].astype(np.int64) @ np.array(_GRAY_WEIGHTS, dtype=np.int64)
    gray = from_linear[((linear + (1 << 14)) >> 15) >> shift]
    plain = values[:, :, 0]
    if to_8_bits:
        same_value = _table_16_to_8(overall, shift)[plain >> shift]
    else:
        same_value = _gamma_table16(overall, 0)[plain]
    same = (rgb[:, :, 0] == rgb[:, :, 1]) & (rgb[:, :, 0] == rgb[:, :, 2])
    out: npt.NDArray[np.uint16] = np.where(same, same_value, gray).astype(np.uint16)
    return out[:, :, None]


def _to_gray(rgb: npt.NDArray[Any]) -> npt.NDArray[Any]:
    weighted = rgb.astype(np.int64) @ np.array(_GRAY_WEIGHTS, dtype=np.int64)
    if rgb.dtype == np.uint16:
        weighted += 1 << 14  # libpng rounds 16-bit gray and truncates 8-bit gray
    return (weighted >> 15).astype(rgb.dtype)[:, :, None]
