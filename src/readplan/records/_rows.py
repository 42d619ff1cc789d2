"""Columns of a batch back to one value per record, without a Python step per value.

:func:`readplan.example.decode_batch` gives a :class:`~readplan.records._columns.Column` per
feature; readers deliver one decoded example per record. :func:`decoded_rows` cuts the
columns into exactly what :func:`readplan.example.decode` gives for each record, and
:func:`fixed_rows` / :func:`variable_rows` into what :func:`readplan.example.parse` gives for
a schema entry. Row
values are views of the column's arrays (equal values, dtypes and shapes).
``specs/example.md`` §6 is normative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.records._columns import Column

__all__ = [
    "NotRegularError",
    "column_rows",
    "cut",
    "decoded_rows",
    "fixed_rows",
    "object_array",
    "records_as_dicts",
    "shaped",
    "variable_rows",
]

_NUMPY_DTYPE: dict[str, np.dtype[Any]] = {
    "int64": np.dtype(np.int64),
    "float32": np.dtype(np.float32),
}


class NotRegularError(Exception):
    """A batch the column path does not decode; the one-record path gives the result or error."""


def column_rows(column: Column) -> list[Any]:
    """Each record's values of ``column`` (``values[row_splits[i]:row_splits[i + 1]]``)."""
    return cut(column.values, column.row_splits)


def records_as_dicts(names: list[str], values: list[list[Any]], n: int) -> list[dict[str, Any]]:
    """``n`` dicts, record ``i``'s holding ``{names[k]: values[k][i]}`` in ``names`` order."""
    if not names:
        return [{} for _ in range(n)]
    return list(map(dict, map(zip, repeat(names), zip(*values))))


def decoded_rows(columns: Mapping[str, Column], n: int) -> list[dict[str, Any]]:
    """What ``decode`` gives for each of the ``n`` records the columns come from."""
    names = list(columns)
    rows = records_as_dicts(names, [column_rows(column) for column in columns.values()], n)
    for name, column in columns.items():
        # A record without the feature has no key for it: removing keeps the sorted order.
        for index in np.flatnonzero(~column.present).tolist():
            del rows[index][name]
    return rows


def fixed_rows(
    column: Column | None, n: int, kind: str, shape: tuple[int, ...], default: Any
) -> list[Any]:
    """Each record's ``FixedLen(shape, kind, default=default)`` value, as ``parse`` gives it;
    :class:`NotRegularError` when some record's would be an error."""
    present = np.zeros(n, dtype=np.bool_) if column is None else column.present
    if not present.all() and default is None:
        raise NotRegularError
    if column is None:
        return [shaped(kind, list(default), shape) for _ in range(n)]
    counts = np.diff(column.row_splits)[present]
    if column.kind != kind or (counts != math.prod(shape)).any():
        raise NotRegularError
    held = int(present.sum())
    # Shape () gives numpy scalars (bytes objects for bytes), as parse does.
    found: list[Any] = list(_as_array(kind, column.values).reshape(held, *shape))
    if held == n:
        return found
    taken = iter(found)
    return [
        next(taken) if holds else shaped(kind, list(default), shape) for holds in present.tolist()
    ]


def variable_rows(column: Column | None, n: int, kind: str, inner: tuple[int, ...]) -> list[Any]:
    """Each record's ``VarLen(kind, shape=(-1, *inner))`` value, as ``parse`` gives it;
    :class:`NotRegularError` when some record's would be an error."""
    if column is None:
        return [shaped(kind, [], (0, *inner)) for _ in range(n)]
    width = math.prod(inner)
    if column.kind != kind or (column.row_splits % width).any():
        raise NotRegularError
    return cut(_as_array(kind, column.values).reshape(-1, *inner), column.row_splits // width)


def shaped(
    kind: str, values: Sequence[Any] | npt.NDArray[Any], shape: tuple[int, ...]
) -> npt.NDArray[Any] | np.generic | bytes:
    """One record's values as ``parse`` gives them: an array of ``shape``, or for shape
    ``()`` a numpy scalar (a ``bytes`` object for bytes)."""
    if kind == "bytes":
        if shape == ():
            only: bytes = values[0]
            return only
        return _as_array(kind, values).reshape(shape)
    numeric = np.asarray(values, dtype=_NUMPY_DTYPE[kind])
    if shape == ():
        scalar: np.generic = numeric[0]
        return scalar
    return numeric.reshape(shape)


def cut(values: Any, splits: npt.NDArray[np.int64]) -> list[Any]:
    """``values[splits[i]:splits[i + 1]]`` for each ``i`` (an array's first dimension)."""
    lengths = np.diff(splits)
    n = lengths.size
    if isinstance(values, np.ndarray) and n and (lengths == lengths[0]).all():
        # Every record holds as many values: the rows of a table, made in C.
        return list(values.reshape(n, int(lengths[0]), *values.shape[1:]))
    if isinstance(values, list) and n and (lengths == 1).all():
        return list(map(list, zip(values)))
    bounds = splits.tolist()
    cut: Callable[[slice], Any] = values.__getitem__
    return list(map(cut, map(slice, bounds[:-1], bounds[1:])))


def _as_array(kind: str, values: Any) -> npt.NDArray[Any]:
    return object_array(values) if kind == "bytes" else np.asarray(values)


def object_array(values: Sequence[Any] | npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A 1-D object array of ``values`` (numpy would make a 2-D array of equal-length lists)."""
    strings = np.empty(len(values), dtype=object)
    strings[:] = values
    return strings
