"""Reading large frames from a local file (normative: ``specs/native.md`` §3).

:func:`read_large_frames` reads consecutive large frames with no Python step per frame, each
with one system call: its data straight into the ``bytes`` object that becomes the record, its
CRC and the next header with it, and the data's CRC32C computed while it is in the processor's
cache (each byte is copied once).  The compiled kernel comes from
:mod:`readplan.records.native` (where the system has positioned vectored reads);
:func:`read_large_frames_pure` is its twin, with the same results and errors, and
:func:`large_frames` the loop over any reader of frame data (:func:`frame_data` for a local
file, or a remote handle's).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Final

from readplan.records._crc import crc32c, mask
from readplan.records.native import CORE
from readplan.records.tfrecord._compression import pread
from readplan.records.tfrecord._layout import CRC, HEADER

__all__ = [
    "MAX_TAIL",
    "FrameData",
    "frame_data",
    "large_frames",
    "read_large_frames",
    "read_large_frames_pure",
]

FrameData = Callable[[int, int, int, bool], "tuple[bytes, bytes, int] | None"]
"""``(offset, length, tail, verify) -> (data, after, crc) | None``, as :func:`frame_data`."""

MAX_TAIL: Final = 16
"""The most bytes read after the data: its CRC and the next frame's 12-byte header."""


def frame_data(
    fd: int, offset: int, length: int, tail: int, verify: bool
) -> tuple[bytes, bytes, int] | None:
    """``(data, after, crc)``: the ``length`` bytes at ``offset``, up to ``tail`` bytes after
    them (fewer only at the end of the file) and, with ``verify``, the data's CRC32C (else 0);
    ``None`` when the file ends inside the data.  Nothing is allocated before the file's size
    shows that the data is there."""
    if offset < 0 or length < 0 or not 0 <= tail <= MAX_TAIL:
        raise ValueError(
            f"frame_data: offset {offset} and length {length} must be >= 0 and tail "
            f"{tail} in [0, {MAX_TAIL}]"
        )
    size = os.fstat(fd).st_size
    if offset > size or length > size - offset:
        return None
    data = pread(fd, length, offset)
    if len(data) < length:
        return None
    return data, pread(fd, tail, offset + length), crc32c(data) if verify else 0


def large_frames(
    frame_data: FrameData,
    head: bytes | memoryview,
    pos: int,
    end: int,
    max_length: int,
    verify: bool,
    limit: int,
    budget: int,
    least: int,
) -> tuple[list[bytes], int, bytes]:
    """``(records, pos, tail)``: consecutive frames from file offset ``pos``, whose first
    bytes are ``head``, read by ``frame_data``; the loop stops before the first frame that is
    not a sound frame of ``least`` to ``max_length`` bytes lying whole before ``end``, after
    ``limit`` frames (``-1``: no limit) or once ``budget`` bytes were read.  ``pos`` is where
    the frames read end and ``tail`` the bytes read after the last one's data (its CRC and
    what follows of the next header; ``b""`` for no frame)."""
    records: list[bytes] = []
    cur, tail, size = bytes(head[:12]), b"", 0
    while len(records) != limit and len(cur) >= 12 and size < budget:
        length, stored = HEADER.unpack_from(cur)
        after = pos + length + 16
        if not least <= length <= max_length or after > end or mask(crc32c(cur[:8])) != stored:
            break
        got = frame_data(pos + 12, length, min(MAX_TAIL, end - after + 4), verify)
        if got is None or len(got[1]) < 4:
            break
        data, tail_read, crc = got
        if verify and mask(crc) != CRC.unpack_from(tail_read)[0]:
            break
        records.append(data)
        size += length
        pos, tail, cur = after, tail_read, tail_read[4:]
    return records, pos, tail


def read_large_frames_pure(
    fd: int,
    head: bytes | memoryview,
    pos: int,
    end: int,
    max_length: int,
    verify: bool,
    limit: int,
    budget: int,
    least: int,
) -> tuple[list[bytes], int, bytes]:
    """:func:`large_frames` over the local file ``fd``, each frame by :func:`frame_data`."""
    if max_length < 0:
        raise ValueError(f"read_large_frames: max_length must be >= 0, got {max_length}")
    if pos < 0 or end < pos or least < 0:
        raise ValueError(
            "read_large_frames: need 0 <= pos <= end and least >= 0, got pos "
            f"{pos}, end {end}, least {least}"
        )
    reader = partial(frame_data, fd)
    return large_frames(reader, head, pos, end, max_length, verify, limit, budget, least)


_COMPILED = CORE if os.name != "nt" else None  # no positioned vectored reads on Windows
read_large_frames = _COMPILED.read_large_frames if _COMPILED is not None else read_large_frames_pure
