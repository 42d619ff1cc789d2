"""A batch of records to what ``tfds.as_numpy`` yields, leaf by leaf over columns.

The records are decoded once to :func:`readplan.example.decode_batch` columns; each leaf
that is only parsed (numbers, strings, class labels, boxes, skipped images) is checked, cast
and shaped for the whole column at once into one array (a
:class:`~readplan.records.example._leaves.Leaf`), from which come one value per record or a
collated batch. Leaves decoded further (images, raw-buffer tensors, unknown features) take
their usual step on each record's decoded features. Any record that would fail sends the
whole batch through the one-record decoder, so results and errors are exactly its.
``specs/features.md`` §3.10 is normative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from operator import methodcaller
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from readplan._internal.buffer_pool import BufferPool
from readplan.errors import ExampleError, FeatureError
from readplan.metadata._feature_decode import (
    Decoded,
    Unknown,
    cast_like_tf,
    compile_decoder,
    compile_steps,
    is_plain,
    parser,
)
from readplan.metadata._feature_types import STRING, Feature, Image, stored_kind
from readplan.metadata._jpeg_batch import decode_jpegs_into
from readplan.records import example
from readplan.records.example._columns import Column
from readplan.records.example._leaves import (
    Computed,
    Fixed,
    Leaf,
    LeafBatch,
    Ragged,
    Table,
    decoded_leaves,
)
from readplan.records.example._rows import NotRegularError, cut, object_array
from readplan.records.example._spans import BytesSpans

if TYPE_CHECKING:
    from readplan.metadata._feature_decode import _Leaf

__all__ = ["compile_batch_decoder", "compile_leaf_decoder"]

_Columns = Mapping[str, Column]
_Stored = Callable[[], list[dict[str, Any]]]
_LeafOf = Callable[[_Columns, int, _Stored], Leaf]


def compile_batch_decoder(
    features: Mapping[str, Feature],
    decoders: Mapping[str, Any] | None,
    unknown: Unknown,
    max_value_bytes: int | None = None,
) -> Callable[[Sequence[bytes]], list[Decoded]]:
    """The function decoding a batch of serialized records of ``features``: per record,
    exactly what :func:`~readplan.metadata._feature_decode.compile_decoder`'s function gives."""
    one = compile_decoder(features, decoders, unknown, max_value_bytes)
    leaves = compile_leaf_decoder(features, decoders, unknown, max_value_bytes)

    def decode(records: Sequence[bytes]) -> list[Decoded]:
        if not records:
            return []
        try:
            return leaves(records).records()
        except (ExampleError, FeatureError, NotRegularError):
            return [one(raw) for raw in records]

    return decode


def compile_leaf_decoder(
    features: Mapping[str, Feature],
    decoders: Mapping[str, Any] | None,
    unknown: Unknown,
    max_value_bytes: int | None = None,
    *,
    tables: bool = False,
) -> Callable[[Sequence[bytes]], LeafBatch]:
    """The function decoding a non-empty batch of records of ``features`` leaf by leaf; it
    raises ``ExampleError``, ``FeatureError`` or ``NotRegularError`` when some record would
    fail (the one-record decoder then says which, and how).  With ``tables`` (for batches
    that are collated) a batch's JPEGs of one size are decoded into one array, a
    :class:`~readplan.records.example._leaves.Table` whose records are decoded again only
    when read."""
    steps = compile_steps(features, decoders, unknown, max_value_bytes)
    tree = _tree([leaf.path for leaf, _ in steps])
    makers = [_leaf_maker(leaf, step, tables) for leaf, step in steps]

    def decode(records: Sequence[bytes]) -> LeafBatch:
        n = len(records)
        columns = example.decode_batch(records)
        stored: list[list[dict[str, Any]]] = []

        def stored_rows() -> list[dict[str, Any]]:
            if not stored:
                stored.append(decoded_leaves(columns, n).records())
            return stored[0]

        leaves = [make(columns, n, stored_rows) for make in makers]
        return LeafBatch(n, _nested(tree, leaves))

    return decode


# The batches of every decoder in the process take turns with a few arrays' memory: a new
# reader takes it over from the last, so that its batches, too, never write fresh memory
# (see BufferPool).
_IMAGE_ARRAYS = BufferPool()


