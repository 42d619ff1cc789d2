"""Runs of records: one chunk's deliveries cut into runs of consecutive records of one
file, and the open shard files they are read from (``specs/reader.md``, "Reading runs")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, islice, pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.errors import DatasetInfoError
from readplan.plan import EpochOrder
from readplan.records import tfrecord

__all__ = ["Runs", "Shard", "close_shard"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Runs:
    """One chunk's deliveries of a rank, cut into runs of consecutive records of one file.

    Run ``k`` delivers ``count[k]`` records of file ``file[k]`` from record ``first[k]``;
    they are the rank's deliveries ``start[k] ..`` of the chunk.  Runs never cross a
    multiple of the batch size, so batches are whole runs.  File ``close_files[j]`` is read
    for the last time before run ``close_before[j]``.
    """

    positions: IntArray
    file_index: IntArray
    record_index: IntArray
    start: list[int]
    file: list[int]
    first: list[int]
    count: list[int]
    close_files: list[int]
    close_before: list[int]

    @classmethod
    def of(
        cls,
        chunk: EpochOrder,
        is_last: npt.NDArray[np.bool_],
        rank: int,
        world_size: int,
        batch_size: int,
    ) -> Runs:
        offset = (rank - chunk.start) % world_size
        file_index = chunk.file_index[offset::world_size]
        record_index = chunk.record_index[offset::world_size]
        size = file_index.size
        positions = chunk.start + offset + world_size * np.arange(size, dtype=np.int64)
        cut = np.ones(size, dtype=bool)
        cut[1:] = (file_index[1:] != file_index[:-1]) | (record_index[1:] != record_index[:-1] + 1)
        cut[::batch_size] = True
        starts = np.flatnonzero(cut)
        counts = np.diff(starts, append=size)
        ends = np.flatnonzero(is_last)
        close_before = np.searchsorted(positions[starts], chunk.start + ends, side="right")
        return cls(
            positions=positions,
            file_index=file_index,
            record_index=record_index,
            start=starts.tolist(),
            file=file_index[starts].tolist(),
            first=record_index[starts].tolist(),
            count=counts.tolist(),
            close_files=chunk.file_index[ends].tolist(),
            close_before=close_before.tolist(),
        )

    def batches(self, batch_size: int) -> Iterator[tuple[int, int]]:
        """``(first run, stop run)`` of each batch of ``batch_size`` deliveries."""
        if not self.start:
            return
        bounds = np.searchsorted(
            np.asarray(self.start), np.arange(0, len(self.positions), batch_size), side="left"
        ).tolist()
        bounds.append(len(self.start))
        yield from pairwise(bounds)


class Shard:
    """One open shard file, read in runs.

    With ``sequential`` (one rank, no example shuffle) the plan reads the file's records in
    order, so one stream serves every run; otherwise each run is read on its own, seeking.
    """

    def __init__(self, path: str, *, end: int, planned: int, sequential: bool) -> None:
        self.path = path
        self._end = end
        self._planned = planned
        self._sequential = sequential
        self._file: tfrecord.RecordFile | None = None
        self._stream: Iterator[bytes] | None = None

    def take_into(self, out: list[Any], first: int, count: int) -> None:
        """Append records ``first .. first + count - 1`` to ``out``."""
        before = len(out)
        if self._sequential:
            if self._stream is None:
                self._stream = self._open_stream(first, count)
            out.extend(islice(self._stream, count))
        elif count == 1:
            out.append(self._records(first + 1)[first])
        else:
            out.extend(self._records(first + count).read(first, count))
        got = len(out) - before
        if got < count:
            raise self._short(first + got)

    def _open_stream(self, first: int, count: int) -> Iterator[bytes]:
        if first == 0:
            # From the start a stream needs no offsets: no index, no header walk.
            return tfrecord.read(self.path)
        return chain.from_iterable(self._windows(first, count))

    def _windows(self, first: int, count: int) -> Iterator[Iterator[bytes]]:
        """The first run on its own, then the rest of the file.

        A stream verifies the frames of a whole read-ahead buffer at once; reading the
        first run on its own keeps a restore's first record from waiting for that.
        """
        records = self._records(self._end)
        yield records.read(first, count)
        rest = self._end - first - count
        # Each stream holds its own descriptor: the file itself is not needed any more.
        stream = records.read(first + count, rest) if rest else iter(())
        self._close_file()
        yield stream

    def _records(self, needed: int) -> tfrecord.RecordFile:
        if self._file is None:
            self._file = tfrecord.RecordFile(self.path)
        if len(self._file) < needed:
            raise self._short(len(self._file))
        return self._file

    def _short(self, found: int) -> DatasetInfoError:
        return DatasetInfoError(
            f"{self.path} holds only {found} records, but the plan reads up to record "
            f"{self._end - 1} of it (dataset_info.json's shardLengths gives it "
            f"{self._planned}): the file and its metadata disagree; regenerate or re-download "
            "the shard, or fix shardLengths",
            path=self.path,
            field="shardLengths",
        )

    def close(self) -> None:
        self._stream = None
        self._close_file()

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def close_shard(shards: dict[int, Shard], file_index: int) -> None:
    shard = shards.pop(file_index, None)
    if shard is not None:
        shard.close()


# -- states of several ranks ---------------------------------------------------------------
