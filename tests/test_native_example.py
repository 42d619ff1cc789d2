"""The compiled Example parse kernel against the pure path and the protobuf runtime
(``specs/native.md``, "Example parse"; ``specs/example.md`` §5).

Every batch is decoded by both paths (the pure vectorised walk and the compiled kernel) and by
the runtime one record at a time, which defines the result: the columns must be equal bit for
bit, or the error the same (type, message, ``.key``, ``.index``). The compiled module is
imported directly, so both paths are compared whichever one the seam chose for the rest of
the suite (``READPLAN_PURE=1`` runs the suite on the pure path).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan.errors import ExampleError
from readplan.example import decode, encode
from readplan.records import native
from readplan.records.example import _kernel
from readplan.records.example._columns import Column, decode_columns_pure, one_by_one
from readplan.records.example._pb import Example
from readplan.records.tfrecord import PackedRecords
from tests import example_wire as wire
from tests.native_wire import wire_batches
from tests.strategies import any_batches, canonical_batches, unusual_records

Decoder = Callable[[Sequence[Any], Callable[[bytes], Any]], dict[str, Column]]
core = importlib.import_module("readplan.records._core")
PATHS: list[Decoder] = [decode_columns_pure, _kernel.decode_columns_native]


@pytest.fixture(autouse=True, scope="module")
def _compiled_kernel_reachable() -> Iterator[None]:
    """decode_columns_native calls the compiled core even where the seam chose the pure path
    (what the rest of the suite uses is bound at import and does not change)."""
    chosen = _kernel.CORE
    _kernel.CORE = core
    yield
    _kernel.CORE = chosen


def _outcome(path: Decoder, records: Sequence[Any]) -> Any:
    """The columns as plain values (bits for floats), or the error's type, text and fields."""
    try:
        columns = path(records, decode)
    except ExampleError as err:
        return ("error", type(err), str(err), err.key, err.index)
    return {
        name: (
            column.kind,
            column.values if isinstance(column.values, list) else column.values.tobytes(),
            None if isinstance(column.values, list) else column.values.dtype,
            column.row_splits.tolist(),
            column.present.tolist(),
        )
        for name, column in columns.items()
    } | {"": list(columns)}


def _assert_paths_agree(records: Sequence[Any]) -> None:
    expected = _outcome(one_by_one, records)
    for path in PATHS:
        assert _outcome(path, records) == expected, path.__name__


def test_the_seam_picks_the_kernel_exactly_when_the_core_is_loaded() -> None:
    wanted = _kernel.decode_columns_native if native.NATIVE else decode_columns_pure
    assert _kernel.decode_columns is wanted
    assert native.NATIVE is (os.environ.get(native.PURE_VARIABLE, "") in ("", "0"))


def test_readplan_pure_forces_the_pure_path() -> None:
    code = (
        "from readplan.records.example import _kernel as k; from readplan.records import native;"
        "print(native.NATIVE, k.decode_columns is k.decode_columns_pure)"
    )
    env = {**os.environ, native.PURE_VARIABLE: "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True"]


@given(canonical_batches())
def test_canonical_batches(records: list[bytes]) -> None:
    _assert_paths_agree(records)


@given(any_batches())
def test_batches_with_unusual_and_random_records(records: list[bytes]) -> None:
    _assert_paths_agree(records)


@settings(max_examples=300)
@given(wire_batches())
@example([wire.example(wire.entry("x", wire.int64_feature(1, 2, packed=False)))])
@example([wire.len_field(1, wire.entry("a", wire.int64_feature(1))) * 2])
@example([wire.example(wire.entry("a", wire.int64_feature(1)), wire.entry("a", b""))])
def test_every_spelling_and_damage(records: list[bytes]) -> None:
    _assert_paths_agree(records)


def _refuse(raw: bytes) -> dict[str, Any]:
    raise AssertionError("the kernel left the batch to the runtime")


@given(wire_batches(odd=False))
@example([wire.example(wire.entry("x", wire.int64_feature(1, 2, packed=False)))])
def test_the_kernel_reads_every_spelling_writers_may_use(records: list[bytes]) -> None:
    # Unknown fields, Example.features twice, entries in either order or without key or value,
    # several lists per Feature, packed and unpacked values, over-long value varints.
    expected = _outcome(one_by_one, records)
    if isinstance(expected, tuple):  # names with two kinds: every record is read all the same
        assert core.example_scan(records, None)[0] == 0
    assert _outcome(lambda r, _: _kernel.decode_columns_native(r, _refuse), records) == expected


@pytest.mark.parametrize("unusual", unusual_records("x", [5, -1], [0x7F800001]))
def test_each_unusual_record_between_canonical_ones(unusual: bytes) -> None:
    canonical = encode({"c": np.array([7]), "x": np.array([1])})
    _assert_paths_agree([canonical, unusual, canonical])
    _assert_paths_agree([unusual])


EXTREMES = {
    "i": np.array([-(2**63), 2**63 - 1, -1, 0, 1, 300], dtype=np.int64),
    "f": np.array([0x7F800001, 0xFFBFFFFF, 0x80000000, 0x7F800000, 1], dtype=np.uint32).view(
        np.float32
    ),
    "e": [],
    "z": np.array([], dtype=np.int64),
}


