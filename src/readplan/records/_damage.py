"""Damage kinds and the corruption report (normative: specs/tfrecord.md, "Damage").

Public through :mod:`readplan.tfrecord`, which re-exports every name here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from readplan.errors import ConfigError

__all__ = [
    "KINDS",
    "KIND_ABSURD_LENGTH",
    "KIND_DATA_CRC",
    "KIND_HEADER_CRC",
    "KIND_INFLATE",
    "KIND_TRAILING_GARBAGE",
    "KIND_TRUNCATED_DATA",
    "KIND_TRUNCATED_HEADER",
    "KIND_TRUNCATED_STREAM",
    "TBL_KINDS",
    "TBL_KIND_BAD_MAGIC",
    "TBL_KIND_HEADER_FIELD",
    "TBL_KIND_INDEX_BOUNDS",
    "TBL_KIND_INDEX_FIELD",
    "TBL_KIND_INDEX_ORDER",
    "TBL_KIND_INDEX_OVERLAP",
    "TBL_KIND_LZ4",
    "TBL_KIND_METADATA_FIELD",
    "TBL_KIND_METADATA_OVERRUN",
    "CorruptionEvent",
    "CorruptionReport",
    "LostRecord",
    "OnCorruption",
    "StreamDamageError",
    "check_damage_options",
]

OnCorruption = Literal["raise", "skip"]
"""What a reader does at damage: raise, or skip it and report it."""
_ON_CORRUPTION: tuple[OnCorruption, ...] = get_args(OnCorruption)

KIND_HEADER_CRC = "header_crc"
KIND_DATA_CRC = "data_crc"
KIND_TRUNCATED_HEADER = "truncated_header"
KIND_TRUNCATED_DATA = "truncated_data"
KIND_ABSURD_LENGTH = "absurd_length"
KIND_TRAILING_GARBAGE = "trailing_garbage"
KIND_INFLATE = "inflate"
KIND_TRUNCATED_STREAM = "truncated_stream"

KINDS = frozenset(
    {
        KIND_HEADER_CRC,
        KIND_DATA_CRC,
        KIND_TRUNCATED_HEADER,
        KIND_TRUNCATED_DATA,
        KIND_ABSURD_LENGTH,
        KIND_TRAILING_GARBAGE,
        KIND_INFLATE,
        KIND_TRUNCATED_STREAM,
    }
)

# TBL v2 containers (specs/tbl.md, "Damage") share the checksum and truncation kinds above
# and add their own for the index and the metadata section.
TBL_KIND_BAD_MAGIC = "bad_magic"
TBL_KIND_HEADER_FIELD = "header_field"
TBL_KIND_INDEX_BOUNDS = "index_bounds"
TBL_KIND_INDEX_OVERLAP = "index_overlap"
TBL_KIND_INDEX_FIELD = "index_field"
TBL_KIND_INDEX_ORDER = "index_order"
TBL_KIND_LZ4 = "lz4"
TBL_KIND_METADATA_OVERRUN = "metadata_overrun"
TBL_KIND_METADATA_FIELD = "metadata_field"

TBL_KINDS = frozenset(
    {
        KIND_HEADER_CRC,
        KIND_DATA_CRC,
        KIND_TRUNCATED_HEADER,
        KIND_TRUNCATED_DATA,
        TBL_KIND_BAD_MAGIC,
        TBL_KIND_HEADER_FIELD,
        TBL_KIND_INDEX_BOUNDS,
        TBL_KIND_INDEX_OVERLAP,
        TBL_KIND_INDEX_ORDER,
        TBL_KIND_INDEX_FIELD,
        TBL_KIND_LZ4,
        KIND_TRAILING_GARBAGE,
        TBL_KIND_METADATA_OVERRUN,
        TBL_KIND_METADATA_FIELD,
    }
)
_ALL_KINDS = KINDS | TBL_KINDS


@dataclass(frozen=True)
class CorruptionEvent:
    """One damaged region of a TFRecord or TBL file.

    Offsets are positions in the (decompressed) record stream.  ``resume_offset`` is where
    reading continued in ``on_corruption="skip"`` mode, or ``None`` when nothing after the
    damage could be read.  ``records_lost`` is 1 when exactly one intact frame was dropped
    (a bad data CRC) and ``None`` when the number is unknown.  ``tf_message`` is the text
    TensorFlow reports for the same damage, or ``None`` where TensorFlow stays silent.
    """

    path: str
    kind: str
    offset: int
    record_index: int
    message: str
    field_offset: int | None = None
    resume_offset: int | None = None
    records_lost: int | None = None
    compressed_offset: int | None = None
    stored_crc: int | None = None
    computed_crc: int | None = None
    tf_message: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _ALL_KINDS:
            raise ConfigError(
                f"unknown damage kind {self.kind!r}; expected one of {sorted(_ALL_KINDS)}",
                field="kind",
                value=self.kind,
            )
        if self.offset < 0 or self.record_index < 0:
            raise ConfigError(
                f"offset ({self.offset}) and record_index ({self.record_index}) must be >= 0",
                field="offset",
                value=(self.offset, self.record_index),
            )
        if self.resume_offset is not None and self.resume_offset < self.offset:
            raise ConfigError(
                f"resume_offset {self.resume_offset} lies before the damage at {self.offset}",
                field="resume_offset",
                value=self.resume_offset,
            )

    @property
    def bytes_skipped(self) -> int | None:
        """Stream bytes between the damage and where reading resumed, when reading resumed."""
        return None if self.resume_offset is None else self.resume_offset - self.offset


@dataclass(frozen=True)
class LostRecord:
    """A record of the plan that a reader did not deliver because of damage.

    Record ``record_index`` of file ``file_index`` of the plan's instructions (``path``),
    at ``position`` of epoch ``epoch``.  ``offset`` and ``kind`` name the damage: the
    record's own frame for a bad data CRC, else the start of the damaged region in which
    the record was lost (``specs/reader.md`` §3).
    """

    epoch: int
    position: int
    file_index: int
    record_index: int
    path: str
    offset: int
    kind: str


class CorruptionReport:
    """Collects every :class:`CorruptionEvent` met while reading; pass it as ``report=``.

    ``callback``, when given, is called with each event as it is found (before the record
    stream continues, or before the error is raised in ``on_corruption="raise"`` mode).
    A reader in ``on_corruption="skip"`` mode also lists in ``lost`` every record of its
    plan it could not deliver.
    """

    def __init__(self, callback: Callable[[CorruptionEvent], None] | None = None) -> None:
        self.events: list[CorruptionEvent] = []
        self.lost: list[LostRecord] = []
        self._callback = callback

    def add(self, event: CorruptionEvent) -> None:
        self.events.append(event)
        if self._callback is not None:
            self._callback(event)

    def add_lost(self, lost: LostRecord) -> None:
        self.lost.append(lost)

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[CorruptionEvent]:
        return iter(self.events)

    @property
    def records_skipped(self) -> int:
        """Records known to be dropped (frames with a bad data CRC)."""
        return sum(event.records_lost or 0 for event in self.events)

    @property
    def bytes_skipped(self) -> int:
        """Stream bytes skipped over by resynchronisation and dropped records."""
        return sum(event.bytes_skipped or 0 for event in self.events)

    def kinds(self) -> dict[str, int]:
        """Number of events of each kind."""
        return dict(Counter(event.kind for event in self.events))

    def __repr__(self) -> str:
        lost = f", {len(self.lost)} plan records lost" if self.lost else ""
        return f"CorruptionReport({len(self.events)} events: {self.kinds()}{lost})"


def check_damage_options(on_corruption: object, report: object) -> None:
    """Refuse an ``on_corruption`` outside :data:`OnCorruption`, or a ``report`` that is
    neither a :class:`CorruptionReport` nor ``None`` (every reader takes both)."""
    if on_corruption not in _ON_CORRUPTION:
        raise ConfigError(
            f"on_corruption={on_corruption!r} is not one of {_ON_CORRUPTION}: 'raise' stops at "
            "the first damage, 'skip' drops damaged records and reports them",
            field="on_corruption",
            value=on_corruption,
        )
    if report is not None and not isinstance(report, CorruptionReport):
        raise ConfigError(
            f"report={report!r} must be a CorruptionReport (or None); its callback argument "
            "takes a function",
            field="report",
            value=report,
        )


class StreamDamageError(Exception):
    """Raised by a byte stream when its compressed container is damaged.

    Internal: the record parser turns it into a :class:`CorruptionEvent` with the record
    context (stream offset and record index) that only the parser knows.
    """

    def __init__(
        self, kind: str, detail: str, *, compressed_offset: int, tf_message: str | None = None
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.compressed_offset = compressed_offset
        self.tf_message = tf_message
