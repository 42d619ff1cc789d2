"""Many ``tf.train.Example`` records at once, one value per record: ``decode_many`` and
``parse_many`` read through :func:`~readplan.records.example.decode_batch`'s columns, with
exactly the one-record results and errors; ``decode_leaves``/``parse_leaves`` give the same
values leaf by leaf (:mod:`readplan.records.example._leaves`). ``specs/example.md`` §6 is normative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from readplan.errors import ExampleError
from readplan.records.example._codec import (
    FeatureValue,
    ParsedValue,
    check_schema,
    decode,
    decode_batch,
    parse,
)
from readplan.records.example._leaves import (
    LeafBatch,
    decoded_leaves,
    fixed_leaf,
    variable_leaf,
    views_array,
)
from readplan.records.example._rows import NotRegularError
from readplan.records.example._schema import FixedLen, VarLen
from readplan.records.example._spans import check_bytes_as

__all__ = ["decode_leaves", "decode_many", "parse_leaves", "parse_many"]


def decode_many(records: Sequence[bytes]) -> list[dict[str, FeatureValue]]:
    """``[decode(raw) for raw in records]``, read through :func:`decode_batch`'s columns.

    Equal values, dtypes and shapes (numeric values are views of the batch's arrays). When
    the columns cannot be formed (a record :func:`decode` refuses, a name with lists of
    different kinds) the records are decoded one at a time, so the result or the first
    record's error is exactly :func:`decode`'s. See ``specs/example.md`` §6.
    """
    if not records:
        return []
    try:
        return decode_leaves(records).records()
    except ExampleError:
        return [decode(raw) for raw in records]


def decode_leaves(records: Sequence[bytes]) -> LeafBatch:
    """What :func:`decode_many` gives, leaf by leaf (``specs/example.md`` §6): an
    :class:`~readplan.errors.ExampleError` when the columns cannot be formed."""
    return decoded_leaves(decode_batch(records), len(records))


def parse_many(
    records: Sequence[bytes],
    schema: Mapping[str, FixedLen | VarLen],
    *,
    bytes_as: Literal["bytes", "spans"] = "bytes",
) -> list[dict[str, ParsedValue | memoryview]]:
    """``[parse(raw, schema) for raw in records]``, read through :func:`decode_batch`'s columns.

    Equal values, types, dtypes and shapes. When some record does not decode or does not fit
    the schema, the records are parsed one at a time, so the result or the first record's
    error is exactly :func:`parse`'s. ``bytes_as="spans"`` gives each bytes value as a
    read-only ``memoryview`` (into the records when read through the columns) where ``parse``
    gives ``bytes``. See ``specs/example.md`` §6.
    """
    views = check_bytes_as(bytes_as)
    if not records:
        return []
    try:
        return parse_leaves(records, schema, bytes_as=bytes_as).records()
    except (ExampleError, NotRegularError):
        parsed: list[dict[str, ParsedValue | memoryview]] = [
            dict(parse(raw, schema)) for raw in records
        ]
    return [_viewed(values, schema) for values in parsed] if views else parsed


def parse_leaves(
    records: Sequence[bytes],
    schema: Mapping[str, FixedLen | VarLen],
    *,
    bytes_as: Literal["bytes", "spans"] = "bytes",
) -> LeafBatch:
    """What :func:`parse_many` gives, leaf by leaf (``specs/example.md`` §6): an
    :class:`~readplan.errors.ExampleError` or ``NotRegularError`` when some record does not
    decode or does not fit the schema."""
    check_schema(schema)
    views = check_bytes_as(bytes_as)
    n = len(records)
    columns = decode_batch(records, bytes_as=bytes_as)
    return LeafBatch(
        n,
        {
            key: fixed_leaf(columns.get(key), n, str(spec.dtype), spec.shape, spec.default, views)
            if isinstance(spec, FixedLen)
            else variable_leaf(columns.get(key), n, str(spec.dtype), spec.shape[1:])
            for key, spec in schema.items()
        },
    )


def _viewed(
    parsed: dict[str, ParsedValue | memoryview], schema: Mapping[str, FixedLen | VarLen]
) -> dict[str, ParsedValue | memoryview]:
    """One record's ``parse`` result with its bytes values as memoryviews of them."""
    viewed = dict(parsed)
    for key, spec in schema.items():
        if str(spec.dtype) != "bytes":
            continue
        value = parsed[key]
        if isinstance(value, bytes):
            viewed[key] = memoryview(value)
        else:
            assert isinstance(value, np.ndarray)
            viewed[key] = views_array(value.ravel()).reshape(value.shape)
    return viewed
