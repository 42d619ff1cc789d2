"""Opening a reader's next remote shards, and fetching their next spans, before it reaches
them (``specs/storage.md`` §5).

Over a network, opening a shard costs round trips (its size and version, then its first
block).  The plan says which files come next: :class:`ShardWarmer` keeps the next
``ahead`` files of a chunk, in the order the interleave first reads them, opening in the
background (:func:`readplan.storage.warm`), so the interleave's files arrive concurrently
as tf.data's parallel interleave fetches them.  It changes no read and no delivery order:
a warmed handle is the one the reader would have opened.

A reader by random access (a rank of several, an example shuffle) reads each file's records
of a window in spans, file by file.  :class:`SpanFetcher` keeps the next ``ahead`` of
those reads (one file's records of one window each) fetched in the background: a file not
open yet is opened on the prefetch pool (:func:`open_ahead`, the very opening the reader
makes, sidecar included) and the bytes of its spans requested; an open file's spans are
requested at once.  Everything fetched ahead is a cache: a read finds its bytes there or
makes the request itself, and a background failure is dropped (the reader's own request
meets it again, where it belongs).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from readplan._internal.arrays import IntArray
from readplan.reading.containers import RecordContainer, RecordSource, SpanSource
from readplan.storage import DEFAULT_BLOCK, Ahead, Handle, prefetcher, warm
from readplan.storage import close as close_handle

__all__ = [
    "DEFAULT_AHEAD",
    "DEFAULT_SPAN_AHEAD",
    "Prepared",
    "ShardWarmer",
    "SpanFetcher",
    "open_ahead",
]

DEFAULT_AHEAD = 16
DEFAULT_SPAN_AHEAD = 16
"""File reads (one file's records of one window) a reader by random access keeps fetched
ahead of the one it makes."""


class ShardWarmer:
    """Warms ``path(f)`` for the next files ``f`` a chunk opens; a no-op unless ``remote``
    (some file is a storage URL)."""

    def __init__(
        self,
        path: Callable[[int], str],
        remote: bool,
        storage_options: Mapping[str, Any] | None,
        ahead: int = DEFAULT_AHEAD,
    ) -> None:
        self._path = path
        self._options = storage_options
        self._ahead = ahead
        self.enabled = remote
        self._order: list[tuple[int, bool]] = []
        self._warmed = 0
        self._opened = 0

    def start_chunk(
        self, files: Sequence[int], firsts: Sequence[int], open_now: Collection[int]
    ) -> None:
        """The file and first record of each of a chunk's runs, in run order; the files in
        ``open_now`` are open already.  A file whose first read starts at its record 0 has
        its first block fetched too; the others (a restore, a scattered read) only their
        identity."""
        if not self.enabled:
            return
        starts: dict[int, int] = {}
        for file, first in zip(files, firsts):
            starts.setdefault(file, first)
        self._order = [(f, first == 0) for f, first in starts.items() if f not in open_now]
        self._warmed = self._opened = 0
        self._fill()

    def opening(self) -> None:
        """The reader opens its next file of the chunk: warm one more."""
        if self.enabled:
            self._opened += 1
            self._fill()

    def _fill(self) -> None:
        limit = min(len(self._order), self._opened + self._ahead)
        while self._warmed < limit:
            file, head = self._order[self._warmed]
            warm(self._path(file), storage_options=self._options, head=head)
            self._warmed += 1


@dataclass(frozen=True)
class Prepared:
    """A shard opened in the background: the file, its span reads (``None`` when its
    container has none) and their handle (``None`` when they hold none)."""

    file: RecordSource
    spans: SpanSource | None
    handle: Handle | None

    def close(self) -> None:
        if self.handle is not None:
            close_handle(self.handle)
        self.file.close()


def open_ahead(
    container: RecordContainer,
    path: str,
    options: Mapping[str, Any],
    indices: IntArray,
) -> Ahead[Prepared] | None:
    """Open ``path`` on the prefetch pool as the reader does (``container.open(path,
    **options)``, then its span reads), and start fetching the spans of records
    ``indices``; ``None`` when the opening does not fit the prefetch budget.  It holds one
    block of the budget (a sidecar is read in one request of at most a block) until the
    reader takes it."""

    def job() -> Prepared:
        file = container.open(path, **options)
        handles: list[Handle] = []

        def keep(fd: Handle) -> Handle:
            handles.append(fd)
            return fd

        try:
            spans = container.spans(file, keep)
            prepared = Prepared(file, spans, handles[0] if handles else None)
        except BaseException:
            for fd in handles:
                close_handle(fd)
            file.close()
            raise
        if spans is not None:
            spans.prefetch(indices)
        return prepared

    return prefetcher().ahead(DEFAULT_BLOCK, job)


class SpanFetcher:
    """Keeps the next ``ahead`` file reads of a chunk's windows fetched in the background;
    a no-op unless ``enabled`` (some file is a storage URL).

    ``start_chunk`` names the chunk's windows: ``groups(k)`` lists window ``k``'s reads in
    order, ``(file, increasing record indices)``, and ``fetch(file, indices)`` starts
    fetching one, returning ``False`` when it does not fit the prefetch budget (it is tried
    again as the reads go on).
    """

    def __init__(self, enabled: bool, ahead: int = DEFAULT_SPAN_AHEAD) -> None:
        self.enabled = enabled and ahead > 0
        self._ahead = ahead
        self.start_chunk(0, lambda window: [], lambda file, indices: True)

    def start_chunk(
        self,
        windows: int,
        groups: Callable[[int], list[tuple[int, IntArray]]],
        fetch: Callable[[int, IntArray], bool],
    ) -> None:
        self._windows, self._groups, self._fetch = windows, groups, fetch
        self._reads: list[tuple[int, IntArray]] = []
        self._window_starts: list[int] = []
        self._cursor = self._next = 0

    def start_window(self, window: int) -> None:
        """Window ``window`` is read next: fetch its reads, and the next window's.

        Its reads are asked for again, from its first: one asked for while the previous
        window was read may have depended on a read of that window (a file without a
        sidecar) and been left for now.  (What was fetched already is not fetched again.)
        """
        if not self.enabled:
            return
        while len(self._window_starts) <= min(window + 1, self._windows - 1):
            self._window_starts.append(len(self._reads))
            self._reads.extend(self._groups(len(self._window_starts) - 1))
        self._cursor = self._next = self._window_starts[window]
        self._fill()

    def advance(self) -> None:
        """The reader made one more read of the window."""
        if self.enabled:
            self._cursor += 1
            self._fill()

    def _fill(self) -> None:
        self._next = max(self._next, self._cursor)
        stop = min(len(self._reads), self._cursor + 1 + self._ahead)
        while self._next < stop:
            file, indices = self._reads[self._next]
            if not self._fetch(file, indices):
                return  # tried again at the next read, when the budget may have room
            self._next += 1
