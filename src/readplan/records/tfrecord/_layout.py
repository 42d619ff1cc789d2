"""The fixed-width fields of a TFRecord frame, named once (``specs/tfrecord.md`` §1).

A frame is ``uint64 length``, ``uint32 masked_crc32c(length)``, the data, and ``uint32
masked_crc32c(data)``, all little-endian: a 12-byte header before the data and a 4-byte
CRC after it.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["CRC", "HEADER", "LENGTH"]

HEADER: Final = struct.Struct("<QI")  # the length and its masked CRC
LENGTH: Final = struct.Struct("<Q")
CRC: Final = struct.Struct("<I")  # a masked CRC-32C, of the length or of the data
