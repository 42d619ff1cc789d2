"""Decoded examples collated into one batch: a dict of stacked numpy arrays.

``specs/reader.md`` ("Batches") is normative.  Every example of a batch must have the same
structure (the same keys at every level of nesting).  Each leaf becomes an array
(``bytes``/``str`` and lists of them become ``object`` arrays, as ``tfds.as_numpy`` gives
string tensors); leaves whose shapes agree across the batch are stacked into one array
with the batch as its first dimension.  A leaf whose shapes differ (a *ragged* leaf) is,
with ``ragged="list"``, the list of the examples' arrays, and with ``ragged="pad"`` one
array padded at the end of every dimension to the batch's largest size, like tf.data's
``padded_batch``: with ``padding_values[path]`` when given, else 0, ``False`` or ``b""``.

:func:`collate_leaves` gives the same batch from a decoder's leaves (each leaf's values of
all records in one array) without a step per record where the shapes allow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any, Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

from readplan._internal.validate import a_type
from readplan.errors import ConfigError, ExampleError
from readplan.records.example import _leaves
from readplan.records.example._leaves import Computed, Fixed, Leaf, LeafBatch, Table
from readplan.records.example._rows import NotRegularError, cut, object_array

__all__ = ["RAGGED_MODES", "Ragged", "check_collate_options", "collate", "collate_leaves"]

Ragged: TypeAlias = Literal["list", "pad"]
RAGGED_MODES: tuple[str, ...] = get_args(Ragged)


def check_collate_options(ragged: object, padding_values: object) -> None:
    """Refuse options :func:`collate` cannot honour, before any record is read."""
    if ragged not in RAGGED_MODES:
        raise ConfigError(
            f"ragged must be one of {RAGGED_MODES} ('list': a ragged leaf becomes a list of "
            f"arrays; 'pad': it is padded to the batch's largest shape), got {ragged!r}",
            field="ragged",
            value=ragged,
        )
    if padding_values is None:
        return
    if not isinstance(padding_values, Mapping) or not all(
        isinstance(key, str) for key in padding_values
    ):
        raise ConfigError(
            "padding_values must map leaf paths (feature names, nested ones joined with '/', "
            f"e.g. 'objects/bbox') to padding values, got {padding_values!r:.80}",
            field="padding_values",
            value=padding_values,
        )
    if ragged != "pad":
        raise ConfigError(
            "padding_values only applies with ragged='pad'",
            field="padding_values",
            value=padding_values,
        )


def collate(
    examples: Sequence[Mapping[str, Any]],
    *,
    ragged: Ragged = "list",
    padding_values: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One batch from ``examples`` (decoded features), as the module docstring describes."""
    if not examples:
        raise ConfigError("cannot collate an empty batch", field="examples", value=examples)
    pads = {} if padding_values is None else dict(padding_values)
    return _collate_dicts(examples, "", ragged, pads)


