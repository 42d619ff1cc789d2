"""Opening a reader's next remote shards before it reaches them (``specs/storage.md``).

Over a network, opening a shard costs round trips (its size and version, then its first
block).  The plan says which files come next: :class:`ShardWarmer` keeps the next
``ahead`` files of a chunk, in the order the interleave first reads them, opening in the
background (:func:`readplan.storage.warm`), so the interleave's files arrive concurrently
as tf.data's parallel interleave fetches them.  It changes no read and no delivery order:
a warmed handle is the one the reader would have opened.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from readplan.storage import is_remote, warm

__all__ = ["DEFAULT_AHEAD", "ShardWarmer"]

DEFAULT_AHEAD = 16


class ShardWarmer:
    """Warms ``paths[f]`` for the next files ``f`` a chunk opens; a no-op for local paths."""

    def __init__(
        self,
        paths: Sequence[str],
        storage_options: Mapping[str, Any] | None,
        ahead: int = DEFAULT_AHEAD,
    ) -> None:
        self._paths = paths
        self._options = storage_options
        self._ahead = ahead
        self.enabled = any(is_remote(path) for path in paths)
        self._order: list[int] = []
        self._warmed = 0
        self._opened = 0

    def start_chunk(self, files: Sequence[int], open_now: Collection[int]) -> None:
        """The files of a chunk's runs, in run order; ``open_now`` are open already."""
        if not self.enabled:
            return
        self._order = [f for f in dict.fromkeys(files) if f not in open_now]
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
            warm(self._paths[self._order[self._warmed]], storage_options=self._options)
            self._warmed += 1
