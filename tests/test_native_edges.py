"""Edge cases where a compiled kernel and its pure twin must still agree (specs/native.md):
caps and sizes at the ends of their ranges, and arguments of the wrong item type."""

from __future__ import annotations

import importlib
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import crc32c as crc32c_package
import numpy as np
import pytest

from readplan.records.tbl import _gather
from readplan.records.tfrecord import _scan

core = importlib.import_module("readplan.records._core")


def frame(payload: bytes) -> bytes:
    """A TFRecord frame built from the format's definition, not by readplan."""

    def masked(data: bytes) -> int:
        crc = crc32c_package.crc32c(data)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked(length)) + payload + struct.pack("<I", masked(payload))


def outcome(kernel: object, *args: object) -> tuple[str, object]:
    try:
        return "value", kernel(*args)  # type: ignore[operator]
    except (ValueError, TypeError) as error:
        return type(error).__name__, str(error)


DATA = frame(b"hello") + frame(b"") + frame(b"world!")


@pytest.mark.parametrize("cap", [2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**64 + 1, 2**100])
def test_a_cap_past_the_uint64_range_caps_nothing_on_both_cores(cap: int) -> None:
    expected = ("value", (3, len(DATA), _scan.INCOMPLETE))
    for kernel in (core.scan_frames, _scan.scan_frames_pure):
        starts, lengths = _scan.scratch(len(DATA))
        assert outcome(kernel, DATA, 0, -1, cap, True, starts, lengths) == expected
    for kernel in (core.scan_records, _scan.scan_records_pure):
        assert outcome(kernel, DATA, 0, -1, cap, True) == (
            "value",
            ([b"hello", b"", b"world!"], len(DATA), _scan.INCOMPLETE),
        )


@pytest.mark.parametrize("cap", [-1, -(2**64), -(2**70)])
def test_a_negative_cap_is_refused_alike(cap: int) -> None:
    starts, lengths = _scan.scratch(len(DATA))
    frames = [
        outcome(kernel, DATA, 0, -1, cap, True, starts, lengths)
        for kernel in (core.scan_frames, _scan.scan_frames_pure)
    ]
    records = [
        outcome(kernel, DATA, 0, -1, cap, True)
        for kernel in (core.scan_records, _scan.scan_records_pure)
    ]
    assert (
        frames[0] == frames[1] == ("ValueError", f"scan_frames: max_length must be >= 0, got {cap}")
    )
    assert records[0] == records[1]
    assert records[0] == ("ValueError", f"scan_records: max_length must be >= 0, got {cap}")


def test_scan_records_names_itself_for_a_negative_offset_on_both_cores() -> None:
    found = [
        outcome(k, DATA, -1, -1, 100, True) for k in (core.scan_records, _scan.scan_records_pure)
    ]
    assert found[0] == found[1] == ("ValueError", "scan_records: off must be >= 0, got -1")


@pytest.mark.parametrize("off", [0, 21, 37, len(DATA), len(DATA) + 5])
@pytest.mark.parametrize("limit", [-1, 0, 1, 2])
@pytest.mark.parametrize("cap", [0, 5, 6])
def test_zero_length_frames_offsets_at_the_end_and_limit_zero(
    off: int, limit: int, cap: int
) -> None:
    starts, lengths = _scan.scratch(len(DATA))
    starts2, lengths2 = _scan.scratch(len(DATA))
    a = outcome(core.scan_frames, DATA, off, limit, cap, True, starts, lengths)
    b = outcome(_scan.scan_frames_pure, DATA, off, limit, cap, True, starts2, lengths2)
    assert a == b
    assert outcome(core.scan_records, DATA, off, limit, cap, True) == outcome(
        _scan.scan_records_pure, DATA, off, limit, cap, True
    )


