"""TFRecord files: writing, reading, counting, random access, damage (``specs/tfrecord.md``).

The implementation lives in this package's private modules; this module is the import path
the rest of readplan and the public re-export module use.
"""

from __future__ import annotations

from readplan.records._cap import (
    DEFAULT_MAX_COMPRESSED_RECORD_BYTES,
    DEFAULT_MAX_RECORD_BYTES,
)
from readplan.records._damage import (
    KIND_ABSURD_LENGTH,
    KIND_DATA_CRC,
    KIND_HEADER_CRC,
    KIND_INFLATE,
    KIND_TRAILING_GARBAGE,
    KIND_TRUNCATED_DATA,
    KIND_TRUNCATED_HEADER,
    KIND_TRUNCATED_STREAM,
    KINDS,
    CorruptionEvent,
    CorruptionReport,
    LostRecord,
    OnCorruption,
)
from readplan.records.tfrecord._file import (
    RecordFile,
)
from readplan.records.tfrecord._packed import (
    PackedRecords,
)
from readplan.records.tfrecord._whole_file import (
    count,
    frame_offsets,
    read,
    read_packed,
)
from readplan.records.tfrecord._writer import (
    TFRecordWriter,
    write,
)

__all__ = [
    "DEFAULT_MAX_COMPRESSED_RECORD_BYTES",
    "DEFAULT_MAX_RECORD_BYTES",
    "KINDS",
    "KIND_ABSURD_LENGTH",
    "KIND_DATA_CRC",
    "KIND_HEADER_CRC",
    "KIND_INFLATE",
    "KIND_TRAILING_GARBAGE",
    "KIND_TRUNCATED_DATA",
    "KIND_TRUNCATED_HEADER",
    "KIND_TRUNCATED_STREAM",
    "CorruptionEvent",
    "CorruptionReport",
    "LostRecord",
    "OnCorruption",
    "PackedRecords",
    "RecordFile",
    "TFRecordWriter",
    "count",
    "frame_offsets",
    "read",
    "read_packed",
    "write",
]
