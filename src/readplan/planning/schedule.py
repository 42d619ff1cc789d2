"""One epoch's schedule: the value the order, the checkpoints and the readers work from.

``specs/order.md`` ("Epochs") is the normative description.  An epoch is fixed by the
files it feeds the interleave (in order), the closed-form interleave over them, where each
file's planned records start (its ``skip``), and, with an example-level shuffle, the
buffer's seed pair and size.  Nothing here reads a record.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from readplan._internal.arrays import IntArray
from readplan._internal.validate import check_int
from readplan.errors import ConfigError
from readplan.planning.interleave import InterleaveSchedule

__all__ = ["EpochSchedule", "check_epoch"]


@dataclass(frozen=True, eq=False)
class EpochSchedule:
    """The schedule of epoch ``epoch`` of a plan.

    Attributes:
        epoch: the epoch (0 is the first iteration over the dataset).
        files: file (instruction) indices in the order the epoch feeds them to the
            interleave; read-only.
        interleave: the interleave over ``files``' planned record counts.
        skips: per file index of the plan, the records its instruction skips; read-only.
        example_pair: the seed pair the epoch's example shuffle buffer draws from, or
            ``None`` without an example-level shuffle.
        buffer_size: the example shuffle's buffer size, or ``None``.
    """

    epoch: int
    files: IntArray
    interleave: InterleaveSchedule
    skips: IntArray
    example_pair: tuple[int, int] | None = None
    buffer_size: int | None = None

    def __post_init__(self) -> None:
        if (self.example_pair is None) != (self.buffer_size is None):
            raise ConfigError(
                "an epoch schedule needs both the example shuffle's seed pair and its buffer "
                f"size, or neither; got {self.example_pair!r} and {self.buffer_size!r}",
                field="buffer_size",
                value=self.buffer_size,
            )

    @property
    def num_examples(self) -> int:
        """Records in the epoch."""
        return self.interleave.num_records

    def check_position(self, position: int, *, allow_end: bool) -> None:
        """Refuse a position outside the epoch (``allow_end``: the end itself is valid)."""
        self.interleave.check_position(position, allow_end=allow_end)

    def records(self, inputs: IntArray, within: IntArray) -> tuple[IntArray, IntArray]:
        """``(file_index, record_index)`` of interleave inputs and indices within them.

        ``within`` is a fresh array (or a disjoint slice of one) and is turned into the
        record indices in place: a whole epoch's peak memory stays at the output arrays
        plus one temporary.
        """
        # np.take: the same gather as indexing, in fewer steps per record.
        file_index = np.take(self.files, inputs)
        if self._skipping:  # most plans skip nothing: no gather and add per record then
            within += np.take(self.skips, file_index)
        return file_index, within

    @cached_property
    def _skipping(self) -> bool:
        """Whether any file's planned records start after its first."""
        return bool(self.skips.any())


def check_epoch(epoch: object) -> int:
    """The epoch as an ``int``; anything but a non-negative int64 integer is refused."""
    return check_int(
        epoch,
        "epoch",
        minimum=0,
        what="a non-negative integer (0 is the first iteration over the dataset)",
    )
