"""BMP and GIF bytes to the pixels TensorFlow's own BMP and GIF readers give.

TensorFlow's BMP reader takes the pixel bytes as they are: 8 bits per pixel is one
channel holding the byte (a palette is not looked up), 24 and 32 bits are BGR and BGRA;
it repeats one channel to three, and adds an opaque alpha or drops the alpha to give
the channel count asked for. Its GIF reader (giflib) yields every frame on the full
canvas: each frame starts as a copy of the previous one, a first frame that does not
cover the canvas starts black, and pixels of the frame's transparent colour keep what
was there (black in the first frame); disposal methods are ignored.
``specs/features.md`` §4 is normative.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from readplan._internal.arrays import U8Array
from readplan.errors import FeatureError

__all__ = ["decode_bmp", "decode_gif"]

Refuse = Callable[[str], FeatureError]
_OPAQUE = 255
_LZW_CODES = 4096  # GIF codes are at most 12 bits


# --- BMP -------------------------------------------------------------------------------------


def decode_bmp(data: bytes, channels: int | None, refuse: Refuse) -> U8Array:
    """``tf.io.decode_bmp``'s ``(height, width, channels)`` for ``channels`` 0/None, 3 or 4."""
    if len(data) < 30:
        raise refuse(f"the BMP is {len(data)} bytes, shorter than its headers")
    (pixels_at,) = struct.unpack("<i", data[10:14])
    width, height = struct.unpack("<ii", data[18:26])
    (bits,) = struct.unpack("<h", data[28:30])
    stored = bits // 8
    if stored not in (1, 3, 4) or bits % 8:
        raise refuse(
            f"the BMP has {bits} bits per pixel; TensorFlow reads 8 (one channel, the palette "
            "index), 24 and 32"
        )
    if channels is not None and channels not in (3, 4):
        raise refuse(f"TensorFlow decodes a BMP to 3 or 4 channels (or its own), not {channels}")
    if width <= 0 or height == 0:
        raise refuse(f"the BMP is {width}x{height} pixels")
    rows = abs(height)
    row_size = (bits * width + 31) // 32 * 4
    end = pixels_at + row_size * rows
    if pixels_at < 0 or end > len(data):
        raise refuse(
            f"the BMP's {rows} rows of {row_size} bytes from byte {pixels_at} do not fit in its "
            f"{len(data)} bytes"
        )
    grid = np.frombuffer(data, dtype=np.uint8, count=row_size * rows, offset=pixels_at)
    image = grid.reshape(rows, row_size)[:, : width * stored].reshape(rows, width, stored)
    if height > 0:
        image = image[::-1]  # stored bottom row first
    if stored >= 3:
        image = np.concatenate([image[:, :, 2::-1], image[:, :, 3:]], axis=2)
    wanted = stored if channels is None else channels
    if stored == 1 and wanted != 1:
        image = image.repeat(3, axis=2)
    if wanted == 3:
        return np.ascontiguousarray(image[:, :, :3])
    if wanted == 4 and image.shape[2] == 3:
        return np.concatenate([image, np.full_like(image[:, :, :1], _OPAQUE)], axis=2)
    return np.ascontiguousarray(image)


# --- GIF -------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, refuse: Refuse) -> None:
        self.data = data
        self.at = 0
        self.refuse = refuse

    def take(self, count: int) -> bytes:
        chunk = self.data[self.at : self.at + count]
        if len(chunk) != count:
            raise self.refuse(f"the GIF is truncated at byte {self.at}")
        self.at += count
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def blocks(self) -> bytes:
        """Concatenated data sub-blocks up to the zero-length terminator."""
        parts = []
        while size := self.byte():
            parts.append(self.take(size))
        return b"".join(parts)


