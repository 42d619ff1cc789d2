"""Background fetching of the blocks remote readers will need next (``specs/storage.md``).

One pool per process, shared by every remote handle: each handle that reads sequentially
asks for its next block as soon as it starts on one, so every file an interleave has open
is fetched concurrently (as tf.data's parallel interleave does).  The bytes fetched ahead
and not yet consumed never exceed ``max_bytes``; a request that does not fit is simply
not made, and the reader fetches that block itself when it gets there.  Prefetching only
fills caches: which bytes are read, and in what order records are delivered, is the same.

Background jobs may need each other's results (a shard opened ahead takes the object a
warm-up opened).  A pool thread never waits for a job still queued behind it, as every
thread could be waiting so: it cancels that job and runs it itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from readplan._internal.validate import check_int

_T = TypeVar("_T")

__all__ = [
    "DEFAULT_PREFETCH_BYTES",
    "DEFAULT_PREFETCH_WORKERS",
    "Ahead",
    "Prefetcher",
    "prefetcher",
    "set_prefetch",
]

DEFAULT_PREFETCH_BYTES = 256 << 20
DEFAULT_PREFETCH_WORKERS = 16

_pool_thread = threading.local()


def _mark_pool_thread() -> None:
    _pool_thread.active = True


def _in_pool_thread() -> bool:
    return getattr(_pool_thread, "active", False)


class Prefetcher:
    """A bounded thread pool with a budget of bytes fetched ahead and not yet consumed."""

    def __init__(
        self,
        max_bytes: int = DEFAULT_PREFETCH_BYTES,
        workers: int = DEFAULT_PREFETCH_WORKERS,
    ) -> None:
        self.max_bytes = check_int(max_bytes, "max_bytes", minimum=0, what="a number of bytes")
        self.workers = check_int(workers, "workers", minimum=1, what="a number of threads >= 1")
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self.held = 0
        self.peak = 0
        self.requests = 0

    def submit(self, size: int, fetch: Callable[[], _T]) -> Future[_T] | None:
        """Run ``fetch`` in the background if ``size`` more bytes fit the budget."""
        with self._lock:
            if self.held + size > self.max_bytes:
                return None
            self.held += size
            self.peak = max(self.peak, self.held)
            self.requests += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="readplan-fetch", initializer=_mark_pool_thread
                )
            pool = self._pool
        return pool.submit(fetch)

    def ahead(self, size: int, fetch: Callable[[], _T]) -> Ahead[_T] | None:
        """:meth:`submit`, with the ``size`` bytes it holds of the budget counted until the
        result is taken or dropped."""
        future = self.submit(size, fetch)
        return None if future is None else Ahead(future, self, size, fetch)

    def release(self, size: int) -> None:
        """``size`` bytes fetched ahead were consumed or dropped."""
        with self._lock:
            self.held -= size

    def shutdown(self) -> None:
        """Stop the threads once the fetches under way are done."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.held


class Ahead(Generic[_T]):
    """A result being fetched in the background, holding ``size`` bytes of ``owner``'s
    budget until it is taken or dropped."""

    __slots__ = ("fetch", "future", "owner", "size")

    def __init__(
        self, future: Future[_T], owner: Prefetcher, size: int, fetch: Callable[[], _T]
    ) -> None:
        self.future = future
        self.owner = owner
        self.size = size
        self.fetch = fetch

    def take(self) -> _T:
        """The result (waiting for it), or the fetch's exception.  Taken in a pool thread
        before it started, the fetch runs in that thread instead (module docstring)."""
        try:
            if _in_pool_thread() and self.future.cancel():
                return self.fetch()
            return self.future.result()
        finally:
            self.owner.release(self.size)

    def drop(self, cleanup: Callable[[_T], object] | None = None) -> None:
        """Give the result up: cancelled if not started, else released (and ``cleanup``
        applied to it) once the fetch under way ends."""
        if self.future.cancel():
            self.owner.release(self.size)
            return

        def done(future: Future[_T]) -> None:
            self.owner.release(self.size)
            if cleanup is not None and not future.cancelled() and future.exception() is None:
                cleanup(future.result())

        self.future.add_done_callback(done)


_shared = Prefetcher()


def prefetcher() -> Prefetcher:
    """The process-wide prefetcher every remote handle uses."""
    return _shared


def set_prefetch(
    max_bytes: int = DEFAULT_PREFETCH_BYTES, workers: int = DEFAULT_PREFETCH_WORKERS
) -> Prefetcher:
    """Replace the process-wide prefetcher (``max_bytes=0`` turns prefetching off)."""
    global _shared
    previous, _shared = _shared, Prefetcher(max_bytes, workers)
    previous.shutdown()
    return _shared


def _after_fork_in_child() -> None:
    # A forked child (a DataLoader worker) has none of the parent's threads: a fresh pool
    # and budget with the same bounds, so no fetch waits on a thread that does not exist.
    global _shared
    _shared = Prefetcher(_shared.max_bytes, _shared.workers)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
