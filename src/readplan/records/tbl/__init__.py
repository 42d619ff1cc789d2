"""TBL v2 files: TurboLoader's indexed container, read and written byte for byte (``specs/tbl.md``).

The implementation lives in this package's private modules; this module is the import path
the rest of readplan and the public re-export module use.
"""

from __future__ import annotations

from readplan.records.tbl._file import (
    FILE_FORMAT,
    KINDS,
    TblFile,
    count,
    read,
)
from readplan.records.tbl._layout import (
    ENTRY_DTYPE,
    FORMATS,
    Format,
    Metadata,
    MetadataType,
    SampleInfo,
)
from readplan.records.tbl._writer import (
    Sample,
    TblWriter,
    write,
)

__all__ = [
    "ENTRY_DTYPE",
    "FILE_FORMAT",
    "FORMATS",
    "KINDS",
    "Format",
    "Metadata",
    "MetadataType",
    "Sample",
    "SampleInfo",
    "TblFile",
    "TblWriter",
    "count",
    "read",
    "write",
]
