"""Items taken run by run from a streaming reader's shard streams (``specs/native.md``,
"run_items"; ``specs/reader.md`` §1): a raw reader of one rank without an example shuffle
makes each item from the next record of its run's stream when the item is taken, with no
batch in between: a file's stream is opened where its first run is reached, and each run
it cannot take whole (the plan's last read of a file, a stream that ends or fails, a shard
that does not stream) goes to the reads of :mod:`run_streams`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any, TypeAlias

from readplan._internal.arrays import IntArray
from readplan.errors import ReadplanError
from readplan.reading.chunks import Runs
from readplan.reading.items import Item, int64_of, made_item, prefix_checked
from readplan.reading.run_streams import (
    RUN_ENDED,
    RUN_NOT_TAKEN,
    Outcome,
    check_shards_dict,
    read_run,
)
from readplan.reading.runs import Closes, Shard
from readplan.records.native import CORE

__all__ = [
    "ItemPiece",
    "ItemsEndedError",
    "RunItemsPure",
    "chunk_items",
    "run_items",
]

ItemPiece: TypeAlias = "tuple[int, IntArray, Iterator[Item]]"
"""``(epoch, positions, items)``: an iterator over the items of deliveries at ``positions``
of ``epoch`` (a prefix of them when it stops early); the reader's state counts how many it
handed out from its length hint."""


class RunItemsPure:
    """The twin of the compiled ``run_items``: the items of runs ``lo .. hi - 1``, run ``k``
    ``counts[k]`` records of ``shards[files[k]].stream`` (records ``firsts[k]`` .. of the file,
    deliveries ``starts[k]`` .., at ``positions[d]``), each made when it is taken.  It stops at
    the first run that is ``closing[k]``, has no shard or stream, or whose stream ends or
    raises an ``Exception``; :attr:`stopped` then is ``(k, got, outcome)`` as
    :func:`~readplan.reading.run_streams.take_runs` gives it (``(hi, 0, RUN_NOT_TAKEN)``
    after the last run).  An error that propagates (another ``BaseException``, a failed
    lookup in ``names``) stops it with ``(k, got, None)``."""

    def __init__(
        self,
        shards: dict[int, Any],
        files: list[int],
        firsts: list[int],
        counts: list[int],
        closing: list[bool],
        starts: list[int],
        positions: IntArray,
        lo: int,
        hi: int,
        epoch: int,
        names: Mapping[int, str],
    ) -> None:
        int64_of(epoch, "run_items: epoch")
        check_shards_dict("run_items", shards)
        if not len(files) == len(firsts) == len(counts) == len(closing) == len(starts):
            raise ValueError(
                "run_items: files, firsts, counts, closing and starts must hold one entry per run"
            )
        if not 0 <= lo <= hi <= len(files):
            raise ValueError(f"run_items: runs {lo} .. {hi} are not within 0 .. {len(files)}")
        self._runs = (shards, files, firsts, counts, closing, starts)
        self._positions = positions
        self._epoch, self._names = epoch, names
        self._k, self._hi = lo, hi
        self._total = 0
        for k in range(lo, hi):
            count = _counted(counts, k)
            if count > len(positions) - self._total:
                raise ValueError(
                    f"run_items: runs {lo} .. {hi - 1} deliver more than the "
                    f"{len(positions)} positions"
                )
            self._total += count
        self.taken = 0
        self.stopped: tuple[int, int, Outcome | None] | None = None
        self._run: Iterator[Item] | None = None
        self._got = 0

    def __iter__(self) -> RunItemsPure:
        return self

    def __length_hint__(self) -> int:
        return self._total - self.taken

    def __next__(self) -> Item:
        while self.stopped is None:
            if self._run is None:
                self._run = self._begin(self._k)
                continue
            try:
                item = next(self._run)
            except StopIteration:
                self._run = None
                self._k += 1
                continue
            except BaseException:
                self._stop(self._k, self._got, None)
                raise
            self._got += 1
            self.taken += 1
            return item
        raise StopIteration

    def _stop(self, k: int, got: int, outcome: Outcome | None) -> None:
        self._run = None
        self._k = self._hi
        self.stopped = (k, got, outcome)

    def _begin(self, k: int) -> Iterator[Item] | None:
        """Run ``k``'s items; ``None`` after stopping at it (or past the last run)."""
        if k >= self._hi:
            self._stop(self._hi, 0, RUN_NOT_TAKEN)
            return None
        shards, files, firsts, counts, closing, starts = self._runs
        try:
            count, first, at = _counted(counts, k), firsts[k], starts[k]
            if not 0 <= at <= len(self._positions) or count > len(self._positions) - at:
                raise ValueError(
                    f"run_items: run {k} delivers {at} .. {at + count - 1}, outside the "
                    f"{len(self._positions)} positions"
                )
            if count and first + count - 1 > 2**63 - 1:
                raise ValueError(f"run_items: run {k} reads records {first} .. past 2^63 - 1")
            shard = None if closing[k] else shards.get(files[k])
            stream = None if shard is None else shard.stream
            if stream is None:
                self._stop(k, 0, RUN_NOT_TAKEN)
                return None
            if not hasattr(type(stream), "__next__"):
                raise TypeError(f"run_items: the stream of run {k} is not an iterator")
            file = files[k]
            prefix = self._names[file]
            int64_of(file, "run_items: a run's file")
            prefix_checked(prefix, file, "run_items")
        except BaseException:
            self._stop(k, 0, None)
            raise
        self._got = 0
        return self._items(stream, count, first, at, file, prefix)

    def _items(
        self, stream: Iterator[Any], count: int, first: int, at: int, file: int, prefix: str
    ) -> Iterator[Item]:
        positions, epoch, k = self._positions, self._epoch, self._k
        for got in range(count):
            try:
                record = next(stream)
            except StopIteration:
                self._stop(k, got, RUN_ENDED)
                return
            except Exception as error:  # the run's outcome: the caller words or skips it
                self._stop(k, got, error)
                return
            yield made_item(record, prefix, epoch, int(positions[at + got]), file, first + got)


