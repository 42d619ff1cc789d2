"""Decoding on several threads, with exactly the results of one (``specs/reader.md`` §7).

The compiled kernels release the GIL while they walk a batch's bytes (``specs/native.md``),
and so do the image decoders, so decoding batches on a few threads overlaps them.
:func:`ordered` computes ``work(item)`` for the items of an iterator on a pool, a few items
ahead, and yields the results in the items' order; an error of ``work`` is raised at its
item's turn, an error of the iterator itself only after every result before it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from readplan._internal.validate import is_int
from readplan.errors import ConfigError

__all__ = [
    "AHEAD",
    "MAX_DECODE_WORKERS",
    "SPLIT_RECORDS",
    "check_decode_workers",
    "decoded_in_parts",
    "ordered",
]

MAX_DECODE_WORKERS = 64
AHEAD = 2
"""Items in flight per thread: enough to keep every thread busy while results are taken."""

_T = TypeVar("_T")
_R = TypeVar("_R")


def check_decode_workers(workers: object) -> int:
    """``workers`` as an int from 1 to :data:`MAX_DECODE_WORKERS`, else a ConfigError."""
    if not is_int(workers) or not 1 <= workers <= MAX_DECODE_WORKERS:
        raise ConfigError(
            f"decode_workers must be an integer from 1 to {MAX_DECODE_WORKERS} (threads "
            f"decoding batches; 1 decodes in the reading thread), got {workers!r}",
            field="decode_workers",
            value=workers,
        )
    return int(workers)


def ordered(
    items: Iterator[_T], work: Callable[[_T], _R], workers: int, ahead: int = AHEAD
) -> Iterator[tuple[_T, _R]]:
    """``(item, work(item))`` for each item, in order, ``work`` running on ``workers``
    threads with ``ahead`` items in flight per thread (``1`` worker: in the caller's thread,
    nothing ahead)."""
    if workers == 1:
        return ((item, work(item)) for item in items)
    return _on_pool(items, work, workers, ahead)


def _on_pool(
    items: Iterator[_T], work: Callable[[_T], _R], workers: int, ahead: int
) -> Iterator[tuple[_T, _R]]:
    pending: deque[tuple[_T, Future[_R]]] = deque()
    failure: Exception | None = None
    exhausted = False
    pool = ThreadPoolExecutor(workers, thread_name_prefix="readplan-decode")
    try:
        while True:
            while not exhausted and len(pending) < ahead * workers:
                try:
                    item = next(items)
                except StopIteration:
                    exhausted = True
                except Exception as error:  # raised after the results before it
                    failure, exhausted = error, True
                else:
                    pending.append((item, pool.submit(work, item)))
            if not pending:
                break
            item, future = pending.popleft()
            yield item, future.result()
        if failure is not None:
            raise failure
    finally:
        for _, future in pending:
            future.cancel()
        pool.shutdown(wait=True)


SPLIT_RECORDS = 8192
"""Records of other kinds than images or audio that a decode is worth splitting at: below,
the Python of each part's decode (which holds the GIL) costs more than the parts save."""


def decoded_in_parts(
    decode_all: Callable[[list[bytes]], tuple[list[_R], Exception | None]],
    records: list[bytes],
    workers: int,
    *,
    media: bool,
) -> tuple[list[_R], Exception | None]:
    """``decode_all(records)`` with the records cut into ``workers`` consecutive parts decoded
    side by side (images or audio, ``media``, or else :data:`SPLIT_RECORDS` records at least):
    the same records and, when one does not decode, the first such record's error (the
    records before it decoded)."""
    small = not media and len(records) < SPLIT_RECORDS
    if workers == 1 or len(records) < 2 * workers or small:
        return decode_all(records)
    step = -(-len(records) // workers)
    parts = [records[at : at + step] for at in range(0, len(records), step)]
    decoded: list[_R] = []
    for part_records, error in _shared_pool(workers).map(decode_all, parts):
        decoded.extend(part_records)
        if error is not None:
            return decoded, error
    return decoded, None


_POOLS: dict[int, ThreadPoolExecutor] = {}


def _shared_pool(workers: int) -> ThreadPoolExecutor:
    """One pool per size for the data sources of a process (a source may be used from
    many threads and is pickled into workers: it holds no pool of its own)."""
    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS.setdefault(
            workers, ThreadPoolExecutor(workers, thread_name_prefix="readplan-source-decode")
        )
    return pool
