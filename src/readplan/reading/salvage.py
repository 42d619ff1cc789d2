"""What can still be read of a damaged shard, record by record (``specs/reader.md`` §3).

A reader with ``on_corruption="skip"`` that meets damage in a shard walks the file's
headers once, resynchronising after each damaged region, and places the frames it found
at record indices.  Only what is certain is placed: the frames before the first damaged
region are records ``0, 1, ...``; the frames after the last one are the file's last
records (the file holds ``examples_in_shard`` records, as ``dataset_info.json`` says);
frames between two damaged regions cannot be placed (an unknown number of records was
lost in each region) and count as lost with the rest.  A placed record whose data CRC
fails is lost too.  Every other record is delivered, every lost one reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import ClosedError, DatasetInfoError
from readplan.records._cap import DEFAULT_MAX_RECORD_BYTES
from readplan.records._crc import crc32c, mask
from readplan.records._damage import KIND_DATA_CRC, CorruptionEvent, CorruptionReport
from readplan.records.tfrecord._compression import pread
from readplan.records.tfrecord._layout import CRC, HEADER
from readplan.records.tfrecord._parser import FrameParser
from readplan.records.tfrecord._stream import PlainStream, open_handle
from readplan.storage import Handle, StorageOptions, size_of
from readplan.storage import close as close_handle

__all__ = ["Lost", "Salvage"]


@dataclass(frozen=True, slots=True)
class Lost:
    """Why record ``record_index`` of a salvaged file cannot be delivered.

    ``offset`` is the frame's start for a frame whose data CRC failed, else the start of
    the damaged region in which the record was lost.
    """

    record_index: int
    offset: int
    kind: str


class Salvage:
    """The placed records of one damaged, uncompressed shard, read on demand."""

    def __init__(self, path: str, *, planned: int, storage_options: StorageOptions = None) -> None:
        self.path = path
        fd = open_handle(path, storage_options)
        try:
            offsets, self.events = _walk(fd, path)
            self._offsets = _place(path, offsets, self.events, planned)
        except BaseException:
            close_handle(fd)
            raise
        self._fd: Handle | None = fd

    def read(self, index: int) -> bytes | Lost:
        """Record ``index``'s payload, or why it is lost."""
        offset = int(self._offsets[index])
        if offset < 0:
            # Only records in or between damaged regions are unplaced: there is an event.
            cause = self.events[0]
            return Lost(index, cause.offset, cause.kind)
        fd = self._fd
        if fd is None:
            raise ClosedError(f"{self.path}: the salvaged shard is closed", path=self.path)
        length = HEADER.unpack(pread(fd, 12, offset))[0]
        frame = pread(fd, length + 4, offset + 12)
        payload, stored = frame[:length], CRC.unpack_from(frame, length)[0]
        if mask(crc32c(payload)) != stored:
            return Lost(index, offset, KIND_DATA_CRC)
        return payload

    def data_crc_event(self, lost: Lost) -> CorruptionEvent:
        """The file-level report of a frame dropped for its data CRC."""
        return CorruptionEvent(
            path=self.path,
            kind=KIND_DATA_CRC,
            offset=lost.offset,
            record_index=lost.record_index,
            message=f"{self.path}: record {lost.record_index} at offset {lost.offset} is "
            "corrupted: the CRC of its data does not match",
            records_lost=1,
        )

    def close(self) -> None:
        if self._fd is not None:
            close_handle(self._fd)
            self._fd = None


def _walk(fd: Handle, path: str) -> tuple[IntArray, tuple[CorruptionEvent, ...]]:
    """Frame starts with verified headers, and the damaged regions, by one skip-mode walk."""
    report = CorruptionReport()
    stream = PlainStream(fd, start=0, end=size_of(fd), owns_fd=False)
    parser = FrameParser(
        stream,
        path=path,
        verify=False,
        skip_damage=True,
        report=report,
        max_record_bytes=DEFAULT_MAX_RECORD_BYTES,
    )
    batches = list(parser.frames())
    offsets = np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
    return offsets, tuple(report.events)


def _place(
    path: str,
    found: IntArray,
    events: tuple[CorruptionEvent, ...],
    planned: int,
) -> IntArray:
    """Offsets per record index; -1 for the records lost in the damaged regions."""
    offsets = np.full(planned, -1, dtype=np.int64)
    if not events:
        # Headers intact: every frame sits at its index (data CRCs are checked on read).
        if len(found) != planned:
            raise _count_mismatch(path, len(found), planned)
        offsets[:] = found
        return offsets
    cuts = np.searchsorted(found, [event.offset for event in events])
    head, tail = found[: cuts[0]], found[cuts[-1] :]
    if len(head) + len(tail) > planned:
        raise _count_mismatch(path, len(head) + len(tail), planned)
    offsets[: len(head)] = head
    offsets[planned - len(tail) :] = tail
    return offsets


def _count_mismatch(path: str, found: int, planned: int) -> DatasetInfoError:
    return DatasetInfoError(
        f"{path} holds at least {found} intact records, but dataset_info.json's "
        f"shardLengths gives it {planned}: the file and its metadata disagree, so the records "
        "after its damage cannot be placed; regenerate or re-download the shard",
        path=path,
        field="shardLengths",
    )
