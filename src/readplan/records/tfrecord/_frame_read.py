"""Reading one large frame's data from a local file (normative: ``specs/native.md`` §3).

:func:`read_frame_data` reads the data straight into the ``bytes`` object that becomes the
record and the bytes after it (its data CRC and the next header) in the same system call, and
computes the data's CRC32C while it is in the processor's cache: each byte is copied once.  The
compiled kernel comes from :mod:`readplan.records.native` (where the system has positioned
vectored reads); :func:`read_frame_data_pure` is its twin, with the same results and errors.
"""

from __future__ import annotations

import os
from typing import Final

from readplan.records._crc import crc32c
from readplan.records.native import CORE
from readplan.records.tfrecord._compression import pread

__all__ = ["MAX_TAIL", "read_frame_data", "read_frame_data_pure"]

MAX_TAIL: Final = 16
"""The most bytes read after the data: its CRC and the next frame's 12-byte header."""


def read_frame_data_pure(
    fd: int, offset: int, length: int, tail: int, verify: bool
) -> tuple[bytes, bytes, int] | None:
    """``(data, after, crc)``: the ``length`` bytes at ``offset``, up to ``tail`` bytes after
    them (fewer only at the end of the file) and, with ``verify``, the data's CRC32C (else 0);
    ``None`` when the file ends inside the data.  Nothing is allocated before the file's size
    shows that the data is there."""
    if offset < 0 or length < 0 or not 0 <= tail <= MAX_TAIL:
        raise ValueError(
            f"read_frame_data: offset {offset} and length {length} must be >= 0 and tail "
            f"{tail} in [0, {MAX_TAIL}]"
        )
    size = os.fstat(fd).st_size
    if offset > size or length > size - offset:
        return None
    data = pread(fd, length, offset)
    if len(data) < length:
        return None
    return data, pread(fd, tail, offset + length), crc32c(data) if verify else 0


read_frame_data = (
    CORE.read_frame_data if CORE is not None and os.name != "nt" else read_frame_data_pure
)
