"""The bytes of an index sidecar: encoding, and refusing what is not one (normative:
``specs/tfrecord.md`` §8).

A sidecar is a 56-byte header, the record offsets, and in version 2 the *source*: the URL
and content version of the stored object it was built from, so that a reader who finds
the same object version knows the sidecar is its own without reading the data.  Version 1
(no source) is what a file without such a version gets; both are read.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import IndexFileError
from readplan.records._crc import crc32c
from readplan.records.tfrecord._compression import GZIP, ZLIB

__all__ = [
    "COMPRESSION_CODES",
    "HEADER_SIZE",
    "MAGIC",
    "MAX_SOURCE",
    "VERSION",
    "Header",
    "encode",
    "offsets_problem",
    "parse_body",
    "parse_header",
    "refuse",
    "refuse_offsets",
]

MAGIC = b"RPTFRIDX"
VERSION = 1
_WITH_SOURCE = 2
# magic, version, compression, record count, data size, stream size,
# binding CRC, body CRC, header CRC, source size (version 1: reserved, 0)
_HEADER = struct.Struct("<8sIIQQQIIII")
HEADER_SIZE = _HEADER.size
_CRC_AT = HEADER_SIZE - 8
# Longer than any object URL a store accepts with its version tag.
MAX_SOURCE = 1 << 14
COMPRESSION_CODES: dict[str | None, int] = {None: 0, ZLIB: 1, GZIP: 2}
_CODE_NAMES = {code: name for name, code in COMPRESSION_CODES.items()}


class Header(NamedTuple):
    compression: str | None
    record_count: int
    data_size: int
    stream_size: int
    binding_crc: int
    body_crc: int
    source_size: int

    @property
    def file_size(self) -> int:
        return HEADER_SIZE + 8 * self.record_count + self.source_size


def refuse(index_path: str, field: str, why: str) -> IndexFileError:
    return IndexFileError(
        f"{index_path}: refusing this index ({field}): {why}. Rebuild it with "
        "`readplan index DATA_FILE` or readplan.index.build_index(DATA_FILE).",
        path=index_path,
        field=field,
    )


def refuse_offsets(index_path: str | None, data_path: str, field: str, why: str) -> IndexFileError:
    """:func:`refuse` for the offsets of ``data_path``: read from the sidecar ``index_path``,
    or (``None``) held in memory, where no file holds them, so none is named."""
    if index_path is not None:
        return refuse(index_path, field, why)
    return IndexFileError(
        f"offsets held in memory for {data_path} (no sidecar file holds them): refusing "
        f"this index ({field}): {why}. They describe the file as it was when they were "
        "computed: open it again to compute them anew (a new RecordFile or data source), or "
        "build its sidecar with `readplan index DATA_FILE` or "
        "readplan.index.build_index(DATA_FILE).",
        path=None,
        field=field,
    )


def offsets_problem(offsets: IntArray, stream_size: int) -> str | None:
    """Why ``offsets`` cannot frame a stream of ``stream_size`` bytes; ``None`` if they can."""
    if len(offsets) == 0:
        return None if stream_size == 0 else f"no records but a stream of {stream_size} bytes"
    if offsets[0] != 0:
        return f"the first record starts at {int(offsets[0])}, not 0"
    # The steps between offsets, then the last record's span (no appended copy: this runs
    # at every open of an indexed file).
    steps = offsets[1:] - offsets[:-1]
    last = stream_size - int(offsets[-1])
    if last < 16 or (steps < 16).any():
        bad = int(np.argmax(steps < 16)) if (steps < 16).any() else len(steps)
        span = int(steps[bad]) if bad < len(steps) else last
        return (
            f"record {bad} at offset {int(offsets[bad])} spans {span} bytes, less "
            "than the 16 framing bytes (offsets must increase and stay within the stream of "
            f"{stream_size} bytes)"
        )
    return None


def _header_crc(raw: bytes, version: int) -> int:
    """Version 1 covers the bytes before the CRC; version 2 also the source size after it."""
    crc = crc32c(raw[:_CRC_AT])
    return crc if version == VERSION else crc32c(raw[_CRC_AT + 4 : HEADER_SIZE], crc)


def encode(
    compression: str | None,
    offsets: IntArray,
    data_size: int,
    stream_size: int,
    binding_crc: int,
    source: str | None,
) -> bytes:
    """The sidecar's bytes: version 2 when there is a ``source``, else version 1."""
    tail = b"" if source is None else source.encode("utf-8")
    version = VERSION if source is None else _WITH_SOURCE
    body = np.ascontiguousarray(offsets, dtype="<u8").tobytes() + tail
    fields = (
        MAGIC,
        version,
        COMPRESSION_CODES[compression],
        len(offsets),
        data_size,
        stream_size,
        binding_crc,
        crc32c(body),
    )
    partial = _HEADER.pack(*fields, 0, len(tail))
    return _HEADER.pack(*fields, _header_crc(partial, version), len(tail)) + body


def parse_header(raw: bytes, index_path: str, *, whole: bool) -> Header:
    """The checked header of the sidecar whose first bytes are ``raw`` (all of them when
    ``whole``, else ``raw`` may end before the sidecar does)."""
    if len(raw) < HEADER_SIZE:
        raise refuse(
            index_path, "header", f"the file has {len(raw)} bytes, a header has {HEADER_SIZE}"
        )
    magic, version, code, count, data_size, stream_size, binding, body_crc, header_crc, extra = (
        _HEADER.unpack(raw[:HEADER_SIZE])
    )
    if magic != MAGIC:
        raise refuse(index_path, "magic", f"it starts with {magic!r}, not {MAGIC!r}")
    if version not in (VERSION, _WITH_SOURCE):
        raise refuse(index_path, "version", f"version {version} is not supported (only 1, 2)")
    if _header_crc(raw, version) != header_crc:
        raise refuse(index_path, "header_crc", "the header's CRC does not match its contents")
    if code not in _CODE_NAMES:
        raise refuse(index_path, "compression", f"unknown compression code {code}")
    source_size = extra if version == _WITH_SOURCE else 0
    if source_size > MAX_SOURCE:
        raise refuse(
            index_path, "source", f"its source takes {source_size} bytes, at most {MAX_SOURCE}"
        )
    header = Header(
        _CODE_NAMES[code], count, data_size, stream_size, binding, body_crc, source_size
    )
    if len(raw) > header.file_size or (whole and len(raw) != header.file_size):
        found = f"{len(raw)} bytes" if whole else f"at least {len(raw)} bytes"
        raise refuse(
            index_path,
            "record_count",
            f"{count} records need a {header.file_size}-byte index but the file has "
            f"{found} (truncated or overwritten)",
        )
    return header


def parse_body(raw: bytes, header: Header, index_path: str) -> tuple[IntArray, str | None]:
    """The offsets and the source of the whole sidecar ``raw``, its body CRC checked."""
    body = raw[HEADER_SIZE:]
    if crc32c(body) != header.body_crc:
        raise refuse(index_path, "offsets_crc", "the CRC of the offsets does not match them")
    end = 8 * header.record_count
    offsets = np.frombuffer(body, dtype="<u8", count=header.record_count).astype(np.int64)
    if (offsets < 0).any():
        raise refuse(index_path, "offsets", "an offset is beyond 2**63")
    if not header.source_size:
        return offsets, None
    try:
        return offsets, body[end:].decode("utf-8")
    except UnicodeDecodeError as err:
        raise refuse(index_path, "source", f"its source is not UTF-8 ({err})") from err