def decode_gif(
    data: bytes, channels: int | None, refuse: Refuse, max_bytes: int | None = None
) -> U8Array:
    """``tf.io.decode_gif``: ``(frames, height, width, 3)``, refused once the frames pass
    ``max_bytes`` (each frame is a whole canvas, whatever few bytes it is stored in)."""
    if channels not in (None, 3):
        raise refuse(f"TensorFlow decodes a GIF to 3 channels, not {channels}")
    reader = _Reader(data, refuse)
    reader.take(6)
    width, height, flags, _, _ = struct.unpack("<HHBBB", reader.take(7))
    global_map = _color_map(reader, flags)
    frames: list[U8Array] = []
    transparent: int | None = None
    while True:
        kind = reader.byte()
        if kind == 0x3B:  # trailer
            break
        if kind == 0x21:  # extension: only the graphics control block matters
            label = reader.byte()
            body = reader.blocks()
            if label == 0xF9 and len(body) >= 4:
                transparent = body[3] if body[0] & 1 else None
            continue
        if kind != 0x2C:
            raise refuse(f"the GIF holds block type 0x{kind:02x} at byte {reader.at - 1}")
        if max_bytes is not None and (len(frames) + 1) * width * height * 3 > max_bytes:
            raise refuse(
                f"the GIF's frame {len(frames) + 1} of {width} x {height} pixels would take the "
                f"frames past max_value_bytes={max_bytes} (specs/features.md §6)"
            )
        frames.append(_frame(reader, width, height, global_map, transparent, frames))
        transparent = None
    if not frames:
        raise refuse("the GIF holds no image")
    return np.stack(frames)


def _color_map(reader: _Reader, flags: int) -> U8Array | None:
    if not flags & 0x80:
        return None
    size = 2 << (flags & 7)
    return np.frombuffer(reader.take(3 * size), dtype=np.uint8).reshape(size, 3)


def _frame(
    reader: _Reader,
    width: int,
    height: int,
    global_map: U8Array | None,
    transparent: int | None,
    frames: list[U8Array],
) -> U8Array:
    left, top, w, h, flags = struct.unpack("<HHHHB", reader.take(9))
    color_map = _color_map(reader, flags)
    if color_map is None:
        color_map = global_map
    if color_map is None:
        raise reader.refuse(f"frame {len(frames)} of the GIF has no colour map")
    min_code_size = reader.byte()
    indices = _lzw(reader.blocks(), min_code_size, w * h, reader.refuse)
    if len(indices) < w * h:
        raise reader.refuse(f"frame {len(frames)} of the GIF holds fewer than {w}x{h} pixels")
    raster = np.frombuffer(bytes(indices[: w * h]), dtype=np.uint8).reshape(h, w)
    if flags & 0x40:
        raster = _deinterlace(raster)
    canvas = frames[-1].copy() if frames else np.zeros((height, width, 3), dtype=np.uint8)
    bottom, right = min(top + h, height), min(left + w, width)
    if bottom <= top or right <= left:
        return canvas
    window = raster[: bottom - top, : right - left]
    drawn = np.ones(window.shape, dtype=bool) if transparent is None else window != transparent
    if int(window[drawn].max(initial=0)) >= len(color_map):
        raise reader.refuse(
            f"frame {len(frames)} of the GIF uses colour index {int(window[drawn].max())} "
            f"outside its {len(color_map)}-colour map"
        )
    region = canvas[top:bottom, left:right]
    region[drawn] = color_map[window[drawn]]
    return canvas


def _deinterlace(raster: U8Array) -> U8Array:
    rows = raster.shape[0]
    order = [
        y for start, step in ((0, 8), (4, 8), (2, 4), (1, 2)) for y in range(start, rows, step)
    ]
    out = np.empty_like(raster)
    out[order] = raster
    return out


def _lzw(data: bytes, min_code_size: int, limit: int, refuse: Refuse) -> bytearray:
    """GIF's variable-width LZW; stops at the end code or once ``limit`` pixels are out."""
    if not 2 <= min_code_size <= 11:
        raise refuse(f"the GIF's LZW code size {min_code_size} is outside 2..11")
    clear, end = 1 << min_code_size, (1 << min_code_size) + 1
    table: list[bytes] = [bytes([i]) for i in range(clear)] + [b"", b""]
    size = min_code_size + 1
    out = bytearray()
    previous: bytes | None = None
    held, count, at = 0, 0, 0
    while len(out) < limit:
        while count < size and at < len(data):
            held |= data[at] << count
            count, at = count + 8, at + 1
        if count < size:
            break
        code = held & ((1 << size) - 1)
        held, count = held >> size, count - size
        if code == clear:
            table = table[: end + 1]
            size, previous = min_code_size + 1, None
            continue
        if code == end:
            break
        if code < len(table):
            entry = table[code]
            if previous is not None and len(table) < _LZW_CODES:
                table.append(previous + entry[:1])
        elif previous is not None and code == len(table):
            entry = previous + previous[:1]
            if len(table) < _LZW_CODES:
                table.append(entry)
        else:
            raise refuse(f"the GIF's LZW data holds code {code} before it is defined")
        out += entry
        previous = entry
        if len(table) == 1 << size and size < 12:
            size += 1
    return out
