"""Large uint8 arrays whose memory is handed out again once nothing else holds it.

A fresh array of tens of megabytes costs a page fault per page (or per huge page) the
first time it is written, and on a virtual machine whose freed memory goes back to the host
those faults are slow, uneven and taken one at a time by the threads of a process: decoding a
batch of images into fresh memory on two threads was barely faster than on one.  A
:class:`BufferPool` keeps buffers (a few batch arrays, or many images decoded one at a time)
and gives one out again only when its reference count shows that the pool alone holds it:
every array, view, ``memoryview`` or buffer export made from an array the pool gave out holds
a reference to the buffer, so memory someone can still read is never reused
(``specs/features.md`` §3.10 and §4).
"""

from __future__ import annotations

import math
import sys
import threading
from collections import deque
from itertools import chain

import numpy as np

from readplan._internal.arrays import U8Array

__all__ = ["BufferPool"]

# References to a kept buffer while the pool alone holds it: the pool's deque and the
# argument of sys.getrefcount.
_ONLY_THE_POOL = 2
# Where reference counts are not exact between threads (a build without the GIL), every
# array is fresh.
_COUNTS_ARE_EXACT = getattr(sys, "_is_gil_enabled", lambda: True)()
# Kept buffers of a size looked at per request: the ones handed out last first (memory
# written lately, still in the caches and never given back to the host), then the oldest
# (arrays are mostly dropped in the order they were handed out: when a whole batch of them is
# still held, the buffers of the one before are free).  A request costs a few reference counts
# however many buffers are kept.
_LOOK = 8


class BufferPool:
    """Up to ``keep`` buffers of at most ``max_bytes`` together, each handed out again as
    a new array by :meth:`empty` once no array made from it is left; thread-safe."""

    def __init__(self, keep: int = 8, max_bytes: int = 1 << 30) -> None:
        if keep < 1 or max_bytes < 1:
            raise ValueError(f"BufferPool needs keep, max_bytes >= 1, got {keep}, {max_bytes}")
        self._keep, self._max_bytes = keep, max_bytes
        # The buffers kept, by size, each size's in the order they were last handed out.
        self._kept: dict[int, deque[U8Array]] = {}
        self._count = self._bytes = 0
        self._lock = threading.Lock()

    @property
    def kept_sizes(self) -> list[int]:
        """The sizes of the buffers kept (held or not), each size's oldest first."""
        with self._lock:
            return [buffer.size for buffers in self._kept.values() for buffer in buffers]

    def empty(self, shape: tuple[int, ...]) -> U8Array:
        """An uninitialised uint8 array of ``shape``: a kept buffer of its size that nothing
        else holds, else a new one, kept while there is room."""
        size = math.prod(shape)
        with self._lock:
            buffer = self._free_buffer(size)
            if buffer is None:
                buffer = np.empty(size, dtype=np.uint8)
                self._keep_if_room(buffer)
        return buffer.reshape(shape)

    def _free_buffer(self, size: int) -> U8Array | None:
        buffers = self._kept.get(size)
        if not _COUNTS_ARE_EXACT or not buffers:
            return None
        n = len(buffers)
        newest = range(n - 1, max(n - 1 - _LOOK, -1), -1)
        for k in chain(newest, range(min(_LOOK, n - len(newest)))):
            if sys.getrefcount(buffers[k]) == _ONLY_THE_POOL:
                buffer = buffers[k]
                del buffers[k]
                buffers.append(buffer)  # handed out last
                return buffer
        return None

    def _keep_if_room(self, buffer: U8Array) -> None:
        """Keeps ``buffer`` if it fits, after letting go of the kept buffers of other sizes
        that nothing holds (a free one of its size would have been taken)."""
        if not _COUNTS_ARE_EXACT:
            return
        other_sizes = len(self._kept) - (buffer.size in self._kept)
        if not self._has_room(buffer.size) and other_sizes:
            self._let_go_of_other_sizes(buffer.size)
        if self._has_room(buffer.size):
            self._kept.setdefault(buffer.size, deque()).append(buffer)
            self._count += 1
            self._bytes += buffer.size

    def _has_room(self, size: int) -> bool:
        return self._count < self._keep and self._bytes + size <= self._max_bytes

    def _let_go_of_other_sizes(self, size: int) -> None:
        for other in [other for other in self._kept if other != size]:
            buffers = self._kept[other]
            held = deque(
                [
                    buffers[k]
                    for k in range(len(buffers))
                    if sys.getrefcount(buffers[k]) > _ONLY_THE_POOL
                ]
            )
            self._count -= len(buffers) - len(held)
            self._bytes -= (len(buffers) - len(held)) * other
            if held:
                self._kept[other] = held
            else:
                del self._kept[other]
