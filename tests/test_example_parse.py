"""readplan.example.parse: records read against a schema of FixedLen and VarLen entries.

Records are written with the independent wire writer of tests/example_wire.py; the shapes,
dtypes and defaults are those specs/example.md gives (TF's ``FixedLenFeature`` and
``FixedLenSequenceFeature``).
"""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError
from typing import Any

import numpy as np
import pytest
from hypothesis import given

from readplan.errors import ConfigError, ExampleError
from readplan.example import FixedLen, VarLen, encode, parse
from tests import example_wire as wire
from tests.assertions import checked_array
from tests.example_values import SNAN, with_pins
from tests.strategies import feature_dicts

# --- parsing against a schema -------------------------------------------------------------

PARSE_RECORD = wire.example(
    wire.entry("b2", wire.bytes_feature(b"p", b"q")),
    wire.entry("empty_b", wire.len_field(1, b"")),
    wire.entry("empty_i", wire.len_field(3, b"")),
    wire.entry("f1", wire.float_feature(SNAN)),
    wire.entry("f8", wire.float_feature(*range(8))),
    wire.entry("i6", wire.int64_feature(1, 2, 3, 4, 5, 6)),
    wire.entry("kindless", b""),
    wire.entry("s", wire.bytes_feature(b"only")),
)


def _kindless_and_missing(spec: FixedLen | VarLen) -> list[Any]:
    return [parse(PARSE_RECORD, {key: spec})[key] for key in ("kindless", "missing")]


def test_parse_fixed_shapes_and_types() -> None:
    parsed = parse(
        PARSE_RECORD,
        {
            "i6": FixedLen((2, 3), "int64"),
            "f1": FixedLen((), "float32"),
            "s": FixedLen((), "bytes"),
            "b2": FixedLen((2, 1), "bytes"),
            "empty_i": FixedLen((0,), "int64"),
        },
    )
    assert list(parsed) == ["i6", "f1", "s", "b2", "empty_i"]
    assert checked_array(parsed["i6"], np.int64, (2, 3)).tolist() == [[1, 2, 3], [4, 5, 6]]
    f1 = parsed["f1"]
    assert type(f1) is np.float32
    assert np.array(f1).view(np.uint32).item() == SNAN
    assert parsed["s"] == b"only"
    assert checked_array(parsed["b2"], object, (2, 1)).tolist() == [[b"p"], [b"q"]]
    checked_array(parsed["empty_i"], np.int64, (0,))


def test_parse_var_shapes_and_types() -> None:
    parsed = parse(
        PARSE_RECORD,
        {
            "f8": VarLen("float32", shape=(-1, 2, 2)),
            "i6": VarLen("int64"),
            "b2": VarLen("bytes"),
            "empty_b": VarLen("bytes", shape=(-1, 3)),
        },
    )
    f8 = checked_array(parsed["f8"], np.float32, (2, 2, 2))
    assert f8.reshape(-1).view(np.uint32).tolist() == list(range(8))
    assert checked_array(parsed["i6"], np.int64, (6,)).tolist() == [1, 2, 3, 4, 5, 6]
    assert checked_array(parsed["b2"], object, (2,)).tolist() == [b"p", b"q"]
    checked_array(parsed["empty_b"], object, (0, 3))


def test_parse_treats_a_feature_without_kind_as_missing() -> None:
    for value in _kindless_and_missing(VarLen("int64", shape=(-1, 2))):
        checked_array(value, np.int64, (0, 2))
    for value in _kindless_and_missing(FixedLen((2,), "bytes", default=["d", b"e"])):
        assert checked_array(value, object, (2,)).tolist() == [b"d", b"e"]
    for value in _kindless_and_missing(FixedLen((), "float32", default=-0.0)):
        assert type(value) is np.float32
        assert np.array(value).view(np.uint32).item() == 0x80000000
    for value in _kindless_and_missing(FixedLen((1, 2), "int64", default=[[5, 6]])):
        assert checked_array(value, np.int64, (1, 2)).tolist() == [[5, 6]]


PARSE_ERRORS = [
    pytest.param("missing", FixedLen((), "int64"), "is missing from the example", id="missing"),
    pytest.param("kindless", FixedLen((), "int64"), "is missing from the example", id="kindless"),
    pytest.param("missing", FixedLen((0,), "int64"), "has no default", id="missing-size-0"),
    pytest.param(
        "f1", FixedLen((), "int64"), "is a float_list but the schema asks for int64", id="kind"
    ),
    pytest.param(
        "i6", VarLen("float32"), "is a int64_list but the schema asks for float32", id="var-kind"
    ),
    pytest.param(
        "empty_b", VarLen("int64"), "is a bytes_list but the schema asks for int64", id="empty-kind"
    ),
    pytest.param("empty_b", FixedLen((0,), "int64"), "is a bytes_list", id="empty-kind-fixed"),
    pytest.param(
        "i6",
        FixedLen((2,), "int64"),
        "has 6 int64 values but FixedLen shape (2,) needs 2",
        id="count",
    ),
    pytest.param("empty_i", FixedLen((), "int64"), "has 0 int64 values", id="present-empty"),
    pytest.param(
        "empty_i",
        FixedLen((), "int64", default=3),
        "has 0 int64 values",
        id="present-empty-default",
    ),
    pytest.param(
        "i6", VarLen("int64", shape=(-1, 4)), "6 int64 values, which do not split", id="rows"
    ),
]


