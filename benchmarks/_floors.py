"""The least work a reader of the benchmark's files can do: the compiled kernels alone.

No plan, no state, no read windows: each file is read whole with one positioned read into a
buffer reused from file to file, its frames found by the frame scan (length CRCs checked),
the wanted payloads cut with their data CRCs checked, and each one wrapped into an
:class:`~readplan.reading.items.Item` by the compiled ``iter_items``.  What a Reader spends
above these figures is its orchestration; what they cost themselves bounds how fast any
reader that delivers checked ``bytes`` in ``Item`` objects can be on the machine.

* ``items_floor``: every record of every file, ``tfrecord.read`` as the anchor does, then
  an item per record, consumed one at a time (as ``Reader`` items are).
* ``rank_floor``: one record in four of every file (a rank of four's share; the reads cover
  every byte, as a rank's do where the records of a block lie 300 bytes apart).
"""

from __future__ import annotations

import os

import numpy as np

from readplan import ReadPlan, tfrecord
from readplan.reading.items import iter_items
from readplan.reading.spans import cut_frames_into
from readplan.records._cap import DEFAULT_MAX_RECORD_BYTES
from readplan.records.tfrecord._scan import scan_frames


def _items_of(records: list[bytes], file_index: int, start: int, step: int) -> int:
    """Consumes an item per record, as ``sum(1 for _ in Reader(...))`` does."""
    indices = np.arange(start, start + step * len(records), step, dtype=np.int64)
    files = np.full(len(records), file_index, dtype=np.int64)
    return sum(1 for _ in iter_items(records, {file_index: "f"}, 0, indices, files, indices))


def items_floor(plan: ReadPlan) -> int:
    count = 0
    for file_index, fi in enumerate(plan.instructions):
        count += _items_of(list(tfrecord.read(fi.filename)), file_index, 0, 1)
    return count


class _WholeFiles:
    """Each file read whole by one positioned read into a buffer reused from file to file
    (no fresh memory, and so no page faults, per file), with the frame scan's arrays."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._starts = np.empty(0, np.int64)
        self._lengths = np.empty(0, np.int64)

    def every_fourth(self, path: str) -> list[bytes]:
        """The payloads of records 1, 5, 9, ... of the file, their frames checked."""
        data = self._read(path)
        if len(self._starts) < len(data) // 16 + 1:
            self._starts = np.empty(len(data) // 16 + 1, np.int64)
            self._lengths = np.empty_like(self._starts)
        starts, lengths = self._starts, self._lengths
        found, _, _ = scan_frames(data, 0, -1, DEFAULT_MAX_RECORD_BYTES, False, starts, lengths)
        begins = starts[1:found:4].copy()
        ends = begins + lengths[1:found:4] + 16
        out: list[bytes] = [b""] * len(begins)
        places = np.arange(len(begins))
        if not cut_frames_into(out, places, data, begins, ends, False, DEFAULT_MAX_RECORD_BYTES):
            raise RuntimeError(f"{path}: a damaged frame")
        return out

    def _read(self, path: str) -> memoryview:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if len(self._buffer) < size:
                self._buffer = bytearray(size)
            data = memoryview(self._buffer)[:size]
            if os.preadv(fd, [data], 0) != size:
                raise RuntimeError(f"{path}: a short read")
        finally:
            os.close(fd)
        return data


def rank_floor(plan: ReadPlan) -> int:
    files, count = _WholeFiles(), 0
    for file_index, fi in enumerate(plan.instructions):
        count += _items_of(files.every_fourth(fi.filename), file_index, 1, 4)
    return count
