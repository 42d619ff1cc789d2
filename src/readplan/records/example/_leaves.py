"""A decoded batch held leaf by leaf: every record's values of a leaf in one array.

The batch decoders (``decode_many``, ``parse_many``, ``FeaturesDict.batch_decoder``) check
:func:`readplan.example.decode_batch`'s columns and shape them into one :class:`Leaf` per
decoded key, nested as the decoded records nest their keys (a :class:`LeafBatch`).  From it
come both the per-record values (:meth:`LeafBatch.records`, exactly the one-record
decoder's) and a collated batch without a step per record (``readplan.reading.collate``).
``specs/example.md`` §6 is normative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray
from readplan.errors import ConfigError
from readplan.records.example._columns import Column
from readplan.records.example._kinds import BYTES, NUMPY_DTYPE
from readplan.records.example._rows import (
    NotRegularError,
    cut,
    object_array,
    records_as_dicts,
    shaped,
)
from readplan.records.example._spans import BytesSpans

if TYPE_CHECKING:
    from readplan.records.example._codec import FeatureValue

__all__ = [
    "Computed",
    "Fixed",
    "Leaf",
    "LeafBatch",
    "Ragged",
    "Table",
    "decoded_leaves",
    "fixed_leaf",
    "variable_leaf",
    "views_array",
]

# A bytes leaf is an object array of the records' bytes values.
_NUMPY_DTYPE: dict[str, np.dtype[Any]] = {**NUMPY_DTYPE, BYTES: np.dtype(object)}


@dataclass(frozen=True)
class Fixed:
    """Every record's value has one shape: record ``i``'s is ``values[i]`` (a numpy scalar,
    or a ``bytes`` object, when ``values`` is one-dimensional)."""

    values: npt.NDArray[Any]

    def __post_init__(self) -> None:
        if not (isinstance(self.values, np.ndarray) and self.values.ndim):
            raise _bad_leaf("Fixed values", self.values, "an array with the records first")

    def rows(self) -> list[Any]:
        return list(self.values)


@dataclass(frozen=True)
class Ragged:
    """Record ``i``'s value is ``values[splits[i]:splits[i + 1]]``: rows of one shape, or a
    ``list[bytes]`` when ``values`` is one.  ``present`` (None: every record) marks the
    records holding the leaf; the others have no key for it (``decode`` leaves names out)."""

    values: npt.NDArray[Any] | list[bytes]
    splits: IntArray
    present: npt.NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        splits = self.splits
        if not (
            isinstance(splits, np.ndarray)
            and splits.ndim == 1
            and splits.size
            and splits[0] == 0
            and splits[-1] == len(self.values)
        ):
            raise _bad_leaf("Ragged splits", splits, "offsets from 0 to len(values)")
        if self.present is not None and self.present.shape != (splits.size - 1,):
            raise _bad_leaf("Ragged present", self.present, "one flag per record")

    def rows(self) -> list[Any]:
        return cut(self.values, self.splits)


@dataclass(frozen=True)
class Computed:
    """Values made record by record (decoded images, raw buffers, undecoded entries)."""

    values: list[Any]

    def rows(self) -> list[Any]:
        return self.values


@dataclass(frozen=True)
class Table:
    """Values decoded straight into the batch's own array (a batch's images): collated as
    that array, without a copy; each record's value is made again by ``remake`` (the
    one-record decode of every record) only when the records are read, so that the batch's
    array stays apart from them."""

    values: npt.NDArray[Any]
    remake: Callable[[], list[Any]]

    def __post_init__(self) -> None:
        if not (isinstance(self.values, np.ndarray) and self.values.ndim):
            raise _bad_leaf("Table values", self.values, "an array with the records first")

    def rows(self) -> list[Any]:
        return self.remake()


Leaf: TypeAlias = Fixed | Ragged | Computed | Table


@dataclass(frozen=True)
class LeafBatch:
    """``size`` decoded records as leaves: ``tree`` maps each key to a :class:`Leaf` or to a
    nested tree, in the order the decoded records list their keys."""

    size: int
    tree: Mapping[str, Any]

    def records(self) -> list[dict[str, Any]]:
        """Each record's decoded value, exactly as the one-record decoder gives it."""
        return _records(self.tree, self.size)

    def sliced(self, start: int, stop: int) -> LeafBatch:
        """Records ``start`` to ``stop - 1`` (``0 <= start <= stop <= size``), leaf by leaf:
        exactly the leaves of a batch of those records alone (views of these leaves)."""
        if not 0 <= start <= stop <= self.size:
            raise _bad_leaf("LeafBatch slice", (start, stop), f"within 0 .. {self.size}")
        return LeafBatch(stop - start, _sliced(self.tree, start, stop))


