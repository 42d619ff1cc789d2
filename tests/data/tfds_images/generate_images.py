"""Write ``decode_image_cases.json``: what TensorFlow's ``tf.image.decode_image`` gives for
encoded images of every kind TFDS stores, at every channel count and dtype TFDS asks for.

Run with a throwaway environment holding tensorflow-cpu 2.21.0, tensorflow-datasets 4.9.10
and Pillow (never a readplan dependency):

    python tests/data/tfds_images/generate_images.py

The images are made here: PNGs by a small encoder below (every bit depth and colour type,
``tRNS`` chunks, Adam7 interlacing, every row filter), JPEGs, BMPs and GIFs by Pillow.
TFDS's ``Image`` decodes with ``tf.image.decode_image(data, channels=shape[-1],
dtype=dtype)`` (``expand_animations`` left True, so a GIF gives its frames); each case is
recorded with that call's result or the error TensorFlow raises.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import tensorflow as tf
from PIL import Image

OUT = Path(__file__).with_name("decode_image_cases.json")
RNG = np.random.default_rng(20261201)
CHANNELS_OF = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _filter_rows(raw: np.ndarray, bpp: int, filters: list[int]) -> bytes:
    """Rows of bytes, each filtered by its entry of ``filters`` (PNG filters 0-4)."""
    out = bytearray()
    previous = np.zeros(raw.shape[1], dtype=np.int64)
    for row, kind in zip(raw.astype(np.int64), filters):
        left = np.concatenate([np.zeros(bpp, dtype=np.int64), row[:-bpp]])
        upleft = np.concatenate([np.zeros(bpp, dtype=np.int64), previous[:-bpp]])
        if kind == 0:
            predicted = np.zeros_like(row)
        elif kind == 1:
            predicted = left
        elif kind == 2:
            predicted = previous
        elif kind == 3:
            predicted = (left + previous) // 2
        else:
            p = left + previous - upleft
            pa, pb, pc = abs(p - left), abs(p - previous), abs(p - upleft)
            predicted = np.where(
                (pa <= pb) & (pa <= pc), left, np.where(pb <= pc, previous, upleft)
            )
        out.append(kind)
        out += ((row - predicted) % 256).astype(np.uint8).tobytes()
        previous = row
    return bytes(out)


def _bad_crc(data: bytes, kind: bytes) -> bytes:
    """``data`` with the CRC of its first ``kind`` chunk flipped."""
    at = data.index(kind) - 4
    (length,) = struct.unpack(">I", data[at : at + 4])
    end = at + 12 + length
    return data[: end - 1] + bytes([data[end - 1] ^ 0xFF]) + data[end:]


def _pack(samples: np.ndarray, depth: int) -> np.ndarray:
    """(h, w*channels) samples -> rows of bytes at ``depth`` bits per sample."""
    if depth == 16:
        return samples.astype(">u2").view(np.uint8).reshape(samples.shape[0], -1)
    if depth == 8:
        return samples.astype(np.uint8)
    per_byte = 8 // depth
    h, n = samples.shape
    padded = np.zeros((h, -(-n // per_byte) * per_byte), dtype=np.uint8)
    padded[:, :n] = samples
    grouped = padded.reshape(h, -1, per_byte)
    shifts = np.array([8 - depth * (k + 1) for k in range(per_byte)], dtype=np.uint8)
    return (grouped << shifts).sum(axis=2).astype(np.uint8)


_ADAM7 = (
    (0, 0, 8, 8),
    (0, 4, 8, 8),
    (4, 0, 8, 4),
    (0, 2, 4, 4),
    (2, 0, 4, 2),
    (0, 1, 2, 2),
    (1, 0, 2, 1),
)


def png(
    pixels: np.ndarray,
    color: int,
    depth: int,
    *,
    palette: np.ndarray | None = None,
    trns: bytes | None = None,
    interlace: bool = False,
    extra: tuple[tuple[bytes, bytes], ...] = (),
) -> bytes:
    """A PNG of ``pixels`` (h, w, channels as stored) with every row filter used in turn."""
    h, w, c = pixels.shape
    bpp = max(1, c * depth // 8)
    ihdr = struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 1 if interlace else 0)
    body = b"".join(_chunk(kind, data) for kind, data in extra)
    if palette is not None:
        body += _chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        body += _chunk(b"tRNS", trns)
    passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
    raw = b""
    for y0, x0, dy, dx in passes:
        sub = pixels[y0::dy, x0::dx]
        if sub.size == 0:
            continue
        rows = _pack(sub.reshape(sub.shape[0], -1), depth)
        raw += _filter_rows(rows, bpp, [(k + y0 + x0) % 5 for k in range(rows.shape[0])])
    idat = zlib.compress(raw, 9)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + body
        + _chunk(b"IDAT", idat)
        + _chunk(b"IEND", b"")
    )


def _samples(h: int, w: int, c: int, depth: int, grayish: bool = False) -> np.ndarray:
    top = (1 << depth) - 1
    values = RNG.integers(0, top + 1, size=(h, w, c), dtype=np.int64)
    # Corners hold the extremes, and some pixels have equal colour channels (a gray pixel
    # of a colour image: libpng's colour-to-gray keeps those exact).
    values[0, 0] = 0
    values[-1, -1] = top
    if c >= 3 or grayish:
        values[0, -1, :3] = values[0, -1, 0]
    return values


def png_cases() -> list[tuple[str, bytes]]:
    cases: list[tuple[str, bytes]] = []
    for color, depths in ((0, (1, 2, 4, 8, 16)), (2, (8, 16)), (4, (8, 16)), (6, (8, 16))):
        for depth in depths:
            c = CHANNELS_OF[color]
            for interlace in (False, True):
                pixels = _samples(5, 7, c, depth)
                suffix = " interlaced" if interlace else ""
                name = f"png ct{color} d{depth}{suffix}"
                cases.append((name, png(pixels, color, depth, interlace=interlace)))
    for depth in (1, 2, 4, 8):
        n = 1 << depth
        palette = RNG.integers(0, 256, size=(n, 3))
        pixels = RNG.integers(0, n, size=(4, 6, 1))
        cases.append((f"png palette d{depth}", png(pixels, 3, depth, palette=palette)))
        alphas = bytes(RNG.integers(0, 256, size=min(n, 3)).tolist())
        cases.append(
            (f"png palette d{depth} tRNS", png(pixels, 3, depth, palette=palette, trns=alphas))
        )
    # tRNS on gray and RGB: one colour is transparent.
    for depth in (1, 2, 4, 8, 16):
        pixels = _samples(4, 5, 1, depth)
        key = int(pixels[1, 1, 0])
        cases.append(
            (f"png gray d{depth} tRNS", png(pixels, 0, depth, trns=struct.pack(">H", key)))
        )
    for depth in (8, 16):
        pixels = _samples(4, 5, 3, depth)
        key = pixels[1, 1].tolist()
        pixels[2, 3] = key
        cases.append(
            (f"png rgb d{depth} tRNS", png(pixels, 2, depth, trns=struct.pack(">HHH", *key)))
        )
    # An ancillary gAMA chunk (libpng's colour-to-gray could use it).
    pixels = _samples(3, 4, 3, 8)
    cases.append(
        ("png rgb d8 gAMA", png(pixels, 2, 8, extra=((b"gAMA", struct.pack(">I", 45455)),)))
    )
    pixels = _samples(3, 4, 4, 16)
    cases.append(
        ("png rgba d16 gAMA", png(pixels, 6, 16, extra=((b"gAMA", struct.pack(">I", 100000)),)))
    )
    # Gammas libpng applies when turning colour into gray (sRGB implies 1/2.2), on RGB,
    # RGBA and palette images; 0.97 is within libpng's threshold and ignored.
    for label, chunk in (
        ("gAMA 2.2", (b"gAMA", struct.pack(">I", 220000))),
        ("gAMA 0.97", (b"gAMA", struct.pack(">I", 97000))),
        ("sRGB", (b"sRGB", b"\x00")),
    ):
        pixels = _samples(4, 6, 3, 8)
        cases.append((f"png rgb d8 {label}", png(pixels, 2, 8, extra=(chunk,))))
        pixels = _samples(3, 5, 4, 8)
        cases.append((f"png rgba d8 {label}", png(pixels, 6, 8, extra=(chunk,))))
        palette = RNG.integers(0, 256, size=(16, 3))
        indices = RNG.integers(0, 16, size=(4, 4, 1))
        cases.append(
            (f"png palette d4 {label}", png(indices, 3, 4, palette=palette, extra=(chunk,)))
        )
    pixels = _samples(3, 4, 3, 16)
    cases.append(
        ("png rgb d16 gAMA 2.2", png(pixels, 2, 16, extra=((b"gAMA", struct.pack(">I", 220000)),)))
    )
    for label, chunk in (
        ("gAMA 0.45455", (b"gAMA", struct.pack(">I", 45455))),
        ("sRGB", (b"sRGB", b"\x00")),
        ("gAMA 1.6", (b"gAMA", struct.pack(">I", 160000))),
    ):
        pixels = _samples(5, 7, 3, 16)
        cases.append((f"png rgb d16 {label}", png(pixels, 2, 16, extra=(chunk,))))
        pixels = _samples(4, 6, 4, 16)
        cases.append((f"png rgba d16 {label}", png(pixels, 6, 16, extra=(chunk,))))
    # Gray pixels of 16-bit colour images over the whole range, with gamma: libpng takes
    # them through its overall table (16 to 8 bits: png_build_16to8_table's boundaries).
    sweep = (np.arange(64 * 64, dtype=np.int64) * 16 + 7).reshape(64, 64, 1).repeat(3, axis=2)
    for label, chunk in (
        ("sRGB", (b"sRGB", b"\x00")),
        ("gAMA 2.2", (b"gAMA", struct.pack(">I", 220000))),
    ):
        cases.append((f"png rgb d16 gray sweep {label}", png(sweep, 2, 16, extra=(chunk,))))
    # A chunk failing its CRC: libpng refuses a critical one and drops an ancillary one;
    # chunks after the image data are ignored.
    pixels = _samples(3, 4, 3, 16)
    cases.append(("png rgb d16 bad IDAT CRC", _bad_crc(png(pixels, 2, 16), b"IDAT")))
    key = pixels[1, 1].tolist()
    keyed = png(pixels, 2, 16, trns=struct.pack(">HHH", *key))
    cases.append(("png rgb d16 tRNS bad tRNS CRC", _bad_crc(keyed, b"tRNS")))
    gamma = png(pixels, 2, 16, extra=((b"gAMA", struct.pack(">I", 220000)),))
    cases.append(("png rgb d16 gAMA bad gAMA CRC", _bad_crc(gamma, b"gAMA")))
    late = png(pixels, 2, 16)
    gama = _chunk(b"gAMA", struct.pack(">I", 220000))
    cases.append(("png rgb d16 gAMA after IDAT", late[:-12] + gama + late[-12:]))
    # The example: 16-bit RGB [[4660, 43981, 255], ...].
    pixels = np.array([[[4660, 43981, 255], [0, 65535, 32768]]], dtype=np.int64)
    cases.append(("png rgb d16 example", png(pixels, 2, 16)))
    return cases


def _pil_bytes(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def other_cases() -> list[tuple[str, bytes]]:
    cases: list[tuple[str, bytes]] = []
    rgb = Image.fromarray(RNG.integers(0, 256, size=(6, 5, 3), dtype=np.uint8), "RGB")
    rgba = Image.fromarray(RNG.integers(0, 256, size=(6, 5, 4), dtype=np.uint8), "RGBA")
    gray = Image.fromarray(RNG.integers(0, 256, size=(6, 5), dtype=np.uint8), "L")
    # BMP: 24-bit, 32-bit, 8-bit palette and 1-bit (Pillow writes bottom-up rows).
    cases.append(("bmp rgb24", _pil_bytes(rgb, "BMP")))
    cases.append(("bmp rgba32", _pil_bytes(rgba, "BMP")))
    cases.append(("bmp gray8", _pil_bytes(gray, "BMP")))
    cases.append(("bmp palette8", _pil_bytes(rgb.convert("P"), "BMP")))
    cases.append(("bmp bw1", _pil_bytes(gray.convert("1"), "BMP")))
    wide = Image.fromarray(RNG.integers(0, 256, size=(3, 7, 3), dtype=np.uint8), "RGB")
    cases.append(("bmp rgb24 odd width", _pil_bytes(wide, "BMP")))
    # JPEG: colour, gray, CMYK (Pillow writes Adobe CMYK, inverted).
    smooth = np.add.outer(np.arange(16), np.arange(16)).astype(np.uint8) * 7
    colour = Image.fromarray(np.stack([smooth, smooth[::-1], smooth.T], axis=2), "RGB")
    cases.append(("jpeg rgb", _pil_bytes(colour, "JPEG", quality=90)))
    cases.append(("jpeg gray", _pil_bytes(colour.convert("L"), "JPEG", quality=90)))
    cmyk = Image.fromarray(
        np.stack([smooth, smooth[::-1], smooth.T, smooth.T[::-1] // 2], axis=2), "CMYK"
    )
    cases.append(("jpeg cmyk", _pil_bytes(cmyk, "JPEG", quality=90)))
    cases.append(("jpeg cmyk 4:4:4", _pil_bytes(cmyk, "JPEG", quality=95, subsampling=0)))
    # GIF: one frame, and animated (3 frames, the second smaller, with transparency).
    frames = [
        Image.fromarray(RNG.integers(0, 256, size=(5, 6, 3), dtype=np.uint8), "RGB").convert(
            "P", palette=Image.Palette.ADAPTIVE, colors=16
        )
        for _ in range(3)
    ]
    cases.append(("gif one frame", _pil_bytes(frames[0], "GIF")))
    cases.append(
        (
            "gif animated",
            _pil_bytes(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=40),
        )
    )
    return cases


def _leaf(array: np.ndarray) -> dict[str, object]:
    return {
        "dtype": str(array.dtype),
        "shape": list(array.shape),
        "values": base64.b64encode(
            np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        ).decode(),
    }


def decode(data: bytes, channels: int, dtype: tf.DType) -> dict[str, object]:
    try:
        image = tf.image.decode_image(data, channels=channels or None, dtype=dtype)
        return {"ok": True, **_leaf(image.numpy())}
    except (tf.errors.OpError, ValueError) as err:
        message = getattr(err, "message", str(err)).split("}} ")[-1]
        return {"ok": False, "error": type(err).__name__, "message": message.splitlines()[0][:300]}


def main() -> None:
    tf.config.set_visible_devices([], "GPU")
    cases = []
    for name, data in [*png_cases(), *other_cases()]:
        results = {
            f"{channels}/{dtype.name}": decode(data, channels, dtype)
            for channels in (0, 1, 2, 3, 4)
            for dtype in (tf.uint8, tf.uint16)
        }
        cases.append({"name": name, "bytes": base64.b64encode(data).decode(), "decoded": results})
    document = {
        "tf_version": tf.__version__,
        "call": "tf.image.decode_image(bytes, channels=C or None, dtype=D) "
        "(expand_animations=True, as TFDS's Image.decode_example); key 'C/D', C=0 for None",
        "values": "little-endian bytes of the C-order array, base64",
        "cases": cases,
    }
    OUT.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} images to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
