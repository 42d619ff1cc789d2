"""What a reader delivers: :class:`Item` (one record and where it sits in the plan) and
:class:`Batch` (consecutive deliveries as arrays); ``specs/reader.md``, "Deliveries"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from readplan._internal.validate import is_int
from readplan.errors import ConfigError
from readplan.plan import ReadPlan

__all__ = ["Batch", "Item", "Record", "new_items"]

IntArray = npt.NDArray[np.int64]
Record: TypeAlias = bytes | dict[str, Any]
"""What a reader delivers per record: the raw bytes, or the decoded/parsed features."""


@dataclass(frozen=True, slots=True)
class Item:
    """One delivered record and where it sits in the plan.

    ``record`` is the raw bytes, or the decoded features when the reader decodes;
    ``position`` is the record's position in epoch ``epoch`` of the plan's global order;
    ``file_index`` indexes ``plan.instructions``; ``record_index`` is the index in the file.
    """

    record: Record
    tfds_id: str
    epoch: int
    position: int
    file_index: int
    record_index: int

    def __post_init__(self) -> None:
        for name in ("epoch", "position", "file_index", "record_index"):
            value = getattr(self, name)
            if not is_int(value) or value < 0:
                raise ConfigError(
                    f"Item.{name} must be a non-negative int, got {value!r}",
                    field=name,
                    value=value,
                )


_ITEM_SETTERS = tuple(
    getattr(Item, name).__set__
    for name in ("record", "tfds_id", "epoch", "position", "file_index", "record_index")
)


def new_items(
    records: Sequence[Record],
    ids: Sequence[str],
    epoch: int,
    positions: Sequence[int],
    files: Sequence[int],
    indices: Sequence[int],
) -> list[Item]:
    # A frozen dataclass's __init__ costs twice as much as filling the slots directly; the
    # reader's values are valid by construction, so its own items skip __post_init__.
    set_record, set_id, set_epoch, set_position, set_file, set_index = _ITEM_SETTERS
    new = object.__new__
    items = []
    for record, tfds_id, position, file_index, index in zip(
        records, ids, positions, files, indices
    ):
        item = new(Item)
        set_record(item, record)
        set_id(item, tfds_id)
        set_epoch(item, epoch)
        set_position(item, position)
        set_file(item, file_index)
        set_index(item, index)
        items.append(item)
    return items


@dataclass(frozen=True, eq=False)
class Batch:
    """Consecutive deliveries of one reader, all from epoch ``epoch``, in delivery order.

    ``records[k]`` sits at ``positions[k]`` of the epoch, record ``record_index[k]`` of file
    ``file_index[k]`` of ``plan.instructions``.
    """

    plan: ReadPlan = field(repr=False)
    epoch: int
    records: list[Record] = field(repr=False)
    positions: IntArray = field(repr=False)
    file_index: IntArray = field(repr=False)
    record_index: IntArray = field(repr=False)

    def __post_init__(self) -> None:
        size = len(self.records)
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

    def tfds_ids(self) -> list[str]:
        """TFDS's ``tfds_id`` of each record, ``{file}__{index}``."""
        return self.plan.tfds_ids(self.file_index, self.record_index)

    def items(self) -> list[Item]:
        """The batch as :class:`Item` objects."""
        return new_items(
            self.records,
            self.tfds_ids(),
            self.epoch,
            self.positions.tolist(),
            self.file_index.tolist(),
            self.record_index.tolist(),
        )
