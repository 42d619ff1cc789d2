"""tf.train.Example without TensorFlow: decode, encode, and parse against a schema.

The normative description is ``specs/example.md``; the message definitions are
``specs/example.proto``. Decoding runs in the protobuf runtime's compiled parser, and values
become numpy arrays without a Python loop per value:

* ``int64_list`` -> ``numpy.int64`` array, ``float_list`` -> ``numpy.float32`` array (every bit
  kept, NaN payloads included), ``bytes_list`` -> ``list[bytes]``.
* :func:`parse` reads a record against a schema of :class:`FixedLen` and :class:`VarLen`
  entries, the way ``tf.io.parse_single_example`` reads ``FixedLenFeature`` and
  ``FixedLenSequenceFeature``/``VarLenFeature``, and returns what ``tfds.as_numpy`` would.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from google.protobuf.message import DecodeError

from readplan._internal.arrays import IntArray
from readplan._internal.validate import INT64_MAX, INT64_MIN, a_type, preview
from readplan.errors import ConfigError, ExampleError
from readplan.records.example._columns import Column
from readplan.records.example._kernel import decode_columns
from readplan.records.example._kinds import BYTES, FLOAT32, INT64
from readplan.records.example._pb import Example, Features
from readplan.records.example._rows import shaped
from readplan.records.example._schema import FixedLen, VarLen
from readplan.records.example._spans import check_bytes_as

__all__ = [
    "FeatureValue",
    "ParsedValue",
    "decode",
    "decode_batch",
    "encode",
    "parse",
]

FeatureValue: TypeAlias = IntArray | npt.NDArray[np.float32] | list[bytes]
"""What :func:`decode` gives for one feature, and what :func:`encode` accepts among others."""

ParsedValue: TypeAlias = npt.NDArray[Any] | np.generic | bytes
"""What :func:`parse` gives for one feature: an array, or a scalar for shape ``()``."""

_LIST_FIELD = {INT64: "int64_list", FLOAT32: "float_list", BYTES: "bytes_list"}
_KIND_OF_FIELD = {name: kind for kind, name in _LIST_FIELD.items()}
_ITERATE_UP_TO = 32
_EXAMPLE_FEATURES_TAG = b"\x0a"  # Example.features: field 1, length-delimited

_Found = tuple[str, FeatureValue]


# --- decoding -----------------------------------------------------------------------------


def decode(raw: bytes) -> dict[str, FeatureValue]:
    """Decode one serialized ``tf.train.Example`` into ``{name: values}``, keys sorted.

    A feature whose ``Feature`` message holds no list is left out, as TensorFlow's parser treats
    it as absent. Duplicate names: the last entry wins. Malformed input raises
    :class:`~readplan.errors.ExampleError`. See ``specs/example.md`` §2.
    """
    # The message is held while its sub-messages are read: they live in its arena.
    message = _parse_message(raw)
    features = message.features.feature
    decoded: dict[str, FeatureValue] = {}
    for key, feature in sorted(features.items()):
        found = _read_feature(feature)
        if found is not None:
            decoded[key] = found[1]
    return decoded


def decode_batch(
    records: Sequence[bytes], *, bytes_as: Literal["bytes", "spans"] = "bytes"
) -> dict[str, Column]:
    """Decode many serialized ``tf.train.Example`` records to columns, keys sorted.

    A :class:`Column` exists for every name that at least one record holds with a list, and
    ``column.row(i)`` equals ``decode(records[i])[name]`` (None when record ``i`` lacks it).
    Canonically encoded batches are decoded without a Python step per record or value. A name
    holding lists of different kinds in different records cannot form a column and raises
    :class:`~readplan.errors.ExampleError`, as does any record :func:`decode` refuses (with
    ``.index`` naming it). ``bytes_as="spans"`` leaves bytes values in the records: a bytes
    column's values are then a :class:`BytesSpans` (memoryviews into the records, ``bytes``
    from its ``to_list()``). See ``specs/example.md`` §5.
    """
    return decode_columns(records, decode, check_bytes_as(bytes_as))


def _parse_message(raw: bytes) -> Any:
    try:
        return Example.FromString(raw)
    except DecodeError as err:
        head = bytes(raw[:16]).hex()
        raise ExampleError(
            f"not a serialized tf.train.Example: the protobuf parser rejected {len(raw)} bytes "
            f"starting {head!r} ({err}); check that the record holds a tf.train.Example and "
            "that the file is not damaged"
        ) from err


def _read_feature(feature: Any) -> _Found | None:
    field_name = feature.WhichOneof("kind")
    if field_name is None:
        return None
    kind = _KIND_OF_FIELD[field_name]
    values = getattr(feature, field_name).value
    if kind == INT64:
        return kind, _numeric_array(values, np.int64)
    if kind == FLOAT32:
        # The runtime hands over the raw binary32 words (declared fixed32), so reinterpreting
        # them keeps signalling NaNs that a trip through Python floats would quieten.
        return kind, _numeric_array(values, np.uint32).view(np.float32)
    return kind, list(values)


def _numeric_array(values: Any, dtype: type[np.int64] | type[np.uint32]) -> npt.NDArray[Any]:
    # The runtime exports a whole list to numpy at a fixed cost of about 1.5 us; iterating
    # is cheaper for short lists, the common case (benchmarks/bench_example.py).
    if len(values) <= _ITERATE_UP_TO:
        return np.fromiter(values, dtype=dtype, count=len(values))
    return np.array(values, dtype=dtype)


# --- encoding -----------------------------------------------------------------------------


def encode(features: Mapping[str, Any]) -> bytes:
    """Serialize ``{name: values}`` as a ``tf.train.Example``, keys in code point order.

    The kind of each feature follows from its value (``specs/example.md`` §3): numpy integer
    or bool arrays and lists of ints give ``int64_list``; float arrays and lists of numbers with
    a float give ``float_list``; bytes, str (UTF-8) and lists of them give ``bytes_list``. A
    scalar is a one-element list, arrays are flattened in C order, and an empty plain list is
    an empty ``bytes_list`` (an empty numeric list needs a typed array, e.g.
    ``np.array([], dtype=np.int64)``), so ``decode(encode(d)) == d`` for every decoded ``d``.
    """
    for key in features:
        _check_key(key)
    # The runtime's own deterministic mode orders a name after every name it prefixes
    # ("image_name" before "image"), so the entries are serialized one by one and joined here
    # in true sorted order; consecutive map entries are exactly a Features message's bytes.
    body = b"".join(_entry_bytes(key, features[key]) for key in sorted(features))
    return _EXAMPLE_FEATURES_TAG + _varint(len(body)) + body if features else b""


def _entry_bytes(key: str, value: object) -> bytes:
    kind, values = _kind_and_values(key, value)
    holder: Any = Features()
    _fill(getattr(holder.feature[key], _LIST_FIELD[kind]), kind, values)
    entry: bytes = holder.SerializeToString()
    return entry


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise ExampleError(
            f"feature names must be str, got {key!r} ({type(key).__name__}); "
            "convert the name to a string"
        )
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ExampleError(
            f"feature name {key!r} is not valid UTF-8 text ({err.reason}); "
            "tf.train.Example names are UTF-8 strings",
            key=key,
        ) from err


def _kind_and_values(key: str, value: object) -> _Found:
    if isinstance(value, (bytes, bytearray, str)):
        return BYTES, [_as_bytes(key, value)]
    if isinstance(value, np.ndarray):
        return _from_array(key, value)
    if isinstance(value, np.generic):
        return _from_array(key, np.asarray(value).reshape(1))
    if isinstance(value, (int, float)):
        return _from_sequence(key, [value])
    if isinstance(value, Sequence):
        return _from_sequence(key, value)
    raise ExampleError(
        f"feature {key!r}: cannot encode {a_type(value)} ({preview(value)}); "
        "give a numpy array, a list of ints, floats or bytes/str, or a single such value",
        key=key,
    )


def _from_array(key: str, array: npt.NDArray[Any]) -> _Found:
    flat = array.reshape(-1)
    if flat.dtype.kind in "iub":
        if flat.dtype.kind == "u" and flat.size and int(flat.max()) > INT64_MAX:
            raise _out_of_int64(key, int(flat.max()))
        return INT64, flat.astype(np.int64)
    if flat.dtype.kind == "f":
        # Out-of-range doubles round to +-inf, as the protobuf runtime does for float fields.
        with np.errstate(over="ignore"):
            return FLOAT32, flat.astype(np.float32)
    if flat.dtype.kind in "SUO":
        return _from_sequence(key, flat.tolist())
    raise ExampleError(
        f"feature {key!r}: numpy dtype {array.dtype} has no tf.train.Example list; "
        "use an integer, bool, floating, bytes or str array",
        key=key,
    )


def _from_sequence(key: str, values: Sequence[Any]) -> _Found:
    if not values or all(isinstance(v, (bytes, bytearray, str)) for v in values):
        return BYTES, [_as_bytes(key, v) for v in values]
    if all(isinstance(v, (int, np.integer, np.bool_)) for v in values):
        return INT64, _int64_array(key, [operator.index(v) for v in values])
    if all(isinstance(v, (int, float, np.integer, np.floating, np.bool_)) for v in values):
        return FLOAT32, _float32_array(key, values)
    types = sorted({type(v).__name__ for v in values})
    raise ExampleError(
        f"feature {key!r}: a list must hold only ints, only real numbers or only bytes/str, "
        f"but it holds {', '.join(types)}; split the values into separate features",
        key=key,
    )


def _int64_array(key: str, ints: list[int]) -> IntArray:
    for extreme in (min(ints), max(ints)):
        if not INT64_MIN <= extreme <= INT64_MAX:
            raise _out_of_int64(key, extreme)
    return np.array(ints, dtype=np.int64)


def _out_of_int64(key: str, value: int) -> ExampleError:
    return ExampleError(
        f"feature {key!r}: {value} does not fit in int64 [{INT64_MIN}, {INT64_MAX}]; "
        "store it as bytes or split it",
        key=key,
    )


def _float32_array(key: str, values: Sequence[Any]) -> npt.NDArray[np.float32]:
    try:
        with np.errstate(over="ignore"):
            return np.array(values, dtype=np.float32)
    except OverflowError as err:
        raise ExampleError(
            f"feature {key!r}: {preview(max(values, key=abs))} is too large for a float "
            f"({err}); store it as bytes or as an int64 list",
            key=key,
        ) from err


def _as_bytes(key: str, value: bytes | bytearray | str) -> bytes:
    if not isinstance(value, str):
        return bytes(value)
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ExampleError(
            f"feature {key!r}: the string {value!r} is not valid UTF-8 text ({err.reason}); "
            "pass bytes instead",
            key=key,
        ) from err


def _fill(values_list: Any, kind: str, values: FeatureValue) -> None:
    # Marks the list present even when empty: an empty list keeps its kind on the wire.
    values_list.SetInParent()
    if kind == FLOAT32:
        values_list.value.extend(np.asarray(values).view(np.uint32).tolist())
    elif kind == INT64:
        values_list.value.extend(np.asarray(values).tolist())
    else:
        values_list.value.extend(values)


# --- parsing against a schema -------------------------------------------------------------


def parse(raw: bytes, schema: Mapping[str, FixedLen | VarLen]) -> dict[str, ParsedValue]:
    """Decode the features named in ``schema``, checked and shaped; keys in schema order.

    Numeric features become numpy arrays of the schema's shape (a numpy scalar for shape
    ``()``); bytes features become object arrays of ``bytes`` (a plain ``bytes`` for shape
    ``()``). A missing, mistyped or mis-sized feature raises
    :class:`~readplan.errors.ExampleError` with ``.key`` set. See ``specs/example.md`` §4.
    """
    check_schema(schema)
    message = _parse_message(raw)  # held while its sub-messages are read
    features = message.features.feature
    parsed: dict[str, ParsedValue] = {}
    for key, spec in schema.items():
        found = _read_feature(features[key]) if key in features else None
        if isinstance(spec, FixedLen):
            parsed[key] = _parse_fixed(key, spec, found)
        else:
            parsed[key] = _parse_var(key, spec, found)
    return parsed


def check_schema(schema: Mapping[str, FixedLen | VarLen]) -> None:
    """Refuse a schema entry that is not a str name mapped to a FixedLen or a VarLen."""
    for key, spec in schema.items():
        if not isinstance(key, str) or not isinstance(spec, (FixedLen, VarLen)):
            raise ConfigError(
                f"schema entry {key!r}: {preview(spec)}; each entry must map a str feature "
                "name to a FixedLen or a VarLen",
                field=str(key),
                value=spec,
            )


def _parse_fixed(key: str, spec: FixedLen, found: _Found | None) -> ParsedValue:
    dtype = str(spec.dtype)
    if found is None:
        if spec.default is None:
            raise ExampleError(
                f"feature {key!r} is missing from the example and FixedLen{spec.shape} has no "
                "default; give FixedLen a default=... or read the feature with VarLen",
                key=key,
            )
        return shaped(dtype, list(spec.default), spec.shape)
    values = _checked_values(key, dtype, found)
    if len(values) != math.prod(spec.shape):
        raise ExampleError(
            f"feature {key!r} has {len(values)} {dtype} values but FixedLen shape {spec.shape} "
            f"needs {math.prod(spec.shape)}; fix the schema's shape or read it with VarLen",
            key=key,
        )
    return shaped(dtype, values, spec.shape)


def _parse_var(key: str, spec: VarLen, found: _Found | None) -> ParsedValue:
    dtype = str(spec.dtype)
    values = [] if found is None else _checked_values(key, dtype, found)
    inner = spec.shape[1:]
    rows, leftover = divmod(len(values), math.prod(inner))
    if leftover:
        raise ExampleError(
            f"feature {key!r} has {len(values)} {dtype} values, which do not split into rows "
            f"of shape {inner} (VarLen shape {spec.shape}); fix the schema's shape",
            key=key,
        )
    return shaped(dtype, values, (rows, *inner))


def _checked_values(key: str, dtype: str, found: _Found) -> FeatureValue:
    kind, values = found
    if kind != dtype:
        raise ExampleError(
            f"feature {key!r} is a {_LIST_FIELD[kind]} but the schema asks for {dtype}; "
            f"fix the schema's dtype to {kind!r}",
            key=key,
        )
    return values
