"""Sidecars checked before (``specs/tfrecord.md`` §8.2): a local sidecar that passed every
check against its local data file is taken again without reading and checking it again
while neither file changed.

"Changed" is seen in what ``stat`` reports: device, inode, size, modification and
status-change times.  The status-change time cannot be set back by a user, but it is
kept with a coarse clock (a few milliseconds), so a file changed twice within one tick
keeps it: a check is remembered only when both files last changed at least
``SETTLED_NS`` before it began.  A later change then moves the time on, and the next
open checks the sidecar again exactly as the first did.  Whatever is remembered, every
read still checks its frames against the offsets (§8.1).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from readplan.records.index._sidecar import RecordIndex

__all__ = ["SETTLED_NS", "CheckedSidecars", "identity"]

SETTLED_NS = 2_000_000_000
"""How long both files must have stood unchanged when a check began for it to be kept."""

# Offsets held at most, over all remembered sidecars (8 bytes each: 64 MiB).
_MAX_OFFSETS = 1 << 23

Identity = tuple[int, int, int, int, int]
"""``(device, inode, size, mtime_ns, ctime_ns)`` of a file."""

_Key = tuple[str, str, str | None]


def identity(status: os.stat_result) -> Identity:
    return (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


def _new_lock(checked: CheckedSidecars | None) -> None:
    if checked is not None:
        checked._lock = threading.Lock()


def _settled(ids: tuple[Identity, Identity], began_ns: int) -> bool:
    latest = max(max(found[3], found[4]) for found in ids)
    return latest <= began_ns - SETTLED_NS


class CheckedSidecars:
    """The sidecars checked so far, by (data path, sidecar path, compression), with the
    identities of both files as they were checked; the least recently used are forgotten
    beyond ``max_offsets`` offsets held.  Safe to use from several threads."""

    def __init__(self, max_offsets: int = _MAX_OFFSETS) -> None:
        self._max = max_offsets
        self._held = 0
        self._lock = threading.Lock()
        # A child forked while another thread held the lock would wait for it forever.
        me = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _new_lock(me()))
        self._entries: OrderedDict[_Key, tuple[tuple[Identity, Identity], RecordIndex]] = (
            OrderedDict()
        )

    def load(
        self,
        key: _Key,
        data_fd: int,
        check: Callable[[], RecordIndex | None],
    ) -> RecordIndex | None:
        """The index of sidecar ``key[1]`` for the open local data file ``data_fd``: the one
        remembered when neither file changed since it was checked, else ``check()`` (which
        reads and checks it), remembered when both had settled; ``None`` when there is no
        sidecar.
        """
        began = time.time_ns()
        try:
            sidecar = identity(os.stat(key[1]))
        except FileNotFoundError:
            return None  # no sidecar: what reading it would have found a moment later
        ids = (identity(os.fstat(data_fd)), sidecar)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == ids:
                self._entries.move_to_end(key)
                return entry[1]
        index = check()
        if index is not None and _settled(ids, began):
            self._remember(key, ids, index)
        return index

    def _remember(self, key: _Key, ids: tuple[Identity, Identity], index: RecordIndex) -> None:
        size = len(index.offsets)
        if size > self._max:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._held -= len(old[1].offsets)
            while self._entries and self._held + size > self._max:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._held -= len(dropped.offsets)
            self._entries[key] = (ids, index)
            self._held += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0
