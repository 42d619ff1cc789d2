"""Frame walking over a buffer: where the complete frames in ``data[off:]`` start.

Shared by the frame scan's pure twin, the header walk and the index checks
(normative: specs/tfrecord.md, sections 4 and 7).  Lengths are trusted here; callers
verify the CRCs of a whole batch afterwards with :func:`good_frames`.
"""

from __future__ import annotations

import struct

import numpy as np

from readplan._internal.arrays import BytesLike, IntArray, U32Array
from readplan.records._crc import crc32c, mask, mask_array, masked_length_crcs
from readplan.records.tfrecord._layout import LENGTH

__all__ = ["gather_u32", "good_frames", "walk_frames"]


# A run of equal-length frames shorter than this is walked one frame at a time.
_MIN_RUN = 16
_ARANGE4 = np.arange(4, dtype=np.int64)


def walk_frames(data: BytesLike, off: int) -> IntArray:
    """Starts of the frames that lie complete in ``data[off:]``, then the offset after them.

    Where consecutive frames have the same length, a run of them is confirmed with one
    strided numpy comparison instead of one loop step per frame; the result is the same
    either way.
    """
    pieces: list[IntArray] = []
    while True:
        run, stride = _uniform_run(data, off)
        if run < _MIN_RUN:
            break
        pieces.append(np.arange(off, off + run * stride, stride, dtype=np.int64))
        off += run * stride
    pieces.append(np.array(_walk_bounds(data, off), dtype=np.int64))
    return np.concatenate(pieces) if len(pieces) > 1 else pieces[0]


def _walk_bounds(data: BytesLike, off: int) -> list[int]:
    """``[off, end of frame 1, end of frame 2, ...]`` over the complete frames from ``off``."""
    end = len(data)
    bounds = [off]
    append = bounds.append
    unpack = LENGTH.unpack_from
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


def _uniform_run(data: BytesLike, off: int) -> tuple[int, int]:
    """``(n, stride)``: the next ``n`` complete frames all span ``stride`` bytes (n may be 0)."""
    end = len(data)
    if off + 28 > end:
        return 0, 0
    length = LENGTH.unpack_from(data, off)[0]
    stride = length + 16
    fitting = (end - off) // stride
    if fitting < _MIN_RUN or LENGTH.unpack_from(data, off + stride)[0] != length:
        return 0, 0
    fields = np.ndarray((fitting,), dtype="<u8", buffer=data, offset=off, strides=(stride,))
    differs = fields != length
    return (int(differs.argmax()) if differs.any() else fitting), stride


def good_frames(
    data: BytesLike, begin: IntArray, lengths: IntArray, data_crcs: U32Array | None = None
) -> int:
    """Number of leading frames (starting at ``begin`` in ``data``) whose length CRC verifies
    and, given ``data_crcs`` (the CRC32C of each frame's data), whose data CRC too.

    Frames of one length share one expected length CRC, and their stored CRCs are read in
    place at a fixed stride; otherwise both stored CRCs of every frame are gathered at once.
    """
    count = len(begin)
    first = int(lengths[0])
    if not (lengths != first).any():
        stride = first + 16

        def stored(at: int) -> U32Array:
            offset = int(begin[0]) + at
            view: U32Array = np.ndarray(
                (count,), dtype="<u4", buffer=data, offset=offset, strides=(stride,)
            )
            return view

        bad = stored(8) != np.uint32(mask(crc32c(LENGTH.pack(first))))
        if data_crcs is not None:
            bad |= stored(12 + first) != mask_array(data_crcs)
    else:
        expected = masked_length_crcs(lengths)
        at = begin + 8
        if data_crcs is not None:
            expected = np.concatenate((expected, mask_array(data_crcs)))
            at = np.concatenate((at, at + 4 + lengths))
        bad = (gather_u32(data, at) != expected).reshape(-1, count).any(axis=0)
    return int(bad.argmax()) if bad.any() else count


def gather_u32(data: BytesLike, at: IntArray) -> U32Array:
    """Little-endian uint32 values stored at the byte offsets ``at`` of ``data``."""
    raw = np.frombuffer(data, dtype=np.uint8)[at[:, None] + _ARANGE4]
    values: U32Array = raw.view("<u4").ravel()
    return values
