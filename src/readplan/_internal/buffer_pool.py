"""Large uint8 arrays whose memory is handed out again once nothing else holds it.

A fresh array of tens of megabytes costs a page fault per page (or per huge page) the
first time it is written, and on a virtual machine whose freed memory goes back to the host
those faults are slow, uneven and taken one at a time by the threads of a process: decoding a
batch of images into fresh memory on two threads was barely faster than on one.  A
:class:`BufferPool` keeps a few buffers and gives one out again only when its reference count
shows that the pool alone holds it: every array, view, ``memoryview`` or buffer export made
from an array the pool gave out holds a reference to the buffer, so memory someone can still
read is never reused (``specs/features.md`` §3.10).
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np

from readplan._internal.arrays import U8Array

__all__ = ["BufferPool"]

# References to a kept buffer while the pool alone holds it: the pool's list and the
# argument of sys.getrefcount.
_ONLY_THE_POOL = 2
# Where reference counts are not exact between threads (a build without the GIL), every
# array is fresh.
_COUNTS_ARE_EXACT = getattr(sys, "_is_gil_enabled", lambda: True)()


class BufferPool:
    """Up to ``keep`` buffers of at most ``max_bytes`` together, each handed out again as
    a new array by :meth:`empty` once no array made from it is left; thread-safe."""

    def __init__(self, keep: int = 8, max_bytes: int = 1 << 30) -> None:
        if keep < 1 or max_bytes < 1:
            raise ValueError(f"BufferPool needs keep, max_bytes >= 1, got {keep}, {max_bytes}")
        self._keep, self._max_bytes = keep, max_bytes
        self._buffers: list[U8Array] = []
        self._lock = threading.Lock()

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
        if not _COUNTS_ARE_EXACT:
            return None
        buffers = self._buffers
        for k in range(len(buffers)):
            if buffers[k].size == size and sys.getrefcount(buffers[k]) == _ONLY_THE_POOL:
                return buffers[k]
        return None

    def _keep_if_room(self, buffer: U8Array) -> None:
        """Keeps ``buffer`` if it fits, after letting go of the kept buffers nothing holds
        (none is of its size, or it would have been taken)."""
        if not _COUNTS_ARE_EXACT:
            return
        buffers = self._buffers
        buffers[:] = [
            buffers[k] for k in range(len(buffers)) if sys.getrefcount(buffers[k]) > _ONLY_THE_POOL
        ]
        held = sum(kept.size for kept in buffers)
        if len(buffers) < self._keep and held + buffer.size <= self._max_bytes:
            buffers.append(buffer)
