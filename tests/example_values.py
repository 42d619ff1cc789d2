"""Example feature values given by their bits: edge values, builders, and the feature dicts
that every encode/decode property also runs on (``with_pins``)."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from hypothesis import example

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
SNAN = 0x7F800001  # signalling NaN: quiet bit clear, payload 1
FLOAT_BITS_PINS = [
    SNAN,
    0xFFBFFFFF,  # negative signalling NaN, largest payload
    0x7FC00000,
    0xFFC12345,
    0x7F800000,
    0xFF800000,
    0x80000000,
    0x00000001,
    0x807FFFFF,
    0x7F7FFFFF,
]


def f32(*bits: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The float32 array of these bit patterns."""
    return np.array(bits, dtype=np.uint32).view(np.float32)


def i64(*values: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.array(values, dtype=np.int64)


def float_bits(value: float) -> int:
    """The bits of ``value`` rounded to float32."""
    word: int = struct.unpack("<I", struct.pack("<f", value))[0]
    return word


PINNED_FEATURE_DICTS: list[dict[str, Any]] = [
    {},
    {"e": []},
    {"i": i64(), "f": f32(), "b": []},
    {"naïve/ключ": f32(SNAN, 0x80000000, 0x7F800000, 1), "neg": i64(INT64_MIN, INT64_MAX)},
    {"": [b""], "\U0001f600": [b"\x00\xff"]},
    {"image": [b"jpeg"], "image_name": [b"a.jpg"], "": i64(1), "\x00": i64(2)},
    {"long_i": i64(INT64_MIN, *range(-50, 50), INT64_MAX), "long_f": f32(*FLOAT_BITS_PINS * 10)},
]


# The same without signalling NaNs, which a Python float cannot carry.
QUIET_PINNED_FEATURE_DICTS: list[dict[str, Any]] = [
    {},
    {"e": []},
    {"i": i64(), "f": f32(), "b": []},
    {"naïve/ключ": f32(0x7FC00001, 0x80000000, 0x7F800000, 1), "neg": i64(INT64_MIN, INT64_MAX)},
    {"image": [b"jpeg"], "image_name": [b"a.jpg"], "": i64(1), "\x00": i64(2)},
]


def with_pins(test: Any, pins: list[dict[str, Any]] = PINNED_FEATURE_DICTS) -> Any:
    """``test`` (a property over feature dicts) also run on each of ``pins``."""
    for pinned in pins:
        test = example(pinned)(test)
    return test
