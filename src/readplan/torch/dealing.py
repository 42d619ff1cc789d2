"""How the positions of a pass are dealt to the consumers of a loader (``specs/reader.md`` §6).

The epochs an iteration reads are one sequence: index ``g`` counts the positions from the
iteration's origin (a pass's first position, or where a merged state stands) across epoch
ends.  Consumer ``c`` of ``C`` delivers the indices ``g ≡ c (mod C)``.  A DataLoader takes
one item from each worker in turn, so a loader over ``W`` workers yields its rank's
positions in order whatever the length of an epoch; within one epoch this is elastic mode
(``reader.md`` §5) with a rank that turns from epoch to epoch: :meth:`Dealing.rank_in`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from readplan._internal.validate import is_int
from readplan.errors import CheckpointError
from readplan.reading.ranks import count_below

__all__ = ["LOADER_KEY", "Dealing", "batches", "yielded_per_pass"]

LOADER_KEY = "loader"
"""The section a dataset adds to its consumer's reader state:
``{"consumer", "consumers", "origin": [epoch, position]}``."""


@dataclass(frozen=True)
class Dealing:
    """Consumer ``consumer`` of ``consumers``, dealing from ``origin`` over epochs of ``size``."""

    consumer: int
    consumers: int
    origin_epoch: int
    origin_position: int
    size: int

    def __post_init__(self) -> None:
        if not 0 <= self.consumer < self.consumers:
            raise CheckpointError(
                f"consumer {self.consumer} is not one of 0..{self.consumers - 1}",
                field=f"{LOADER_KEY}.consumer",
            )
        if not (0 <= self.origin_position <= self.size and self.origin_epoch >= 0):
            raise CheckpointError(
                f"the origin (epoch {self.origin_epoch}, position {self.origin_position}) is "
                f"not a place in epochs of {self.size} positions",
                field=f"{LOADER_KEY}.origin",
            )

    def rank_in(self, epoch: int) -> int:
        """The elastic rank (of ``consumers``) whose positions this consumer reads in ``epoch``."""
        first = (epoch - self.origin_epoch) * self.size - self.origin_position
        return (self.consumer - first) % self.consumers

    def first_position(self, epoch: int) -> int:
        return self.origin_position if epoch == self.origin_epoch else 0

    def owned(self, epoch: int, low: int, high: int) -> int:
        """This consumer's positions of ``epoch`` in ``[low, high)``."""
        low = max(low, self.first_position(epoch))
        if high <= low:
            return 0
        rank = self.rank_in(epoch)
        return count_below(high, rank, self.consumers) - count_below(low, rank, self.consumers)

    def section(self) -> dict[str, Any]:
        return {
            "consumer": self.consumer,
            "consumers": self.consumers,
            "origin": [self.origin_epoch, self.origin_position],
        }

    @classmethod
    def from_section(cls, section: object, size: int) -> Dealing:
        fields = ("consumer", "consumers", "origin")
        origin = section.get("origin") if isinstance(section, Mapping) else None
        if (
            not isinstance(section, Mapping)
            or sorted(section) != sorted(fields)
            or not all(is_int(section[name]) for name in fields[:2])
            or not isinstance(origin, list)
            or len(origin) != 2
            or not all(is_int(value) for value in origin)
        ):
            raise CheckpointError(
                f"{LOADER_KEY!r} must be an object {{consumer, consumers, origin: [epoch, "
                f"position]}} of integers, got {section!r:.120}",
                field=LOADER_KEY,
            )
        return cls(section["consumer"], section["consumers"], origin[0], origin[1], size)


def batches(count: int, size: int, drop_remainder: bool) -> int:
    """Batches of ``size`` cut from ``count`` records (the last short, or dropped)."""
    return count // size if drop_remainder else -(-count // size)


def yielded_per_pass(
    size: int,
    epochs: int,
    consumer: int,
    consumers: int,
    batch_size: int | None,
    drop_remainder: bool,
) -> int:
    """What one consumer yields over a whole pass of ``epochs`` from its first position:
    items, or with ``batch_size`` its batches, each of one epoch."""
    dealing = Dealing(consumer, consumers, 0, 0, size)
    if batch_size is None:
        return count_below(epochs * size, consumer, consumers)
    return sum(
        batches(dealing.owned(epoch, 0, size), batch_size, drop_remainder)
        for epoch in range(epochs)
    )
