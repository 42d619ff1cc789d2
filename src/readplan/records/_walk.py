"""Frame walking over a buffer: where the complete frames in ``data[off:]`` start.

Shared by the sequential reader, the header walk and the index checks
(normative: specs/tfrecord.md, sections 4 and 7).  Lengths are trusted here; callers
verify the header CRCs of a whole batch afterwards with :func:`good_headers`.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

from readplan.records._crc import crc32c, length_crcs, length_crcs32, mask, mask_array

__all__ = ["gather_u32", "good_headers", "leading_matches", "walk_frames"]

Int64Array = npt.NDArray[np.int64]
U32Array = npt.NDArray[np.uint32]

_LENGTH = struct.Struct("<Q")
# A run of equal-length frames shorter than this is walked one frame at a time.
_MIN_RUN = 16
_ARANGE4 = np.arange(4, dtype=np.int64)


def walk_frames(data: bytes, off: int) -> tuple[Int64Array, int]:
    """Starts of the frames that lie complete in ``data[off:]``, and the offset after them.

    Where consecutive frames have the same length, a run of them is confirmed with one
    strided numpy comparison instead of one loop step per frame; the result is the same
    either way.
    """
    pieces: list[Int64Array] = []
    while True:
        run, stride = _uniform_run(data, off)
        if run < _MIN_RUN:
            break
        pieces.append(np.arange(off, off + run * stride, stride, dtype=np.int64))
        off += run * stride
    bounds = _walk_bounds(data, off)
    after = bounds.pop()
    pieces.append(np.array(bounds, dtype=np.int64))
    return (np.concatenate(pieces) if len(pieces) > 1 else pieces[0]), after


def _walk_bounds(data: bytes, off: int) -> list[int]:
    """``[off, end of frame 1, end of frame 2, ...]`` over the complete frames from ``off``."""
    end = len(data)
    bounds = [off]
    append = bounds.append
    unpack = _LENGTH.unpack_from
    try:
        while True:
            # A frame is at least 16 bytes, so "ends within the buffer" implies that its
            # 12-byte header does too; fewer than 8 bytes left raise struct.error.
            off += unpack(data, off)[0] + 16
            if off > end:
                break
            append(off)
    except struct.error:
        pass
    return bounds


def _uniform_run(data: bytes, off: int) -> tuple[int, int]:
    """``(n, stride)``: the next ``n`` complete frames all span ``stride`` bytes (n may be 0)."""
    end = len(data)
    if off + 28 > end:
        return 0, 0
    length = _LENGTH.unpack_from(data, off)[0]
    stride = length + 16
    fitting = (end - off) // stride
    if fitting < _MIN_RUN or _LENGTH.unpack_from(data, off + stride)[0] != length:
        return 0, 0
    fields = np.ndarray((fitting,), dtype="<u8", buffer=data, offset=off, strides=(stride,))
    differs = fields != length
    return (int(differs.argmax()) if differs.any() else fitting), stride


def good_headers(data: bytes, begin: Int64Array, lengths: Int64Array) -> int:
    """Number of leading frames (starting at ``begin`` in ``data``) whose length CRC verifies.

    The frames lie in ``data``, so their lengths are below ``len(data)``.  Frames of one
    length share one expected CRC, and their stored CRCs are read in place at a fixed stride.
    """
    first = int(lengths[0])
    if not (lengths != first).any():
        expected = mask(crc32c(_LENGTH.pack(first)))
        stored = np.ndarray(
            (len(begin),), dtype="<u4", buffer=data, offset=int(begin[0]) + 8, strides=(first + 16,)
        )
        return leading_matches(np.array([expected], dtype=np.uint32), stored)
    if len(data) < 1 << 32:
        computed = length_crcs32(lengths)
    else:
        length_bytes = lengths.astype("<u8").view(np.uint8).reshape(-1, 8)
        computed = length_crcs([length_bytes[:, j] for j in range(8)])
    return leading_matches(mask_array(computed), gather_u32(data, begin + 8))


def gather_u32(data: bytes, at: Int64Array) -> U32Array:
    """Little-endian uint32 values stored at the byte offsets ``at`` of ``data``."""
    raw = np.frombuffer(data, dtype=np.uint8)[at[:, None] + _ARANGE4]
    values: U32Array = raw.view("<u4").ravel()
    return values


def leading_matches(computed: U32Array, stored: U32Array) -> int:
    """Length of the longest prefix where ``computed`` equals ``stored`` (either may be a
    single value, compared with every element of the other)."""
    mismatch = computed != stored
    return int(mismatch.argmax()) if mismatch.any() else len(mismatch)
