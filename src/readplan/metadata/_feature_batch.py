"""A batch of records to what ``tfds.as_numpy`` yields, leaf by leaf over columns.

The records are decoded once to :func:`readplan.example.decode_batch` columns; each leaf
that is only parsed (numbers, strings, class labels, boxes, skipped images) is checked, cast
and shaped for the whole column at once, and cut into one value per record. Leaves decoded
further (images, raw-buffer tensors, unknown features) take their usual step on each
record's decoded features. Any record that would fail sends the whole batch through the
one-record decoder, so results and errors are exactly its. ``specs/features.md`` §3.10 is
normative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from operator import methodcaller
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from readplan.errors import ExampleError, FeatureError
from readplan.metadata._feature_decode import (
    Decoded,
    Unknown,
    compile_decoder,
    compile_steps,
    is_plain,
    parser,
)
from readplan.metadata._feature_types import STRING, Feature, stored_kind
from readplan.records import example
from readplan.records._columns import Column
from readplan.records._rows import (
    NotRegularError,
    cut,
    decoded_rows,
    object_array,
    records_as_dicts,
)

if TYPE_CHECKING:
    from readplan.metadata._feature_decode import _Leaf

__all__ = ["compile_batch_decoder"]

_Columns = Mapping[str, Column]
_LeafRows = Callable[[_Columns, int, Callable[[], list[dict[str, Any]]]], list[Any]]


def compile_batch_decoder(
    features: Mapping[str, Feature], decoders: Mapping[str, Any] | None, unknown: Unknown
) -> Callable[[Sequence[bytes]], list[Decoded]]:
    """The function decoding a batch of serialized records of ``features``: per record,
    exactly what :func:`~readplan.metadata._feature_decode.compile_decoder`'s function gives."""
    one = compile_decoder(features, decoders, unknown)
    leaves = compile_steps(features, decoders, unknown)
    tree = _tree([leaf.path for leaf, _ in leaves])
    rows = [
        _plain_rows(leaf, parser(leaf)) if is_plain(leaf) else _stepped_rows(step)
        for leaf, step in leaves
    ]

    def decode(records: Sequence[bytes]) -> list[Decoded]:
        n = len(records)
        if not n:
            return []
        try:
            columns = example.decode_batch(records)
            stored: list[list[dict[str, Any]]] = []

            def stored_rows() -> list[dict[str, Any]]:
                if not stored:
                    stored.append(decoded_rows(columns, n))
                return stored[0]

            values = [leaf_rows(columns, n, stored_rows) for leaf_rows in rows]
        except (ExampleError, FeatureError, NotRegularError):
            return [one(raw) for raw in records]
        return _nested(tree, values, n)

    return decode


def _stepped_rows(step: Callable[[Mapping[str, Any]], Any]) -> _LeafRows:
    def leaf_rows(
        columns: _Columns, n: int, stored: Callable[[], list[dict[str, Any]]]
    ) -> list[Any]:
        return list(map(step, stored()))

    return leaf_rows


def _plain_rows(leaf: _Leaf, parse: Callable[[Mapping[str, Any]], Any]) -> _LeafRows:
    """A parsed leaf for a whole column: ``parse`` (its one-record parse) checked, cast and
    shaped once; records without the feature take ``parse``'s default (or its error)."""
    kind = stored_kind(leaf.dtype)
    unknown_dims = leaf.shape.count(None)
    size = math.prod(dim for dim in leaf.shape if dim is not None)
    target = tuple(-1 if dim is None else dim for dim in leaf.shape)
    numpy_dtype = np.dtype(object) if leaf.dtype == STRING else np.dtype(leaf.dtype)
    reshape = methodcaller("reshape", target)
    key = leaf.key

    def leaf_rows(
        columns: _Columns, n: int, stored: Callable[[], list[dict[str, Any]]]
    ) -> list[Any]:
        column = columns.get(key)
        if column is None:
            return [_as_numpy(parse({})) for _ in range(n)]
        present = column.present
        counts = np.diff(column.row_splits)[present]
        if column.kind != kind or (counts % size if unknown_dims else counts != size).any():
            raise NotRegularError  # the one-record path names the record and the feature
        values = (
            object_array(column.values)
            if isinstance(column.values, list)
            else np.asarray(column.values)
        )
        with np.errstate(over="ignore"):  # float32 -> float16 overflows to inf, as in TF
            cast = values.astype(numpy_dtype, copy=False)
        if unknown_dims:
            found = cut(cast, column.row_splits)
            if target != (-1,):
                found = list(map(reshape, found))
        else:
            # Shape () gives numpy scalars (bytes objects for strings), as tfds.as_numpy.
            held = list(cast.reshape(int(present.sum()), *target))
            found = held if present.all() else _spread(held, present)
        if present.all():
            return found
        return [
            value if holds else _as_numpy(parse({}))
            for value, holds in zip(found, present.tolist())
        ]

    return leaf_rows


def _spread(held: list[Any], present: npt.NDArray[np.bool_]) -> list[Any]:
    """Values of the records holding the feature, placed at their records (None elsewhere)."""
    taken = iter(held)
    return [next(taken) if holds else None for holds in present.tolist()]


def _as_numpy(array: Any) -> Any:
    return array[()] if array.ndim == 0 else array


def _tree(paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """The leaves' paths as nested dicts (keys in first-listed order), leaf index at the ends."""
    tree: dict[str, Any] = {}
    for index, path in enumerate(paths):
        node = tree
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = index
    return tree


def _nested(tree: dict[str, Any], values: list[list[Any]], n: int) -> list[Decoded]:
    columns = [
        _nested(node, values, n) if isinstance(node, dict) else values[node]
        for node in tree.values()
    ]
    return records_as_dicts(list(tree), columns, n)
