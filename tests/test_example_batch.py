"""Tests for readplan.example.decode_batch: columns equal the one-record decoder, and TF.

The one-record decoder is itself checked against TensorFlow-written records
(tests/test_example.py); here every batch, canonical or not, must give per record exactly what
it gives, and TF's own ``tf.io.parse_example`` columns (tests/data/vectors) must come out.
Records are written with the independent wire writer of tests/example_wire.py.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import ConfigError, ExampleError
from readplan.example import Column, decode, decode_batch, encode
from readplan.records.example._kernel import decode_columns
from tests import example_wire as wire
from tests.conftest import DATA
from tests.strategies import any_batches, canonical_batches, feature_names, unusual_records

TF_VECTORS = json.loads((DATA / "vectors" / "example_batch_tf.json").read_text(encoding="utf-8"))


def _refuse(raw: bytes) -> dict[str, Any]:
    raise AssertionError("a canonical batch must not need the one-record decoder")


def _assert_rows_match(columns: dict[str, Column], records: list[bytes]) -> None:
    """Record i of the columns is decode(records[i]), bit for bit, and nothing else is there."""
    assert list(columns) == sorted(columns)
    for column in columns.values():
        assert len(column) == len(records)
        assert column.present.any()
    for index, raw in enumerate(records):
        expected = decode(raw)
        held = {name for name, column in columns.items() if column.present[index]}
        assert held == set(expected), index
        for name, want in expected.items():
            got = columns[name].row(index)
            if isinstance(want, list):
                assert type(got) is list, (index, name)
                assert got == want, (index, name)
                assert all(type(value) is bytes for value in got)
            else:
                assert isinstance(got, np.ndarray), (index, name)
                assert got.dtype == want.dtype, (index, name)
                assert got.tobytes() == want.tobytes(), (index, name)
        for name in set(columns) - held:
            assert columns[name].row(index) is None


# --- TensorFlow's own columns -------------------------------------------------------------


def _tf_values(kind: str, listed: list[str]) -> list[Any]:
    if kind == "int64":
        return [int(value) for value in listed]
    if kind == "float32":
        return [int(value, 16) for value in listed]
    return [bytes.fromhex(value) for value in listed]


def _our_values(column: Column) -> list[Any]:
    if column.kind == "float32":
        assert isinstance(column.values, np.ndarray)
        return column.values.view(np.uint32).tolist()
    return list(column.values)


@pytest.mark.parametrize("batch", TF_VECTORS["batches"], ids=["same names", "names missing"])
def test_columns_equal_tensorflow_parse_example(batch: dict[str, Any]) -> None:
    records = [bytes.fromhex(record) for record in batch["records"]]
    columns = decode_columns(records, _refuse)  # TF-serialized, so canonical
    assert columns.keys() <= batch["columns"].keys()
    for name, want in batch["columns"].items():
        if name not in columns:
            assert not any(want["row_lengths"]), name
            continue
        column = columns[name]
        assert column.kind == want["kind"]
        assert np.diff(column.row_splits).tolist() == want["row_lengths"], name
        assert _our_values(column) == _tf_values(want["kind"], want["values"]), name


def test_tensorflow_written_records_decode_as_columns() -> None:
    records = [bytes.fromhex(record) for record in TF_VECTORS["batches"][1]["records"]]
    _assert_rows_match(decode_columns(records, _refuse), records)


# --- properties against the one-record decoder --------------------------------------------

SWAPPED = [  # the same name lengths at every position, but other names or another order
    wire.example(wire.entry("a", wire.int64_feature(1)), wire.entry("b", wire.bytes_feature(b"x"))),
    wire.example(
        wire.entry("b", wire.bytes_feature(b"y")), wire.entry("a", wire.int64_feature(2, 3))
    ),
    wire.example(wire.entry("c", wire.int64_feature(4)), wire.entry("a", wire.int64_feature())),
]


@given(canonical_batches())
@example(SWAPPED)
@example(SWAPPED[::-1])
def test_canonical_batches_are_read_without_the_runtime(records: list[bytes]) -> None:
    _assert_rows_match(decode_columns(records, _refuse), records)


@given(canonical_batches(same_layout=True))
def test_records_of_one_layout_are_read_without_the_runtime(records: list[bytes]) -> None:
    _assert_rows_match(decode_columns(records, _refuse), records)


@st.composite
def long_name_batches(draw: st.DrawFn) -> list[bytes]:
    """Records of one layout of long names (one bytes value each, all of one length, NULs
    included), where one record's name may differ from the others' in a single byte."""
    names = draw(st.lists(st.text("ab", max_size=20), min_size=1, max_size=4, unique=True))
    size = draw(st.integers(0, 9))
    rows = draw(
        st.lists(
            st.lists(
                st.binary(min_size=size, max_size=size), min_size=len(names), max_size=len(names)
            ),
            min_size=1,
            max_size=5,
        )
    )
    records = [
        wire.example(*(wire.entry(n, wire.bytes_feature(v)) for n, v in zip(names, row)))
        for row in rows
    ]
    changed = draw(st.integers(0, len(names) - 1))
    if names[changed] and draw(st.booleans()):
        name = names[changed]
        at = draw(st.integers(0, len(name) - 1))
        other = [*names]
        other[changed] = name[:at] + ("b" if name[at] == "a" else "a") + name[at + 1 :]
        record = draw(st.integers(0, len(rows) - 1))
        entries = (wire.entry(n, wire.bytes_feature(v)) for n, v in zip(other, rows[record]))
        records[record] = wire.example(*entries)
    return records


@given(long_name_batches())
def test_records_differing_in_one_byte_of_a_long_name_keep_their_names(
    records: list[bytes],
) -> None:
    _assert_like_one_by_one(records)


@given(
    st.lists(
        st.dictionaries(feature_names, st.sampled_from([np.int64(3), np.float32(0.5)])), max_size=4
    )
)
def test_encoded_records_are_read_without_the_runtime(dicts: list[dict[str, Any]]) -> None:
    # encode writes an empty list as an empty list message, the writer above as an empty packed
    # field; both are canonical.
    records = [
        encode(
            {name: np.array([value] * len(name), dtype=type(value)) for name, value in d.items()}
        )
        for d in dicts
    ]
    kinds = _kinds_by_name(records)
    if all(len(found) == 1 for found in kinds.values()):
        _assert_rows_match(decode_columns(records, _refuse), records)


def _first_refused(records: list[bytes]) -> int | None:
    for index, raw in enumerate(records):
        try:
            decode(raw)
        except ExampleError:
            return index
    return None


def _kinds_by_name(records: list[bytes]) -> dict[str, set[type]]:
    kinds: dict[str, set[type]] = {}
    for raw in records:
        for name, value in decode(raw).items():
            kind = type(value) if isinstance(value, list) else value.dtype.type
            kinds.setdefault(name, set()).add(kind)
    return kinds


@given(any_batches())
def test_any_batch_gives_what_one_record_at_a_time_gives(records: list[bytes]) -> None:
    _assert_like_one_by_one(records)


def _assert_like_one_by_one(records: list[bytes]) -> None:
    refused = _first_refused(records)
    if refused is not None:
        with pytest.raises(ExampleError) as caught:
            decode_batch(records)
        assert caught.value.index == refused
        assert f"record {refused} of the batch" in str(caught.value)
        return
    mixed = {name for name, kinds in _kinds_by_name(records).items() if len(kinds) > 1}
    if mixed:
        with pytest.raises(ExampleError, match="a column holds one kind") as caught:
            decode_batch(records)
        assert caught.value.key == min(mixed)
        return
    _assert_rows_match(decode_batch(records), records)


@pytest.mark.parametrize(
    "unusual", unusual_records("x", [5, -1], [0x7F800001]), ids=lambda raw: raw.hex()
)
def test_each_unusual_record_gives_what_the_runtime_gives(unusual: bytes) -> None:
    canonical = wire.example(
        wire.entry("c", wire.int64_feature(7))
    )  # no kind conflict with the unusual
    _assert_like_one_by_one([canonical, unusual, canonical])


def test_a_name_with_two_kinds_is_refused_naming_both_records() -> None:
    records = [encode({"x": [b"a"]}), encode({"y": 1}), encode({"x": 7})]
    with pytest.raises(ExampleError, match=r"bytes list in record 0 but a int64 list in record 2"):
        decode_batch(records)


def test_an_empty_batch_has_no_columns() -> None:
    assert decode_batch([]) == {}
    assert decode_batch([b"", b""]) == {}


# --- the Column value -----------------------------------------------------------------------


def test_column_rows_and_absence() -> None:
    column = decode_batch([encode({"a": [1, 2]}), b"", encode({"a": np.zeros(0, np.int64)})])["a"]
    assert column.kind == "int64"
    assert column.row_splits.tolist() == [0, 2, 2, 2]
    assert column.present.tolist() == [True, False, True]
    assert column.row(1) is None
    assert column.row(2).tolist() == []  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"kind": "int32"}, "kind"),
        ({"row_splits": np.array([0, 1], dtype=np.int32)}, "row_splits"),
        ({"row_splits": np.array([1, 2], dtype=np.int64)}, "row_splits"),
        ({"row_splits": np.array([0, 3], dtype=np.int64)}, "row_splits"),
        ({"present": np.array([1], dtype=np.int64)}, "present"),
        ({"present": np.array([True, False])}, "present"),
        ({"values": [b"a", b"b"]}, "values"),
        ({"values": np.array([1, 2], dtype=np.int32)}, "values"),
    ],
)
def test_column_refuses_inconsistent_fields(fields: dict[str, Any], field: str) -> None:
    valid: dict[str, Any] = {
        "kind": "int64",
        "values": np.array([1, 2], dtype=np.int64),
        "row_splits": np.array([0, 2], dtype=np.int64),
        "present": np.array([True]),
    }
    with pytest.raises(ConfigError) as caught:
        Column(**{**valid, **fields})
    assert caught.value.field == field
