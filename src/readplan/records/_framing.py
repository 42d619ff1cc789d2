"""The TFRecord frame parser behind :mod:`readplan.tfrecord` (normative: specs/tfrecord.md).

Two paths share one :class:`~readplan.records._stream.ByteStream`:

* the fast path walks the frames that lie complete in the buffer with a tight loop over the
  length fields, then checks the whole batch at once: header CRCs with numpy, data CRCs with
  one ``crc32c`` call per record; the first bad frame stops the batch;
* the careful path parses one frame at a time with every check in order, classifies damage,
  and in ``skip`` mode drops a frame or resynchronises.  It handles frames that straddle
  reads, large frames, damage and the end of the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sized
from dataclasses import replace
from typing import TypeVar

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import CorruptRecordError
from readplan.records._compression import detect_compression
from readplan.records._crc import MASK_DELTA, crc32c, mask
from readplan.records._damage import (
    KIND_ABSURD_LENGTH,
    KIND_DATA_CRC,
    KIND_HEADER_CRC,
    KIND_INFLATE,
    KIND_TRAILING_GARBAGE,
    KIND_TRUNCATED_DATA,
    KIND_TRUNCATED_HEADER,
    KIND_TRUNCATED_STREAM,
    CorruptionEvent,
    CorruptionReport,
    StreamDamageError,
)
from readplan.records._expected import ExpectedFrames
from readplan.records._resync import resync
from readplan.records._stream import AFTER_LARGE, LARGE, ByteStream, PlainStream
from readplan.records._tfrecord_layout import CRC, HEADER
from readplan.records._walk import complete_frames, good_frames
from readplan.storage import positioned, size_of

__all__ = ["FrameParser"]

# Below this many complete frames in the buffer, numpy's fixed cost outweighs its gain.
_MIN_BATCH = 8
_LARGE_BATCH = 1 << 20
_JUMP_BATCH = 4096


_NEGATIVE_READ = 2**63 - 4
_TOO_LARGE = 2**64 - 5


class _Skipped:
    """Marker returned by a careful step that dropped damaged bytes and read no record."""


_SKIPPED = _Skipped()
# Damage kinds after which a compressed stream still has bytes that are not read.
_STOPS_MID_STREAM = frozenset({KIND_HEADER_CRC, KIND_ABSURD_LENGTH, KIND_DATA_CRC, KIND_INFLATE})
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
        self._skip = skip_damage
        self._report = report
        self._max = max_record_bytes
        self.index = first_index
        self._record_start = stream.pos
        self._cut_at_end = False

    # ----------------------------------------------------------------- records
    def records(self, limit: int | None = None) -> Iterator[list[bytes]]:
        """Batches of records, ``limit`` records at most; damage raises or is skipped."""
        if self._stream.pos < self._start:
            self._careful_or_damage(lambda: self._stream.skip(self._start - self._stream.pos))
        fast, bulk, careful = self._fast_records, self._large_records, self._careful_record
        yield from self._walk(limit, fast, bulk, careful, lambda r: [r], check_end_at_limit=True)

    def _fast_records(self, left: int) -> list[bytes]:
        stream = self._stream
        data = stream.data
        found = complete_frames(data, stream.off, left, _MIN_BATCH)
        if found is None:
            return []
        begin, lengths, after = found
        data_begin = begin + 12
        batch = [
            data[b:e]
            for b, e in zip(data_begin.tolist(), (data_begin + lengths).tolist(), strict=True)
        ]
        computed = None
        if self._verify:
            computed = np.fromiter(map(crc32c, batch), dtype=np.uint32, count=len(batch))
        good = min(good_frames(data, begin, lengths, computed), self._within_limit(lengths))
        if good < len(batch):
            del batch[good:]
            after = int(begin[good])
        if self._expected is not None and good:
            self._expected.check(begin[:good] + stream.base, after + stream.base)
        stream.suit((after - int(begin[0])) / len(begin))
        stream.off = after
        self.index += good
        return batch

    def _large_records(self, stream: PlainStream, left: int) -> list[bytes]:
        """Consecutive large frames of a plain file, each read straight into its own bytes.

        Two positioned reads per frame: the data, then its CRC together with the next
        header.  Any frame that is not a sound large frame ends the batch; the careful path
        then reads it again and reports what is wrong.
        """
        # mask() is written out inline in this loop and in _jump_frames: they run once per
        # frame, where a Python call is a measurable part of the cost.
        read, end, maximum, verify = positioned(stream.fd), stream.end, self._max, self._verify
        data, off = stream.data, stream.off
        pos = stream.base + off
        batch: list[bytes] = []
        starts: list[int] = []
        size = 0
        while len(batch) != left and len(data) - off >= 12 and size < _LARGE_BATCH:
            length = _large_frame_length(data, off, pos, end, maximum)
            if length is None:
                break
            after = pos + length + 16
            payload = read(length, pos + 12)
            tail = read(16 if after + 12 <= end else end - after + 4, after - 4)
            if len(payload) < length or len(tail) < 4:
                break
            if verify:
                crc = crc32c(payload)
                masked = (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF
                if masked != CRC.unpack_from(tail)[0]:
                    break
            batch.append(payload)
            starts.append(pos)
            size += length
            pos = after
            data, off = tail, 4
        if self._expected is not None and batch:
            self._expected.check(np.array(starts, dtype=np.int64), pos)
        if batch:
            stream.data, stream.off, stream.base = data, off, pos - off
            stream.hint = AFTER_LARGE
            self.index += len(batch)
        return batch

    def _within_limit(self, lengths: IntArray) -> int:
        """Number of leading frames no longer than ``max_record_bytes``."""
        if int(lengths.max()) <= self._max:
            return len(lengths)
        return int(np.flatnonzero(lengths > self._max)[0])

    def _careful_record(self) -> bytes | _Skipped | None:
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
                return self._truncated(start, length, got=length - 1)
            computed, stored = checked
            if mask(computed) != stored:
                stream.skip(length + 4)
                return self._bad_data(start, length, stored, mask(computed))
        payload = stream.take_payload(length)
        stored_bytes = stream.take(4)
        if len(stored_bytes) < 4:
            return self._truncated(start, length, got=len(payload) + len(stored_bytes))
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
        stream = self._stream
        found = complete_frames(stream.data, stream.off, left, _MIN_BATCH)
        if found is None:
            return None
        begin, lengths, after = found
        good = min(good_frames(stream.data, begin, lengths), self._within_limit(lengths))
        if good == 0:
            # The first frame is damaged or too long: the careful path must report it (an
            # empty batch here would be yielded again and again).
            return None
        absolute: IntArray = begin[:good] + stream.base
        stream.off = after if good == len(begin) else int(begin[good])
        if self._expected is not None:
            self._expected.check(absolute, stream.pos)
        self.index += good
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

    def _careful_frame(self) -> int | _Skipped | None:
        stream = self._stream
        start = self._record_start = stream.pos
        length = self._checked_header(start)
        if not isinstance(length, int):
            return length
        got = stream.skip(length + 16)
        if got < length + 16:
            return self._truncated(start, length, got=got - 12)
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
        careful: Callable[[], _I | _Skipped | None],
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
            if not isinstance(item, _Skipped):
                left -= 1
                yield single(item)
        if check_end_at_limit:
            self._check_end()

    # ------------------------------------------------------------ shared checks
    def _careful_or_damage(self, step: Callable[[], _T]) -> _T | None:
        try:
            return step()
        except StreamDamageError as damage:
            self._container_damage(damage, self._record_start)
            return None

    def _checked_header(self, start: int) -> int | _Skipped | None:
        """The verified length of the frame at ``start`` (header left unconsumed)."""
        stream = self._stream
        have = stream.fill(12)
        if have < 12:
            return self._short_header(start, have)
        off = stream.off
        length, stored = HEADER.unpack_from(stream.data, off)
        computed = mask(crc32c(stream.data[off : off + 8]))
        if computed != stored:
            return self._bad_header(start, stored, computed)
        if length > self._max:
            return self._absurd(start, length)
        remaining = stream.remaining()
        if remaining is not None and length + 16 > remaining:
            return self._truncated(start, length, got=remaining - 12)
        result: int = length
        return result

    # ------------------------------------------------------------------ damage
    def _short_header(self, start: int, have: int) -> _Skipped | None:
        if have == 0:
            self._at_end()
            return None
        self._cut_at_end = True
        where = f"after record {self.index - 1}" if self.index else "before any record"
        self._damage(
            KIND_TRUNCATED_HEADER,
            start,
            f"the last {have} bytes, at offset {start} {where}, are too short for a record "
            "header (12 bytes): the file was cut short while writing "
            f"record {self.index}, or ends in garbage; TensorFlow ignores them silently",
            field_offset=start,
            resync_from=start + have,
        )
        self._at_end()
        return None

    def _bad_header(self, start: int, stored: int, computed: int) -> _Skipped | None:
        hint = ""
        tf_hint = ""
        if start == 0:
            hint = _first_header_hint(self._stream.data[self._stream.off : self._stream.off + 12])
            tf_hint = " (Is this even a TFRecord file?)"
        return self._damage(
            KIND_HEADER_CRC,
            start,
            f"corrupted record header at offset {start} (record {self.index}): the CRC of "
            f"the length field does not match (stored 0x{stored:08x}, computed "
            f"0x{computed:08x}), so the record length cannot be trusted{hint}",
            field_offset=start + 8,
            stored_crc=stored,
            computed_crc=computed,
            tf_message=f"corrupted record at {start}{tf_hint}",
            resync_from=start + 1,
        )

    def _absurd(self, start: int, length: int) -> _Skipped | None:
        remaining = self._stream.remaining()
        tf_message = None
        if length >= _TOO_LARGE:
            tf_message = "record size too large"
        elif length < _NEGATIVE_READ and remaining is not None and length + 16 > remaining:
            tf_message = _truncated_tf_message(start, compressed=False)
        return self._damage(
            KIND_ABSURD_LENGTH,
            start,
            f"record {self.index} at offset {start} declares {length} data bytes, more "
            f"than max_record_bytes={self._max}; pass a larger max_record_bytes if the "
            "file really holds records this large",
            field_offset=start,
            tf_message=tf_message,
            resync_from=start + 1,
        )

    def _truncated(self, start: int, length: int, *, got: int) -> _Skipped | None:
        compressed = self._stream.remaining() is None
        if compressed:
            self._cut_at_end = True
        cut = self._stream.end_damage
        note = f"; {cut.detail}" if cut is not None and cut.kind == KIND_TRUNCATED_STREAM else ""
        return self._damage(
            KIND_TRUNCATED_DATA,
            start,
            f"record {self.index} at offset {start} declares {length} data bytes plus a "
            f"4-byte CRC, but only {max(got, 0)} bytes follow its header: the file is "
            f"truncated{note}",
            field_offset=start + 12,
            tf_message=_truncated_tf_message(start, compressed=compressed),
            resync_from=start + 1,
        )

    def _bad_data(self, start: int, length: int, stored: int, computed: int) -> _Skipped | None:
        outcome = self._damage(
            KIND_DATA_CRC,
            start,
            f"record {self.index} at offset {start} is corrupted: the CRC of its {length} "
            f"data bytes does not match (stored 0x{stored:08x}, computed 0x{computed:08x})",
            field_offset=start + 12 + length,
            stored_crc=stored,
            computed_crc=computed,
            tf_message=f"corrupted record at {start + 12}",
            records_lost=1,
            resync_from=start + length + 16,
        )
        self._passed(start, start + length + 16)
        return outcome

    def _at_end(self) -> None:
        damage = self._stream.end_damage
        if damage is not None and not (damage.kind == KIND_TRUNCATED_STREAM and self._cut_at_end):
            self._container_damage(damage, self._stream.pos)

    def _container_damage(self, damage: StreamDamageError, start: int) -> None:
        self._damage(
            damage.kind,
            start,
            f"{damage.detail}; reached at record {self.index} (stream offset {start})",
            field_offset=self._stream.base + len(self._stream.data),
            compressed_offset=damage.compressed_offset,
            tf_message=damage.tf_message,
            resync_from=None,
        )

    def _damage(
        self,
        kind: str,
        start: int,
        message: str,
        *,
        field_offset: int,
        tf_message: str | None = None,
        stored_crc: int | None = None,
        computed_crc: int | None = None,
        records_lost: int | None = None,
        compressed_offset: int | None = None,
        resync_from: int | None = None,
    ) -> _Skipped | None:
        """Raise, or (skip mode) report the region and resume; ``None`` when reading stops.

        Skip mode resumes at ``resync_from`` itself after a frame with a bad data CRC (its
        framing is sound) and otherwise at the first verified frame after it from which
        the frames chain to the end of the file.  A compressed stream never resumes, nor
        does damage with no ``resync_from`` (the container's own, found past the frames).
        """
        event = CorruptionEvent(
            path=self._path,
            kind=kind,
            offset=start,
            record_index=self.index,
            message=f"{self._path}: {message}",
            field_offset=field_offset,
            records_lost=records_lost,
            compressed_offset=(
                self._stream.compressed_offset if compressed_offset is None else compressed_offset
            ),
            stored_crc=stored_crc,
            computed_crc=computed_crc,
            tf_message=tf_message,
        )
        if not self._skip:
            self._emit(event)
            raise _strict_error(event)
        return self._skip_past(event, resync_from)

    def _skip_past(self, event: CorruptionEvent, resync_from: int | None) -> _Skipped | None:
        """Report ``event`` and resume after it when the stream allows, else stop."""
        stream = self._stream
        if not isinstance(stream, PlainStream) or resync_from is None:
            note = self._stop_note() if event.kind in _STOPS_MID_STREAM else ""
            self._emit(replace(event, message=event.message + note))
            return None
        # A frame dropped for its data CRC was framed soundly: reading resumes right after.
        found = event.kind == KIND_DATA_CRC or self._resync(resync_from)
        if not found and event.kind == KIND_HEADER_CRC:
            event = replace(
                event,
                kind=KIND_TRAILING_GARBAGE,
                message=f"{event.message}; no valid record follows: the file ends in garbage",
            )
        self._emit(replace(event, resume_offset=stream.pos))
        return _SKIPPED

    def _stop_note(self) -> str:
        stream = self._stream
        if isinstance(stream, PlainStream):
            return ""
        size = size_of(stream.fd)
        return (
            f"; reading stops here: inflating past damage can produce records that were "
            f"never written, so nothing after stream offset {stream.pos} (compressed offset "
            f"{stream.compressed_offset} of {size} bytes) is read"
        )

    def _emit(self, event: CorruptionEvent) -> None:
        if self._report is not None:
            self._report.add(event)

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


def _first_header_hint(head: bytes) -> str:
    """What a file whose first bytes are not a record header may be instead."""
    detected = detect_compression(head)
    if detected is not None:
        return (
            f"; the file starts like a {detected} stream: pass compression='{detected}' "
            "(or compression='auto' to detect it)"
        )
    return (
        f"; its first bytes {head!r} are not a record header: this is not a TFRecord file, "
        "or it is compressed (compression='GZIP' or compression='ZLIB')"
    )


def _truncated_tf_message(start: int, *, compressed: bool) -> str:
    reason = "EOF reached" if compressed else "Read less bytes than requested"
    return f"truncated record at {start}' failed with {reason}"


def _strict_error(event: CorruptionEvent) -> CorruptRecordError:
    """The error strict mode raises for ``event``."""
    return CorruptRecordError(
        f"{event.message} (on_corruption='skip' reads every undamaged record and "
        "reports the damage instead of raising)",
        path=event.path,
        offset=event.offset,
        record_index=event.record_index,
        kind=event.kind,
        compressed_offset=event.compressed_offset,
        stored_crc=event.stored_crc,
        computed_crc=event.computed_crc,
        tf_message=event.tf_message,
    )


def _one_frame(start: int) -> IntArray:
    return np.array([start], dtype=np.int64)


def _large_frame_length(data: bytes, off: int, pos: int, end: int, maximum: int) -> int | None:
    """Length of the whole, soundly headed large frame at ``data[off:]`` (file offset ``pos``)."""
    length, stored = HEADER.unpack_from(data, off)
    whole = LARGE <= length <= maximum and pos + length + 16 <= end
    return int(length) if whole and mask(crc32c(data[off : off + 8])) == stored else None
