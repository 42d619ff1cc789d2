"""Tests for readplan.example.decode_many and parse_many: per record exactly decode / parse.

The reference is the one-record decoder and parser (checked against TensorFlow-written records
in tests/test_example.py); records are written with the independent wire writer of
tests/example_wire.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import ConfigError, ExampleError
from readplan.example import FixedLen, VarLen, decode, decode_many, parse, parse_many
from tests import example_wire as wire
from tests.assertions import assert_same_value
from tests.strategies import any_batches, canonical_batches, schema_batches


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
    records = [
        wire.example(wire.entry("x", wire.int64_feature(1))),
        wire.example(wire.entry("x", wire.float_feature(0))),
    ]
    assert_same_examples(decode_many(records), [decode(raw) for raw in records])


def test_decode_many_rows_are_independent_dicts() -> None:
    rows = decode_many([b"", b""])
    assert rows == [{}, {}]
    rows[0]["a"] = 1
    assert rows[1] == {}


# --- parse_many -----------------------------------------------------------------------------


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
        wire.example(
            wire.entry("boxes", wire.float_feature(*range(4 * k))),
            wire.entry("image", wire.bytes_feature(b"x")),
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
