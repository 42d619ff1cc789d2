"""Nearby records of one file read together (``specs/reader.md`` §2, "Reading runs").

A rank of several, or an example shuffle, delivers records of a file that are close but
not consecutive (every ``w``-th record of a block).  :func:`gather` reads the byte range
from the first to the last of them with one positioned read and checks only the frames it
delivers: the length field against the file's offsets, the length CRC, the data CRC.
The frames between are read from disk but never parsed, so damage in a record this
reader does not deliver is never reported by it.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

from readplan.records._cap import DEFAULT_MAX_RECORD_BYTES
from readplan.records._compression import pread
from readplan.records._crc import MASK_DELTA, crc32c
from readplan.records.tfrecord import RecordFile
from readplan.storage import Handle, size_of

__all__ = ["gather"]

IntArray = npt.NDArray[np.int64]
_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")


def gather(records: RecordFile, fd: Handle, indices: IntArray) -> list[bytes] | None:
    """The payloads of records ``indices`` (increasing) of an uncompressed file.

    ``None`` when any of them fails a check: the caller then reads them one by one, which
    raises (or, in skip mode, reports) the exact damage.
    """
    offsets = records.offsets
    total = len(offsets)
    wanted = indices.tolist()
    last = wanted[-1]
    base = int(offsets[wanted[0]])
    stop = int(offsets[last + 1]) if last + 1 < total else size_of(fd)
    data = pread(fd, stop - base, base)
    if len(data) != stop - base:
        return None
    # Offsets of the delivered records and of the frames after them, relative to ``base``.
    bounds = offsets[wanted[0] : last + 2].tolist()
    if last + 1 == total:
        bounds.append(stop)
    first = wanted[0]
    starts = [bounds[i - first] - base for i in wanted]
    ends = [bounds[i - first + 1] - base for i in wanted]
    unpack_header, unpack_u32 = _HEADER.unpack_from, _U32.unpack_from
    payloads = []
    # Runs are short (a few records): a plain loop beats numpy's fixed cost per call.
    for start, end in zip(starts, ends):
        length, stored = unpack_header(data, start)
        if length != end - start - 16 or length > DEFAULT_MAX_RECORD_BYTES:
            return None
        crc = crc32c(data[start : start + 8])
        if (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF != stored:
            return None
        payload = data[start + 12 : end - 4]
        crc = crc32c(payload)
        if (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF != unpack_u32(data, end - 4)[0]:
            return None
        payloads.append(payload)
    return payloads
