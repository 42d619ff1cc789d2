"""Running a conversion's shard tasks, in this process or in a pool, with progress per
record (``specs/tbl.md`` §9).

:func:`run_tasks` converts one shard per task and reports, in the calling process, each
shard as it is done (in task order) and the records converted so far as they are
converted.  A task counts its records by passing them through :func:`counted`, which
reports the shard's running count at most every :data:`EVERY` seconds: directly in this
process, or from a pool worker through a pipe the calling process drains while it waits.
A shard's count is settled to its final value when its task returns, so the counts given to
the callback add up to exactly the records converted.
"""

from __future__ import annotations

import functools
import multiprocessing
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

__all__ = ["EVERY", "counted", "run_tasks"]

EVERY = 0.1
"""Seconds between two reports of one shard's running count."""

T = TypeVar("T")
R = TypeVar("R")
Report = Callable[[int, int], None]

# This process's reporter (the calling process's tally, or a pool worker's queue) and the
# shard its current task converts: a worker runs one task at a time.
_REPORT: Report | None = None
_SHARD = 0


def counted(records: Iterable[T]) -> Iterator[T]:
    """``records``, the running count of those the consumer is done with reported."""
    report, shard = _REPORT, _SHARD
    if report is None:
        yield from records
        return
    last = time.monotonic()
    for done, record in enumerate(records, 1):
        yield record
        now = time.monotonic()
        if now - last >= EVERY:
            report(shard, done)
            last = now


class _Tally:
    """Running counts per shard in, the records added since the last call out."""

    def __init__(self, callback: Callable[[int], None]) -> None:
        self._callback = callback
        self._counts: dict[int, int] = {}

    def __call__(self, shard: int, done: int) -> None:
        added = done - self._counts.get(shard, 0)
        if added > 0:  # a report can arrive after its shard was settled
            self._counts[shard] = done
            self._callback(added)


def run_tasks(
    convert: Callable[[T], R],
    tasks: Sequence[T],
    workers: int,
    size: Callable[[R], int],
    on_shard: Callable[[R], None] | None,
    on_records: Callable[[int], None] | None,
) -> list[R]:
    """``convert(task)`` for every task, in ``workers`` spawned processes when above 1;
    ``on_shard(result)`` in task order, ``on_records(added)`` as records are converted
    (``size(result)`` records in all per task).  The first failure is raised and the tasks
    not started are cancelled."""
    tally = None if on_records is None else _Tally(on_records)
    if workers == 1:
        return [
            _settled(tally, k, _run_one(tally, convert, k, t), size, on_shard)
            for k, t in enumerate(tasks)
        ]
    context = multiprocessing.get_context("spawn")
    # A SimpleQueue writes each report to its pipe before put() returns, so a task's
    # reports are there before its result: draining after the result sees them all.
    inbox: Any = None if tally is None else context.SimpleQueue()
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(inbox, EVERY)
    )
    futures: list[Future[R]] = []
    try:
        futures = [pool.submit(_run_one, None, convert, k, t) for k, t in enumerate(tasks)]
        return [
            _settled(tally, k, _awaited(future, inbox, tally), size, on_shard)
            for k, future in enumerate(futures)
        ]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        # The running tasks finish first; their reports are drained meanwhile, so that
        # none waits on a full pipe.
        while tally is not None and wait(futures, timeout=_poll()).not_done:
            _drain(inbox, tally)
        pool.shutdown(wait=True)


def _run_one(tally: Report | None, convert: Callable[[T], R], shard: int, task: T) -> R:
    global _SHARD, _REPORT
    _SHARD = shard
    if tally is not None:
        _REPORT = tally
    try:
        return convert(task)
    finally:
        if tally is not None:
            _REPORT = None


def _start_worker(inbox: Any, every: float) -> None:
    global _REPORT, EVERY
    EVERY = every
    if inbox is not None:
        _REPORT = functools.partial(_put, inbox)


def _put(inbox: Any, shard: int, done: int) -> None:
    inbox.put((shard, done))


def _awaited(future: Future[R], inbox: Any, tally: _Tally | None) -> R:
    """``future``'s result, the workers' reports passed on while it is pending."""
    if tally is None:
        return future.result()
    while True:
        try:
            result = future.result(timeout=_poll())
        except FutureTimeout:
            _drain(inbox, tally)
        else:
            _drain(inbox, tally)
            return result


def _poll() -> float:
    """Seconds between two looks at the workers' reports."""
    return max(EVERY, 0.01)


def _drain(inbox: Any, tally: _Tally) -> None:
    while not inbox.empty():
        shard, done = inbox.get()
        tally(shard, done)


def _settled(
    tally: _Tally | None,
    shard: int,
    result: R,
    size: Callable[[R], int],
    on_shard: Callable[[R], None] | None,
) -> R:
    if tally is not None:
        tally(shard, size(result))
    if on_shard is not None:
        on_shard(result)
    return result
