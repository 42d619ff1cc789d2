"""The length varints of the vectorised wire walk (``records/example/_wire.py``), and records
whose fields need 3 or more length bytes: they are read by the walk, not one at a time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.records.example._columns import decode_columns_pure
from readplan.records.example._wire import PADDING, NotCanonicalError, varints
from tests import example_wire as wire


def _varint(value: int) -> bytes:
    # Written here from the wire rule (7-bit digits, low first, continuation bit 0x80).
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read(*encoded: bytes) -> tuple[list[int], list[int]]:
    buf = np.frombuffer(b"".join(encoded) + PADDING, dtype=np.uint8)
    at = np.cumsum([0, *map(len, encoded)])[:-1].astype(np.int64)
    value, size = varints(buf, at)
    sizes = np.broadcast_to(size, at.shape)
    return value.tolist(), sizes.tolist()


EDGES = [0, 1, 127, 128, 300, 2**14 - 1, 2**14, 47_000, 2**21 - 1, 2**21, 2**28 - 1, 2**28]


@pytest.mark.parametrize("value", EDGES)
def test_each_edge_length_reads_back_with_its_size(value: int) -> None:
    assert _read(_varint(value)) == ([value], [len(_varint(value))])


def test_lengths_of_every_size_read_side_by_side() -> None:
    assert _read(*map(_varint, EDGES)) == (EDGES, [len(_varint(v)) for v in EDGES])


def test_the_largest_length_takes_five_bytes() -> None:
    largest = 2**31 - 1
    assert _varint(largest) == b"\xff\xff\xff\xff\x07"
    assert _read(_varint(largest), _varint(5)) == ([largest, 5], [5, 1])


@pytest.mark.parametrize(
    "encoded",
    [_varint(2**31), b"\x80\x80\x80\x80\x80\x01", b"\xff" * 9 + b"\x01"],
    ids=["2^31", "six bytes", "ten bytes"],
)
def test_lengths_the_runtime_refuses_leave_the_walk(encoded: bytes) -> None:
    with pytest.raises(NotCanonicalError):
        _read(_varint(1), encoded)


@given(st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=20))
def test_any_lengths_read_back(values: list[int]) -> None:
    assert _read(*map(_varint, values)) == (values, [len(_varint(v)) for v in values])


def _refuse(raw: bytes) -> dict[str, Any]:
    raise AssertionError("the batch left the vectorised walk")


@pytest.mark.parametrize("size", [2**14 - 1, 2**14, 47_000, 2**21])
def test_records_with_long_values_are_read_by_the_walk(size: int) -> None:
    image = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    records = [
        wire.example(
            wire.entry("image", wire.bytes_feature(image)), wire.entry("n", wire.int64_feature(k))
        )
        for k in range(3)
    ]
    columns = decode_columns_pure(records, _refuse)
    assert columns["image"].values == [image] * 3
    assert columns["n"].values.tolist() == [0, 1, 2]
