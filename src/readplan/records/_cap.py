"""The record-size cap: no record longer than this is read (specs/tfrecord.md, section 6)."""

from __future__ import annotations

from readplan.errors import ConfigError

__all__ = ["DEFAULT_MAX_COMPRESSED_RECORD_BYTES", "DEFAULT_MAX_RECORD_BYTES", "record_cap"]

# The largest serialized protobuf; uncompressed lengths are also checked against the file.
DEFAULT_MAX_RECORD_BYTES = 2**31 - 1
# A compressed length cannot be checked against anything before inflating: this default
# bounds what one record of a GZIP/ZLIB file may cost (see specs/tfrecord.md, section 6).
DEFAULT_MAX_COMPRESSED_RECORD_BYTES = 2**28


def record_cap(max_record_bytes: object, compression: str | None) -> int:
    """The record-size cap of one pass: as given, or the default for the compression."""
    if max_record_bytes is None:
        if compression is None:
            return DEFAULT_MAX_RECORD_BYTES
        return DEFAULT_MAX_COMPRESSED_RECORD_BYTES
    if (
        not isinstance(max_record_bytes, int)
        or isinstance(max_record_bytes, bool)
        or max_record_bytes < 0
    ):
        raise ConfigError(
            f"max_record_bytes={max_record_bytes!r} must be a non-negative int, or None for "
            f"the default ({DEFAULT_MAX_RECORD_BYTES} uncompressed, "
            f"{DEFAULT_MAX_COMPRESSED_RECORD_BYTES} for GZIP/ZLIB files)",
            field="max_record_bytes",
            value=max_record_bytes,
        )
    return max_record_bytes
