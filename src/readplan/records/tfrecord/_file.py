"""TFRecord files: writer, sequential reader, counting, random access, damage handling.

Normative description: specs/tfrecord.md.  In short:

* :func:`write` / :class:`TFRecordWriter` produce TensorFlow's bytes exactly, uncompressed,
  ``"GZIP"`` or ``"ZLIB"``.
* :func:`read` yields every record; damage raises :class:`~readplan.errors.CorruptRecordError`
  (``on_corruption="raise"``) or is skipped and reported (``"skip"``), never hidden.  Unlike
  TensorFlow, a partial header at the end, a garbage tail and a compressed stream without its
  end are errors too.
* :func:`count` walks the 12-byte headers only, or answers from an index sidecar in O(1).
* :class:`RecordFile` gives ``len()``, ``rf[i]`` and ``rf.read(skip, take)``.
"""

from __future__ import annotations

import itertools
import operator
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import SupportsIndex

from readplan._internal.arrays import IntArray
from readplan._internal.closing import Closing
from readplan._internal.validate import check_bool
from readplan.errors import (
    ClosedError,
    CorruptRecordError,
    ReadplanIndexError,
)
from readplan.records._binding import binding_of
from readplan.records._cap import (
    record_cap,
)
from readplan.records._clusters import clusters, gap_for
from readplan.records._crc import crc32c, mask
from readplan.records._damage import (
    KIND_ABSURD_LENGTH,
    KIND_DATA_CRC,
    KIND_HEADER_CRC,
    KIND_TRUNCATED_DATA,
)
from readplan.records.index import _sidecar as _index
from readplan.records.index._format import refuse_offsets
from readplan.records.tfrecord._compression import pread
from readplan.records.tfrecord._expected import ExpectedFrames
from readplan.records.tfrecord._headerwalk import HeaderWalk
from readplan.records.tfrecord._layout import CRC, HEADER
from readplan.records.tfrecord._parser import FrameParser
from readplan.records.tfrecord._stream import LARGE, open_handle
from readplan.records.tfrecord._whole_file import (
    check_read_options,
    parsed_batches,
    stream_for,
)
from readplan.storage import (
    Handle,
    PathLike,
    RemoteBlob,
    StorageOptions,
    read_span,
    to_str,
)
from readplan.storage import close as close_handle
from readplan.storage import dup as dup_handle

__all__ = [
    "RecordFile",
]


