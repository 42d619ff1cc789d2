"""Resynchronisation after damage in an uncompressed file (normative: specs/tfrecord.md, 5).

When a frame's length cannot be trusted, reading resumes at the first later offset that
holds a fully verified frame (both CRCs) from which the frames chain to exactly the end of
the file.  The chain rule keeps frames embedded in a damaged record's payload out: they
verify too, but their chain breaks inside that payload (or ends in what looks like a cut
frame: the payload's own data CRC).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import CorruptRecordError
from readplan.records._crc import crc32c, header_candidates, mask
from readplan.records.tfrecord._layout import CRC, LENGTH
from readplan.records.tfrecord._stream import PlainStream

__all__ = ["resync"]

_SCAN_WINDOW = 1 << 20

Chain = Callable[[int], Iterator[IntArray]]


def resync(stream: PlainStream, scan_from: int, *, max_record_bytes: int, chain: Chain) -> bool:
    """Move ``stream`` to the next sound resumption point; False if there is none.

    ``chain(start)`` walks the frame headers from ``start`` to the end of the file in
    batches of offsets, raising :class:`CorruptRecordError` where the chain breaks.  The
    frames of a broken chain are remembered, so that each is walked at most once.
    """
    stream.skip(scan_from - stream.pos)
    broken: set[int] = set()
    while True:
        have = stream.fill(_SCAN_WINDOW)
        if have < 12:
            stream.skip(have)
            return False
        window = np.frombuffer(stream.data, dtype=np.uint8, count=have, offset=stream.off)
        for candidate in header_candidates(window).tolist():
            start = stream.pos + candidate
            if (
                start not in broken
                and _verified_frame_at(stream, candidate, max_record_bytes)
                and _chains_to_end(start, broken, chain)
            ):
                stream.skip(candidate)
                return True
        stream.skip(have - 11)


def _verified_frame_at(stream: PlainStream, ahead: int, max_record_bytes: int) -> bool:
    length = LENGTH.unpack_from(stream.data, stream.off + ahead)[0]
    if length > max_record_bytes or ahead + length + 16 > stream.remaining():
        return False
    size = ahead + length + 16
    if stream.fill(size) < size:
        return False
    begin = stream.off + ahead + 12
    view = memoryview(stream.data)[begin : begin + length]
    stored = CRC.unpack_from(stream.data, begin + length)[0]
    return bool(mask(crc32c(view)) == stored)


def _chains_to_end(start: int, broken: set[int], chain: Chain) -> bool:
    found: list[IntArray] = []
    try:
        for batch in chain(start):
            found.append(batch)
    except CorruptRecordError:
        for batch in found:
            broken.update(batch.tolist())
        return False
    return True
