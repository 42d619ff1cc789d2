"""The open shard files a chunk's runs (``reading.chunks``) are read from, and when they are
closed (``specs/reader.md``, "Reading runs")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain, islice
from typing import Any

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import CorruptRecordError, DatasetInfoError, IndexFileError, ReadplanError
from readplan.reading.chunks import Runs
from readplan.reading.containers import RecordContainer, RecordSource, SalvageSource, SpanSource
from readplan.reading.prefetch import Prepared, open_ahead
from readplan.reading.salvage import Lost
from readplan.records._damage import KIND_DATA_CRC, CorruptionReport, LostRecord
from readplan.storage import Ahead, Handle, PathLike, StorageOptions
from readplan.storage import close as close_handle

__all__ = ["Closes", "Shard", "without_lost"]


class Shard:
    """One open shard file, read in runs.

    With ``sequential`` (one rank, no example shuffle) the plan reads the file's records in
    order, so one stream serves every run; otherwise each run is read on its own, seeking.
    With ``skip``, damage met in the file switches it to its container's salvage: from then on
    each record is read on its own, and a record lost to the damage is handed out as a
    :class:`Lost` in its place.  ``container`` opens the file (TFRecord or TBL v2, from the
    dataset's file format).  ``check`` is the restored state's check of the file, given its
    size and checksum as opened (``ReaderBinding.due``).
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
        check: Callable[[tuple[int, int] | None], None] | None = None,
    ) -> None:
        self.path = path
        # A restored state's check of the file (``specs/checkpoint.md`` §4), run with the
        # file's binding as opened before a record of it is read; None once it passed.
        self._check = check
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
        # The stream that serves the file's runs in order (one rank, no example shuffle;
        # ``reading.run_streams`` takes runs from it), None until the first run is read.
        self.stream: Iterator[bytes] | None = None
        self._salvage: SalvageSource | None = None
        self._gather_fd: Handle | None = None
        self._spans: SpanSource | None = None
        self._spans_opened = False
        # The file being opened in the background (fetch_ahead), and the reads whose spans
        # are fetched once it is taken.
        self._ahead: Ahead[Prepared] | None = None
        self._later: list[IntArray] = []

    def fetch_ahead(self, indices: IntArray) -> bool:
        """Start fetching what reading the records ``indices`` in spans will fetch: the
        file's opening (in the background) and its spans (``specs/storage.md`` §5);
        ``False`` when that does not fit the prefetch budget."""
        if self._salvage is not None:
            return True
        if self._spans_opened:
            return self._spans is None or self._spans.prefetch(indices)
        if self._ahead is not None:
            self._later.append(indices)
            return True
        if self._file is not None:
            return True  # opened for reads run by run: its spans are set up when read
        self._ahead = open_ahead(self._container, self.path, self._open_options, indices)
        return self._ahead is not None

    def _take_prepared(self) -> Prepared | None:
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        try:
            return ahead.take()
        except Exception:
            # Opened again by the caller: the same failure, reported where it belongs.
            self._later.clear()
            return None

    def take_into(self, out: list[Any], first: int, count: int) -> int:
        """Append records ``first .. first + count - 1`` to ``out``; return how many are lost."""
        if self._salvage is not None:
            return self._take_salvaged(out, first, count)
        before = len(out)
        try:
            self._take(out, first, count)
        except (CorruptRecordError, IndexFileError) as err:
            return self.recover(out, first, count, len(out) - before, err)
        return 0

    def recover(self, out: list[Any], first: int, count: int, got: int, err: Exception) -> int:
        """Records ``first .. first + count - 1`` met ``err`` after ``got`` of them were
        appended to ``out``: raise it, or in skip mode salvage the file and append the rest
        (lost ones as :class:`Lost`); return how many are lost."""
        if not isinstance(err, (CorruptRecordError, IndexFileError)):
            raise err
        if not self._skip:
            rest = np.arange(first + got, first + count)
            if not self._sequential and self._reachable_into(out, rest):
                return 0  # the damage lies beyond these records
            raise err
        self._salvage = self._container.salvage(self.path, planned=self._planned, **self._options)
        self._close_reading()
        if self._report is not None:
            for event in self._salvage.events:
                self._report.add(event)
        return self._take_salvaged(out, first + got, count - got)

    def _take(self, out: list[Any], first: int, count: int) -> None:
        before = len(out)
        to_end = first + count == self._end == self._planned
        if self._sequential:
            if self.stream is None:
                self.stream = self._open_stream(first, count)
            out.extend(islice(self.stream, count))
            if to_end and len(out) - before == count:
                self._check_stream_end(out)
        elif count == 1:
            out.append(self._records(first + 1, to_end)[first])
        else:
            out.extend(self._records(first + count, to_end).read(first, count))
        got = len(out) - before
        if got < count:
            raise self.short(first + got)

    def start_stream(self, first: int, count: int) -> bool:
        """Open the stream that serves the file's runs from record ``first`` (a run of
        ``count`` records), to be taken from as its runs are; whether it is open now.  Only a
        sequential shard that has not been salvaged streams."""
        if not self._sequential or self._salvage is not None:
            return False
        if self.stream is None:
            self.stream = self._open_stream(first, count)
        return True

    def gather_into(self, out: list[Any], indices: IntArray) -> int:
        """Append the records at ``indices`` (increasing, nearby) to ``out``; return lost."""
        if self._salvage is None and not self._sequential:
            last = int(indices[-1])
            to_end = last + 1 == self._end == self._planned
            try:
                self._records(last + 1, to_end)
            except (CorruptRecordError, IndexFileError):
                if not self._skip:
                    if self._reachable_into(out, indices):
                        return 0  # the damage lies beyond these records
                    raise
            else:
                spans = self._span_source()
                gathered = None if spans is None else spans.read(indices, to_end)
                if gathered is not None:
                    out.extend(gathered)
                    return 0
        # Damage among the records, or a salvaged file: one record at a time, which
        # reports exactly the damage of the delivered records.
        return sum(self.take_into(out, int(index), 1) for index in indices.tolist())

    def _reachable_into(self, out: list[Any], indices: IntArray) -> bool:
        """Append the records at ``indices`` that lie before damage in the file (one span
        each, up to the first that cannot be read); whether that is all of them.  Reads in
        spans deliver exactly these, so a rank delivers the same records wherever it
        started."""
        try:
            spans = self._span_source()
            if spans is None:
                return False
            for index in indices.tolist():
                one = np.array([index], dtype=np.int64)
                got = spans.read(one, index + 1 == self._end == self._planned)
                if got is None:
                    return False
                out.extend(got)
        except (ReadplanError, OSError):
            return False
        return True

    def spans_into(self, out: list[Any], places: IntArray, indices: IntArray) -> bool:
        """Put the records at ``indices`` (increasing), read in spans, at ``places`` of ``out``.

        ``False`` when they must be read run by run instead (``out`` then holds any of them,
        or none): the file is salvaged, its container has no span reads, a check failed, or
        opening it failed (the careful reads then report exactly what is wrong, and where).
        """
        if self._salvage is not None:
            return False
        to_end = int(indices[-1]) + 1 == self._end == self._planned
        try:
            spans = self._span_source()
            return spans is not None and spans.read_into(out, places, indices, to_end)
        except (ReadplanError, OSError):
            return False

    def _span_source(self) -> SpanSource | None:
        if not self._spans_opened:
            file = self._opened()  # a file opened ahead comes with its span reads
            if not self._spans_opened:
                self._spans = self._container.spans(file, self._keep)
                self._spans_opened = True
        return self._spans

    def _keep(self, fd: Handle) -> Handle:
        """Hold the span reads' own handle until the shard's reading closes."""
        self._gather_fd = fd
        return fd

    def _check_stream_end(self, out: list[Any]) -> None:
        """The plan read the file to its end: nothing may follow its last record."""
        assert self.stream is not None
        try:
            extra = next(self.stream, None)
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
            if self._check is not None:
                self._opened()  # the restored state's check, before a record is streamed
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

    def _opened(self) -> RecordSource:
        if self._file is None:
            prepared = self._take_prepared()
            try:
                if prepared is None:
                    file = self._container.open(self.path, **self._open_options)
                else:
                    file = prepared.file
            except ReadplanError:
                if self._check is not None:
                    # A file the state was saved with that changed since is refused as
                    # such, not as the stale sidecar or damage the change shows.
                    self._check(None)
                    self._check = None
                raise
            if self._check is not None:
                try:
                    # The binding of the version opened: its sidecar's, checked against it,
                    # or its ends read through its handle; no lookup of its own.
                    self._check(file.binding())
                except BaseException:
                    (file if prepared is None else prepared).close()
                    raise
                self._check = None
            self._file = file
            if prepared is not None:
                self._adopt(prepared)
        return self._file

    def _adopt(self, prepared: Prepared) -> None:
        """Take the span reads set up with the file opened ahead, and fetch the spans of
        the reads named since."""
        self._spans, self._gather_fd, self._spans_opened = prepared.spans, prepared.handle, True
        later, self._later = self._later, []
        if prepared.spans is not None:
            for indices in later:
                prepared.spans.prefetch(indices)

    def _records(self, needed: int, to_end: bool) -> RecordSource:
        file = self._opened()
        # Offsets come from a header walk to the file's end or from a sidecar bound to the
        # file's size: a file read to its end is checked to end there.
        found = len(file)
        if found < needed:
            raise self.short(found)
        if to_end and found > self._planned:
            raise self._longer()
        return file

    def short(self, found: int) -> DatasetInfoError:
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
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.drop(Prepared.close)
        self._later.clear()
        self.stream = None
        self._spans, self._spans_opened = None, False
        self._close_file()
        if self._gather_fd is not None:
            close_handle(self._gather_fd)
            self._gather_fd = None

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _close_shard(shards: dict[int, Shard], file_index: int) -> None:
    shard = shards.pop(file_index, None)
    if shard is not None:
        shard.close()


