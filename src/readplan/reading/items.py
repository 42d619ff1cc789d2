"""What a reader delivers: :class:`Item` (one record and where it sits in the plan) and
:class:`Batch` (consecutive deliveries as arrays, with :class:`LazyRecords` for the records
of a collated batch); ``specs/reader.md``, "Deliveries"."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat, starmap
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeAlias

from readplan._internal.arrays import IntArray
from readplan._internal.validate import is_int
from readplan.errors import ConfigError
from readplan.plan import ReadPlan
from readplan.records.native import CORE

__all__ = [
    "Batch",
    "Item",
    "ItemPure",
    "LazyRecords",
    "Record",
    "int64_of",
    "iter_items",
    "iter_items_pure",
    "made_item",
    "new_items",
    "new_items_pure",
    "prefix_checked",
]

Record: TypeAlias = bytes | dict[str, Any]
"""What a reader delivers per record: the raw bytes, or the decoded/parsed features."""


class ItemPure:
    """One delivered record and where it sits in the plan (``specs/reader.md``, "Deliveries").

    ``record`` is the raw bytes, or the decoded features when the reader decodes;
    ``tfds_id`` is TFDS's id of the record; ``position`` is the record's position in epoch
    ``epoch`` of the plan's global order; ``file_index`` indexes ``plan.instructions``;
    ``record_index`` is the index in the file.  Immutable; items compare equal when every
    field does, and hash alike then.

    The twin of the compiled core's ``Item`` (``specs/native.md``, "Item"): ``readplan.Item``
    is that type when the core is built, and this class otherwise.
    """

    __slots__ = ("_epoch", "_file_index", "_position", "_prefix", "_record", "_record_index")
    _record: Record
    _epoch: int
    _position: int
    _file_index: int
    _record_index: int
    _prefix: str

    def __new__(
        cls,
        record: Record,
        tfds_id: str,
        epoch: int,
        position: int,
        file_index: int,
        record_index: int,
    ) -> ItemPure:
        for name, value in (
            ("epoch", epoch),
            ("position", position),
            ("file_index", file_index),
            ("record_index", record_index),
        ):
            if not is_int(value) or not 0 <= value < 2**63:
                raise ConfigError(
                    f"Item.{name} must be a non-negative int below 2**63, got {value!r}",
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
        return made_item(
            record, str(tfds_id[: -len(suffix)]), epoch, position, file_index, record_index
        )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("type 'readplan.reading.items.Item' is not an acceptable base type")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Item is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Item is immutable: cannot delete {name!r}")

    record: Record = property(attrgetter("_record"))  # type: ignore[assignment]
    epoch: int = property(attrgetter("_epoch"))  # type: ignore[assignment]
    position: int = property(attrgetter("_position"))  # type: ignore[assignment]
    file_index: int = property(attrgetter("_file_index"))  # type: ignore[assignment]
    record_index: int = property(attrgetter("_record_index"))  # type: ignore[assignment]

    @property
    def tfds_id(self) -> str:
        """TFDS's ``tfds_id`` of the record, ``{file}__{index}``."""
        return f"{self._prefix}__{self._record_index}"

    def _key(self) -> tuple[Any, ...]:
        return (
            self._record,
            self._epoch,
            self._position,
            self._file_index,
            self._record_index,
            self._prefix,
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not ItemPure:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as readplan.reading.items.Item, whichever core loads it.
        return (Item, (self._record, self.tfds_id, *self._key()[1:5]))

    def __repr__(self) -> str:
        return (
            f"Item(record={self._record!r:.60}, tfds_id={self.tfds_id!r}, epoch={self._epoch}, "
            f"position={self._position}, file_index={self._file_index}, "
            f"record_index={self._record_index})"
        )


ItemPure.__name__ = ItemPure.__qualname__ = "Item"
# Each slot's own setter: ItemPure.__setattr__ refuses every assignment.
_set_record = vars(ItemPure)["_record"].__set__
_set_epoch = vars(ItemPure)["_epoch"].__set__
_set_position = vars(ItemPure)["_position"].__set__
_set_file_index = vars(ItemPure)["_file_index"].__set__
_set_record_index = vars(ItemPure)["_record_index"].__set__
_set_prefix = vars(ItemPure)["_prefix"].__set__


def made_item(
    record: Record, prefix: str, epoch: int, position: int, file_index: int, record_index: int
) -> ItemPure:
    """An :class:`ItemPure` of fields known to be valid (the kernels' twins make these): one
    call per slot, unrolled (a loop over the setters costs twice as much per item)."""
    item = object.__new__(ItemPure)
    _set_record(item, record)
    _set_epoch(item, epoch)
    _set_position(item, position)
    _set_file_index(item, file_index)
    _set_record_index(item, record_index)
    _set_prefix(item, prefix)
    return item


# The compiled type when there is a core (specs/native.md, "Item").
if TYPE_CHECKING:
    Item = ItemPure
else:
    Item = ItemPure if CORE is None else CORE.Item


def int64_of(value: object, who: str) -> int:
    """``value`` when it is an int (not a bool) in 0 .. 2**63 - 1, as the kernels put into
    items; a ``ValueError`` naming ``who`` otherwise (the compiled kernels' check)."""
    if not is_int(value) or not 0 <= value < 2**63:
        raise ValueError(f"{who} must be a non-negative int below 2**63, got {value!r}")
    return value


def prefix_checked(prefix: Any, file: int, who: str) -> str:
    """``prefix`` when it is a ``str``; the compiled kernels' ``TypeError`` otherwise."""
    if not isinstance(prefix, str):
        raise TypeError(
            f"{who}: names[{file}] must be a str (the file's tfds_id prefix), got {prefix!r}"
        )
    return prefix


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
    int64_of(epoch, "make_items: epoch")
    if not len(records) == len(prefixes) == len(positions) == len(files) == len(indices):
        raise ValueError("make_items: every column must hold one entry per record")
    listed_files = files.tolist()
    for prefix, file in zip(prefixes, listed_files, strict=True):
        prefix_checked(prefix, file, "make_items")
    rows = zip(records, prefixes, repeat(epoch), positions.tolist(), listed_files, indices.tolist())
    return list(starmap(made_item, rows))


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
    int64_of(epoch, "iter_items: epoch")
    if not len(records) == len(positions) == len(files) == len(indices):
        raise ValueError("iter_items: every column must hold one entry per record")
    listed_files = files.tolist()
    prefixes = [prefix_checked(names[file], file, "iter_items") for file in listed_files]
    rows = zip(records, prefixes, repeat(epoch), positions.tolist(), listed_files, indices.tolist())
    return iter(list(starmap(made_item, rows)))


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
