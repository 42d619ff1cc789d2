"""What a reader delivers: :class:`Item` (one record and where it sits in the plan) and
:class:`Batch` (consecutive deliveries as arrays, with :class:`LazyRecords` for the records
of a collated batch); ``specs/reader.md``, "Deliveries"."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from operator import itemgetter
from typing import Any, TypeAlias

from readplan._internal.arrays import IntArray
from readplan._internal.validate import is_int
from readplan.errors import ConfigError
from readplan.plan import ReadPlan
from readplan.records.native import CORE

__all__ = [
    "Batch",
    "Item",
    "LazyRecords",
    "Record",
    "iter_items",
    "iter_items_pure",
    "new_items",
    "new_items_pure",
]

Record: TypeAlias = bytes | dict[str, Any]
"""What a reader delivers per record: the raw bytes, or the decoded/parsed features."""


class Item(tuple):  # type: ignore[type-arg]
    """One delivered record and where it sits in the plan.

    ``record`` is the raw bytes, or the decoded features when the reader decodes;
    ``tfds_id`` is TFDS's id of the record; ``position`` is the record's position in epoch
    ``epoch`` of the plan's global order; ``file_index`` indexes ``plan.instructions``;
    ``record_index`` is the index in the file.

    An immutable tuple underneath, so that a reader makes millions of them per second:
    items compare equal when every field does.
    """

    __slots__ = ()

    def __new__(
        cls,
        record: Record,
        tfds_id: str,
        epoch: int,
        position: int,
        file_index: int,
        record_index: int,
    ) -> Item:
        for name, value in (
            ("epoch", epoch),
            ("position", position),
            ("file_index", file_index),
            ("record_index", record_index),
        ):
            if not is_int(value) or value < 0:
                raise ConfigError(
                    f"Item.{name} must be a non-negative int, got {value!r}",
                    field=name,
                    value=value,
                )
        suffix = f"__{record_index}"
        if not isinstance(tfds_id, str) or not tfds_id.endswith(suffix):
            raise ConfigError(
                f"Item.tfds_id must be TFDS's '<file>{suffix}' for record_index "
                f"{record_index}, got {tfds_id!r}",
                field="tfds_id",
                value=tfds_id,
            )
        prefix = tfds_id[: -len(suffix)]
        return tuple.__new__(cls, (record, epoch, position, file_index, record_index, prefix))

    # The reader builds items from tuples in C (new_items); tfds_id is formatted on demand.
    record: Record = property(itemgetter(0))  # type: ignore[assignment]
    epoch: int = property(itemgetter(1))  # type: ignore[assignment]
    position: int = property(itemgetter(2))  # type: ignore[assignment]
    file_index: int = property(itemgetter(3))  # type: ignore[assignment]
    record_index: int = property(itemgetter(4))  # type: ignore[assignment]

    @property
    def tfds_id(self) -> str:
        """TFDS's ``tfds_id`` of the record, ``{file}__{index}``."""
        return f"{self[5]}__{self[4]}"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self[0], self.tfds_id, self[1], self[2], self[3], self[4])

    def __repr__(self) -> str:
        return (
            f"Item(record={self[0]!r:.60}, tfds_id={self.tfds_id!r}, epoch={self[1]}, "
            f"position={self[2]}, file_index={self[3]}, record_index={self[4]})"
        )


def new_items_pure(
    records: Sequence[Record],
    prefixes: list[str],
    epoch: int,
    positions: IntArray,
    files: IntArray,
    indices: IntArray,
) -> list[Item]:
    """One :class:`Item` per record, from a batch's columns (``prefixes[k]`` is record
    ``k``'s file's ``tfds_id`` prefix); the twin of the compiled ``make_items``."""
    if not len(records) == len(prefixes) == len(positions) == len(files) == len(indices):
        raise ValueError("make_items: every column must hold one entry per record")
    # The reader's values are valid by construction: its items skip the checks of __new__
    # and are made from tuples without a Python step per item (map calls tuple.__new__
    # itself: a partial around it costs a quarter more per item).
    rows = zip(
        records, repeat(epoch), positions.tolist(), files.tolist(), indices.tolist(), prefixes
    )
    return list(map(tuple.__new__, repeat(Item), rows))


def new_items(
    records: Sequence[Record],
    prefixes: list[str],
    epoch: int,
    positions: IntArray,
    files: IntArray,
    indices: IntArray,
) -> list[Item]:
    """:func:`new_items_pure`, by the compiled core when there is one (``specs/native.md``)."""
    if CORE is None:
        return new_items_pure(records, prefixes, epoch, positions, files, indices)
    listed = records if type(records) is list else list(records)
    made: list[Item] = CORE.make_items(Item, listed, prefixes, epoch, positions, files, indices)
    return made