def test_pack_refuses_spans_whose_total_passes_the_index_range(tmp_path: Path) -> None:
    # 2**20 spans of 2**43 bytes each of a sparse mapping: their sum is 2**63, which an
    # index-sized total wraps to a negative number that "fits" any buffer.  In a child
    # process, since the old kernel then copies far past the end of `values`.
    script = textwrap.dedent(
        f"""
        import mmap, numpy as np
        from readplan.records.tfrecord import _scan
        import readplan.records._core as core
        with open({str(tmp_path / "sparse")!r}, "w+b") as f:
            f.truncate(1 << 43)
            data = mmap.mmap(f.fileno(), 1 << 43, access=mmap.ACCESS_READ)
            starts = np.zeros(1 << 20, np.int64)
            lengths = np.full(1 << 20, 1 << 43, np.int64)
            for kernel in (core.pack, _scan.pack_pure):
                try:
                    kernel(data, starts, lengths, bytearray(16), 0)
                except ValueError as error:
                    assert "do not fit a buffer of 16" in str(error), error
                else:
                    raise AssertionError("packed 2**63 bytes into 16")
            data.close()
        print("refused")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "refused"), done.stderr


@pytest.mark.parametrize("kind", [1, 2])
@pytest.mark.parametrize("count", [0, 2])
def test_gather_images_refuses_an_output_of_another_item_size_alike(kind: int, count: int) -> None:
    images = np.arange(2 * 2 * 3 * 3, dtype=np.uint8).reshape(2, 2, 3, 3)
    rows = np.arange(count, dtype=np.int64)
    item = (1, 4, 2)[kind]
    out = np.zeros(count * 2 * 3 * 3 * item, dtype=np.uint8)  # the right bytes, items of 1
    args = (rows, None, (1.0, 2.0, 3.0), (0.5, 0.5, 0.5), out, kind, True)
    native = outcome(core.gather_images, images, 2, 2, 3, *args)
    pure = outcome(_gather.gather_images_pure, images, *args)
    assert native == pure
    assert native[0] == "ValueError"
    assert not out.any()


def test_gather_images_refuses_images_that_are_not_uint8_alike() -> None:
    images = np.zeros((1, 2, 2, 3), dtype=np.int8)
    out = np.zeros(12, dtype=np.uint8)
    args = (images, np.zeros(1, np.int64), None, (1.0,) * 3, (0.0,) * 3, out, 0, True)
    assert outcome(_gather.gather_images, *args) == outcome(_gather.gather_images_pure, *args)
    assert outcome(_gather.gather_images, *args)[0] == "ValueError"


RACE = """
import sys, threading
import numpy as np
import readplan.records._core as core

def racing(array, index, wild, call, rounds=40):
    # Another thread writes `wild` into the caller's array while the kernel runs without the
    # GIL: whatever it reads, the kernel must neither read nor write outside its buffers.
    stop = False
    def writer():
        while not stop:
            array[index] = wild
            array[index] = 0
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(rounds):
            try:
                call()
            except ValueError:
                pass
    finally:
        stop = True
        thread.join()
"""


def run_race(body: str) -> None:
    script = RACE + textwrap.dedent(body) + '\nprint("survived")\n'
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "survived"), done.stderr[-2000:]


def test_gather_images_reads_the_rows_it_checked_while_another_thread_writes_them() -> None:
    run_race(
        """
        n = 1_000_000
        images = np.zeros((1, 1, 1, 3), dtype=np.uint8)
        rows = np.zeros(n, dtype=np.int64)
        out = np.empty(n * 3, dtype=np.float32)
        args = (images, 1, 1, 1, rows, None, (1.0,) * 3, (0.0,) * 3, out, 1, True)
        racing(rows, n - 1, 1 << 40, lambda: core.gather_images(*args))
        """
    )


def test_pack_copies_the_spans_it_checked_while_another_thread_writes_them() -> None:
    run_race(
        """
        n = 1_000_000
        starts = np.zeros(n, dtype=np.int64)
        lengths = np.ones(n, dtype=np.int64)
        values = bytearray(n)
        racing(lengths, n - 1, 1 << 40, lambda: core.pack(bytes(16), starts, lengths, values, 0))
        """
    )


def test_cut_cuts_the_spans_it_checked_while_another_thread_copies_over_them() -> None:
    """cut holds the GIL, but a numpy copy in another thread runs without it: the spans a
    cut checked must be the spans it cuts (it read them again, a read far outside the data)."""
    run_race(
        """
        n = 1 << 20
        starts, lengths = np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)
        good, wild = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        wild[-1] = 1 << 44
        stop = False
        def writer():
            while not stop:
                np.copyto(starts, wild)  # without the GIL
                np.copyto(starts, good)
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            for _ in range(60):
                try:
                    assert core.cut(bytes(16), starts, lengths) == [bytes(1)] * n
                except ValueError:
                    pass
        finally:
            stop = True
            thread.join()
        """
    )


def test_pack_into_the_buffer_it_packs_from_moves_the_bytes_as_its_twin() -> None:
    """values may be the data itself: the spans are moved, not copied as if apart (a
    memcpy over overlapping bytes, which the sanitized build reports)."""
    starts = np.array([8, 0, 30], dtype=np.int64)
    lengths = np.array([20, 12, 20], dtype=np.int64)
    expected, at = bytearray(range(64)), 4
    for start, length in zip(starts.tolist(), lengths.tolist()):
        expected[at : at + length] = bytes(expected[start : start + length])
        at += length
    for kernel in (core.pack, _scan.pack_pure):
        data = bytearray(range(64))
        assert kernel(data, starts, lengths, data, 4) == 4 + 52
        assert data == expected


def test_example_fill_writes_where_the_plan_it_checked_says_while_another_thread_writes_it() -> (
    None
):
    run_race(
        """
        def example(key, values):  # Example{features{feature{key: {int64_list{value}}}}}
            packed = bytes([0x0A, len(values)]) + bytes(values)
            feature = bytes([0x1A, len(packed)]) + packed
            entry = bytes([0x0A, len(key)]) + key + bytes([0x12, len(feature)]) + feature
            features = bytes([0x0A, len(entry)]) + entry
            return bytes([0x0A, len(features)]) + features
        n = 300_000
        records = [example(b"b", [1, 2])] * n + [example(b"a", [3])]
        plan = np.array([[3, 0, 2 * n], [3, 2 * n, 1]], dtype=np.int64)
        ints = np.empty(2 * n + 1, dtype=np.int64)
        words = np.empty(0, dtype=np.uint32)
        spans = np.empty(0, dtype=np.int64)
        splits = np.zeros((2, n + 2), dtype=np.int64)
        present = np.zeros((2, n + 1), dtype=np.bool_)
        call = lambda: core.example_fill(
            records, None, plan, ints, words, spans, spans, splits, present
        )
        assert call() == (0, -1)
        racing(plan.reshape(-1), 4, 1 << 40, call, rounds=20)
        """
    )


@pytest.mark.parametrize("value", [-1, 2**32, 2**64, 2**64 + 5, 2**100])
def test_crc32c_refuses_a_value_outside_uint32_rather_than_wrap_it(value: int) -> None:
    for kernel in (core.crc32c, core.crc32c_table):
        with pytest.raises(ValueError, match=f"value must be a uint32, got {value}"):
            kernel(b"abc", value)


def test_crc32c_continues_from_any_uint32_as_the_reference_does() -> None:
    for value in (0, 1, 2**31, 2**32 - 1, np.uint32(7)):
        expected = crc32c_package.crc32c(b"abc", int(value))
        assert core.crc32c(b"abc", value) == core.crc32c_table(b"abc", value) == expected
