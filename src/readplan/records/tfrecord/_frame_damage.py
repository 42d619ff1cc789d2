"""The damage a TFRecord frame parser meets: classified, then raised or reported and
skipped past (normative: specs/tfrecord.md, "Damage").

A :class:`FrameDamage` belongs to one :class:`~readplan.records.tfrecord._parser.FrameParser`; the
parser finds what is wrong and says which record it was reading, this module words the
error, and in skip mode reports it and asks the parser's resync where reading resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from readplan.errors import CorruptRecordError
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
from readplan.records.tfrecord._compression import detect_compression
from readplan.records.tfrecord._stream import ByteStream, PlainStream
from readplan.storage import size_of

__all__ = ["SKIPPED", "FrameDamage", "Skipped"]

_NEGATIVE_READ = 2**63 - 4
_TOO_LARGE = 2**64 - 5


class Skipped:
    """Marker returned by a careful step that dropped damaged bytes and read no record."""


SKIPPED = Skipped()
# Damage kinds after which a compressed stream still has bytes that are not read.
_STOPS_MID_STREAM = frozenset({KIND_HEADER_CRC, KIND_ABSURD_LENGTH, KIND_DATA_CRC, KIND_INFLATE})


class FrameDamage:
    """Raises the damage of ``stream`` (strict mode) or reports it to ``report`` and resumes
    where ``resync`` finds the frames chain again (skip mode).  ``index`` is the record the
    parser was reading when it met the damage."""

    def __init__(
        self,
        stream: ByteStream,
        *,
        path: str,
        skip: bool,
        report: CorruptionReport | None,
        max_record_bytes: int,
        resync: Callable[[int], bool],
    ) -> None:
        self._stream = stream
        self._path = path
        self._skip = skip
        self._report = report
        self._max = max_record_bytes
        self._resync = resync
        # The stream was cut inside a frame: its end is reported as that frame's damage.
        self._cut_at_end = False

    def short_header(self, start: int, have: int, index: int) -> Skipped | None:
        if have == 0:
            self.at_end(index)
            return None
        self._cut_at_end = True
        where = f"after record {index - 1}" if index else "before any record"
        self._damage(
            KIND_TRUNCATED_HEADER,
            start,
            index,
            f"the last {have} bytes, at offset {start} {where}, are too short for a record "
            "header (12 bytes): the file was cut short while writing "
            f"record {index}, or ends in garbage; TensorFlow ignores them silently",
            field_offset=start,
            resync_from=start + have,
        )
        self.at_end(index)
        return None

    def bad_header(self, start: int, stored: int, computed: int, index: int) -> Skipped | None:
        hint = ""
        tf_hint = ""
        if start == 0:
            head = self._stream.data[self._stream.off : self._stream.off + 12]
            hint = _first_header_hint(bytes(head))
            tf_hint = " (Is this even a TFRecord file?)"
        return self._damage(
            KIND_HEADER_CRC,
            start,
            index,
            f"corrupted record header at offset {start} (record {index}): the CRC of "
            f"the length field does not match (stored 0x{stored:08x}, computed "
            f"0x{computed:08x}), so the record length cannot be trusted{hint}",
            field_offset=start + 8,
            stored_crc=stored,
            computed_crc=computed,
            tf_message=f"corrupted record at {start}{tf_hint}",
            resync_from=start + 1,
        )

    def absurd(self, start: int, length: int, index: int) -> Skipped | None:
        remaining = self._stream.remaining()
        tf_message = None
        if length >= _TOO_LARGE:
            tf_message = "record size too large"
        elif length < _NEGATIVE_READ and remaining is not None and length + 16 > remaining:
            tf_message = _truncated_tf_message(start, compressed=False)
        return self._damage(
            KIND_ABSURD_LENGTH,
            start,
            index,
            f"record {index} at offset {start} declares {length} data bytes, more "
            f"than max_record_bytes={self._max}; pass a larger max_record_bytes if the "
            "file really holds records this large",
            field_offset=start,
            tf_message=tf_message,
            resync_from=start + 1,
        )

    def truncated(self, start: int, length: int, index: int, *, got: int) -> Skipped | None:
        compressed = self._stream.remaining() is None
        if compressed:
            self._cut_at_end = True
        cut = self._stream.end_damage
        note = f"; {cut.detail}" if cut is not None and cut.kind == KIND_TRUNCATED_STREAM else ""
        return self._damage(
            KIND_TRUNCATED_DATA,
            start,
            index,
            f"record {index} at offset {start} declares {length} data bytes plus a "
            f"4-byte CRC, but only {max(got, 0)} bytes follow its header: the file is "
            f"truncated{note}",
            field_offset=start + 12,
            tf_message=_truncated_tf_message(start, compressed=compressed),
            resync_from=start + 1,
        )

    def bad_data(
        self, start: int, length: int, stored: int, computed: int, index: int
    ) -> Skipped | None:
        return self._damage(
            KIND_DATA_CRC,
            start,
            index,
            f"record {index} at offset {start} is corrupted: the CRC of its {length} "
            f"data bytes does not match (stored 0x{stored:08x}, computed 0x{computed:08x})",
            field_offset=start + 12 + length,
            stored_crc=stored,
            computed_crc=computed,
            tf_message=f"corrupted record at {start + 12}",
            records_lost=1,
            resync_from=start + length + 16,
        )

    def at_end(self, index: int) -> None:
        damage = self._stream.end_damage
        if damage is not None and not (damage.kind == KIND_TRUNCATED_STREAM and self._cut_at_end):
            self.container(damage, self._stream.pos, index)

    def container(self, damage: StreamDamageError, start: int, index: int) -> None:
        self._damage(
            damage.kind,
            start,
            index,
            f"{damage.detail}; reached at record {index} (stream offset {start})",
            field_offset=self._stream.base + len(self._stream.data),
            compressed_offset=damage.compressed_offset,
            tf_message=damage.tf_message,
            resync_from=None,
        )

    def _damage(
        self,
        kind: str,
        start: int,
        index: int,
        message: str,
        *,
        field_offset: int,
        tf_message: str | None = None,
        stored_crc: int | None = None,
        computed_crc: int | None = None,
        records_lost: int | None = None,
        compressed_offset: int | None = None,
        resync_from: int | None = None,
    ) -> Skipped | None:
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
            record_index=index,
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

    def _skip_past(self, event: CorruptionEvent, resync_from: int | None) -> Skipped | None:
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
        return SKIPPED

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
