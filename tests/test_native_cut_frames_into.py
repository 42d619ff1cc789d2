"""cut_frames_into against its twin on the inputs the existing properties never draw:
payloads at and past COPY_CHECKED (checked while copied), records of length 0, empty data,
data cut at every length, damage inside long payloads, and max_length past the uint64 range
or negative."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan.reading import spans
from tests.test_native_kernels import frame

core = importlib.import_module("readplan.records._core")
KERNELS = (core.cut_frames_into, spans.cut_frames_into_pure)


def outcome(kernel: Any, data: Any, begins: Any, ends: Any, headers: bool, cap: int) -> Any:
    out: list[Any] = ["kept"] * len(begins)
    try:
        placed = kernel(
            out, np.arange(len(begins), dtype=np.int64), data, begins, ends, headers, cap
        )
    except (ValueError, TypeError, OverflowError) as error:
        return type(error).__name__, str(error), out
    return placed, out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from([0, 1, 1023, 1024, 1025, 3000]), max_size=5),
    st.integers(0, 2**32),
    st.lists(st.integers(0, 2**20), max_size=3),
    st.booleans(),
    st.sampled_from([0, 1023, 1024, 3000, 2**31 - 1]),
)
def test_long_empty_truncated_and_damaged_frames(
    lengths: list[int], cut_seed: int, flips: list[int], headers: bool, cap: int
) -> None:
    payloads = [bytes([k % 251]) * n for k, n in enumerate(lengths)]
    data = bytearray(b"".join(map(frame, payloads)))
    sizes = np.array([16 + n for n in lengths], dtype=np.int64)
    ends = np.cumsum(sizes)
    begins = ends - sizes
    for at in flips:
        if data:
            data[at % len(data)] ^= 1 << (at % 8)
    cut = bytes(data[: cut_seed % (len(data) + 1)])  # truncated at any byte
    got = [outcome(kernel, cut, begins, ends, headers, cap) for kernel in KERNELS]
    assert got[0] == got[1]


def test_max_length_outside_the_uint64_range_is_the_twins() -> None:
    data = frame(b"x" * 2000)
    begins, ends = np.array([0], dtype=np.int64), np.array([len(data)], dtype=np.int64)
    for cap in (-1, 2**64, 2**64 + 5):
        got = [outcome(kernel, data, begins, ends, True, cap) for kernel in KERNELS]
        assert got[0] == got[1], cap
