"""The frame scan kernel: verified frames in a buffer, and their payloads cut or packed
(normative: ``specs/native.md`` §3, ``specs/tfrecord.md`` §4).

:func:`scan_frames` finds the frames that lie complete and sound in ``data[off:]`` and says
why it stopped; the parser words any damage itself (one authority for messages).  The compiled
kernels come from :mod:`readplan.records.native`; the functions named ``*_pure`` are their
reference twins, with the same results and the same errors.
"""

from __future__ import annotations

from typing import Final, NoReturn

import numpy as np

from readplan._internal.arrays import BytesLike, IntArray, U32Array
from readplan.records._crc import crc32c, mask
from readplan.records.native import CORE
from readplan.records.tfrecord._layout import CRC, HEADER
from readplan.records.tfrecord._walk import good_frames, walk_frames

__all__ = [
    "INCOMPLETE",
    "RUNNING",
    "STOP_DATA_CRC",
    "STOP_LENGTH_CRC",
    "STOP_LIMIT",
    "STOP_TOO_LONG",
    "cut",
    "cut_pure",
    "pack",
    "pack_pure",
    "record_run",
    "record_run_pure",
    "scan_frames",
    "scan_frames_pure",
    "scan_pack",
    "scan_pack_pure",
    "scan_records",
    "scan_records_pure",
    "scratch",
]

INCOMPLETE: Final = 0
"""The next frame does not lie complete in the buffer (or fewer than 16 bytes are left)."""
STOP_LIMIT: Final = 1
"""``limit`` frames were found, or the output arrays are full."""
STOP_LENGTH_CRC: Final = 2
"""The next frame's length CRC does not verify."""
STOP_TOO_LONG: Final = 3
"""The next frame's length is over ``max_length``."""
STOP_DATA_CRC: Final = 4
"""The next frame's data CRC does not verify (only with ``verify``)."""
RUNNING: Final = -1
"""A record run's ``stop`` while it has not stopped."""


def scratch(size: int) -> tuple[IntArray, IntArray]:
    """Output arrays for a scan of ``size`` bytes: room for every frame they can hold."""
    capacity = size // 16 + 1
    return np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int64)


def scan_frames_pure(
    data: BytesLike,
    off: int,
    limit: int,
    max_length: int,
    verify: bool,
    starts: IntArray,
    lengths: IntArray,
) -> tuple[int, int, int]:
    """``(count, end, stop)``: the frames from ``off`` that are complete, no longer than
    ``max_length`` and whose length CRC (and with ``verify`` data CRC) verifies, ``limit`` at
    most (``-1``: as many as ``starts`` and ``lengths`` hold); their offsets and data lengths
    are written to ``starts[:count]`` and ``lengths[:count]``, ``end`` is where the next frame
    starts and ``stop`` says why the scan ended there."""
    if off < 0:
        raise ValueError(f"scan_frames: off must be >= 0, got {off}")
    if max_length < 0:
        raise ValueError(f"scan_frames: max_length must be >= 0, got {max_length}")
    view = memoryview(data).cast("B")
    capacity = min(len(starts), len(lengths))
    most = capacity if limit < 0 else min(limit, capacity)
    if most == 0:
        return 0, off, STOP_LIMIT
    bounds = walk_frames(view, off) if off <= len(view) else np.array([off], dtype=np.int64)
    begin = bounds[:-1][:most]
    sizes = (bounds[1:] - bounds[:-1])[:most] - 16
    good = _sound_prefix(view, begin, sizes, max_length, verify)
    starts[:good] = begin[:good]
    lengths[:good] = sizes[:good]
    end = int(begin[good]) if good < len(begin) else int(bounds[len(begin)])
    if good == most:
        return good, end, STOP_LIMIT
    return good, end, _stop_at(view, end, max_length, verify)


def _sound_prefix(
    view: memoryview, begin: IntArray, sizes: IntArray, max_length: int, verify: bool
) -> int:
    """How many leading frames of a trusted-length walk are sound."""
    if not len(begin):
        return 0
    computed: U32Array | None = None
    if verify:
        spans = zip(begin.tolist(), sizes.tolist(), strict=True)
        computed = np.fromiter(
            (crc32c(view[b + 12 : b + 12 + n]) for b, n in spans), dtype=np.uint32, count=len(begin)
        )
    good = good_frames(view, begin, sizes, computed)
    over = np.flatnonzero(sizes[:good] > max_length)
    return int(over[0]) if over.size else good


