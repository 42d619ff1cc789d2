"""Opening a reader's next remote shards before it reaches them (``specs/storage.md``).

Over a network, opening a shard costs round trips (its size and version, then its first
block).  The plan says which files come next: :class:`ShardWarmer` keeps the next
``ahead`` files of a chunk, in the order the interleave first reads them, opening in the
background (:func:`readplan.storage.warm`), so the interleave's files arrive concurrently
as tf.data's parallel interleave fetches them.  It changes no read and no delivery order:
a warmed handle is the one the reader would have opened.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from readplan.storage import warm

__all__ = ["DEFAULT_AHEAD", "ShardWarmer"]

DEFAULT_AHEAD = 16


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
