"""TBL v2 byte layout: header, index entries, metadata blocks, checksums, LZ4.

Normative description: specs/tbl.md.  Everything here is pure layout (packing, unpacking,
checksums); the writer and the reader in :mod:`readplan.records.tbl` build on it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Final, Literal, cast

import numpy as np

from readplan.errors import ConfigError, MissingExtraError

__all__ = [
    "ENTRY_DTYPE",
    "ENTRY_SIZE",
    "FORMATS",
    "HEADER",
    "HEADER_SIZE",
    "LZ4_MAX_RATIO",
    "MAGIC",
    "MAX_SAMPLES",
    "METADATA_BLOCK",
    "METADATA_TYPES",
    "VERSION",
    "Format",
    "Header",
    "Metadata",
    "MetadataType",
    "SampleInfo",
    "crc16",
    "crc16_function",
    "format_code",
    "header_crc",
    "lz4_block",
    "metadata_type_code",
]

MAGIC: Final = b"TBL\x02"
VERSION: Final = 2
HEADER_SIZE: Final = 64
ENTRY_SIZE: Final = 24

# magic, version, num_samples, header_size, padding, metadata_offset, metadata_size, flags,
# checksum, reserved.
HEADER: Final = struct.Struct("<4sIQIIQQII16s")
# sample index, size, type, reserved.
METADATA_BLOCK: Final = struct.Struct("<QIHH")

# The index as numpy reads it: one record per sample, packed, little-endian.
ENTRY_DTYPE: Final = np.dtype(
    [
        ("offset", "<u8"),
        ("size", "<u4"),
        ("uncompressed_size", "<u4"),
        ("width", "<u2"),
        ("height", "<u2"),
        ("format", "u1"),
        ("flags", "u1"),
        ("checksum", "<u2"),
    ]
)
ENTRY: Final = struct.Struct("<QIIHHBBH")

FILE_COMPRESSED: Final = 1
FILE_METADATA: Final = 2
FILE_CHECKSUMS: Final = 4
SAMPLE_COMPRESSED: Final = 1
SAMPLE_METADATA: Final = 2
SAMPLE_VERIFIED: Final = 4

# header_size is a u32 holding 64 + 24 * num_samples.
MAX_SAMPLES: Final = (0xFFFFFFFF - HEADER_SIZE) // ENTRY_SIZE
# An LZ4 block never expands a byte of input into more than 255 bytes of output (each
# length-extension byte adds at most 255), so a stored size bounds the uncompressed one
# before anything is allocated.
LZ4_MAX_RATIO: Final = 255

Format = Literal[
    "unknown", "jpeg", "png", "webp", "bmp", "tiff", "video_mp4", "video_avi", "raw_u8"
]
# Position in this tuple is the u8 code stored in the index.
FORMATS: Final[tuple[Format, ...]] = (
    "unknown",
    "jpeg",
    "png",
    "webp",
    "bmp",
    "tiff",
    "video_mp4",
    "video_avi",
    "raw_u8",
)

MetadataType = Literal["none", "json", "protobuf", "msgpack", "custom"]
METADATA_TYPES: Final[dict[int, MetadataType]] = {
    0: "none",
    1: "json",
    2: "protobuf",
    3: "msgpack",
    255: "custom",
}
_METADATA_CODES: Final = {name: code for code, name in METADATA_TYPES.items()}


def format_code(value: object) -> int:
    """The index code of a sample format name."""
    if value in FORMATS:
        return FORMATS.index(value)
    raise ConfigError(
        f"unknown sample format {value!r}; expected one of {', '.join(FORMATS)}",
        field="format",
        value=value,
    )


def metadata_type_code(value: object) -> int:
    """The block code of a metadata type name."""
    if isinstance(value, str) and value in _METADATA_CODES:
        return _METADATA_CODES[value]
    raise ConfigError(
        f"unknown metadata type {value!r}; expected one of {', '.join(_METADATA_CODES)}",
        field="metadata_type",
        value=value,
    )


@dataclass(frozen=True)
class Header:
    """The 64-byte file header, as stored."""

    magic: bytes
    version: int
    num_samples: int
    header_size: int
    padding: int
    metadata_offset: int
    metadata_size: int
    flags: int
    checksum: int
    reserved: bytes

    @classmethod
    def unpack(cls, raw: bytes) -> Header:
        return cls(*HEADER.unpack(raw))

    def pack(self) -> bytes:
        return HEADER.pack(
            self.magic,
            self.version,
            self.num_samples,
            self.header_size,
            self.padding,
            self.metadata_offset,
            self.metadata_size,
            self.flags,
            self.checksum,
            self.reserved,
        )

    @property
    def index_end(self) -> int:
        """Where the index ends and the payloads begin (from num_samples, not header_size)."""
        return HEADER_SIZE + ENTRY_SIZE * self.num_samples


def header_crc(raw: bytes) -> int:
    """CRC-32 (zlib's) of the 64 header bytes with the checksum field (bytes 44..48) zeroed."""
    return zlib.crc32(raw[:44] + b"\0\0\0\0" + raw[48:HEADER_SIZE])


_crc16_model: Callable[[bytes], int] | None = None
_lz4: ModuleType | None = None


def _missing(package: str) -> MissingExtraError:
    return MissingExtraError(
        f"TBL files need the {package!r} package, which is not installed: "
        "pip install 'readplan[tbl]'",
        extra="tbl",
        package=package,
    )


def crc16_function() -> Callable[[bytes], int]:
    """CRC-16/MODBUS (reflected 0xA001, init 0xFFFF, no final xor) as a function of bytes."""
    global _crc16_model
    if _crc16_model is None:
        try:
            from fastcrc import crc16 as fastcrc16
        except ImportError as exc:
            raise _missing("fastcrc") from exc
        # Its optional second argument (an initial value) is never passed.
        _crc16_model = cast("Callable[[bytes], int]", fastcrc16.modbus)
    return _crc16_model


def crc16(data: bytes) -> int:
    """CRC-16/MODBUS of ``data`` (see :func:`crc16_function`)."""
    return crc16_function()(data)


def lz4_block() -> ModuleType:
    """The ``lz4.block`` module, imported on first use."""
    global _lz4
    if _lz4 is None:
        try:
            import lz4.block
        except ImportError as exc:
            raise _missing("lz4") from exc
        _lz4 = lz4.block
    return _lz4


@dataclass(frozen=True)
class SampleInfo:
    """One sample's index entry (``offset`` and ``size`` as stored in the file)."""

    index: int
    offset: int
    size: int
    uncompressed_size: int
    width: int
    height: int
    format: Format
    compressed: bool
    has_metadata: bool
    checksum: int


@dataclass(frozen=True)
class Metadata:
    """A sample's metadata block: its type and bytes (``text`` decodes UTF-8)."""

    type: MetadataType
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")
