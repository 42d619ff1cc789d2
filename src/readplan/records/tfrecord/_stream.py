"""Buffered byte streams under the TFRecord parser: a plain file or an inflated one.

The parser reads the buffer (``data`` from ``off``) directly on its fast path and calls
:meth:`ByteStream.fill`, :meth:`~ByteStream.take` and :meth:`~ByteStream.skip` otherwise.
Positions are offsets in the record stream (the decompressed bytes for GZIP/ZLIB).

Read sizes adapt to the records: while records are small the plain stream reads large
chunks; a record of ``LARGE`` bytes or more is read straight into its own ``bytes`` object
(one copy from the kernel), and skipping over one costs no I/O at all.

A plain local stream made with ``reuse=True`` reads its chunks into one buffer it keeps, so
that reading costs no fresh memory (page faults); ``data`` is then a view of that buffer,
valid until the next :meth:`~ByteStream.fill`, and everything the stream hands out is copied.
"""

from __future__ import annotations

import io
import os
from abc import ABC, abstractmethod

from readplan.records._crc import crc32c
from readplan.records._damage import StreamDamageError
from readplan.records.tfrecord._compression import Inflater, pread
from readplan.records.tfrecord._layout import CRC
from readplan.storage import Handle, StorageOptions, close, open_read

__all__ = [
    "AFTER_LARGE",
    "CHUNK",
    "LARGE",
    "MID_CHUNK",
    "REUSED",
    "ByteStream",
    "InflateStream",
    "PlainStream",
]

CHUNK = 1 << 19
# Read size while frames average MID_FRAME bytes or more: per-read costs (a batch's numpy
# checks) then weigh on few frames, so fewer, larger reads pay.
MID_CHUNK = 1 << 21
MID_FRAME = 1 << 10
LARGE = 1 << 15
# After a large record, the next read only needs its data CRC and the following header.
AFTER_LARGE = 16
# Size of a reusing stream's buffer: every chunk read fits it.
REUSED = MID_CHUNK + LARGE
# Windows has no positioned read into a buffer; streams there read into fresh memory.
_PREADV = getattr(os, "preadv", None)
# Upper bound of one decompression step's output.
_INFLATE_PIECE = 1 << 18
# Compressed records at least this long have their data CRC checked before they are built.
VERIFY_FIRST = 1 << 20


def open_handle(path: str, storage_options: StorageOptions = None) -> Handle:
    """Open ``path`` (a local path or a URL) for positioned reads.

    A missing local file raises FileNotFoundError naming it, a missing object
    :class:`~readplan.errors.ObjectNotFoundError`.
    """
    return open_read(path, storage_options=storage_options)


class ByteStream(ABC):
    """Buffer bookkeeping shared by both stream kinds; subclasses supply :meth:`_more`."""

    def __init__(self, fd: Handle, *, start: int, owns_fd: bool) -> None:
        self.fd = fd
        self._owns_fd = owns_fd
        self.data: bytes | memoryview = b""
        self.off = 0
        # Stream offset of data[0]; base + len(data) is always the next byte the source yields.
        self.base = start
        self.hint = CHUNK

    @property
    def pos(self) -> int:
        return self.base + self.off

    def remaining(self) -> int | None:
        """Bytes left in the stream when that is known without reading them."""
        return None

    @property
    def end_damage(self) -> StreamDamageError | None:
        return None

    @property
    def compressed_offset(self) -> int | None:
        return None

    def close(self) -> None:
        """Close the file if this stream opened it (idempotent)."""
        if self._owns_fd and (not isinstance(self.fd, int) or self.fd >= 0):
            close(self.fd)
        self.fd = -1

    def __del__(self) -> None:
        self.close()

    @abstractmethod
    def _more(self, size: int) -> bytes:
        """The next ``size`` bytes or fewer after the buffer; ``b""`` at the end."""

    def _replace(self, data: bytes | memoryview, off: int) -> None:
        self.base += len(self.data)
        self.data = data
        self.off = off

    def fill(self, size: int) -> int:
        """Make ``size`` bytes from :attr:`pos` contiguous in the buffer; returns how many are."""
        avail = len(self.data) - self.off
        if avail >= size:
            return size
        pieces = [self.data[self.off :]]
        self._replace(b"", 0)
        start = self.base - avail
        while avail < size:
            more = self._more(max(size - avail, self.hint))
            if not more:
                break
            pieces.append(more)
            avail += len(more)
            self.base += len(more)
        self.data = b"".join(pieces)
        self.base = start
        return min(avail, size)

    def take(self, size: int) -> bytes:
        """Consume and return ``size`` bytes (fewer only at the end of the stream)."""
        off = self.off
        end = off + size
        if end <= len(self.data):
            self.off = end
            return bytes(self.data[off:end])  # no copy of a bytes object
        pieces = [self.data[off:]]
        need = size - len(pieces[0])
        self._replace(b"", 0)
        while need > 0:
            more = self._more(max(need, self.hint))
            if not more:
                break
            if len(more) > need:
                pieces.append(more[:need])
                self._replace(more, need)
                break
            pieces.append(more)
            need -= len(more)
            self.base += len(more)
        return b"".join(pieces)

    def take_payload(self, size: int) -> bytes:
        """:meth:`take` for a record's data, which may choose how to read it by its size."""
        return self.take(size)

    def suit(self, frame_bytes: float) -> None:
        """Choose the next read size for frames of about ``frame_bytes`` bytes."""
        self.hint = MID_CHUNK if frame_bytes >= MID_FRAME else CHUNK

    def verifies_first(self, size: int) -> bool:
        """Whether a record of ``size`` bytes gets :meth:`payload_crc` before it is built."""
        return False

    def payload_crc(self, size: int) -> tuple[int, int] | None:
        """``(crc32c of the next size bytes, the masked CRC stored after them)``, position
        unchanged; ``None`` when the stream ends first.  Only where :meth:`verifies_first`."""
        raise NotImplementedError

    def skip(self, size: int) -> int:
        """Consume ``size`` bytes without keeping them; returns how many there were."""
        avail = len(self.data) - self.off
        if size <= avail:
            self.off += size
            return size
        self._replace(b"", 0)
        return avail + self._skip_beyond(size - avail)

    def _skip_beyond(self, size: int) -> int:
        skipped = 0
        while skipped < size:
            more = self._more(min(size - skipped, _INFLATE_PIECE))
            if not more:
                break
            if skipped + len(more) > size:
                used = size - skipped
                self._replace(more, used)
                return size
            skipped += len(more)
            self.base += len(more)
        return skipped