class RecordFile(Closing):
    """Random access to the records of one file: ``len(rf)``, ``rf[i]``, ``rf.read(skip, take)``.

    Offsets come from the index sidecar when one exists (``<path>.index``, or
    ``index_path``; validated at once, a stale one raises
    :class:`~readplan.errors.IndexFileError`), otherwise from one header walk on first
    use, kept in memory.  Uncompressed files are read with positioned reads: ``rf[i]``
    reads exactly one frame, ``read(skip, take)`` reads only the bytes of those records,
    in large buffered pieces, and ``gather(indices)`` reads records that lie close together
    with one positioned read.  GZIP/ZLIB files have no random access: every ``rf[i]`` and
    ``read`` decompresses from the start of the file (see specs/tfrecord.md).

    ``path`` may be a URL (``specs/storage.md``): each ``read(skip, take)`` then fetches
    exactly the bytes of those records, in as few ranged requests as its size allows.
    ``rf[i]`` and ``gather`` serve a walk that goes on to the next records from a
    read-ahead block; with ``read_ahead=False`` (random access) they fetch exactly the
    frames they return, one ranged request per record or per cluster of nearby records.
    ``index_dir`` is where the sidecar is looked up instead of beside the file.  ``index``
    gives offsets already at hand (a :class:`~readplan.index.RecordIndex`, e.g. built in
    memory where no sidecar could be written): bound to the file as a sidecar is, and used
    instead of one; its errors name them as offsets held in memory, with no sidecar path.
    """

    def __init__(
        self,
        path: PathLike,
        *,
        compression: object = None,
        verify: bool = True,
        use_index: bool = True,
        index_path: PathLike | None = None,
        max_record_bytes: int | None = None,
        index_dir: PathLike | None = None,
        storage_options: StorageOptions = None,
        read_ahead: bool = True,
        index: _index.RecordIndex | None = None,
    ) -> None:
        # First, so that close() works whatever fails below.
        self._fd: Handle | None = None
        self._closer: Callable[[], object] | None = None
        check_read_options("raise", max_record_bytes)
        exact = not check_bool(read_ahead, "read_ahead")
        self.path = to_str(path)
        # Where the offsets are, for messages: a sidecar, or (None) memory, for an index given.
        self._index_path: str | None = None
        if index is None:
            self._index_path = (
                _index.index_path_for(self.path, index_dir)
                if index_path is None
                else to_str(index_path)
            )
        self._verify = verify
        fd = open_handle(self.path, storage_options)
        try:
            self.compression = _index.resolve_compression(fd, compression)
            self._max = record_cap(max_record_bytes, self.compression)
            loaded = self._index_at_hand(fd, index, use_index, storage_options)
        except BaseException:
            close_handle(fd)
            raise
        self._fd = fd
        remote = not isinstance(fd, int)
        self._exact = exact
        # A request to a store costs far more than the bytes of a split frame.
        self._whole_frames = remote
        self._gap = gap_for(fd)
        # A finalizer, not __del__: it runs before interpreter shutdown tears down module
        # globals (such as ``os``), so a file left open to the end closes without noise.
        self._closer = weakref.finalize(self, close_handle, fd)
        self.indexed = loaded is not None
        self._offsets: IntArray | None = None
        self._stream_size = 0
        # Made when first walked: an indexed file (most often read in spans) never is.
        self._walker: HeaderWalk | None = None
        # The binding of the version opened, checked against it with the index.
        self._bound: tuple[int, int] | None = None
        if loaded is not None:
            self._offsets = loaded.offsets
            self._stream_size = loaded.stream_size
            self._bound = (loaded.data_size, loaded.binding_crc)

    def _index_at_hand(
        self,
        fd: Handle,
        index: _index.RecordIndex | None,
        use_index: bool,
        storage_options: StorageOptions,
    ) -> _index.RecordIndex | None:
        """The offsets to read by: ``index`` bound to the file, else the sidecar's (when
        ``use_index`` and there is one), else None (a header walk finds them)."""
        if index is not None:
            _index.bind_index(index, fd, self._index_path, self.compression, data_path=self.path)
            return index
        if not use_index:
            return None
        return _index.load_index_for(
            fd,
            self.path,
            self.compression,
            index_path=self._index_path,
            storage_options=storage_options,
        )

    @property
    def offsets(self) -> IntArray:
        """Start offset of every record in the (decompressed) stream; read-only."""
        if self._offsets is None:
            self._open_fd()
            walked, self._stream_size = self._walk().through(None)
            walked.flags.writeable = False
            self._offsets = walked
        return self._offsets

    def _bounds(self, count: int | None) -> tuple[IntArray, int]:
        """Offsets of the first ``count`` records (fewer if the file has fewer) and where the
        last of them ends; without an index, the headers are walked only that far."""
        if self._offsets is not None or count is None:
            offsets = self.offsets
            if count is None or count >= len(offsets):
                return offsets, self._stream_size
            return offsets[:count], int(offsets[count])
        self._open_fd()
        return self._walk().through(count)

    def _walk(self) -> HeaderWalk:
        if self._walker is None:
            assert self._fd is not None  # opened (``_open_fd``) before a walk
            self._walker = HeaderWalk(self._fd, self.path, self.compression, self._max)
        return self._walker

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, i: SupportsIndex) -> bytes:
        position = self._position(operator.index(i))
        if self.compression is not None:
            return next(self.read(position, 1))
        return self._read_one(position)

    def read(self, skip: int = 0, take: int | None = None) -> Iterator[bytes]:
        """Records ``[skip, skip + take)``; ``take=None`` (or -1) reads to the end.

        Without an index, only the headers up to record ``skip + take`` are walked.
        """
        if take is None or take == -1 or skip < 0 or take < 0:
            offsets, end = self._bounds(None)
        else:
            offsets, end = self._bounds(skip + take)
        if take is None or take == -1:
            take = len(offsets) - skip
        if skip < 0 or take < 0 or skip + take > len(offsets):
            total = len(self)
            raise ReadplanIndexError(
                f"{self.path}: cannot read {take} records from record {skip}: the file has "
                f"{total} records (valid: 0 <= skip <= skip + take <= {total})",
                key=skip,
                length=total,
            )
        if take == 0:
            return iter(())
        start = int(offsets[skip])
        stop = int(offsets[skip + take]) if skip + take < len(offsets) else end
        # The iterator owns a duplicate descriptor: it stays valid after this RecordFile is
        # closed, and can never read a file that reused the descriptor number.
        # A remote handle for one span never reads ahead past it.
        fd = dup_handle(self._open_fd(), limit=stop if self.compression is None else None)
        stream = stream_for(fd, self.compression, start=start, end=stop, owns_fd=True)
        expected = None
        if self.indexed:
            expected = ExpectedFrames(
                offsets[skip : skip + take],
                stop,
                data_path=self.path,
                index_path=self._index_path,
                first_index=skip,
            )
        parser = FrameParser(
            stream,
            path=self.path,
            verify=self._verify,
            skip_damage=False,
            report=None,
            max_record_bytes=self._max,
            first_index=skip,
            start=start,
            expected=expected,
        )
        return itertools.chain.from_iterable(parsed_batches(parser, stream, take))

    def gather(self, indices: Sequence[SupportsIndex]) -> list[bytes]:
        """Records ``indices`` (any order, repeats allowed), in the order given.

        Indices are taken as by ``rf[i]``: negative ones count from the end, and one out of
        range raises :class:`~readplan.errors.ReadplanIndexError` before anything is read.
        Records are read in ascending offset order; neighbours less than 16 KiB apart share
        one positioned read of at most 4 MiB, so a run of nearby records costs one system
        call.  Every frame is checked as by ``rf[i]``.
        """
        keys = [operator.index(i) for i in indices]
        if not keys:
            return []
        total = len(self)
        wanted = [self._in_range(i, total) for i in keys]
        unique = sorted(set(wanted))
        if self.compression is not None:
            span = list(self.read(unique[0], unique[-1] - unique[0] + 1))
            found = {i: span[i - unique[0]] for i in unique}
        else:
            found = dict(zip(unique, self._gather_plain(unique)))
        return [found[i] for i in wanted]

    def _gather_plain(self, unique: list[int]) -> list[bytes]:
        offsets = self.offsets
        last = len(offsets) - 1
        starts = offsets[unique].tolist()
        ends = [int(offsets[i + 1]) if i < last else self._stream_size for i in unique]
        found: list[bytes] = []
        for first, stop in clusters(starts, ends, self._gap):
            if stop - first == 1:
                found.append(self._read_one(unique[first]))
                continue
            base = starts[first]
            block = self._read_at(self._open_fd(), ends[stop - 1] - base, base)
            for k in range(first, stop):
                found.append(
                    self._frame_payload(unique[k], block, starts[k] - base, starts[k], ends[k])
                )
        return found

    def _frame_payload(self, i: int, block: bytes, at: int, start: int, end: int) -> bytes:
        length = self._length(i, start, end)
        header = block[at : at + 12]
        payload = block[at + 12 : at + 12 + length]
        footer = block[at + 12 + length : at + 16 + length]
        self._check_frame(i, start, length, header, payload, footer)
        return payload

    def _position(self, i: int) -> int:
        if i >= 0 and len(self._bounds(i + 1)[0]) > i:
            return i
        return self._in_range(i, len(self))

    def _in_range(self, i: int, total: int) -> int:
        """Record ``i`` (negative: from the end) of ``total`` as an index in ``0..total-1``."""
        position = i + total if i < 0 else i
        if not 0 <= position < total:
            raise ReadplanIndexError(
                f"{self.path}: record index {i} is out of range: the file has {total} records "
                f"(valid: {-total}..{total - 1})",
                key=i,
                length=total,
            )
        return position

    def _read_one(self, i: int) -> bytes:
        offsets, end = self._bounds(i + 1)
        start = int(offsets[i])
        length = self._length(i, start, end)
        fd = self._open_fd()
        if length < LARGE or self._whole_frames:
            frame = self._read_at(fd, end - start, start)
            header, payload, footer = frame[:12], frame[12 : 12 + length], frame[12 + length :]
        else:
            header = read_span(fd, 12, start)
            payload = read_span(fd, length, start + 12)
            footer = read_span(fd, 4, end - 4)
        self._check_frame(i, start, length, header, payload, footer)
        return payload

    def _read_at(self, fd: Handle, size: int, offset: int) -> bytes:
        """A remote handle's read-ahead serves a walk that goes on; random access fetches
        exactly the bytes asked for."""
        return read_span(fd, size, offset) if self._exact else pread(fd, size, offset)

    def _length(self, i: int, start: int, end: int) -> int:
        """The data length of record ``i`` framed in ``[start, end)``, within the limit."""
        length = end - start - 16
        if length > self._max:
            raise self._error(
                KIND_ABSURD_LENGTH,
                i,
                start,
                f"its length {length} exceeds max_record_bytes={self._max}",
            )
        return length

    def _check_frame(
        self, i: int, start: int, length: int, header: bytes, payload: bytes, footer: bytes
    ) -> None:
        if len(header) < 12 or len(payload) < length or len(footer) < 4:
            raise self._error(KIND_TRUNCATED_DATA, i, start, "the file is shorter than indexed")
        stored_length, stored = HEADER.unpack(header)
        if mask(crc32c(header[:8])) != stored:
            raise self._error(KIND_HEADER_CRC, i, start, "the CRC of its length field is wrong")
        if stored_length != length:
            self._check_unchanged()
            raise refuse_offsets(
                self._index_path,
                self.path,
                "offsets",
                f"record {i} of {self.path} at offset {start} holds {stored_length} data bytes "
                f"but the offsets imply {length}: the index does not describe this file",
            )
        if self._verify and mask(crc32c(payload)) != CRC.unpack(footer)[0]:
            raise self._error(KIND_DATA_CRC, i, start, "the CRC of its data is wrong")

    def _error(self, kind: str, i: int, start: int, why: str) -> CorruptRecordError:
        self._check_unchanged()
        return CorruptRecordError(
            f"{self.path}: record {i} at offset {start} is damaged ({kind}): {why}",
            path=self.path,
            offset=start,
            record_index=i,
            kind=kind,
        )

    def _check_unchanged(self) -> None:
        """Bytes that contradict their frame are damage, unless the object was replaced since
        it was opened (a store may serve the new version): that is an ObjectChangedError."""
        if isinstance(self._fd, RemoteBlob):
            self._fd.check_unchanged()

    def binding(self) -> tuple[int, int]:
        """The file's size and the CRC32C of its first and last 64 KiB, what a reader's
        state binds to (``specs/checkpoint.md`` §4), for the version opened: its index's
        when it has one (checked against the file when it was opened, so nothing is read),
        else read exactly through the open handle (a stored object: one ranged request for
        a file of at most 128 KiB, else two; no new lookup)."""
        if self._bound is not None:
            return self._bound
        return binding_of(self._open_fd())

    def dup_handle(self) -> Handle:
        """An independent handle on this file, on the object version opened (a remote one
        costs no request); the caller closes it."""
        return dup_handle(self._open_fd())

    def _open_fd(self) -> Handle:
        if self._fd is None:
            raise ClosedError(f"{self.path}: the RecordFile is closed", path=self.path)
        return self._fd

    def close(self) -> None:
        """Release the file; idempotent."""
        if self._closer is not None:
            self._closer()
        self._fd = None

    def __repr__(self) -> str:
        source = "index" if self.indexed else "header walk"
        return f"RecordFile({self.path!r}, compression={self.compression!r}, offsets from {source})"
