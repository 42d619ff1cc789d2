"""A few int64 values shared by a process and the processes it starts, under one lock.

A PyTorch DataLoader hands its workers a copy of the dataset: forked (the memory is
inherited) or pickled into a spawned process.  :class:`SharedInts` lives in a shared memory
map, so every copy made that way reads and writes the same values; ``with shared:`` holds a
lock that excludes the other threads of the process (a thread lock) and the other processes
(a POSIX record lock on the map's file, which is per process, so it holds across fork).
Pickled outside a process start (``pickle.dumps`` by hand), it becomes a private copy of
the values: nothing is shared with a process that was not started from this one.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
from multiprocessing import context, reduction
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: threads are still excluded
    fcntl = None  # type: ignore[assignment]

__all__ = ["SharedInts"]


class SharedInts:
    """``size`` int64 values, 0 at first, in shared memory (``values``); ``with`` locks them."""

    def __init__(self, size: int, *, fd: int | None = None) -> None:
        if fd is None:
            with tempfile.TemporaryFile() as handle:
                fd = os.dup(handle.fileno())
            os.ftruncate(fd, 8 * size)
        self.size = size
        self._fd = fd
        self._map = mmap.mmap(fd, 8 * size)
        self.values: npt.NDArray[np.int64] = np.frombuffer(self._map, dtype=np.int64)
        self._thread_lock = threading.Lock()

    def __enter__(self) -> npt.NDArray[np.int64]:
        self._thread_lock.acquire()
        if fcntl is not None:
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
        return self.values

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if fcntl is not None:
            fcntl.lockf(self._fd, fcntl.LOCK_UN)
        self._thread_lock.release()

    def __reduce__(self) -> tuple[Any, ...]:
        if context.get_spawning_popen() is not None:
            # Pickled to start a process (spawn, forkserver): the child maps the same file.
            return _attach, (reduction.DupFd(self._fd), self.size)
        return _private_copy, (self.values.tolist(),)

    def __del__(self) -> None:
        fd, self._fd = getattr(self, "_fd", -1), -1
        if fd >= 0:
            os.close(fd)


def _attach(duplicate: Any, size: int) -> SharedInts:
    return SharedInts(size, fd=duplicate.detach())


def _private_copy(values: list[int]) -> SharedInts:
    copy = SharedInts(len(values))
    copy.values[:] = values
    return copy