class PlainStream(ByteStream):
    """An uncompressed file, read with positioned reads between ``start`` and ``end``;
    with ``reuse``, a local file's chunks are read into one kept buffer."""

    def __init__(
        self, fd: Handle, *, start: int, end: int, owns_fd: bool, reuse: bool = False
    ) -> None:
        super().__init__(fd, start=start, owns_fd=owns_fd)
        self.end = end
        self._buffer = bytearray() if reuse and _PREADV is not None else None

    def remaining(self) -> int:
        return self.end - self.base - self.off

    def fill(self, size: int) -> int:
        if not isinstance(self.fd, int) or len(self.data) - self.off >= size:
            return super().fill(size)
        # A local file's unread tail is read again with the next chunk, in one read into one
        # new buffer: joining it to the chunk would copy the whole chunk a second time.
        start = self.base + self.off
        want = min(max(size, len(self.data) - self.off + self.hint), self.end - start)
        self.data = self._read(want, start) if want > 0 else b""
        self.base = start
        self.off = 0
        return min(len(self.data), size)

    def _read(self, size: int, offset: int) -> bytes | memoryview:
        """``size`` bytes at ``offset`` (fewer only at the end of the file), into the kept
        buffer when there is one and they fit it."""
        assert isinstance(self.fd, int)
        buffer = self._buffer
        if buffer is None or size > REUSED or _PREADV is None:
            return pread(self.fd, size, offset)
        if len(buffer) < size:
            # Grown by doubling up to REUSED, so a small file never costs a large buffer.
            self._buffer = buffer = bytearray(min(REUSED, max(size, 2 * len(buffer))))
        view = memoryview(buffer)
        got = 0
        while got < size and (more := _PREADV(self.fd, [view[got:size]], offset + got)):
            got += more
        return view[:got]

    def _more(self, size: int) -> bytes:
        offset = self.base + len(self.data)
        size = min(size, self.end - offset)
        return pread(self.fd, size, offset) if size > 0 else b""

    def take_payload(self, size: int) -> bytes:
        off = self.off
        end = off + size
        if end <= len(self.data):
            self.off = end
            return bytes(self.data[off:end])
        if size < LARGE:
            self.hint = max(self.hint, CHUNK)
            return self.take(size)
        # Re-reading the buffered head of a large record costs less than joining a copy.
        start = self.base + off
        data = pread(self.fd, min(size, self.end - start), start)
        self.base = start + len(data)
        self.data = b""
        self.off = 0
        self.hint = AFTER_LARGE
        return data

    def _skip_beyond(self, size: int) -> int:
        skipped = min(size, self.end - self.base)
        self.base += skipped
        self.hint = AFTER_LARGE if size >= LARGE else CHUNK
        return skipped


class InflateStream(ByteStream):
    """The decompressed stream of a GZIP or ZLIB file."""

    def __init__(self, fd: Handle, compression: str, *, owns_fd: bool) -> None:
        super().__init__(fd, start=0, owns_fd=owns_fd)
        self._inflater = Inflater(fd, compression)

    @property
    def end_damage(self) -> StreamDamageError | None:
        return self._inflater.end_damage

    @property
    def compressed_offset(self) -> int:
        return self._inflater.compressed_offset

    def _more(self, size: int) -> bytes:
        return self._inflater.read(min(size, _INFLATE_PIECE))

    def verifies_first(self, size: int) -> bool:
        return size >= VERIFY_FIRST

    def payload_crc(self, size: int) -> tuple[int, int] | None:
        state = (self.data, self.off, self.base, self.hint, self._inflater.snapshot())
        try:
            crc = 0
            left = size
            while left:
                if self.off == len(self.data):
                    more = self._more(_INFLATE_PIECE)
                    if not more:
                        return None
                    self._replace(more, 0)
                step = min(left, len(self.data) - self.off)
                crc = crc32c(memoryview(self.data)[self.off : self.off + step], crc)
                self.off += step
                left -= step
            stored = self.take(4)
            return (crc, CRC.unpack(stored)[0]) if len(stored) == 4 else None
        finally:
            self.data, self.off, self.base, self.hint, snapshot = state
            self._inflater.restore(snapshot)

    def take_payload(self, size: int) -> bytes:
        if size < LARGE or self.off + size <= len(self.data):
            return self.take(size)
        # Built in one growing buffer whose bytes become the record without a copy, so a
        # record is never held twice (its pieces plus their join).
        record = io.BytesIO()
        record.write(memoryview(self.data)[self.off :])
        need = size - record.tell()
        self._replace(b"", 0)
        while need > 0:
            more = self._more(min(need, _INFLATE_PIECE))
            if not more:
                break
            if len(more) > need:
                record.write(memoryview(more)[:need])
                self._replace(more, need)
                break
            record.write(more)
            need -= len(more)
            self.base += len(more)
        return record.getvalue()