def _stop_at(view: memoryview, at: int, max_length: int, verify: bool) -> int:
    """Why the frame at ``at`` is not taken, checked in the compiled kernel's order."""
    if len(view) - at < 16:
        return INCOMPLETE
    length, stored = HEADER.unpack_from(view, at)
    if mask(crc32c(view[at : at + 8])) != stored:
        return STOP_LENGTH_CRC
    if length > max_length:
        return STOP_TOO_LONG
    if length > len(view) - at - 16:
        return INCOMPLETE
    if (
        verify
        and mask(crc32c(view[at + 12 : at + 12 + length]))
        != CRC.unpack_from(view, at + 12 + length)[0]
    ):
        return STOP_DATA_CRC
    raise AssertionError(f"the frame at {at} is sound but was not taken")


def scan_records_pure(
    data: BytesLike, off: int, limit: int, max_length: int, verify: bool
) -> tuple[list[bytes], int, int]:
    """``(payloads, end, stop)``: :func:`scan_frames_pure` and :func:`cut_pure` in one call,
    ``limit`` frames at most (``-1``: no limit)."""
    if off < 0:
        raise ValueError(f"scan_records: off must be >= 0, got {off}")
    if max_length < 0:
        raise ValueError(f"scan_records: max_length must be >= 0, got {max_length}")
    size = len(memoryview(data).cast("B"))
    starts, lengths = scratch(size - min(off, size))  # room for every frame the bytes hold
    count, end, stop = scan_frames_pure(data, off, limit, max_length, verify, starts, lengths)
    return cut_pure(data, starts[:count] + 12, lengths[:count]), end, stop


class RecordRunPure:
    """The twin of the compiled ``record_run``: the records of :func:`scan_records_pure`, one
    per ``next()``, each frame checked when it is reached (in the scan's order, the data CRC
    on the record's own bytes).  Once it stops, ``count`` says how many it gave, ``end``
    where the next frame starts and ``stop`` why (``RUNNING`` until then)."""

    def __init__(
        self, data: BytesLike, off: int, limit: int, max_length: int, verify: bool
    ) -> None:
        if off < 0:
            raise ValueError(f"record_run: off must be >= 0, got {off}")
        if max_length < 0:
            raise ValueError(f"record_run: max_length must be >= 0, got {max_length}")
        self._view: memoryview | None = memoryview(data).cast("B")
        self._limit, self._max, self._verify = limit, max_length, verify
        self.count, self.end, self.stop = 0, off, RUNNING

    def __iter__(self) -> RecordRunPure:
        return self

    def __next__(self) -> bytes:
        view = self._view
        if view is None:
            raise StopIteration
        at = self.end
        if self.count == self._limit:
            return self._finish(STOP_LIMIT)
        if len(view) - at < 16:
            return self._finish(INCOMPLETE)
        length, stored = HEADER.unpack_from(view, at)
        if mask(crc32c(view[at : at + 8])) != stored:
            return self._finish(STOP_LENGTH_CRC)
        if length > self._max:
            return self._finish(STOP_TOO_LONG)
        if length > len(view) - at - 16:
            return self._finish(INCOMPLETE)
        record = bytes(view[at + 12 : at + 12 + length])
        if self._verify and mask(crc32c(record)) != CRC.unpack_from(view, at + 12 + length)[0]:
            return self._finish(STOP_DATA_CRC)
        self.count += 1
        self.end = at + 16 + length
        return record

    def _finish(self, stop: int) -> NoReturn:
        self._view, self.stop = None, stop  # the buffer is let go, as the compiled run does
        raise StopIteration


def record_run_pure(
    data: BytesLike, off: int, limit: int, max_length: int, verify: bool
) -> RecordRunPure:
    """A :class:`RecordRunPure` over ``data`` from ``off``, ``limit`` records at most (``-1``:
    no limit)."""
    return RecordRunPure(data, off, limit, max_length, verify)


