"""CRC32C with TFRecord masking, scalar and vectorised (normative: specs/tfrecord.md, "Checksums").

The scalar CRC is the compiled core's (``specs/native.md`` §2: the processor's CRC instruction
where it has one, chosen at run time, else a table walk) or, on the pure path, the ``crc32c``
package's, its reference twin.  The vectorised form
computes the CRC32C of many 8-byte length fields at once with numpy table lookups
(slicing-by-8), so verifying the headers of a batch of small records costs a handful of
array operations instead of one Python call per record.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from crc32c import crc32c as crc32c_pure

from readplan._internal.arrays import IntArray, U8Array, U32Array
from readplan.records.native import CORE

__all__ = [
    "MASK_DELTA",
    "crc32c",
    "crc32c_pure",
    "header_candidates",
    "length_crcs",
    "mask",
    "mask_array",
    "masked_length_crcs",
    "unmask",
]

MASK_DELTA = 0xA282EAD8

crc32c = CORE.crc32c if CORE is not None else crc32c_pure
_POLY_REFLECTED = 0x82F63B78


def mask(crc: int) -> int:
    """The masked form TFRecord stores: rotate right by 15, then add ``MASK_DELTA``."""
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """Inverse of :func:`mask`."""
    rotated = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF


def mask_array(crcs: U32Array) -> U32Array:
    """:func:`mask` applied element-wise (uint32 arithmetic wraps modulo 2**32)."""
    rotated: U32Array = (crcs >> np.uint32(15)) | (crcs << np.uint32(17))
    masked: U32Array = rotated + np.uint32(MASK_DELTA)
    return masked


def _slicing_tables() -> U32Array:
    tables = np.zeros((8, 256), dtype=np.uint32)
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_POLY_REFLECTED if crc & 1 else 0)
        tables[0, byte] = crc
    for k in range(1, 8):
        previous = tables[k - 1]
        tables[k] = (previous >> np.uint32(8)) ^ tables[0][previous & np.uint32(0xFF)]
    # Byte j of an 8-byte message is looked up in table 7 - j.  The initial value 0xFFFFFFFF
    # inverts the first four bytes and the final XOR inverts the result; both are folded into
    # the tables so that a lookup needs no extra operations.
    folded: U32Array = tables[::-1].copy()
    inverted = np.arange(256, dtype=np.uint8) ^ np.uint8(0xFF)
    for j in range(4):
        folded[j] = folded[j][inverted]
    folded[7] ^= np.uint32(0xFFFFFFFF)
    return folded


_TABLES = _slicing_tables()


def length_crcs(columns: list[U8Array]) -> U32Array:
    """CRC32C of many 8-byte messages; ``columns[j]`` holds byte ``j`` of every message."""
    result: U32Array = _TABLES[0][columns[0]]
    for j in range(1, 8):
        result ^= _TABLES[j][columns[j]]
    return result


# The lookups of four zero bytes 4-7 of an 8-byte message, folded into one constant.
_HIGH_ZERO = np.bitwise_xor.reduce(_TABLES[4:, 0])
_SHORT = 1 << 16


def _length_crcs32(lengths: IntArray) -> U32Array:
    """:func:`length_crcs` of lengths below ``2**32``: half the lookups (bytes 4-7 are 0)."""
    low = lengths.astype("<u4").view(np.uint8).reshape(-1, 4)
    result: U32Array = _TABLES[0][low[:, 0]] ^ _HIGH_ZERO
    for j in range(1, 4):
        result ^= _TABLES[j][low[:, j]]
    return result


@functools.cache
def _short_masked() -> U32Array:
    """Masked length CRCs of every length below ``2**16``, built on first use (256 KiB)."""
    return mask_array(_length_crcs32(np.arange(_SHORT, dtype=np.int64)))


def masked_length_crcs(lengths: IntArray) -> U32Array:
    """The masked CRCs that headers store for ``lengths`` (non-negative): one table lookup
    each while all are below ``2**16``, four below ``2**32``, eight otherwise."""
    longest = int(lengths.max())
    if longest < _SHORT:
        found: U32Array = _short_masked()[lengths]
        return found
    if longest < 1 << 32:
        return mask_array(_length_crcs32(lengths))
    length_bytes = lengths.astype("<u8").view(np.uint8).reshape(-1, 8)
    return mask_array(length_crcs([length_bytes[:, j] for j in range(8)]))


def header_candidates(window: U8Array) -> npt.NDArray[np.intp]:
    """Positions ``p`` where ``window[p:p+12]`` is a TFRecord header whose length CRC verifies.

    Every position with 12 bytes left is tested, so the cost is linear in the window size;
    this is used only to resynchronise after damage.
    """
    count = len(window) - 11
    if count <= 0:
        return np.zeros(0, dtype=np.intp)
    columns = [window[j : j + count] for j in range(8)]
    stored = window[8 : 8 + count].astype(np.uint32)
    for j in range(1, 4):
        stored |= window[8 + j : 8 + j + count].astype(np.uint32) << np.uint32(8 * j)
    matches: npt.NDArray[np.intp] = np.flatnonzero(mask_array(length_crcs(columns)) == stored)
    return matches
