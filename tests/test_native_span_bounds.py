"""span_bounds against its twin: where a read's frames begin and end and where its spans split,
on random bounds (past the int64 range when differences are taken, so that both wrap alike),
indices in and out of the known frames, in any order, and every max_gap and max_skip."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan.reading import spans

core = importlib.import_module("readplan.records._core")


def compiled(bounds: Any, indices: Any, max_gap: int, max_skip: int) -> Any:
    size = len(indices)
    begins, ends, gaps = (np.full(size, -7, np.int64) for _ in range(3))
    found = core.span_bounds(bounds, indices, max_gap, max_skip, begins, ends, gaps)
    return begins, ends, gaps[:found]


def outcome(kernel: Any, bounds: Any, indices: Any, max_gap: int, max_skip: int) -> Any:
    try:
        return tuple(a.tolist() for a in kernel(bounds, indices, max_gap, max_skip))
    except ValueError as error:
        return str(error)


int64s = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 2**20), int64s), max_size=12),
    st.lists(st.integers(-3, 14), max_size=12),
    st.sampled_from([0, 1, 4, 16, 2**62]),
    st.sampled_from([-1, 0, 100, 16384, 2**62]),
)
def test_the_kernel_and_its_twin_agree(
    bounds: list[int], indices: list[int], max_gap: int, max_skip: int
) -> None:
    b = np.array(bounds, dtype=np.int64)
    i = np.array(indices, dtype=np.int64)
    got = outcome(compiled, b, i, max_gap, max_skip)
    assert got == outcome(spans.span_bounds_pure, b, i, max_gap, max_skip)
    assert got == outcome(spans.span_bounds, b, i, max_gap, max_skip)


def test_a_read_of_every_fourth_frame_splits_where_records_or_bytes_lie_far_apart() -> None:
    # Frames of 116 bytes, but frame 11 is 20,000 bytes long: frames 9 and 13 lie more than
    # 16 KiB apart, and frames 21 and 41 more than 16 records apart.
    sizes = np.full(60, 116, np.int64)
    sizes[11] = 20_000
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.array([1, 5, 9, 13, 17, 21, 41, 45], dtype=np.int64)
    for kernel in (compiled, spans.span_bounds_pure):
        begins, ends, gaps = kernel(bounds, indices, 16, 16384)
        assert begins.tolist() == [116 * k + (k > 11) * (20_000 - 116) for k in indices.tolist()]
        assert (ends - begins).tolist() == [116] * 8
        assert gaps.tolist() == [3, 6]
        assert kernel(bounds, indices, 16, -1)[2].tolist() == [6]


def test_an_index_past_the_known_frames_is_named_before_anything_is_written() -> None:
    bounds = np.arange(0, 500, 100, dtype=np.int64)  # four frames known
    indices = np.array([0, 2, 4], dtype=np.int64)
    with pytest.raises(ValueError, match=r"indices\[2\] = 4 is not one of the 4 frames known"):
        compiled(bounds, indices, 16, -1)
    begins = np.full(3, -7, np.int64)
    with pytest.raises(ValueError, match="is not one of the 4 frames"):
        core.span_bounds(bounds, indices, 16, -1, begins, begins.copy(), begins.copy())
    assert begins.tolist() == [-7, -7, -7]


def test_outputs_too_short_or_of_another_type_are_refused() -> None:
    bounds = np.arange(0, 500, 100, dtype=np.int64)
    indices = np.array([0, 1, 2], dtype=np.int64)
    short = np.empty(2, np.int64)
    with pytest.raises(ValueError, match="must hold 3 entries each, the smallest holds 2"):
        core.span_bounds(bounds, indices, 16, -1, np.empty(3, np.int64), short, short)
    with pytest.raises((TypeError, ValueError), match="span_bounds: indices"):
        core.span_bounds(bounds, indices.astype(np.int32), 16, -1, short, short, short)


def test_long_reads_give_the_twins_result_with_the_gil_released() -> None:
    rng = np.random.default_rng(5)
    bounds = np.concatenate([[0], np.cumsum(rng.integers(16, 40_000, 200_001))])
    indices = np.sort(rng.choice(200_000, 50_000, replace=False)).astype(np.int64)
    got = compiled(bounds, indices, 16, 16384)
    want = spans.span_bounds_pure(bounds, indices, 16, 16384)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