def _leaf_maker(leaf: _Leaf, step: Callable[[Mapping[str, Any]], Any], tables: bool) -> _LeafOf:
    if is_plain(leaf):
        return _plain_leaf(leaf, parser(leaf))
    feature = leaf.feature
    if tables and isinstance(feature, Image) and leaf.rank == 0 and feature.dtype == "uint8":
        return _jpeg_table_leaf(leaf, feature, step)
    return _stepped_leaf(step)


def _jpeg_table_leaf(
    leaf: _Leaf, image: Image, step: Callable[[Mapping[str, Any]], Any]
) -> _LeafOf:
    """Every record's one JPEG decoded into the batch's array, when they share a size (as
    ``decode_jpegs_into`` decides); otherwise each record's step."""
    key, channels = leaf.key, image.shape[-1]

    def leaf_of(columns: _Columns, n: int, stored: _Stored) -> Leaf:
        column = columns.get(key)
        if column is not None and column.kind == "bytes" and _one_value_each(column, n):
            datas = column.values
            listed = datas.to_list() if isinstance(datas, BytesSpans) else datas
            assert isinstance(listed, list)  # a bytes column's values
            table = decode_jpegs_into(listed, channels, image.shape, leaf.cap, _IMAGE_ARRAYS)
            if table is not None:
                return Table(table, lambda: list(map(step, stored())))
        return Computed(list(map(step, stored())))

    return leaf_of


def _one_value_each(column: Column, n: int) -> bool:
    splits = column.row_splits
    return (
        bool(column.present.all()) and int(splits[-1]) == n and bool((np.diff(splits) == 1).all())
    )


def _stepped_leaf(step: Callable[[Mapping[str, Any]], Any]) -> _LeafOf:
    def leaf_of(columns: _Columns, n: int, stored: _Stored) -> Leaf:
        return Computed(list(map(step, stored())))

    return leaf_of


def _plain_leaf(leaf: _Leaf, parse: Callable[[Mapping[str, Any]], Any]) -> _LeafOf:
    """A parsed leaf for a whole column: ``parse`` (its one-record parse) checked, cast and
    shaped once; records without the feature take ``parse``'s default (or its error)."""
    kind = stored_kind(leaf.dtype)
    unknown_dims = leaf.shape.count(None)
    size = math.prod(dim for dim in leaf.shape if dim is not None)
    target = tuple(-1 if dim is None else dim for dim in leaf.shape)
    numpy_dtype = np.dtype(object) if leaf.dtype == STRING else np.dtype(leaf.dtype)
    reshape = methodcaller("reshape", target)
    key = leaf.key

    def leaf_of(columns: _Columns, n: int, stored: _Stored) -> Leaf:
        column = columns.get(key)
        if column is None:
            return _absent(parse({}), n, target)
        present = column.present
        counts = np.diff(column.row_splits)[present]
        if column.kind != kind or (counts % size if unknown_dims else counts != size).any():
            raise NotRegularError  # the one-record path names the record and the feature
        values = (
            object_array(column.values)
            if isinstance(column.values, list)
            else np.asarray(column.values)
        )
        cast = cast_like_tf(values, numpy_dtype)
        if unknown_dims:
            # A record without the feature holds no values: its empty rows are the default.
            if target[0] == -1:
                return Ragged(cast.reshape(-1, *target[1:]), column.row_splits // size)
            return Computed(list(map(reshape, cut(cast, column.row_splits))))
        held = cast.reshape(int(present.sum()), *target)
        if present.all():
            # Shape () gives numpy scalars (bytes objects for strings), as tfds.as_numpy.
            return Fixed(held)
        table = np.empty((n, *target), dtype=numpy_dtype)
        table[~present] = parse({})
        table[present] = held
        return Fixed(table)

    return leaf_of


def _absent(default: npt.NDArray[Any], n: int, target: tuple[int, ...]) -> Leaf:
    """A leaf no record of the batch holds: ``default`` (its parse of nothing) for each."""
    if -1 not in target:
        return Fixed(np.repeat(default[np.newaxis], n, axis=0))
    if target[0] == -1:
        return Ragged(default, np.zeros(n + 1, dtype=np.int64))  # no rows in any record
    return Computed([default.copy() for _ in range(n)])


def _tree(paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """The leaves' paths as nested dicts (keys in first-listed order), leaf index at the ends."""
    tree: dict[str, Any] = {}
    for index, path in enumerate(paths):
        node = tree
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = index
    return tree


def _nested(tree: dict[str, Any], leaves: list[Leaf]) -> dict[str, Any]:
    return {
        name: _nested(node, leaves) if isinstance(node, dict) else leaves[node]
        for name, node in tree.items()
    }
