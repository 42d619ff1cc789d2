"""Columns of a batch back to one value per record, without a Python step per value.

:func:`readplan.example.decode_batch` gives a :class:`~readplan.records.example._columns.Column` per
feature; readers deliver one decoded example per record. :func:`cut` splits a column's
values into each record's (views of the column's arrays: equal values, dtypes and shapes),
:func:`records_as_dicts` joins them into records and :func:`shaped` gives one record's value
as ``parse`` does (``readplan.records.example._leaves`` builds batches from them).
``specs/example.md`` §6 is normative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray
from readplan.records.example._kinds import NUMPY_DTYPE

__all__ = [
    "NotRegularError",
    "cut",
    "object_array",
    "records_as_dicts",
    "shaped",
]


class NotRegularError(Exception):
    """A batch the column path does not decode; the one-record path gives the result or error."""


def records_as_dicts(names: list[str], values: list[list[Any]], n: int) -> list[dict[str, Any]]:
    """``n`` dicts, record ``i``'s holding ``{names[k]: values[k][i]}`` in ``names`` order."""
    if not names:
        return [{} for _ in range(n)]
    return list(map(dict, map(zip, repeat(names), zip(*values))))


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
    numeric = np.asarray(values, dtype=NUMPY_DTYPE[kind])
    if shape == ():
        scalar: np.generic = numeric[0]
        return scalar
    return numeric.reshape(shape)


def cut(values: Any, splits: IntArray) -> list[Any]:
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