def collate_leaves(
    batch: LeafBatch, *, ragged: Ragged = "list", padding_values: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Exactly ``collate(batch.records(), ...)``, made leaf by leaf: a leaf whose records'
    values share one shape is its array reshaped, a ragged one is cut or padded at once.
    ``NotRegularError`` when some record lacks a leaf (:func:`collate` says how the records
    differ)."""
    if _some_absent(batch.tree):
        raise NotRegularError
    pads = {} if padding_values is None else dict(padding_values)
    return _collate_tree(batch.tree, batch.size, "", ragged, pads)


def _some_absent(tree: Mapping[str, Any]) -> bool:
    return any(
        _some_absent(node)
        if isinstance(node, Mapping)
        else isinstance(node, _leaves.Ragged) and node.present is not None
        for node in tree.values()
    )


def _collate_tree(
    tree: Mapping[str, Any], n: int, prefix: str, ragged: Ragged, pads: Mapping[str, Any]
) -> dict[str, Any]:
    # Depth first in the records' key order, as collate: the first leaf that fails is its.
    return {
        name: _collate_tree(node, n, f"{prefix}{name}/", ragged, pads)
        if isinstance(node, Mapping)
        else _collate_leaf(node, n, f"{prefix}{name}", ragged, pads)
        for name, node in tree.items()
    }


def _collate_leaf(leaf: Leaf, n: int, path: str, ragged: Ragged, pads: Mapping[str, Any]) -> Any:
    if isinstance(leaf, Computed):
        return _collate_leaf_or_dict(leaf.values, path, ragged, pads)
    if isinstance(leaf, Table):
        return leaf.values  # the batch's own array: its records are made apart from it
    values = object_array(leaf.values) if isinstance(leaf.values, list) else leaf.values
    # Copies: the batch's arrays stay apart from the records' values (views of `values`).
    if isinstance(leaf, Fixed):
        return values.copy()
    lengths = np.diff(leaf.splits)
    if (lengths == lengths[0]).all():
        return values.reshape(n, int(lengths[0]), *values.shape[1:]).copy()
    if ragged == "list":
        return cut(values, leaf.splits)
    fill = _fill(path, pads, values.dtype)
    out = np.full((n, int(lengths.max()), *values.shape[1:]), fill, dtype=values.dtype)
    records = np.repeat(np.arange(n), lengths)
    out[records, np.arange(len(values)) - leaf.splits[records]] = values
    return out


def _collate_dicts(
    examples: Sequence[Any], prefix: str, ragged: Ragged, pads: Mapping[str, Any]
) -> dict[str, Any]:
    keys = _common_keys(examples, prefix)
    return {
        key: _collate_leaf_or_dict([ex[key] for ex in examples], f"{prefix}{key}", ragged, pads)
        for key in keys
    }


def _common_keys(examples: Sequence[Any], prefix: str) -> list[str]:
    if set(map(type, examples)) == {dict}:
        # The decoders' dicts, checked in C; anything else is looked at one by one below.
        expected = examples[0].keys()
        if all(map(expected.__eq__, map(dict.keys, examples))):
            return list(expected)
    where = prefix.rstrip("/") or "the top level"
    for k, example in enumerate(examples):
        if not isinstance(example, Mapping):
            raise ExampleError(
                f"example {k} of the batch holds {a_type(example)} at {where!r} where "
                "example 0 holds a dict: examples of one batch must share one structure",
                key=prefix.rstrip("/") or None,
            )
    keys = list(examples[0])
    expected = set(keys)
    for k, example in enumerate(examples):
        if set(example) != expected:
            missing = sorted(expected - set(example))
            extra = sorted(set(example) - expected)
            raise ExampleError(
                f"example {k} of the batch has other features than example 0 at {where!r} "
                f"(missing {missing}, extra {extra}): examples of one batch must share one "
                "structure; decode with a schema (decode={name: FixedLen/VarLen}) to give "
                "absent features a default",
                key=(missing or extra)[0],
            )
    return keys


def _collate_leaf_or_dict(
    values: list[Any], path: str, ragged: Ragged, pads: Mapping[str, Any]
) -> Any:
    if isinstance(values[0], Mapping):
        return _collate_dicts(values, f"{path}/", ragged, pads)
    stacked = _stacked_alike(values)
    if stacked is not None:
        return stacked
    arrays = [_as_array(value, path) for value in values]
    shape = arrays[0].shape
    if all(array.shape == shape for array in arrays):
        return np.stack(arrays)
    if ragged == "list":
        return arrays
    return _padded(arrays, path, pads)


def _stacked_alike(values: list[Any]) -> npt.NDArray[Any] | None:
    """The common leaves of a decoded batch (values of one type: arrays of one shape and
    dtype, numpy scalars or bytes) stacked without a step per value; None for any other."""
    kinds = set(map(type, values))
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is bytes:
        strings = np.empty(len(values), dtype=object)
        strings[:] = values
        return strings
    if issubclass(kind, np.generic):
        return np.array(values, dtype=values[0].dtype)
    if kind is np.ndarray and len({(value.shape, value.dtype) for value in values}) == 1:
        return np.stack(values)
    if kind is list and len(set(map(len, values))) == 1:
        # Lists of bytes (tf.train.Example bytes lists) of one length: a table of objects.
        flat = list(chain.from_iterable(values))
        if set(map(type, flat)) <= {bytes}:
            table = np.empty(len(flat), dtype=object)
            table[:] = flat
            return table.reshape(len(values), -1 if flat else 0)
    return None


def _as_array(value: Any, path: str) -> npt.NDArray[Any]:
    if isinstance(value, Mapping):
        raise ExampleError(
            f"feature {path!r} is a dict in some examples of the batch and not in others: "
            "examples of one batch must share one structure",
            key=path,
        )
    if isinstance(value, (bytes, str)):
        return np.array(value, dtype=object)
    if isinstance(value, list) and value and isinstance(value[0], (bytes, str)):
        strings = np.empty(len(value), dtype=object)
        strings[:] = value
        return strings
    if isinstance(value, list) and not value:
        return np.empty(0, dtype=object)
    return np.asarray(value)


def _padded(arrays: list[npt.NDArray[Any]], path: str, pads: Mapping[str, Any]) -> npt.NDArray[Any]:
    ranks = sorted({array.ndim for array in arrays})
    if len(ranks) > 1:
        raise ExampleError(
            f"feature {path!r} has arrays of different ranks {ranks} in one batch; padding "
            "can only grow dimensions, not add them",
            key=path,
        )
    dtype = np.result_type(*arrays)
    target = tuple(max(sizes) for sizes in zip(*(array.shape for array in arrays)))
    out = np.full((len(arrays), *target), _fill(path, pads, dtype), dtype=dtype)
    for k, array in enumerate(arrays):
        where: tuple[int | slice, ...] = (k, *(slice(0, size) for size in array.shape))
        out[where] = array
    return out


def _fill(path: str, pads: Mapping[str, Any], dtype: np.dtype[Any]) -> Any:
    return pads[path] if path in pads else _default_padding(dtype)


def _default_padding(dtype: np.dtype[Any]) -> Any:
    """tf.data's ``padded_batch`` defaults: empty strings, ``False``, zero."""
    if dtype == np.dtype(object) or dtype.kind in "SU":
        return b""
    if dtype == np.dtype(bool):
        return False
    return 0
