"""The frame boundaries an index sidecar promises, checked during a pass over the data.

An index is bound to its data file by size and the CRC of its first and last 64 KiB, which
cannot notice a same-size rewrite of the middle.  So every pass that starts from indexed
offsets also checks, frame by frame, that each frame starts where the index says and that
the last one ends where the index says (normative: specs/tfrecord.md, section 8).
"""

from __future__ import annotations

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.records.index._format import refuse_offsets

__all__ = ["ExpectedFrames"]


class ExpectedFrames:
    """Indexed starts of the frames one pass reads (``starts``), and where the last ends.

    ``first_index`` is the record number of ``starts[0]`` and ``index_path`` the sidecar the
    offsets were read from (``None``: held in memory), for messages.
    """

    def __init__(
        self,
        starts: IntArray,
        end: int,
        *,
        data_path: str,
        index_path: str | None,
        first_index: int,
    ) -> None:
        self._starts = starts
        self._end = end
        self._data_path = data_path
        self._index_path = index_path
        self._first = first_index
        self._done = 0

    @property
    def complete(self) -> bool:
        """Whether every promised frame has been found."""
        return self._done == len(self._starts)

    def _bound(self, k: int) -> int:
        """Indexed start of frame ``k`` of the pass, or the indexed end after the last."""
        return int(self._starts[k]) if k < len(self._starts) else self._end

    def check(self, starts: IntArray, after: int) -> None:
        """The next frames were found at ``starts``, the last of them ending at ``after``."""
        done = self._done
        count = len(starts)
        expected = self._starts[done : done + count]
        if len(expected) < count:
            self._refuse(done + len(expected), int(starts[len(expected)]), None)
        differs = np.flatnonzero(expected != starts)
        if differs.size:
            k = int(differs[0])
            self._refuse(done + k, int(starts[k]), int(expected[k]))
        if after != self._bound(done + count):
            self._refuse(done + count, after, self._bound(done + count))
        self._done = done + count

    def check_end(self, pos: int) -> None:
        """The stream ended (or the pass stopped) at ``pos`` after the frames checked so far."""
        if not self.complete:
            self._refuse(self._done, pos, self._bound(self._done))

    def _refuse(self, k: int, found: int, expected: int | None) -> None:
        record = self._first + k
        if expected is None:
            where = f"a frame starts at {found}, after the last indexed record"
        elif expected == self._end and k == len(self._starts):
            where = f"the indexed records should end at {expected} but the frames reach {found}"
        else:
            where = f"record {record} should start at {expected} but the frames reach {found}"
        raise refuse_offsets(
            self._index_path,
            self._data_path,
            "offsets",
            f"in {self._data_path}, {where}: the data file was rewritten since the index was "
            "built (its size and first and last 64 KiB are unchanged)",
        )