@pytest.mark.parametrize(("key", "spec", "fragment"), PARSE_ERRORS)
def test_parse_errors_name_the_feature(key: str, spec: FixedLen | VarLen, fragment: str) -> None:
    with pytest.raises(ExampleError, match=re.escape(fragment)) as caught:
        parse(PARSE_RECORD, {"s": VarLen("bytes"), key: spec})
    assert caught.value.key == key
    assert repr(key) in str(caught.value)


def test_parse_refuses_a_schema_entry_of_another_type() -> None:
    with pytest.raises(ConfigError, match="to a FixedLen or a VarLen") as caught:
        parse(PARSE_RECORD, {"s": "bytes"})  # type: ignore[dict-item]
    assert caught.value.field == "s"
    with pytest.raises(ConfigError, match="str feature name") as caught:
        parse(PARSE_RECORD, {b"s": VarLen("bytes")})  # type: ignore[dict-item]
    assert caught.value.field == "b's'"


@given(feature_dicts())
@with_pins
def test_parse_with_varlen_reads_what_decode_reads(features: dict[str, Any]) -> None:
    schema = {
        key: VarLen("bytes" if isinstance(v, list) else str(v.dtype)) for key, v in features.items()
    }
    parsed = parse(encode(features), schema)
    assert list(parsed) == list(features)
    for key, want in features.items():
        if isinstance(want, list):
            assert checked_array(parsed[key], object, (len(want),)).tolist() == want
        else:
            got = checked_array(parsed[key], want.dtype, want.shape)
            assert got.tobytes() == want.tobytes()


# --- schema validation --------------------------------------------------------------------

DTYPE_SPELLINGS = [
    ("int64", "int64"),
    (np.int64, "int64"),
    (np.dtype("int64"), "int64"),
    ("float32", "float32"),
    (np.float32, "float32"),
    (np.dtype(np.float32), "float32"),
    ("bytes", "bytes"),
    (bytes, "bytes"),
    (np.bytes_, "bytes"),
    (np.dtype("S"), "bytes"),
]


@pytest.mark.parametrize(("spelling", "name"), DTYPE_SPELLINGS)
def test_dtype_spellings_normalise_to_names(spelling: Any, name: str) -> None:
    assert FixedLen((), spelling).dtype == name
    assert VarLen(spelling).dtype == name


def test_schema_entries_are_frozen_and_normalised() -> None:
    fixed = FixedLen([2], np.int64, default=[np.int16(1), 2])  # type: ignore[arg-type]
    assert fixed == FixedLen((2,), "int64", default=(1, 2))
    assert fixed.shape == (2,)
    assert fixed.default == (1, 2)
    assert VarLen("bytes").shape == (-1,)
    with pytest.raises(FrozenInstanceError):
        fixed.shape = (3,)  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        VarLen("bytes").dtype = "int64"  # type: ignore[misc]


BAD_SCHEMAS = [
    pytest.param(FixedLen, ((-1,), "int64"), {}, "shape", "unknown dimension", id="fixed-minus-1"),
    pytest.param(FixedLen, ((None,), "int64"), {}, "shape", "not a tuple of ints", id="fixed-none"),
    pytest.param(FixedLen, (3, "int64"), {}, "shape", "not a tuple of ints", id="fixed-int"),
    pytest.param(FixedLen, ("3", "int64"), {}, "shape", "not a tuple of ints", id="fixed-str"),
    pytest.param(FixedLen, ((), "float64"), {}, "dtype", "'float64' is not", id="float64"),
    pytest.param(FixedLen, ((), np.float64), {}, "dtype", "is not a tf.train", id="np-float64"),
    pytest.param(FixedLen, ((), str), {}, "dtype", "is not a tf.train.Example type", id="str"),
    pytest.param(FixedLen, ((), "string"), {}, "dtype", "'string' is not", id="string"),
    pytest.param(VarLen, (None,), {}, "dtype", "None is not", id="none"),
    pytest.param(VarLen, ("int64",), {"shape": (4,)}, "shape", "must be (-1, *inner)", id="var-4"),
    pytest.param(VarLen, ("int64",), {"shape": ()}, "shape", "must be (-1, *inner)", id="var-()"),
    pytest.param(
        VarLen, ("int64",), {"shape": (-1, 0)}, "shape", "inner dimension >= 1", id="var-0"
    ),
    pytest.param(
        VarLen, ("int64",), {"shape": (-1, -1)}, "shape", "must be (-1, *", id="var-2-unknown"
    ),
    pytest.param(
        FixedLen,
        ((3,), "int64"),
        {"default": 5},
        "default",
        "holds 1 values but shape (3,) needs 3",
        id="scalar-default",
    ),
    pytest.param(
        FixedLen, ((), "int64"), {"default": 1.5}, "default", "do not convert", id="float-for-int"
    ),
    pytest.param(
        FixedLen, ((), "int64"), {"default": 2**63}, "default", "do not convert", id="too-big"
    ),
    pytest.param(
        FixedLen, ((), "float32"), {"default": "x"}, "default", "do not convert", id="str-for-float"
    ),
    pytest.param(
        FixedLen, ((), "bytes"), {"default": 1}, "default", "not bytes or str", id="int-for-bytes"
    ),
    pytest.param(
        FixedLen,
        ((2,), "int64"),
        {"default": [[1], [2, 3]]},
        "default",
        "not a regular array",
        id="ragged",
    ),
]


@pytest.mark.parametrize(("cls", "args", "kwargs", "field", "fragment"), BAD_SCHEMAS)
def test_invalid_schema_entries_are_refused(
    cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)) as caught:
        cls(*args, **kwargs)
    assert caught.value.field == field
