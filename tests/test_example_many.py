"""Tests for readplan.example.decode_many and parse_many: per record exactly decode / parse.

The reference is the one-record decoder and parser (checked against TensorFlow-written records
in tests/test_example.py); records are written with the independent wire writer there.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import ConfigError, ExampleError
from readplan.example import FixedLen, VarLen, decode, decode_many, parse, parse_many
from tests.test_example import _bytes_feature, _entry, _example, _float_feature, _int64_feature
from tests.test_example_batch import any_batches, canonical_batches

KINDS = ("int64", "float32", "bytes")


def assert_same_value(got: Any, want: Any, where: object) -> None:
    """Same type, dtype, shape and bits (NaN payloads included); bytes objects equal."""
    assert type(got) is type(want), where
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype, where
        assert got.shape == want.shape, where
        if want.dtype == object:
            assert [type(v) for v in got.reshape(-1)] == [type(v) for v in want.reshape(-1)]
            assert got.tolist() == want.tolist(), where
        else:
            assert got.tobytes() == want.tobytes(), where
    elif isinstance(want, np.generic):
        assert got.dtype == want.dtype, where
        assert got.tobytes() == want.tobytes(), where
    elif isinstance(want, list):
        assert [type(v) for v in got] == [type(v) for v in want], where
        assert got == want, where
    elif isinstance(want, float):  # a Python scalar from .item(): NaN compares by its bits
        assert struct.pack("<d", got) == struct.pack("<d", want), where
    else:
        assert got == want, where


def assert_same_examples(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for index, (mine, theirs) in enumerate(zip(got, want)):
        assert type(mine) is dict
        assert list(mine) == list(theirs), index
        for key in theirs:
            assert_same_value(mine[key], theirs[key], (index, key))


def _one_at_a_time(function: Any, records: list[bytes]) -> list[Any] | ExampleError:
    try:
        return [function(raw) for raw in records]
    except ExampleError as err:
        return err


def assert_like_one_at_a_time(many: Any, one: Any, records: list[bytes]) -> None:
    want = _one_at_a_time(one, records)
    if isinstance(want, ExampleError):
        with pytest.raises(ExampleError) as caught:
            many(records)
        assert str(caught.value) == str(want)
        assert caught.value.key == want.key
        return
    assert_same_examples(many(records), want)


# --- decode_many ----------------------------------------------------------------------------


@given(st.one_of(canonical_batches(), canonical_batches(same_layout=True), any_batches()))
def test_decode_many_gives_decode_of_each_record(records: list[bytes]) -> None:
    assert_like_one_at_a_time(decode_many, decode, records)


def test_decode_many_of_a_name_with_two_kinds_decodes_each_record() -> None:
    records = [_example(_entry("x", _int64_feature(1))), _example(_entry("x", _float_feature(0)))]
    assert_same_examples(decode_many(records), [decode(raw) for raw in records])


def test_decode_many_rows_are_independent_dicts() -> None:
    rows = decode_many([b"", b""])
    assert rows == [{}, {}]
    rows[0]["a"] = 1
    assert rows[1] == {}


# --- parse_many -----------------------------------------------------------------------------

SHAPES = st.lists(st.integers(0, 3), max_size=2).map(tuple)
INNER = st.lists(st.integers(1, 3), max_size=2).map(tuple)


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, FixedLen | VarLen]:
    names = draw(st.lists(st.text("abc", max_size=3), unique=True, max_size=4))
    schema: dict[str, FixedLen | VarLen] = {}
    for name in names:
        kind = draw(st.sampled_from(KINDS))
        if draw(st.booleans()):
            shape = draw(SHAPES)
            default = _values(draw, kind, math.prod(shape)) if draw(st.booleans()) else None
            schema[name] = FixedLen(shape, kind, default=default)
        else:
            schema[name] = VarLen(kind, shape=(-1, *draw(INNER)))
    return schema


def _values(draw: st.DrawFn, kind: str, count: int) -> Any:
    if kind == "bytes":
        return draw(st.lists(st.binary(max_size=4), min_size=count, max_size=count))
    if kind == "int64":
        ints = st.integers(-(2**63), 2**63 - 1)
        return np.array(draw(st.lists(ints, min_size=count, max_size=count)), dtype=np.int64)
    bits = st.integers(0, 2**32 - 1)
    words = draw(st.lists(bits, min_size=count, max_size=count))
    return np.array(words, dtype=np.uint32).view(np.float32)


def _feature(kind: str, values: Any) -> bytes:
    if kind == "bytes":
        return _bytes_feature(*values)
    if kind == "float32":
        return _float_feature(*np.asarray(values).view(np.uint32).tolist())
    return _int64_feature(*np.asarray(values).tolist())


@st.composite
def schema_batches(draw: st.DrawFn) -> tuple[dict[str, FixedLen | VarLen], list[bytes]]:
    """A schema and records that mostly fit it: features missing, of the wrong kind or size,
    and names outside the schema now and then."""
    schema = draw(schemas())
    records = []
    for _ in range(draw(st.integers(0, 5))):
        entries = []
        for name, spec in schema.items():
            shape = spec.shape
            rows = draw(st.integers(0, 3))
            count = math.prod(shape) if isinstance(spec, FixedLen) else rows * math.prod(shape[1:])
            kind = str(spec.dtype)
            mishap = draw(st.integers(0, 30))
            if mishap == 0:
                continue  # missing
            if mishap == 1:
                kind = draw(st.sampled_from(KINDS))
            if mishap == 2:
                count = draw(st.integers(0, 7))
            entries.append(_entry(name, _feature(kind, _values(draw, kind, count))))
        if draw(st.integers(0, 4)) == 0:
            entries.append(_entry("other", _int64_feature(draw(st.integers(0, 9)))))
        order = draw(st.permutations(range(len(entries))))
        records.append(_example(*(entries[k] for k in order)))
    return schema, records


@given(schema_batches())
def test_parse_many_gives_parse_of_each_record(drawn: tuple[dict[str, Any], list[bytes]]) -> None:
    schema, records = drawn
    assert_like_one_at_a_time(
        lambda batch: parse_many(batch, schema), lambda raw: parse(raw, schema), records
    )


@given(any_batches())
def test_parse_many_of_any_batch_gives_parse_of_each_record(records: list[bytes]) -> None:
    schema: dict[str, FixedLen | VarLen] = {"": VarLen("int64"), "a": FixedLen((), "bytes")}
    assert_like_one_at_a_time(
        lambda batch: parse_many(batch, schema), lambda raw: parse(raw, schema), records
    )


def test_parse_many_of_regular_records_reads_columns() -> None:
    schema = {"image": FixedLen((), "bytes"), "boxes": VarLen("float32", shape=(-1, 4))}
    records = [
        _example(
            _entry("boxes", _float_feature(*range(4 * k))), _entry("image", _bytes_feature(b"x"))
        )
        for k in range(3)
    ]
    parsed = parse_many(records, schema)
    assert [row["boxes"].shape for row in parsed] == [(0, 4), (1, 4), (2, 4)]
    assert [row["image"] for row in parsed] == [b"x"] * 3
    assert_same_examples(parsed, [parse(raw, schema) for raw in records])


def test_parse_many_refuses_a_bad_schema_as_parse_does() -> None:
    with pytest.raises(ConfigError, match="each entry must map a str feature name"):
        parse_many([b""], {"a": "int64"})  # type: ignore[dict-item]
    assert parse_many([], {"a": "int64"}) == []  # type: ignore[dict-item]