def iter_items_pure(
    records: list[Record],
    names: Mapping[int, str] | Sequence[str],
    epoch: int,
    positions: IntArray,
    files: IntArray,
    indices: IntArray,
) -> Iterator[Item]:
    """An iterator over the :class:`Item` of each record (``names[f]`` is file ``f``'s
    ``tfds_id`` prefix; a file it does not name raises its lookup's error here); its
    ``__length_hint__`` is the number of items not yet handed out.  The twin of the
    compiled ``iter_items``, which makes each item when it is asked for."""
    if not len(records) == len(positions) == len(files) == len(indices):
        raise ValueError("iter_items: every column must hold one entry per record")
    prefixes = list(map(names.__getitem__, files.tolist()))
    return iter(new_items_pure(records, prefixes, epoch, positions, files, indices))


# The compiled iterator when there is a core (specs/native.md, "iter_items").
iter_items: Callable[..., Iterator[Item]] = (
    iter_items_pure if CORE is None else partial(CORE.iter_items, Item)
)


class LazyRecords(Sequence[Any]):
    """The decoded records of a collated batch, made by ``build`` when first read.

    A read-only sequence of ``size`` records: ``len`` needs no decoding; indexing, iterating,
    comparing (equal to a list of the same records) or pickling (as that list) builds the
    records once and keeps them.
    """

    __slots__ = ("_build", "_made", "_size")

    def __init__(self, size: int, build: Callable[[], list[Any]]) -> None:
        self._size = size
        self._build: Callable[[], list[Any]] | None = build
        self._made: list[Any] | None = None

    def _records(self) -> list[Any]:
        made = self._made
        if made is None:
            assert self._build is not None
            made = self._build()
            if len(made) != self._size:
                raise ConfigError(
                    f"LazyRecords promised {self._size} records, its build gave {len(made)}",
                    field="size",
                    value=len(made),
                )
            self._made, self._build = made, None
        return made

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        return self._records()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._records())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, LazyRecords)):
            return self._records() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._records())

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self._records(),))


@dataclass(frozen=True, eq=False)
class Batch:
    """Consecutive deliveries of one reader, all from epoch ``epoch``, in delivery order.

    ``records[k]`` sits at ``positions[k]`` of the epoch, record ``record_index[k]`` of file
    ``file_index[k]`` of ``plan.instructions``.  ``features`` is the batch collated into a
    dict of stacked arrays (``specs/reader.md``, "Batches"), from a decoding reader's
    ``batches(batch_size)``; ``None`` otherwise.  ``records`` is a list, except in a batch
    collated from its decoded columns: there it is a :class:`LazyRecords`, whose records
    are made from the columns only when first read (``len(batch)`` does not build them).
    """

    plan: ReadPlan = field(repr=False)
    epoch: int
    records: Sequence[Record] = field(repr=False)
    positions: IntArray = field(repr=False)
    file_index: IntArray = field(repr=False)
    record_index: IntArray = field(repr=False)
    features: dict[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        size = len(self.records)
        if self.positions.shape == self.file_index.shape == self.record_index.shape == (size,):
            return  # the rule: a reader makes millions of batches
        for name in ("positions", "file_index", "record_index"):
            array = getattr(self, name)
            if array.shape != (size,):
                raise ConfigError(
                    f"Batch.{name} must be a 1-D array of {size} entries (one per record), "
                    f"got shape {array.shape}",
                    field=name,
                    value=array.shape,
                )

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        first = int(self.positions[0]) if len(self) else None
        return f"Batch(epoch={self.epoch}, first_position={first}, len={len(self)})"

    def __getitem__(self, key: str) -> Any:
        """``batch.features[key]``: one collated feature."""
        if self.features is None:
            raise ConfigError(
                "this batch holds no collated features: they come from a decoding reader "
                "(decode=...) asked for batches(batch_size=...); use batch.records",
                field="features",
                value=key,
            )
        return self.features[key]

    def tfds_ids(self) -> list[str]:
        """TFDS's ``tfds_id`` of each record, ``{file}__{index}``."""
        return self.plan.tfds_ids(self.file_index, self.record_index)

    def iter_items(self) -> Iterator[Item]:
        """The batch's items, each made when it is taken (:func:`iter_items`); its
        ``__length_hint__`` is the number not yet taken."""
        records = self.records if type(self.records) is list else list(self.records)
        columns = (self.epoch, self.positions, self.file_index, self.record_index)
        try:
            return iter_items(records, self.plan.tfds_id_prefix_table(), *columns)
        except KeyError:  # a file not named lately: the batch's files are named
            names = self.plan.tfds_id_prefix_table(self.file_index)
            return iter_items(records, names, *columns)

    def items(self) -> list[Item]:
        """The batch as :class:`Item` objects."""
        return new_items(
            self.records,
            self.plan.tfds_id_prefixes_of(self.file_index),
            self.epoch,
            self.positions,
            self.file_index,
            self.record_index,
        )