def test_extreme_values_keep_every_bit() -> None:
    records = [encode(EXTREMES), b"", encode({}), encode({"i": np.array([5])})]
    _assert_paths_agree(records)


@pytest.mark.parametrize("size", [2**14 - 1, 2**14, 2**21 + 3])
def test_long_values_and_lists(size: int) -> None:
    image = bytes(range(256)) * (size // 256)
    ints = np.arange(size // 8, dtype=np.int64) * 1_000_003
    records = [encode({"image": [image, b"x"], "n": ints}), encode({"n": ints[:3]})]
    _assert_paths_agree(records)


def test_runtime_written_records_in_map_order() -> None:
    message: Any = Example()
    for name, k in [("b", 2), ("a", 1), ("image_name", 3), ("image", 4)]:
        message.features.feature[name].int64_list.value.extend(range(k))
    raw = message.SerializeToString()
    _assert_paths_agree([raw, raw[:0], raw])


def test_records_given_as_other_bytes_like_objects() -> None:
    raws = [encode({"a": [b"xy"], "n": np.array([k])}) for k in range(3)]
    for records in ([bytearray(r) for r in raws], [memoryview(r) for r in raws]):
        assert _outcome(_kernel.decode_columns, records) == _outcome(decode_columns_pure, raws)


def test_threads_decode_a_batch_as_one_thread_does() -> None:
    records = [encode({"a": [b"v" * k], "n": np.arange(k)}) for k in range(300)]
    alone = _outcome(_kernel.decode_columns, records)
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: _outcome(_kernel.decode_columns, records), range(4)))
    assert outcomes == [alone] * 4


@given(st.lists(st.binary(max_size=40), max_size=4))
def test_random_bytes(records: list[bytes]) -> None:
    _assert_paths_agree(records)


# --- the kernel's own checks of its arguments (compiled core only) ---------------------------


def _outputs(names: int, n: int, size: int = 4) -> list[Any]:
    return [
        np.zeros(size, dtype=np.int64),
        np.zeros(size, dtype=np.uint32),
        np.zeros(size, dtype=np.int64),
        np.zeros(size, dtype=np.int64),
        np.zeros(names * (n + 1), dtype=np.int64),
        np.zeros(names * n, dtype=np.bool_),
    ]


@pytest.mark.parametrize("bounds", [[0, 99], [-1, 3], [3, 2], []], ids=str)
def test_record_bounds_outside_the_buffer_are_refused(bounds: list[int]) -> None:
    data = encode({"a": np.array([1])})
    offsets = np.array(bounds, dtype=np.int64)
    with pytest.raises(ValueError, match="example_scan"):
        core.example_scan(data, offsets)


def test_a_plan_beyond_its_arrays_or_other_records_stop_the_fill() -> None:
    records = [encode({"a": np.array([1, 2, 3])})]
    status, _, (names, _) = core.example_scan(records, None)
    assert (status, names) == (0, [b"a"])
    beyond = np.array([3, 2, 3], dtype=np.int64)  # int64 values 2..5 of an array of 4
    assert core.example_fill(records, None, beyond, *_outputs(1, 1))[0] == 2
    fits = np.array([3, 0, 3], dtype=np.int64)
    assert core.example_fill(records, None, fits, *_outputs(1, 1))[0] == 0
    other = [encode({"b": np.array([1, 2, 3])}), encode({"a": np.array([1])})]
    assert core.example_fill(other, None, fits, *_outputs(1, 2))[0] == 2


def test_outputs_of_other_sizes_are_refused() -> None:
    records = [encode({"a": np.array([1])})]
    plan = np.array([3, 0, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="sizes"):
        core.example_fill(records, None, plan, *_outputs(1, 2))
    with pytest.raises(TypeError, match="floats"):
        core.example_fill(records, None, plan, *_outputs(1, 1)[:1], b"", *_outputs(1, 1)[2:])


def test_spans_outside_every_record_are_refused() -> None:
    records = [b"abc", b"", b"de"]
    starts, lengths = np.array([0, 3, 4]), np.array([3, 2, 1])
    assert core.example_bytes(records, None, starts, lengths) == [b"abc", b"de", b"e"]
    with pytest.raises(ValueError, match="span 0"):
        core.example_bytes(records, None, np.array([2]), np.array([2]))
    with pytest.raises(ValueError, match="span 0"):
        core.example_bytes(records, None, np.array([5]), np.array([1]))


def test_packed_batches_are_read_in_place() -> None:
    raws = [encode({"a": [b"x" * k], "n": np.arange(k)}) for k in range(5)]
    packed = PackedRecords(
        np.frombuffer(b"".join(raws), dtype=np.uint8),
        np.cumsum([0, *map(len, raws)]).astype(np.int64),
    )
    assert _outcome(_kernel.decode_columns, packed) == _outcome(decode_columns_pure, raws)
    damaged = PackedRecords(packed.values[:-1], np.minimum(packed.offsets, packed.values.size - 1))
    _assert_paths_agree(damaged)
