"""read_large_frames, compiled and pure (specs/native.md §3): consecutive large frames read
from a file, each's data into its own bytes with its CRC and the next header, alike on both
cores for sound, damaged and cut files, and for every limit, budget and bound."""

from __future__ import annotations

import importlib
import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readplan.records.tfrecord import _frame_read
from tests.test_native_edges import frame
from tests.test_native_kernels import masked

core = importlib.import_module("readplan.records._core")
SIZES = st.lists(st.integers(0, 3000), min_size=1, max_size=6)


def payload(i: int, n: int) -> bytes:
    return (bytes([i + 1]) * 7 + bytes(range(256)))[:n] * (n // 263 + 1)


@st.composite
def files(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """Frames of 0-3000 bytes, then damage: a flipped bit, a cut, a forged length or none."""
    records = [payload(i, n)[:n] for i, n in enumerate(draw(SIZES))]
    data = bytearray(b"".join(frame(r) for r in records))
    kind = draw(st.sampled_from(["none", "flip", "cut", "forge"]))
    if kind == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= 1 << draw(st.integers(0, 7))
    elif kind == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif kind == "forge":
        # A header whose length CRC verifies, declaring far more than the file holds.
        head = struct.pack("<Q", draw(st.sampled_from([2**40, 2**63, 2**64 - 1])))
        data += head + struct.pack("<I", masked(head)) + b"\0" * 8
    return bytes(data), records


def both(path: Path, data: bytes, *args: object) -> object:
    results = []
    for kernel in (core.read_large_frames, _frame_read.read_large_frames_pure):
        fd = os.open(path, os.O_RDONLY)
        try:
            results.append(("value", kernel(fd, data[:12], *args)))
        except (ValueError, OSError) as error:
            results.append((type(error).__name__, str(error)))
        finally:
            os.close(fd)
    assert results[0] == results[1]
    return results[0]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files(),
    st.sampled_from([0, 1, 100, 1000]),
    st.sampled_from([-1, 1, 2, 5]),
    st.sampled_from([1, 3000, 1 << 20]),
    st.sampled_from([2**31 - 1, 2000, 0, 2**64]),
    st.booleans(),
    st.integers(-20, 0),
)
def test_read_large_frames_agrees_with_its_twin(
    tmp_path: Path,
    made: tuple[bytes, list[bytes]],
    least: int,
    limit: int,
    budget: int,
    max_length: int,
    verify: bool,
    end_cut: int,
) -> None:
    data, records = made
    path = tmp_path / "frames"
    path.write_bytes(data)
    end = max(0, len(data) + end_cut)
    kind, result = both(path, data, 0, end, max_length, verify, limit, budget, least)  # type: ignore[misc]
    assert kind == "value"
    got, pos, tail = result
    # What is read is a prefix of what was written, each record as written (without verify,
    # as a flipped bit in it made it).
    assert [len(r) for r in got] == [len(r) for r in records[: len(got)]]
    if verify:
        assert got == records[: len(got)]
    assert pos == sum(len(r) + 16 for r in got)
    assert pos <= end
    if got:
        assert tail == data[pos - 4 : pos + 12][: 4 + max(0, min(12, end - pos))]
    if limit > 0:
        assert len(got) <= limit
    assert all(least <= len(r) <= max_length for r in got)


def test_read_large_frames_refuses_bounds_that_do_not_nest(tmp_path: Path) -> None:
    path = tmp_path / "frames"
    path.write_bytes(frame(b"x" * 40))
    data = path.read_bytes()
    message = "read_large_frames: need 0 <= pos <= end and least >= 0, got pos 5, end 4, least 0"
    assert both(path, data, 5, 4, 100, True, -1, 1000, 0) == ("ValueError", message)
    assert both(path, data, 0, 4, -1, True, -1, 1000, 0) == (
        "ValueError",
        "read_large_frames: max_length must be >= 0, got -1",
    )
    handle = os.open(path, os.O_RDONLY)
    os.close(handle)
    for kernel in (core.read_large_frames, _frame_read.read_large_frames_pure):
        with pytest.raises(OSError, match="Bad file descriptor"):
            kernel(handle, data[:12], 0, len(data), 100, True, -1, 1000, 0)
