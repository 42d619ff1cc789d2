"""Runs of one batch taken from the shards' streams at once (``specs/native.md``,
"take_runs"): a reader streaming its files (one rank, no example shuffle) takes each run's
records from its shard's stream without a Python step per run, and hands the runs that need
more (a file not open yet, the plan's last read of a file, a stream that ends or fails)
to the shard's own reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from readplan.errors import ReadplanError
from readplan.reading.chunks import Runs
from readplan.reading.runs import Closes, Shard
from readplan.records.native import CORE

__all__ = [
    "RUN_ENDED",
    "RUN_NOT_TAKEN",
    "Outcome",
    "check_shards_dict",
    "read_run",
    "read_runs",
    "take_runs",
    "take_runs_pure",
]

RUN_NOT_TAKEN = 0
"""Outcome: the run stopped at was not taken; nothing of it was appended."""
RUN_ENDED = 1
"""Outcome: the stream of the run stopped at ended after ``got`` of its records."""

Outcome: TypeAlias = "int | Exception"
"""``RUN_NOT_TAKEN``, ``RUN_ENDED``, or the exception the stream raised after ``got`` records."""


def take_runs_pure(
    out: list[Any],
    shards: dict[int, Any],
    files: list[int],
    counts: list[int],
    closing: list[bool],
    lo: int,
    hi: int,
) -> tuple[int, int, Outcome]:
    """Append the records of runs ``lo .. hi - 1`` to ``out`` (run ``k``: ``counts[k]``
    records of ``shards[files[k]].stream``) up to the first run that is ``closing[k]``,
    has no shard or stream, or whose stream ends or raises; ``(k, got, outcome)`` names that
    run (``hi`` when all were taken), how many of its records were appended, and why it
    stopped.  The twin of the compiled ``take_runs``."""
    check_shards_dict("take_runs", shards)
    if not len(files) == len(counts) == len(closing):
        raise ValueError("take_runs: files, counts and closing must hold one entry per run")
    if not 0 <= lo <= hi <= len(files):
        raise ValueError(f"take_runs: runs {lo} .. {hi} are not within 0 .. {len(files)}")
    for k in range(lo, hi):
        count = counts[k]
        if count < 0:
            raise ValueError(f"take_runs: run {k} counts {count} records")
        shard = None if closing[k] else shards.get(files[k])
        stream = None if shard is None else shard.stream
        if stream is None:
            return k, 0, RUN_NOT_TAKEN
        for got in range(count):
            try:
                record = next(stream)
            except StopIteration:
                return k, got, RUN_ENDED
            except Exception as error:  # the run's outcome: the caller words or skips it
                return k, got, error
            out.append(record)
    return hi, 0, RUN_NOT_TAKEN


def check_shards_dict(who: str, shards: object) -> None:
    """Both cores look shards up in a dict as a dict: a subclass's methods would make them
    differ, so only a dict is taken."""
    if type(shards) is not dict:
        raise TypeError(
            f"{who}: shards must be a dict (the shards are looked up in it as a dict, not "
            f"through a subclass's methods), got {type(shards)!r}"
        )


def take_runs(
    out: list[Any],
    shards: dict[int, Any],
    files: list[int],
    counts: list[int],
    closing: list[bool],
    lo: int,
    hi: int,
) -> tuple[int, int, Outcome]:
    """:func:`take_runs_pure`, by the compiled core when there is one."""
    if CORE is None:
        return take_runs_pure(out, shards, files, counts, closing, lo, hi)
    taken: tuple[int, int, Outcome] = CORE.take_runs(out, shards, files, counts, closing, lo, hi)
    return taken


def read_runs(
    runs: Runs,
    first_run: int,
    stop_run: int,
    closes: Closes,
    shard: Callable[[dict[int, Shard], int], Shard],
    streaming: bool,
) -> tuple[list[Any], int, Exception | None]:
    """The records of runs ``first_run .. stop_run - 1`` (one batch), how many of them are
    lost (skip mode), and the read failure that stopped them, if any.

    ``shard(shards, f)`` gives file ``f`` open; files are closed as the runs pass the plan's
    last read of each.  ``streaming`` (one rank, no example shuffle): the runs the open
    streams serve are taken in one step (:func:`take_runs`); the others are read one by one.
    """
    records: list[Any] = []
    lost = 0
    try:
        k = first_run
        while k < stop_run:
            closes.through(k)
            got = 0
            outcome: Outcome = RUN_NOT_TAKEN
            if streaming:
                due = closes.due(stop_run)
                k, got, outcome = take_runs(
                    records, closes.shards, runs.file, runs.count, runs.closing, k, due
                )
                if k == due:
                    continue
            lost += read_run(runs, k, shard(closes.shards, runs.file[k]), records, got, outcome)
            k += 1
    except (ReadplanError, OSError) as err:
        return records, lost, err
    return records, lost, None


def read_run(
    runs: Runs, k: int, shard: Shard, records: list[Any], got: int, outcome: Outcome
) -> int:
    """Run ``k`` appended to ``records``, after ``got`` of its records that its stream
    gave before ``outcome`` (:func:`take_runs`; the ``got`` records are not appended
    again); returns how many are lost."""
    first, count = runs.first[k], runs.count[k]
    if isinstance(outcome, Exception):
        return shard.recover(records, first, count, got, outcome)
    if outcome == RUN_ENDED:
        raise shard.short(first + got)
    if runs.span[k] == count:
        return shard.take_into(records, first, count)
    begin = runs.start[k]
    return shard.gather_into(records, runs.record_index[begin : begin + count])