def _counted(counts: list[int], k: int) -> int:
    count = counts[k]
    if count < 0:
        raise ValueError(f"run_items: run {k} counts {count} records")
    return count


# The compiled iterator when there is a core (specs/native.md, "run_items").
run_items: Callable[..., Iterator[Item]] = (
    RunItemsPure if CORE is None else partial(CORE.run_items, Item)
)


class ItemsEndedError(Exception):
    """An error propagated from a :func:`run_items` iterator (``stopped`` with no outcome):
    the iteration that took its items ends there, as it ends where a read raises one."""


def chunk_items(
    runs: Runs,
    epoch: int,
    closes: Closes,
    names: Mapping[int, str],
    shard: Callable[[dict[int, Shard], int], Shard],
    fallback: Callable[[int, list[Any], int, Exception | None], Iterator[ItemPiece]],
) -> Iterator[ItemPiece]:
    """The items of a chunk's ``runs`` (``names[f]``: file ``f``'s ``tfds_id`` prefix), in
    pieces: the runs the streams serve as one :func:`run_items` iterator up to the next file
    the plan is done with or without a stream yet (whose stream is then opened, and the next
    iterator starts at it); each other run read by
    :func:`~readplan.reading.run_streams.read_run` and handed to ``fallback(begin, records,
    lost, failure)`` (the records of deliveries ``begin ..``, how many of them are lost, the
    read failure after them, which it raises).  Raises :class:`ItemsEndedError` after an error
    propagated from the items."""
    size = len(runs.start)
    k = 0
    while k < size:
        records: list[Any] = []
        begin, lost = runs.start[k], 0
        failure: Exception | None = None
        try:
            closes.through(k)
            due = closes.due(size)
            items = run_items(
                closes.shards,
                runs.file,
                runs.first,
                runs.count,
                runs.closing,
                runs.start,
                runs.positions,
                k,
                due,
                epoch,
                names,
            )
            first, end = runs.deliveries(k, due)
            yield epoch, runs.positions[first:end], items
            k, got, outcome = _stopped(items)
            if k == due:
                continue
            stopped_at = shard(closes.shards, runs.file[k])
            if _opened(runs, k, got, outcome, stopped_at):
                continue
            begin = runs.start[k] + got
            lost = read_run(runs, k, stopped_at, records, got, outcome)
        except (ReadplanError, OSError) as err:
            failure = err
        yield from fallback(begin, records, lost, failure)  # it raises the failure
        k += 1


def _opened(runs: Runs, k: int, got: int, outcome: Outcome, shard: Shard) -> bool:
    """Whether the items stopped at run ``k`` only because its file had no stream yet, which
    is now open: the items then go on from it."""
    if got or outcome != RUN_NOT_TAKEN or runs.closing[k] or shard.stream is not None:
        return False
    return shard.start_stream(runs.first[k], runs.count[k])


def _stopped(items: Iterator[Item]) -> tuple[int, int, Outcome]:
    stopped = getattr(items, "stopped", None)
    if stopped is None:
        # Its records would be read again by the fallback: a consumer exhausts each piece.
        raise RuntimeError("the items of a piece must be exhausted before the reader reads on")
    k, got, outcome = stopped
    if outcome is None:
        raise ItemsEndedError
    return k, got, outcome