def _sliced(tree: Mapping[str, Any], start: int, stop: int) -> dict[str, Any]:
    return {
        name: _sliced(node, start, stop)
        if isinstance(node, Mapping)
        else _sliced_leaf(node, start, stop)
        for name, node in tree.items()
    }


def _sliced_leaf(leaf: Leaf, start: int, stop: int) -> Leaf:
    if isinstance(leaf, Fixed):
        return Fixed(leaf.values[start:stop])
    if isinstance(leaf, Computed):
        return Computed(leaf.values[start:stop])
    if isinstance(leaf, Table):
        return Table(leaf.values[start:stop], lambda: leaf.remake()[start:stop])
    splits = leaf.splits[start : stop + 1]
    low, high = int(splits[0]), int(splits[-1])
    present = None if leaf.present is None else leaf.present[start:stop]
    return Ragged(leaf.values[low:high], splits - low, present)


def _records(tree: Mapping[str, Any], n: int) -> list[dict[str, Any]]:
    columns = [
        _records(node, n) if isinstance(node, Mapping) else node.rows() for node in tree.values()
    ]
    rows = records_as_dicts(list(tree), columns, n)
    for name, node in tree.items():
        if isinstance(node, Ragged) and node.present is not None:
            # A record without the name has no key for it: removing keeps the others' order.
            for index in np.flatnonzero(~node.present).tolist():
                del rows[index][name]
    return rows


def _bad_leaf(field: str, value: object, wanted: str) -> ConfigError:
    return ConfigError(f"{field} {value!r:.80} must be {wanted}", field=field, value=value)


def decoded_leaves(columns: Mapping[str, Column], n: int) -> LeafBatch:
    """The ``n`` records ``decode`` gives, from their columns (names in sorted order)."""
    return LeafBatch(
        n,
        {
            name: Ragged(
                _copied(column.values),
                column.row_splits,
                None if column.present.all() else column.present,
            )
            for name, column in columns.items()
        },
    )


def _copied(values: FeatureValue | BytesSpans) -> FeatureValue:
    # Records give bytes objects: spans are copied into them.
    return values.to_list() if isinstance(values, BytesSpans) else values


def fixed_leaf(
    column: Column | None,
    n: int,
    kind: str,
    shape: tuple[int, ...],
    default: Any,
    views: bool = False,
) -> Fixed:
    """Each record's ``FixedLen(shape, kind, default=default)`` value, as ``parse`` gives it;
    :class:`NotRegularError` when some record's would be an error. With ``views`` (a bytes
    column of :class:`BytesSpans`) bytes values are memoryviews, the defaults too."""
    present = np.zeros(n, dtype=np.bool_) if column is None else column.present
    if not present.all() and default is None:
        raise NotRegularError
    if column is not None:
        counts = np.diff(column.row_splits)[present]
        if column.kind != kind or (counts != math.prod(shape)).any():
            raise NotRegularError
        held = int(present.sum())
        found = _as_array(kind, column.values).reshape(held, *shape)
        if held == n:
            return Fixed(found)
    values = np.empty((n, *shape), dtype=_NUMPY_DTYPE[kind])
    if views and kind == BYTES:
        values[~present] = views_array(list(default)).reshape(shape)
    else:
        values[~present] = shaped(kind, list(default), shape)
    if column is not None:
        values[present] = found
    return Fixed(values)


def variable_leaf(column: Column | None, n: int, kind: str, inner: tuple[int, ...]) -> Ragged:
    """Each record's ``VarLen(kind, shape=(-1, *inner))`` value, as ``parse`` gives it;
    :class:`NotRegularError` when some record's would be an error."""
    if column is None:
        empty = np.empty((0, *inner), dtype=_NUMPY_DTYPE[kind])
        return Ragged(empty, np.zeros(n + 1, dtype=np.int64))
    width = math.prod(inner)
    if column.kind != kind or (column.row_splits % width).any():
        raise NotRegularError
    return Ragged(_as_array(kind, column.values).reshape(-1, *inner), column.row_splits // width)


def _as_array(kind: str, values: Any) -> npt.NDArray[Any]:
    if isinstance(values, BytesSpans):
        return views_array(values.views())
    return object_array(values) if kind == "bytes" else np.asarray(values)


def views_array(values: Sequence[Any] | npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A 1-D object array of a memoryview of each value (``np.asarray`` would read a view's
    bytes as numbers)."""
    return np.fromiter((memoryview(v) for v in values), dtype=object, count=len(values))
