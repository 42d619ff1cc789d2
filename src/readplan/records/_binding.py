"""The binding of a data file: its size and the CRC32C of its first and last 64 KiB.

An index sidecar binds to it (``specs/tfrecord.md``, "Index sidecars") and so does a
reader's state (``specs/checkpoint.md`` §4): one definition, so that a sidecar's checked
binding can stand for the file's in a state check.
"""

from __future__ import annotations

from collections.abc import Callable

from readplan.records._crc import crc32c
from readplan.storage import Handle, read_span, size_of

__all__ = ["SPAN", "binding_of", "ends_crc", "ends_read"]

SPAN = 1 << 16


def ends_crc(head: bytes, tail: bytes) -> int:
    """The binding checksum of a file whose first and last ``SPAN`` bytes (or all of it,
    when shorter) are ``head`` and ``tail``."""
    return crc32c(tail, crc32c(head))


def ends_read(read: Callable[[int, int], bytes], size: int) -> int:
    """The binding checksum of a file of ``size`` bytes whose bytes ``[start, stop)`` are
    ``read(start, stop)``: one read when the two ends overlap or touch, else two."""
    span = min(size, SPAN)
    if size <= 2 * SPAN:
        whole = read(0, size)
        return ends_crc(whole[:span], whole[size - span :])
    return ends_crc(read(0, span), read(size - span, size))


def binding_of(fd: Handle) -> tuple[int, int]:
    """Size of the open file ``fd`` and the CRC32C of its ends, read exactly through it (no
    new metadata lookup of a remote object: the version opened; one ranged request per
    read)."""
    size = size_of(fd)
    return size, ends_read(lambda start, stop: read_span(fd, stop - start, start), size)
