"""Small image files whose headers claim large images (decompression bombs).

Each is a well-formed file as far as its header goes, built from the format's rules (PNG
chunks with their CRCs; a real JPEG whose frame header's size is rewritten), so a decoder
reading it would allocate what the header says.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["gif_claiming", "jpeg_claiming", "png_claiming"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_SOF_MARKERS = tuple(bytes([0xFF, code]) for code in (0xC0, 0xC1, 0xC2))


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))
        + kind
        + payload
        + struct.pack(">I", zlib.crc32(kind + payload))
    )


def png_claiming(height: int, width: int, *, color_type: int = 2, rows: int = 1) -> bytes:
    """A PNG whose IHDR says ``height`` x ``width`` (8-bit, ``color_type``) and whose IDAT
    holds only ``rows`` zero rows: the header is all a decoder needs to allocate."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    raw = (b"\x00" + bytes(width * channels)) * rows
    return (
        _PNG_SIGNATURE
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def jpeg_claiming(height: int, width: int, *, gray: bool = False) -> bytes:
    """A real 16 x 16 JPEG whose frame header is rewritten to say ``height`` x ``width``."""
    import simplejpeg

    pixels = np.zeros((16, 16, 1 if gray else 3), np.uint8)
    data = bytearray(
        simplejpeg.encode_jpeg(pixels, colorspace="GRAY" if gray else "RGB", quality=90)
    )
    start = min(data.find(marker) for marker in _SOF_MARKERS if marker in data)
    # SOFn: marker, length (2), precision (1), height (2), width (2).
    data[start + 5 : start + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def gif_claiming(height: int, width: int, *, frames: int) -> bytes:
    """A GIF whose screen is ``height`` x ``width`` and whose ``frames`` frames are one pixel
    each: every frame decodes to a whole screen."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + bytes(6)  # 2-colour table
    # One 1 x 1 frame: LZW codes clear (4), 0, end (5) at 3 bits, least significant first.
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + frame * frames + b"\x3b"