class Closes:
    """Closes the files of ``shards`` as a rank passes the plan's last read of each."""

    def __init__(self, runs: Runs, shards: dict[int, Shard]) -> None:
        self._pending = list(zip(runs.close_before, runs.close_files))
        self._next = 0
        self._finishing: set[int] = set()
        self.shards = shards

    def through(self, run: int) -> None:
        """Close the files the plan reads for the last time before run ``run``."""
        pending = self._pending
        while self._next < len(pending) and pending[self._next][0] <= run:
            _close_shard(self.shards, pending[self._next][1])
            self._next += 1

    def due(self, stop_run: int) -> int:
        """The first run before which :meth:`through` closes a file, ``stop_run`` at most."""
        pending = self._pending
        return min(stop_run, pending[self._next][0]) if self._next < len(pending) else stop_run

    def start_window(self, first_run: int, stop_run: int) -> None:
        """Runs ``first_run .. stop_run - 1`` are read next, file by file: close the files
        done before them, and note those done within them, for :meth:`finished`."""
        self.through(first_run)
        pending = self._pending
        stop = self._next
        while stop < len(pending) and pending[stop][0] <= stop_run:
            stop += 1
        self._finishing = {file_index for _, file_index in pending[self._next : stop]}

    def finished(self, file_index: int) -> None:
        """The window's reads of ``file_index`` are done: close it if the plan's are too."""
        if file_index in self._finishing:
            _close_shard(self.shards, file_index)


def without_lost(
    records: list[Any],
    taken: IntArray,
    epoch: int,
    runs: Runs,
    report: CorruptionReport | None,
    path_of: Callable[[int], str],
) -> tuple[list[Any], IntArray]:
    """Drop the records lost to damage from a batch of ``runs``' deliveries ``taken`` and
    report their plan positions."""
    kept = np.array([type(record) is not Lost for record in records], dtype=bool)
    for k in np.flatnonzero(~kept).tolist():
        lost: Lost = records[k]
        at = int(taken[k])
        file_index = int(runs.file_index[at])
        if report is not None:
            report.add_lost(
                LostRecord(
                    epoch=epoch,
                    position=int(runs.positions[at]),
                    file_index=file_index,
                    record_index=lost.record_index,
                    path=path_of(file_index),
                    offset=lost.offset,
                    kind=lost.kind,
                )
            )
    return [record for record in records if type(record) is not Lost], taken[kept]
