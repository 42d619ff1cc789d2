"""The text form of an index: NVIDIA DALI's and ``vahidk/tfrecord``'s (``specs/tfrecord.md``).

One ``"<offset> <size>"`` line per record, ``size`` being the framed size ``length + 16``.
:mod:`readplan.records.index` exports and imports it (``export_text``, ``import_text``);
this module parses the lines and checks them against the data file.
"""

from __future__ import annotations

import io
import re
import struct

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import ConfigError
from readplan.records._binding import binding_of
from readplan.records._crc import crc32c, mask
from readplan.records.index._format import offsets_problem, refuse
from readplan.records.tfrecord._compression import detect_compression
from readplan.storage import Handle, read_span

__all__ = ["check_text", "parse_text", "text_of"]

_SPOT_CHECKS = 64
_TEXT_NUMBER = re.compile(rb"[0-9]{1,18}")


def text_of(offsets: IntArray, sizes: IntArray) -> bytes:
    """The lines of records starting at ``offsets`` with framed sizes ``sizes``."""
    lines = [f"{offset} {size}\n" for offset, size in zip(offsets.tolist(), sizes.tolist())]
    return "".join(lines).encode("ascii")


def parse_text(text: bytes, source: str) -> tuple[IntArray, IntArray]:
    """The offsets and framed sizes the text ``text`` (read from ``source``) lists; lines
    that are not two decimal numbers, or records that do not follow one another, are
    refused naming ``source``."""
    offsets: list[int] = []
    sizes: list[int] = []
    for number, raw in enumerate(io.BytesIO(text), start=1):
        fields = raw.split()
        if not fields:
            continue
        # ASCII digits only, and small enough for a u64 file offset.
        if len(fields) != 2 or not all(_TEXT_NUMBER.fullmatch(field) for field in fields):
            shown = raw.strip().decode("ascii", errors="backslashreplace")
            raise refuse(source, "line", f"line {number} is {shown!r}, not '<offset> <size>'")
        offsets.append(int(fields[0]))
        sizes.append(int(fields[1]))
    starts = np.array(offsets, dtype=np.int64)
    lengths = np.array(sizes, dtype=np.int64)
    if len(starts) > 1 and (starts[1:] != starts[:-1] + lengths[:-1]).any():
        bad = int(np.argmax(starts[1:] != starts[:-1] + lengths[:-1])) + 1
        raise refuse(
            source,
            "offsets",
            f"line {bad + 1} starts at {int(starts[bad])} but the previous record ends at "
            f"{int(starts[bad - 1] + lengths[bad - 1])} (sizes must be framed sizes, length + 16)",
        )
    return starts, lengths


def check_text(
    fd: Handle, source: str, target: str, offsets: IntArray, sizes: IntArray
) -> tuple[int, int]:
    """Check that the records listed by ``source`` tile the open uncompressed data file
    ``fd`` (at ``target``) and that spot checks of their headers agree; returns the file's
    binding (size, checksum of its ends).  Every read is exact: a stored object costs one
    ranged request per read, never a read-ahead block."""
    if detect_compression(read_span(fd, 12, 0)) is not None:
        raise ConfigError(
            f"{target} is compressed; text indexes describe uncompressed files only",
            field="compression",
            value=target,
        )
    size, binding = binding_of(fd)
    end = int(offsets[-1] + sizes[-1]) if len(offsets) else 0
    if end != size:
        raise refuse(source, "offsets", f"its records end at {end} but {target} has {size} bytes")
    problem = offsets_problem(offsets, size)
    if problem is not None:
        raise refuse(source, "offsets", problem)
    _spot_check(fd, source, offsets, sizes)
    return size, binding


def _spot_check(fd: Handle, source: str, offsets: IntArray, sizes: IntArray) -> None:
    """The headers of the first, the last and up to 62 evenly spaced records."""
    picks = np.unique(np.linspace(0, len(offsets) - 1, num=min(len(offsets), _SPOT_CHECKS)))
    for pick in picks.astype(np.int64).tolist():
        offset = int(offsets[pick])
        header = read_span(fd, 12, offset)
        length, stored = struct.unpack("<QI", header)
        if mask(crc32c(header[:8])) != stored or length + 16 != int(sizes[pick]):
            raise refuse(
                source,
                "offsets",
                f"record {pick} at offset {offset} is not a valid header of a "
                f"{int(sizes[pick])}-byte frame",
            )
