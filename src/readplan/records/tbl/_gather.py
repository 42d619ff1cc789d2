"""Batches of RAW_U8 images gathered, flipped and normalized in one pass (normative:
``specs/native.md`` §8).

:func:`gather_images` copies the images ``rows`` of a ``(N, H, W, 3)`` uint8 array (a TBL
file's :meth:`~readplan.tbl.TblFile.raw_view` memory map, or any array) into ``out``, each
mirrored left to right where ``flips`` says so, as uint8, or as float32 or float16 computed
as ``x * scale[c] + shift[c]`` in float32 (then rounded to float16, nearest even), laid out
NHWC or NCHW.  The compiled kernel comes from :mod:`readplan.records.native`;
:func:`gather_images_pure` is its numpy twin, with the same bits and the same errors.
"""

from __future__ import annotations

from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray, U8Array
from readplan.records.native import CORE

__all__ = ["KINDS", "OutKind", "gather_images", "gather_images_pure", "normalization"]

OutKind = Literal["uint8", "float32", "float16"]
KINDS: Final[tuple[OutKind, ...]] = ("uint8", "float32", "float16")
"""The output types, by the kernel's numbering."""

Triple = tuple[float, float, float]


def normalization(mean: Triple, std: Triple) -> tuple[Triple, Triple]:
    """``(scale, shift)`` that map a pixel ``x`` of channel ``c`` to
    ``(x / 255 - mean[c]) / std[c]`` as ``x * scale[c] + shift[c]``, both float32."""
    m = np.asarray(mean, dtype=np.float32)
    s = np.asarray(std, dtype=np.float32)
    scale = np.float32(1) / (np.float32(255) * s)
    shift = -m / s
    return _triple(scale), _triple(shift)


def _triple(values: npt.NDArray[np.float32]) -> Triple:
    a, b, c = (float(v) for v in values)
    return a, b, c


def gather_images_pure(
    images: U8Array,
    rows: IntArray,
    flips: U8Array | None,
    scale: Triple,
    shift: Triple,
    out: npt.NDArray[np.generic],
    kind: int,
    channels_last: bool,
) -> None:
    """:func:`gather_images` in numpy."""
    n, h, w = _checked(images, rows, flips, out, kind)
    picked = images.reshape(n, h, w, 3)[rows]
    if flips is not None and flips.any():
        mirrored = flips.astype(bool)
        picked[mirrored] = picked[mirrored][:, :, ::-1]
    if not channels_last:
        picked = picked.transpose(0, 3, 1, 2)
    if kind == 0:
        out.reshape(picked.shape)[...] = picked
        return
    channel_axis = -1 if channels_last else 1
    shape = [1, 1, 1, 1]
    shape[channel_axis] = 3
    a = np.asarray(scale, dtype=np.float32).reshape(shape)
    b = np.asarray(shift, dtype=np.float32).reshape(shape)
    values = picked.astype(np.float32) * a + b
    out.reshape(picked.shape)[...] = values if kind == 1 else values.astype(np.float16)


def _checked(
    images: U8Array,
    rows: IntArray,
    flips: U8Array | None,
    out: npt.NDArray[np.generic],
    kind: int,
) -> tuple[int, int, int]:
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise ValueError("gather_images: images must hold n * h * w * 3 bytes")
    n, h, w, _ = images.shape
    count = len(rows)
    if flips is not None and len(flips) != count:
        raise ValueError("gather_images: flips must hold one byte per row")
    item = (1, 4, 2)[kind]
    if out.nbytes != count * h * w * 3 * item or out.dtype.itemsize != item:
        raise ValueError(
            "gather_images: out must hold rows * h * w * 3 items of the output type"
            if count
            else "gather_images: out must be empty for no rows"
        )
    if count and (int(rows.min()) < 0 or int(rows.max()) >= n):
        raise ValueError("gather_images: a row is outside [0, n)")
    return n, h, w


def gather_images(
    images: U8Array,
    rows: IntArray,
    flips: U8Array | None,
    scale: Triple,
    shift: Triple,
    out: npt.NDArray[np.generic],
    kind: int,
    channels_last: bool,
) -> None:
    """The images ``rows`` of the ``(N, H, W, 3)`` uint8 array ``images`` into ``out``
    (``len(rows)`` images, NHWC with ``channels_last``, else NCHW), each mirrored where
    ``flips`` is non-zero; ``kind`` 0 copies the pixels, 1 and 2 write ``x * scale[c] +
    shift[c]`` as float32 or float16.  Arguments that do not fit raise ``ValueError``."""
    if CORE is None:
        gather_images_pure(images, rows, flips, scale, shift, out, kind, channels_last)
        return
    if images.ndim != 4 or images.dtype != np.uint8:
        raise ValueError("gather_images: images must hold n * h * w * 3 bytes")
    n, h, w, _ = images.shape
    CORE.gather_images(images, n, h, w, rows, flips, scale, shift, out, kind, channels_last)
