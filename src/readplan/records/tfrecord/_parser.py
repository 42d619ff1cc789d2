"""The TFRecord frame parser behind :mod:`readplan.tfrecord` (normative: specs/tfrecord.md).

Two paths share one :class:`~readplan.records.tfrecord._stream.ByteStream`:

* the fast path takes the frames that lie complete and sound in the buffer with one call of
  a frame scan kernel (:mod:`readplan.records.tfrecord._scan`: both CRCs of every frame,
  compiled or its pure twin): as a list of records, packed, or (:meth:`FrameParser.record_runs`)
  as a record run that makes each record as it is consumed; the first frame that is not
  sound stops the batch;
* the careful path parses one frame at a time with every check in order, finds damage
  (which :mod:`readplan.records.tfrecord._frame_damage` words, raises or reports) and in ``skip``
  mode drops a frame or resynchronises.  It handles frames that straddle reads, large
  frames, damage and the end of the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sized
from functools import partial
from typing import TypeVar

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.records._crc import crc32c, mask
from readplan.records._damage import (
    CorruptionReport,
    StreamDamageError,
)
from readplan.records.tfrecord._expected import ExpectedFrames
from readplan.records.tfrecord._frame_damage import FrameDamage, Skipped
from readplan.records.tfrecord._frame_read import large_frames, read_large_frames
from readplan.records.tfrecord._layout import CRC, HEADER
from readplan.records.tfrecord._packed import Packed, Packer
from readplan.records.tfrecord._resync import resync
from readplan.records.tfrecord._scan import (
    RUNNING,
    record_run,
    scan_frames,
    scan_pack,
    scan_records,
    scratch,
)
from readplan.records.tfrecord._stream import AFTER_LARGE, LARGE, ByteStream, PlainStream
from readplan.storage import Handle, positioned

__all__ = ["FrameParser"]

_LARGE_BATCH = 1 << 20
# Records cut per scan: the batch a consumer drops is then still in the processor's cache, and
# the allocator reuses its memory for the next one instead of returning it to the system.
_RECORD_BATCH = 1024
_JUMP_BATCH = 4096


_T = TypeVar("_T")
_I = TypeVar("_I")
_B = TypeVar("_B", bound=Sized)


class FrameParser:
    """Reads frames from ``stream``; one parser per pass over a file.

    ``index`` counts the frames passed so far (records delivered plus frames dropped for a
    bad data CRC); it is the ``record_index`` reported with damage.  Parsing begins at the
    stream offset ``start``: a compressed stream is decompressed up to it and discarded.
    With ``expected`` (offsets from an index), every frame found is checked against it.

    In skip mode a compressed stream stops at its first damage: inflating past damage can
    produce frames that verify but were never written.  An uncompressed file resumes only
    where the frames chain cleanly to its end (specs/tfrecord.md, section 5).
    """

    def __init__(
        self,
        stream: ByteStream,
        *,
        path: str,
        verify: bool,
        skip_damage: bool,
        report: CorruptionReport | None,
        max_record_bytes: int,
        first_index: int = 0,
        start: int = 0,
        expected: ExpectedFrames | None = None,
    ) -> None:
        self._stream = stream
        self._expected = expected
        self._start = start
        self._path = path
        self._verify = verify
        self._max = max_record_bytes
        self.index = first_index
        self._record_start = stream.pos
        self._damages = FrameDamage(
            stream,
            path=path,
            skip=skip_damage,
            report=report,
            max_record_bytes=max_record_bytes,
            resync=self._resync,
        )

    # ----------------------------------------------------------------- records
    def records(self, limit: int | None = None) -> Iterator[list[bytes]]:
        """Batches of records, ``limit`` records at most; damage raises or is skipped."""
        if self._stream.pos < self._start:
            self._careful_or_damage(lambda: self._stream.skip(self._start - self._stream.pos))
        fast, bulk, careful = self._fast_records, self._large_records, self._careful_record
        yield from self._walk(limit, fast, bulk, careful, lambda r: [r], check_end_at_limit=True)

    def record_runs(self) -> Iterator[Iterable[bytes]]:
        """:meth:`records` without a limit, in runs: what lies sound in the read buffer comes
        as one record run (:mod:`~readplan.records.tfrecord._scan`: one record made per
        ``next()``, each frame checked as it is reached), the rest as lists.  The parser goes
        on after a run only once it has stopped: a consumer through
        ``itertools.chain.from_iterable`` exhausts each run before asking for the next."""
        stream = self._stream
        if stream.pos < self._start:
            self._careful_or_damage(lambda: stream.skip(self._start - stream.pos))
        while True:
            begin = stream.off
            run = record_run(stream.data, begin, -1, self._max, self._verify)
            yield run
            if run.stop == RUNNING:
                # Its records would come again from the careful path, and the next chunk would
                # be read under it: a consumer must exhaust each run first.
                raise RuntimeError("a record run must be exhausted before the parser reads on")
            if run.count:
                self._took(begin, run.end, run.count)
            # After a batch of large frames the buffer holds at most the next header: no run.
            while isinstance(stream, PlainStream) and (batch := self._large_records(stream, -1)):
                yield batch
            item = self._careful_or_damage(self._careful_record)
            if item is None:
                self._check_end()
                return
            if not isinstance(item, Skipped):
                yield [item]

    def payloads(self, packer: Packer) -> Iterator[Packed | list[bytes]]:
        """:meth:`records` for ``packer``: what lies in the read buffer is packed into its
        batch by the frame scan (:class:`Packed`: never more than the batch takes), the rest
        comes as records."""
        if self._stream.pos < self._start:
            self._careful_or_damage(lambda: self._stream.skip(self._start - self._stream.pos))
        fast: Callable[[int], Packed | list[bytes] | None] = partial(self._fast_packed, packer)
        bulk: Callable[[PlainStream, int], Packed | list[bytes] | None] = self._large_records
        single: Callable[[bytes], Packed | list[bytes]] = _one_record
        careful = self._careful_record
        yield from self._walk(None, fast, bulk, careful, single, check_end_at_limit=True)

    def _fast_packed(self, packer: Packer, _: int) -> Packed | None:
        stream = self._stream
        begin = stream.off
        values, count, after, _ = scan_pack(
            stream.data, begin, packer.room, self._max, self._verify, packer.offsets, packer.k
        )
        if values is None:
            return None
        if self._expected is not None:
            self._expected.check(self._starts_between(begin, after, count), after + stream.base)
        stream.suit((after - begin) / count)
        stream.off = after
        self.index += count
        return Packed(values, count)

    def _fast_records(self, left: int) -> list[bytes]:
        stream = self._stream
        begin = stream.off
        most = _RECORD_BATCH if left < 0 else min(left, _RECORD_BATCH)
        batch, after, _ = scan_records(stream.data, begin, most, self._max, self._verify)
        if batch:
            self._took(begin, after, len(batch))
        return batch

    def _took(self, begin: int, after: int, count: int) -> None:
        """``count`` records were taken from the buffer between ``begin`` and ``after``."""
        stream = self._stream
        if self._expected is not None:
            self._expected.check(self._starts_between(begin, after, count), after + stream.base)
        stream.suit((after - begin) / count)
        stream.off = after
        self.index += count

    def _starts_between(self, begin: int, after: int, count: int) -> IntArray:
        """File offsets of the ``count`` frames just taken from the buffer between ``begin``
        and ``after`` (found again by their trusted lengths: they were all verified)."""
        stream = self._stream
        starts, lengths = scratch(after - begin)
        found, _, _ = scan_frames(stream.data, begin, count, self._max, False, starts, lengths)
        return starts[:found] + stream.base

    def _scan(self, left: int, verify: bool) -> tuple[IntArray, IntArray, int] | None:
        """``(starts, data lengths, end)`` of the sound frames that lie complete in the buffer,
        ``left`` at most; ``None`` when there are none (the careful path then reads the next
        frame, and reports it if it is damaged)."""
        stream = self._stream
        starts, lengths = scratch(len(stream.data) - stream.off)
        count, after, _ = scan_frames(
            stream.data, stream.off, left, self._max, verify, starts, lengths
        )
        if not count:
            return None
        return starts[:count], lengths[:count], after

    def _large_records(self, stream: PlainStream, left: int) -> list[bytes]:
        """Consecutive large frames of a plain file, each read straight into its own bytes.

        One read per frame from a local file (the data, then its CRC and the next header, by
        one kernel call for them all), two from a remote one.  Any frame that is not a sound
        large frame ends the batch; the careful path then reads it again and reports what is
        wrong.
        """
        data, off, fd = stream.data, stream.off, stream.fd
        pos = stream.base + off
        head = data[off : off + 12]
        args = (head, pos, stream.end, self._max, self._verify, left, _LARGE_BATCH, LARGE)
        if isinstance(fd, int):
            batch, after, tail = read_large_frames(fd, *args)
        else:
            batch, after, tail = large_frames(partial(_remote_data, fd), *args)
        if not batch:
            return batch
        if self._expected is not None:
            sizes = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch)) + 16
            self._expected.check(pos + np.cumsum(sizes) - sizes, after)
        stream.data, stream.off, stream.base = tail, 4, after - 4
        stream.hint = AFTER_LARGE
        self.index += len(batch)
        return batch

    def _careful_record(self) -> bytes | Skipped | None:
        stream = self._stream
        start = self._record_start = stream.pos
        length = self._checked_header(start)
        if not isinstance(length, int):
            return length
        stream.off += 12
        if self._verify and stream.verifies_first(length):
            # A large compressed record: its data CRC is checked in a streaming pass before
            # it is assembled, so that damage or a bomb never costs its declared size.
            checked = stream.payload_crc(length)
            if checked is None:
                return self._damages.truncated(start, length, self.index, got=length - 1)
            computed, stored = checked
            if mask(computed) != stored:
                stream.skip(length + 4)
                return self._bad_data(start, length, stored, mask(computed))
        payload = stream.take_payload(length)
        stored_bytes = stream.take(4)
        if len(stored_bytes) < 4:
            return self._damages.truncated(
                start, length, self.index, got=len(payload) + len(stored_bytes)
            )
        if self._verify:
            stored = CRC.unpack(stored_bytes)[0]
            computed = mask(crc32c(payload))
            if computed != stored:
                return self._bad_data(start, length, stored, computed)
        self._passed(start, stream.pos)
        return payload

    # ------------------------------------------------------------------ frames
    def frames(self, limit: int | None = None) -> Iterator[IntArray]:
        """Start offsets of the frames, in batches, ``limit`` frames at most, reading headers
        only.  Damage raises (or is skipped and reported, in skip mode)."""
        fast, bulk, careful = self._fast_frames, self._jump_frames, self._careful_frame
        yield from self._walk(limit, fast, bulk, careful, _one_frame, check_end_at_limit=False)

    def _fast_frames(self, left: int) -> IntArray | None:
        found = self._scan(left, False)
        if found is None:
            return None
        starts, _, after = found
        stream = self._stream
        absolute: IntArray = starts + stream.base
        stream.off = after
        if self._expected is not None:
            self._expected.check(absolute, stream.pos)
        self.index += len(absolute)
        return absolute

    def _jump_frames(self, stream: PlainStream, left: int) -> IntArray | None:
        """Consecutive large frames of a plain file: one 12-byte read each, payloads skipped.

        Any frame that is not a sound large frame ends the batch for the careful path.
        """
        read, end, maximum = positioned(stream.fd), stream.end, self._max
        data, off = stream.data, stream.off
        pos = stream.base + off
        starts: list[int] = []
        while len(data) - off >= 12 and len(starts) not in (_JUMP_BATCH, left):
            length = _large_frame_length(data, off, pos, end, maximum)
            if length is None:
                break
            after = pos + length + 16
            starts.append(pos)
            pos = after
            data, off = read(min(12, end - after), after), 0
        if not starts:
            return None
        found = np.array(starts, dtype=np.int64)
        if self._expected is not None:
            self._expected.check(found, pos)
        stream.data, stream.off, stream.base = data, off, pos - off
        stream.hint = AFTER_LARGE
        self.index += len(starts)
        return found

    def _careful_frame(self) -> int | Skipped | None:
        stream = self._stream
        start = self._record_start = stream.pos
        length = self._checked_header(start)
        if not isinstance(length, int):
            return length
        got = stream.skip(length + 16)
        if got < length + 16:
            return self._damages.truncated(start, length, self.index, got=got - 12)
        self._passed(start, stream.pos)
        return start

    def _passed(self, start: int, after: int) -> None:
        """One frame at ``start`` was read (delivered, or dropped for its data CRC)."""
        if self._expected is not None:
            self._expected.check(np.array([start], dtype=np.int64), after)
        self.index += 1

    def _check_end(self) -> None:
        if self._expected is not None:
            self._expected.check_end(self._stream.pos)

    # ------------------------------------------------------------ shared walk
    def _walk(
        self,
        limit: int | None,
        fast: Callable[[int], _B | None],
        bulk: Callable[[PlainStream, int], _B | None],
        careful: Callable[[], _I | Skipped | None],
        single: Callable[[_I], _B],
        *,
        check_end_at_limit: bool,
    ) -> Iterator[_B]:
        """Batches from buffered bytes (``fast``), a plain file's large frames (``bulk``), else
        one frame at a time (``careful``: the only path that finds damage); ``limit`` caps them."""
        left = -1 if limit is None else limit
        while left != 0:
            batch = fast(left)
            if (batch is None or not len(batch)) and isinstance(self._stream, PlainStream):
                batch = bulk(self._stream, left)
            if batch is not None and len(batch):
                left -= len(batch)
                yield batch
                continue
            item = self._careful_or_damage(careful)
            if item is None:
                self._check_end()
                return
            if not isinstance(item, Skipped):
                left -= 1
                yield single(item)
        if check_end_at_limit:
            self._check_end()

    # ------------------------------------------------------------ shared checks
    def _careful_or_damage(self, step: Callable[[], _T]) -> _T | None:
        try:
            return step()
        except StreamDamageError as damage:
            self._damages.container(damage, self._record_start, self.index)
            return None

    def _checked_header(self, start: int) -> int | Skipped | None:
        """The verified length of the frame at ``start`` (header left unconsumed)."""
        stream = self._stream
        have = stream.fill(12)
        if have < 12:
            return self._damages.short_header(start, have, self.index)
        off = stream.off
        length, stored = HEADER.unpack_from(stream.data, off)
        computed = mask(crc32c(stream.data[off : off + 8]))
        if computed != stored:
            return self._damages.bad_header(start, stored, computed, self.index)
        if length > self._max:
            return self._damages.absurd(start, length, self.index)
        remaining = stream.remaining()
        if remaining is not None and length + 16 > remaining:
            return self._damages.truncated(start, length, self.index, got=remaining - 12)
        result: int = length
        return result

    def _bad_data(self, start: int, length: int, stored: int, computed: int) -> Skipped | None:
        """A frame whose data CRC fails: damage, and still a frame passed."""
        outcome = self._damages.bad_data(start, length, stored, computed, self.index)
        self._passed(start, start + length + 16)
        return outcome

    def _resync(self, scan_from: int) -> bool:
        stream = self._stream
        assert isinstance(stream, PlainStream)
        return resync(stream, scan_from, max_record_bytes=self._max, chain=self._chain)

    def _chain(self, start: int) -> Iterator[IntArray]:
        """Header walk from ``start`` to the end of the file; damage raises."""
        stream = self._stream
        assert isinstance(stream, PlainStream)
        walk = FrameParser(
            PlainStream(stream.fd, start=start, end=stream.end, owns_fd=False),
            path=self._path,
            verify=False,
            skip_damage=False,
            report=None,
            max_record_bytes=self._max,
        )
        return walk.frames()


def _one_record(record: bytes) -> list[bytes]:
    return [record]


def _one_frame(start: int) -> IntArray:
    return np.array([start], dtype=np.int64)


def _remote_data(
    fd: Handle, offset: int, length: int, tail: int, verify: bool
) -> tuple[bytes, bytes, int] | None:
    """What :func:`~readplan.records.tfrecord._frame_read.frame_data` gives, from a remote
    handle's read-ahead (two reads)."""
    read = positioned(fd)
    payload = read(length, offset)
    if len(payload) < length:
        return None
    return payload, read(tail, offset + length), crc32c(payload) if verify else 0


def _large_frame_length(
    data: bytes | memoryview, off: int, pos: int, end: int, maximum: int
) -> int | None:
    """Length of the whole, soundly headed large frame at ``data[off:]`` (file offset ``pos``)."""
    length, stored = HEADER.unpack_from(data, off)
    whole = LARGE <= length <= maximum and pos + length + 16 <= end
    return int(length) if whole and mask(crc32c(data[off : off + 8])) == stored else None
