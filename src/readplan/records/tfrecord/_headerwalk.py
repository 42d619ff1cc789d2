"""A header walk that goes only as far as asked, and continues from there on demand.

Random access without an index sidecar needs the offsets of the records before the ones
read; walking the rest of the file first would make the first read of a large file cost a
whole walk (specs/tfrecord.md, section 7).
"""

from __future__ import annotations

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.records.tfrecord._parser import FrameParser
from readplan.records.tfrecord._stream import ByteStream, InflateStream, PlainStream
from readplan.storage import Handle, size_of

__all__ = ["HeaderWalk"]


class HeaderWalk:
    """Frame offsets of the open file ``fd`` (not closed here), walked lazily.

    Damage met on the way raises :class:`~readplan.errors.CorruptRecordError`.
    """

    def __init__(
        self, fd: Handle, path: str, compression: str | None, max_record_bytes: int
    ) -> None:
        self._stream: ByteStream
        if compression is None:
            self._stream = PlainStream(fd, start=0, end=size_of(fd), owns_fd=False)
        else:
            self._stream = InflateStream(fd, compression, owns_fd=False)
        self._parser = FrameParser(
            self._stream,
            path=path,
            verify=False,
            skip_damage=False,
            report=None,
            max_record_bytes=max_record_bytes,
        )
        # Offsets found so far in the first ``_walked`` slots; capacity doubles as needed.
        self._found = np.zeros(64, dtype=np.int64)
        self._walked = 0
        self.complete = False

    def through(self, count: int | None) -> tuple[IntArray, int]:
        """Offsets of the first ``count`` frames (all when ``None``, or fewer if the file has
        fewer), and where the last of them ends.  Frames after them are not looked at."""
        if not self.complete and (count is None or self._walked < count):
            need = None if count is None else count - self._walked
            before = self._walked
            for batch in self._parser.frames(need):
                self._append(batch)
            self.complete = need is None or self._walked - before < need or self._at_end()
        offsets = self._found[: self._walked]
        if count is not None and count < self._walked:
            return offsets[:count], int(offsets[count])
        return offsets, self._stream.pos

    def _append(self, batch: IntArray) -> None:
        size = self._walked + len(batch)
        if size > len(self._found):
            grown = np.zeros(max(size, 2 * len(self._found)), dtype=np.int64)
            grown[: self._walked] = self._found[: self._walked]
            self._found = grown
        self._found[self._walked : size] = batch
        self._walked = size

    def _at_end(self) -> bool:
        return self._stream.remaining() == 0
