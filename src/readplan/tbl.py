"""TBL v2 containers (public path of :mod:`readplan.records.tbl`; normative: specs/tbl.md)."""

from readplan.records.tbl import (
    ENTRY_DTYPE,
    FORMATS,
    KINDS,
    Format,
    Metadata,
    MetadataType,
    Sample,
    SampleInfo,
    TblFile,
    TblWriter,
    count,
    read,
    write,
)

__all__ = [
    "ENTRY_DTYPE",
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