def scan_pack_pure(
    data: BytesLike,
    off: int,
    limit: int,
    max_length: int,
    verify: bool,
    offsets: IntArray,
    k: int,
) -> tuple[bytearray | None, int, int, int]:
    """``(values, count, end, stop)``: :func:`scan_frames_pure` from ``off`` for at most
    ``limit`` frames (``-1``: no limit) and at most ``len(offsets) - 1 - k``, their data copied
    back to back into ``values``, a bytearray of exactly their size (``None`` for no frame);
    ``offsets[k + 1 : k + 1 + count]`` get ``offsets[k]`` plus the running sum of their lengths."""
    if off < 0:
        raise ValueError(f"scan_pack: off must be >= 0, got {off}")
    if max_length < 0:
        raise ValueError(f"scan_pack: max_length must be >= 0, got {max_length}")
    if not 0 <= k < len(offsets):
        raise ValueError(f"scan_pack: k must be in [0, {len(offsets)}), got {k}")
    base = int(offsets[k])
    if base < 0:
        raise ValueError(f"scan_pack: offsets[{k}] must be >= 0, got {base}")
    room = len(offsets) - 1 - k
    most = room if limit < 0 else min(limit, room)
    size = len(memoryview(data).cast("B"))
    starts, lengths = scratch(size - min(off, size))
    count, end, stop = scan_frames_pure(data, off, most, max_length, verify, starts, lengths)
    total = sum(lengths[:count].tolist())
    if base > 2**63 - 1 - total:
        raise ValueError(f"scan_pack: offsets[{k}] + {total} bytes pass 2**63 - 1")
    if not count:
        return None, 0, end, stop
    values = bytearray(total)
    pack_pure(data, starts[:count] + 12, lengths[:count], values, 0)
    offsets[k + 1 : k + 1 + count] = base + np.cumsum(lengths[:count])
    return values, count, end, stop


def _check_spans(name: str, size: int, starts: IntArray, lengths: IntArray) -> None:
    if len(starts) != len(lengths):
        raise ValueError(f"{name}: {len(starts)} starts but {len(lengths)} lengths")
    outside = np.flatnonzero(
        (starts < 0) | (lengths < 0) | (starts > size) | (lengths > size - starts)
    )
    if outside.size:
        i = int(outside[0])
        s, n = int(starts[i]), int(lengths[i])
        raise ValueError(
            f"{name} {i} spans bytes [{s}, {s} + {n}) outside a buffer of {size} bytes"
        )


def cut_pure(data: BytesLike, starts: IntArray, lengths: IntArray) -> list[bytes]:
    """``[bytes(data[s:s + n]) for s, n in zip(starts, lengths)]``, every span checked first."""
    view = memoryview(data).cast("B")
    _check_spans("cut", len(view), starts, lengths)
    ends = (starts + lengths).tolist()
    if isinstance(data, bytes):
        return [data[s:e] for s, e in zip(starts.tolist(), ends, strict=True)]
    return [bytes(view[s:e]) for s, e in zip(starts.tolist(), ends, strict=True)]


def pack_pure(
    data: BytesLike, starts: IntArray, lengths: IntArray, values: BytesLike, at: int
) -> int:
    """The spans copied back to back into ``values`` from byte ``at``; returns where they end."""
    view = memoryview(data).cast("B")
    _check_spans("pack", len(view), starts, lengths)
    out = memoryview(values).cast("B")
    total = sum(lengths.tolist())  # exact: an int64 sum of many huge spans wraps
    if at < 0 or at > len(out) or total > len(out) - at:
        raise ValueError(f"pack: {total} bytes at {at} do not fit a buffer of {len(out)}")
    for s, n in zip(starts.tolist(), lengths.tolist(), strict=True):
        out[at : at + n] = view[s : s + n]
        at += n
    return at


scan_frames = CORE.scan_frames if CORE is not None else scan_frames_pure
cut = CORE.cut if CORE is not None else cut_pure
pack = CORE.pack if CORE is not None else pack_pure
scan_records = CORE.scan_records if CORE is not None else scan_records_pure
scan_pack = CORE.scan_pack if CORE is not None else scan_pack_pure
record_run = CORE.record_run if CORE is not None else record_run_pure
