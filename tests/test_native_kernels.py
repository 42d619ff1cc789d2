"""The compiled kernels against their pure-Python twins (specs/native.md): the same results and
the same errors on random, edge-case and damaged inputs.

The compiled module is imported directly, so these tests compare both cores whichever one the
seam chose for the rest of the suite (``READPLAN_PURE=1`` runs the suite on the pure path).
"""

from __future__ import annotations

import importlib
import os
import struct
import subprocess
import sys
from pathlib import Path

import crc32c as crc32c_package
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan.reading.items import ItemPure, new_items_pure
from readplan.records import native
from readplan.records.tfrecord import _scan
from tests.item_rows import row

core = importlib.import_module("readplan.records._core")

MAX_U64 = 2**64 - 1


def masked(data: bytes) -> int:
    crc = crc32c_package.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """A TFRecord frame built from the format's definition, not by readplan."""
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked(length)) + payload + struct.pack("<I", masked(payload))


long_payloads = st.builds(
    lambda pattern, size: (pattern * (size // len(pattern) + 1))[:size],
    st.binary(min_size=1, max_size=16),
    st.integers(4000, 9000),
)
payloads = st.lists(st.binary(max_size=300) | long_payloads, max_size=12)


@st.composite
def damaged_buffers(draw: st.DrawFn) -> bytes:
    """Frames, then some of: bit flips anywhere, a cut, garbage appended, a forged length."""
    data = bytearray(b"".join(frame(p) for p in draw(payloads)))
    for _ in range(draw(st.integers(0, 3))):
        if data:
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= 1 << draw(st.integers(0, 7))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    data += draw(st.binary(max_size=40))
    if draw(st.booleans()):
        forged = draw(st.sampled_from([0, 1, 2**31 - 1, 2**32, 2**63, MAX_U64]))
        head = struct.pack("<Q", forged)
        data += head + struct.pack("<I", masked(head)) + draw(st.binary(max_size=20))
    return bytes(data)


def both_cores(name: str, *args: object) -> object:
    """The result of the compiled kernel and of its twin, which must be equal, errors included."""
    outcomes = []
    for kernel in (getattr(core, name), getattr(_scan, f"{name}_pure")):
        try:
            outcomes.append(("value", kernel(*args)))
        except (ValueError, TypeError) as error:
            outcomes.append((type(error).__name__, str(error)))
    assert outcomes[0] == outcomes[1]
    return outcomes[0][1]


# ------------------------------------------------------------------------------------ CRC32C
@given(st.binary(max_size=70_000), st.integers(0, 2**32 - 1))
@example(b"", 0)
@example(bytes(24 * 1024 + 7), 0)
@example(b"\xff" * (3 * 8192 + 3 * 256 + 13), 0xFFFFFFFF)
# Folding's edges: its first size, whole and partial 256-byte blocks, a tail of every path.
@example(bytes(range(256)) * 2, 0x12345678)
@example(bytes(range(256)) * 2 + b"\x01" * 255, 1)
@example(b"\x80" * 511, 0xFFFFFFFF)
@example(bytes(range(251)) * 37, 7)
def test_crc32c_equals_the_reference_package_on_every_path(data: bytes, value: int) -> None:
    expected = crc32c_package.crc32c(data, value)
    assert core.crc32c(data, value) == expected
    assert core.crc32c_table(data, value) == expected


@pytest.mark.parametrize("offset", range(9))
def test_crc32c_of_unaligned_views(offset: int) -> None:
    data = bytes(range(256)) * 200
    view = memoryview(data)[offset:]
    assert core.crc32c(view) == crc32c_package.crc32c(bytes(view))


def test_crc32c_continues_a_crc() -> None:
    data = os.urandom(100_000)
    assert core.crc32c(data[40_000:], core.crc32c(data[:40_000])) == crc32c_package.crc32c(data)


def test_crc32c_refuses_what_is_not_bytes_and_values_over_uint32() -> None:
    with pytest.raises(TypeError, match="bytes-like"):
        core.crc32c("text")
    with pytest.raises((ValueError, OverflowError)):
        core.crc32c(b"", 2**32)


def test_the_engine_is_the_instruction_where_the_processor_has_one() -> None:
    cpuinfo = Path("/proc/cpuinfo")
    flags = cpuinfo.read_text() if cpuinfo.exists() else ""
    if " sse4_2" in flags:
        folds = all(f" {flag}" in flags for flag in ("avx512f", "avx512vl", "vpclmulqdq"))
        engine: str = core.CRC32C_ENGINE
        assert engine == ("sse4.2+vpclmulqdq" if folds else "sse4.2")
    else:
        assert core.CRC32C_ENGINE in ("armv8-crc", "table")


# ------------------------------------------------------------------------------- frame scan
def scan(data: bytes, off: int, limit: int, max_length: int, verify: bool) -> list[object]:
    results = []
    for kernel in (core.scan_frames, _scan.scan_frames_pure):
        starts, lengths = _scan.scratch(len(data))
        count, end, stop = kernel(data, off, limit, max_length, verify, starts, lengths)
        results.append((count, end, stop, starts[:count].tolist(), lengths[:count].tolist()))
    assert results[0] == results[1]
    return list(results[0])


@settings(max_examples=400)
@given(
    damaged_buffers(),
    st.integers(0, 64) | st.just(0),
    st.sampled_from([-1, 0, 1, 3, 50]),
    st.sampled_from([2**31 - 1, 0, 100, 5000, MAX_U64]),
    st.booleans(),
)
def test_scan_frames_agrees_with_its_twin_on_damaged_buffers(
    data: bytes, off: int, limit: int, max_length: int, verify: bool
) -> None:
    count, end, stop, starts, lengths = scan(data, off, limit, max_length, verify)
    assert count == len(starts)
    assert 0 <= stop <= 4
    if count:
        assert starts[0] == off
        assert end == starts[-1] + lengths[-1] + 16


@given(payloads)
def test_scan_frames_takes_every_sound_frame(records: list[bytes]) -> None:
    data = b"".join(frame(p) for p in records)
    count, end, stop, starts, lengths = scan(data, 0, -1, 2**31 - 1, True)
    assert (count, end, stop) == (len(records), len(data), _scan.INCOMPLETE)
    assert [data[s + 12 : s + 12 + n] for s, n in zip(starts, lengths)] == records


@pytest.mark.parametrize(
    ("damage", "stop"),
    [
        (lambda d: d[:8] + bytes([d[8] ^ 1]) + d[9:], _scan.STOP_LENGTH_CRC),
        (lambda d: d[:-1] + bytes([d[-1] ^ 0x80]), _scan.STOP_DATA_CRC),
        (lambda d: d[:-1], _scan.INCOMPLETE),
    ],
)
def test_scan_frames_says_why_it_stopped(damage: object, stop: int) -> None:
    good = frame(b"first")
    data = good + damage(frame(b"second"))  # type: ignore[operator]
    assert scan(data, 0, -1, 2**31 - 1, True)[:3] == [1, len(good), stop]


def test_scan_frames_stops_before_a_frame_over_the_cap() -> None:
    data = frame(b"x" * 10) + frame(b"y" * 1000)
    assert scan(data, 0, -1, 999, True)[:3] == [1, 26, _scan.STOP_TOO_LONG]


def test_scan_frames_is_bounded_by_its_output_arrays() -> None:
    data = b"".join(frame(b"r") for _ in range(10))
    starts = np.empty(4, dtype=np.int64)
    lengths = np.empty(4, dtype=np.int64)
    for kernel in (core.scan_frames, _scan.scan_frames_pure):
        assert kernel(data, 0, -1, 100, True, starts, lengths) == (4, 68, _scan.STOP_LIMIT)


def test_scan_frames_refuses_arrays_of_another_type_and_a_negative_offset() -> None:
    wrong = np.empty(4, dtype=np.float64)
    right = np.empty(4, dtype=np.int64)
    with pytest.raises(TypeError, match="int64"):
        core.scan_frames(b"", 0, -1, 1, True, wrong, right)
    with pytest.raises(TypeError, match="writable"):
        core.scan_frames(b"", 0, -1, 1, True, right, np.frombuffer(bytes(32), dtype=np.int64))
    for kernel in (core.scan_frames, _scan.scan_frames_pure):
        with pytest.raises(ValueError, match="off must be >= 0"):
            kernel(b"", -1, -1, 1, True, right, right)


@settings(max_examples=200)
@given(damaged_buffers(), st.sampled_from([-1, 0, 2, 7]), st.booleans())
def test_scan_records_is_scan_frames_then_cut(data: bytes, limit: int, verify: bool) -> None:
    records, end, stop = both_cores("scan_records", data, 0, limit, 2**31 - 1, verify)  # type: ignore[misc]
    count, expected_end, expected_stop, starts, lengths = scan(data, 0, limit, 2**31 - 1, verify)
    assert (len(records), end, stop) == (count, expected_end, expected_stop)
    assert records == [data[s + 12 : s + 12 + n] for s, n in zip(starts, lengths)]


def scan_pack_both(
    data: bytes, off: int, limit: int, verify: bool, slots: int, k: int, base: int
) -> tuple[object, list[int]]:
    """scan_pack by both cores on equal offsets arrays: equal results, errors and arrays."""
    outcomes = []
    for kernel in (core.scan_pack, _scan.scan_pack_pure):
        offsets = np.full(slots, -7, dtype=np.int64)
        if 0 <= k < slots:
            offsets[k] = base
        try:
            outcome: object = ("value", kernel(data, off, limit, 2**31 - 1, verify, offsets, k))
        except ValueError as error:
            outcome = ("ValueError", str(error))
        outcomes.append((outcome, offsets.tolist()))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


@settings(max_examples=300)
@given(
    damaged_buffers(),
    st.integers(0, 40),
    st.sampled_from([-1, 0, 1, 3, 50]),
    st.booleans(),
    st.integers(1, 12),
    st.integers(0, 11),
)
def test_scan_pack_is_scan_frames_then_pack(
    data: bytes, off: int, limit: int, verify: bool, slots: int, k: int
) -> None:
    (kind, result), offsets = scan_pack_both(data, off, limit, verify, slots, k, 5)
    if k >= slots:
        assert kind == "ValueError"
        assert result == f"scan_pack: k must be in [0, {slots}), got {k}"
        return
    values, count, end, stop = result  # type: ignore[misc]
    room = slots - 1 - k
    most = room if limit < 0 else min(limit, room)
    expected_count, expected_end, expected_stop, starts, lengths = scan(
        data, off, most, 2**31 - 1, verify
    )
    assert (count, end, stop) == (expected_count, expected_end, expected_stop)
    payloads = [data[s + 12 : s + 12 + n] for s, n in zip(starts, lengths)]
    assert values == (b"".join(payloads) if payloads else None)
    running = [5]
    for payload in payloads:
        running.append(running[-1] + len(payload))
    assert offsets[k : k + 1 + count] == running
    assert offsets[k + 1 + count :] == [-7] * (slots - k - 1 - count)


def test_scan_pack_refuses_a_negative_offset_and_offsets_that_would_wrap() -> None:
    data = frame(b"abc")
    assert scan_pack_both(data, -1, -1, True, 3, 0, 0)[0] == (
        "ValueError",
        "scan_pack: off must be >= 0, got -1",
    )
    assert scan_pack_both(data, 0, -1, True, 3, 1, -2)[0] == (
        "ValueError",
        "scan_pack: offsets[1] must be >= 0, got -2",
    )
    assert scan_pack_both(data, 0, -1, True, 3, 0, 2**63 - 2)[0] == (
        "ValueError",
        "scan_pack: offsets[0] + 3 bytes pass 2**63 - 1",
    )
    with pytest.raises(TypeError, match="writable"):
        core.scan_pack(data, 0, -1, 1, True, np.frombuffer(bytes(32), dtype=np.int64), 0)


# ------------------------------------------------------------------------------ cut and pack
spans = st.lists(st.tuples(st.integers(-3, 70), st.integers(-3, 70)), max_size=8)


@given(st.binary(max_size=64), spans)
def test_cut_agrees_with_its_twin_and_checks_every_span(
    data: bytes, pairs: list[tuple[int, int]]
) -> None:
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    lengths = np.array([n for _, n in pairs], dtype=np.int64)
    result = both_cores("cut", data, starts, lengths)
    if isinstance(result, list):
        assert result == [data[s : s + n] for s, n in pairs]


@given(st.binary(max_size=64), spans, st.integers(-2, 80), st.integers(0, 100))
def test_pack_agrees_with_its_twin(
    data: bytes, pairs: list[tuple[int, int]], at: int, room: int
) -> None:
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    lengths = np.array([n for _, n in pairs], dtype=np.int64)
    outputs = [np.zeros(room, dtype=np.uint8), np.zeros(room, dtype=np.uint8)]
    results = []
    for kernel, out in zip((core.pack, _scan.pack_pure), outputs):
        try:
            results.append(kernel(data, starts, lengths, out, at))
        except ValueError as error:
            results.append(str(error))
    assert results[0] == results[1]
    assert (outputs[0] == outputs[1]).all()
    if isinstance(results[0], int):
        assert outputs[0][at : results[0]].tobytes() == b"".join(data[s : s + n] for s, n in pairs)


# ------------------------------------------------------------------------------------ the seam
def test_the_seam_uses_the_compiled_core_unless_told_not_to() -> None:
    forced = os.environ.get(native.PURE_VARIABLE, "") not in ("", "0")
    assert native.NATIVE is not forced
    assert (_scan.scan_frames is core.scan_frames) is native.NATIVE


def test_readplan_pure_selects_every_pure_twin_in_a_new_process() -> None:
    program = (
        "import readplan; from readplan.records import _crc;"
        "from readplan.records.tfrecord import _scan;"
        "assert not readplan.NATIVE;"
        "assert _scan.scan_frames is _scan.scan_frames_pure and _scan.cut is _scan.cut_pure;"
        "assert _crc.crc32c is _crc.crc32c_pure; print('pure')"
    )
    env = {**os.environ, native.PURE_VARIABLE: "1"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "pure", done.stderr


# ------------------------------------------------------------------------------------ items
@given(st.lists(st.binary(max_size=4), max_size=20), st.integers(0, 2**40), st.data())
def test_items_are_made_alike_by_both_cores(
    records: list[bytes], epoch: int, data: st.DataObject
) -> None:
    n = len(records)
    column = st.lists(st.integers(0, 2**62), min_size=n, max_size=n)
    positions, files, indices = (np.array(data.draw(column), dtype=np.int64) for _ in range(3))
    prefixes = [f"ds-train.tfrecord-{f:05d}-of-99999" for f in files.tolist()]
    made = core.make_items(core.Item, records, prefixes, epoch, positions, files, indices)
    twin = new_items_pure(records, prefixes, epoch, positions, files, indices)
    assert [row(item) for item in made] == [row(item) for item in twin]
    assert [row(item) for item in made] == [
        (r, epoch, p, f, i, name)
        for r, p, f, i, name in zip(
            records, positions.tolist(), files.tolist(), indices.tolist(), prefixes, strict=True
        )
    ]
    assert all(type(item) is core.Item for item in made)
    assert all(type(item) is ItemPure for item in twin)
    assert [item.tfds_id for item in made] == [
        f"{p}__{i}" for p, i in zip(prefixes, indices.tolist())
    ]


def test_items_refuse_columns_of_other_lengths() -> None:
    one, two = np.zeros(1, dtype=np.int64), np.zeros(2, dtype=np.int64)
    for kernel in (lambda *a: core.make_items(core.Item, *a), new_items_pure):
        with pytest.raises(ValueError, match="one entry per record"):
            kernel([b"a"], ["p"], 0, one, two, one)
