"""Runs of records: one chunk's deliveries cut into runs of consecutive records of one
file, and the open shard files they are read from (``specs/reader.md``, "Reading runs")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, islice, pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.errors import CorruptRecordError, DatasetInfoError, IndexFileError
from readplan.plan import EpochOrder
from readplan.reading.containers import RecordContainer, RecordSource, SalvageSource
from readplan.reading.salvage import Lost
from readplan.records._damage import KIND_DATA_CRC, CorruptionReport
from readplan.records._stream import open_handle
from readplan.storage import Handle, PathLike, StorageOptions
from readplan.storage import close as close_handle

__all__ = ["Runs", "Shard", "close_shard"]

IntArray = npt.NDArray[np.int64]

MAX_GAP = 16
"""Largest step between two delivered records of one run: the records between are read
from disk (not parsed) to save a positioned read per record."""


@dataclass(frozen=True, eq=False)
class Runs:
    """One chunk's deliveries of a rank, cut into runs of nearby records of one file.

    Run ``k`` delivers ``count[k]`` records of file ``file[k]``, in increasing record order
    from record ``first[k]`` to record ``first[k] + span[k] - 1``; they are the rank's
    deliveries ``start[k] ..`` of the chunk.  With ``span == count`` the records are
    consecutive; otherwise (a rank of several, an example shuffle) no two delivered records
    of a run are more than ``MAX_GAP`` apart, so the run is read with one positioned read.
    Runs never cross a multiple of the batch size, so batches are whole runs.  File
    ``close_files[j]`` is read for the last time before run ``close_before[j]``.
    """

    positions: IntArray
    file_index: IntArray
    record_index: IntArray
    start: list[int]
    file: list[int]
    first: list[int]
    count: list[int]
    span: list[int]
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
        step = np.diff(record_index)
        cut[1:] = (file_index[1:] != file_index[:-1]) | (step < 1) | (step > MAX_GAP)
        cut[::batch_size] = True
        starts = np.flatnonzero(cut)
        counts = np.diff(starts, append=size)
        lasts = record_index[starts + counts - 1] if size else record_index[:0]
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
            span=(lasts - record_index[starts] + 1).tolist(),
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
    With ``skip``, damage met in the file switches it to its container's salvage: from then on
    each record is read on its own, and a record lost to the damage is handed out as a
    :class:`Lost` in its place.  ``container`` opens the file (TFRecord or TBL v2, from the
    dataset's file format).
    """

    def __init__(
        self,
        path: str,
        *,
        end: int,
        planned: int,
        sequential: bool,
        skip: bool,
        report: CorruptionReport | None,
        container: RecordContainer,
        index_dir: PathLike | None = None,
        storage_options: StorageOptions = None,
    ) -> None:
        self.path = path
        self._container = container
        # Passed to the container's openers only when set (URLs: ``specs/storage.md``).
        self._options: dict[str, Any] = {}
        if storage_options is not None:
            self._options["storage_options"] = storage_options
        self._open_options = dict(self._options)
        if index_dir is not None:
            self._open_options["index_dir"] = index_dir
        self._end = end
        self._planned = planned
        self._sequential = sequential
        self._skip = skip
        self._report = report
        self._file: RecordSource | None = None
        self._stream: Iterator[bytes] | None = None
        self._salvage: SalvageSource | None = None
        self._gather_fd: Handle | None = None

    def take_into(self, out: list[Any], first: int, count: int) -> int:
        """Append records ``first .. first + count - 1`` to ``out``; return how many are lost."""
        if self._salvage is not None:
            return self._take_salvaged(out, first, count)
        before = len(out)
        try:
            self._take(out, first, count)
        except (CorruptRecordError, IndexFileError):
            if not self._skip:
                raise
            got = len(out) - before
            self._salvage = self._container.salvage(
                self.path, planned=self._planned, **self._options
            )
            self._close_reading()
            if self._report is not None:
                for event in self._salvage.events:
                    self._report.add(event)
            return self._take_salvaged(out, first + got, count - got)
        return 0

    def _take(self, out: list[Any], first: int, count: int) -> None:
        before = len(out)
        to_end = first + count == self._end == self._planned
        if self._sequential:
            if self._stream is None:
                self._stream = self._open_stream(first, count)
            out.extend(islice(self._stream, count))
            if to_end and len(out) - before == count:
                self._check_stream_end(out)
        elif count == 1:
            out.append(self._records(first + 1, to_end)[first])
        else:
            out.extend(self._records(first + count, to_end).read(first, count))
        got = len(out) - before
        if got < count:
            raise self._short(first + got)

    def gather_into(self, out: list[Any], indices: IntArray) -> int:
        """Append the records at ``indices`` (increasing, nearby) to ``out``; return lost."""
        if self._salvage is None and not self._sequential:
            last = int(indices[-1])
            try:
                records = self._records(last + 1, last + 1 == self._end == self._planned)
            except (CorruptRecordError, IndexFileError):
                if not self._skip:
                    raise
            else:
                gathered = self._container.gather(records, self._fd(), indices)
                if gathered is not None:
                    out.extend(gathered)
                    return 0
        # Damage among the records, or a salvaged file: one record at a time, which
        # reports exactly the damage of the delivered records.
        return sum(self.take_into(out, int(index), 1) for index in indices.tolist())

    def _fd(self) -> Handle:
        if self._gather_fd is None:
            self._gather_fd = open_handle(self.path, self._options.get("storage_options"))
        return self._gather_fd

    def _check_stream_end(self, out: list[Any]) -> None:
        """The plan read the file to its end: nothing may follow its last record."""
        assert self._stream is not None
        try:
            extra = next(self._stream, None)
        except CorruptRecordError as err:
            out.pop()  # the file's end is in doubt: its last record is not delivered
            raise err.with_context(
                f"\nThe plan reads {self.path} to its end, after record {self._end - 1}, "
                "but bytes follow that record: the file does not end where its "
                "metadata says"
            ) from err
        if extra is not None:
            out.pop()
            raise self._longer()

    def _take_salvaged(self, out: list[Any], first: int, count: int) -> int:
        assert self._salvage is not None
        lost = 0
        for index in range(first, first + count):
            record = self._salvage.read(index)
            if type(record) is Lost:
                lost += 1
                if record.kind == KIND_DATA_CRC and self._report is not None:
                    self._report.add(self._salvage.data_crc_event(record))
            out.append(record)
        return lost

    def _open_stream(self, first: int, count: int) -> Iterator[bytes]:
        if first == 0:
            # From the start a stream needs no offsets: no index, no header walk.
            return self._container.stream(self.path, **self._options)
        return chain.from_iterable(self._windows(first, count))

    def _windows(self, first: int, count: int) -> Iterator[Iterator[bytes]]:
        """The first run on its own, then the rest of the file.

        A stream verifies the frames of a whole read-ahead buffer at once; reading the
        first run on its own keeps a restore's first record from waiting for that.
        """
        records = self._records(self._end, self._end == self._planned)
        yield records.read(first, count)
        rest = self._end - first - count
        # Each stream holds its own descriptor: the file itself is not needed any more.
        stream = records.read(first + count, rest) if rest else iter(())
        self._close_file()
        yield stream

    def _records(self, needed: int, to_end: bool) -> RecordSource:
        if self._file is None:
            self._file = self._container.open(self.path, **self._open_options)
        # Offsets come from a header walk to the file's end or from a sidecar bound to the
        # file's size: a file read to its end is checked to end there.
        found = len(self._file)
        if found < needed:
            raise self._short(found)
        if to_end and found > self._planned:
            raise self._longer()
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

    def _longer(self) -> DatasetInfoError:
        return DatasetInfoError(
            f"{self.path} holds more than the {self._planned} records dataset_info.json's "
            "shardLengths gives it, and the plan reads it to its end: the file and its "
            "metadata disagree; regenerate or re-download the shard, or fix shardLengths",
            path=self.path,
            field="shardLengths",
        )

    def close(self) -> None:
        self._close_reading()
        if self._salvage is not None:
            self._salvage.close()
            self._salvage = None

    def _close_reading(self) -> None:
        self._stream = None
        self._close_file()
        if self._gather_fd is not None:
            close_handle(self._gather_fd)
            self._gather_fd = None

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def close_shard(shards: dict[int, Shard], file_index: int) -> None:
    shard = shards.pop(file_index, None)
    if shard is not None:
        shard.close()


# -- states of several ranks ---------------------------------------------------------------
