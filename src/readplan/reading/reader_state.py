"""A reader's state: where it is, saved, loaded and restored (``specs/reader.md`` §4).

:class:`ReaderState` is the part of :class:`readplan.Reader` that knows the next position
of its rank, turns it into a checkpoint plus the rank's file bindings
(``specs/checkpoint.md`` §4) and continues from one.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Iterator, Mapping
from typing import Any

from readplan._internal.arrays import IntArray
from readplan._internal.closing import Closing
from readplan.errors import CheckpointError, ConfigError
from readplan.plan import ReadPlan
from readplan.reading.items import Item
from readplan.reading.options import read_state
from readplan.reading.ranks import STATE_KEY, first_share, owner, reader_bindings, resumed_position
from readplan.state.binding import ReaderBinding
from readplan.state.checkpoint import Checkpoint
from readplan.state.resume import held_files
from readplan.storage import to_str, write_bytes

__all__ = ["ReaderState"]


class ReaderState(Closing):
    """The state of a reader of ``plan``: epoch ``_epoch`` from position ``_next`` on, or
    past the last item taken of the piece ``_current`` is handing out (``(epoch, positions,
    items)``: ``items`` hands out the deliveries at ``positions`` and tells by its length
    hint how many are left)."""

    plan: ReadPlan
    epochs: int | None
    rank: int
    world_size: int
    storage_options: Mapping[str, Any] | None
    _binding: ReaderBinding
    _epoch: int
    _next: int
    _current: tuple[int, IntArray, Iterator[Item]] | None

    # -- state ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The checkpoint document after the last delivery, plus ``"reader"``: the rank and
        the binding of the files the interleave holds (``specs/checkpoint.md`` §4).

        The checkpoint's position is the lowest position of its epoch this rank has not
        delivered (with one rank: the number of records delivered in the epoch).
        """
        epoch, position = self._frontier()
        checkpoint = self.plan.checkpoint(epoch, position)
        files = self._binding.to_json(held_files(self.plan.epoch_schedule(epoch), checkpoint))
        section = {"rank": self.rank, "world_size": self.world_size, "files": files}
        return checkpoint.to_dict(extra={STATE_KEY: section})

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`state_dict` to ``path`` as JSON, atomically; ``start=path`` resumes."""
        state = json.dumps(self.state_dict(), indent=1).encode()
        write_bytes(path, state, storage_options=self.storage_options)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from ``state``: a state of this rank, a merged state, or a checkpoint."""
        if not isinstance(state, Mapping):
            raise CheckpointError(
                f"a reader state must be a mapping (from state_dict()), got {type(state).__name__}",
                field="$",
            )
        checkpoint = Checkpoint.from_dict(dict(state))
        # The plan first: a state of another split or configuration is a mismatch that
        # names what differs, not a file binding that looks damaged.
        self.plan.verify(checkpoint)
        section = state.get(STATE_KEY)
        expected = reader_bindings(section, len(self.plan.instructions))
        self._restore(checkpoint, owner=owner(section))
        self._binding.restore(expected)

    def _start_from(self, start: object) -> None:
        if isinstance(start, Checkpoint):
            self._restore(start, owner=None)
        elif isinstance(start, Mapping):
            self.load_state_dict(start)
        elif isinstance(start, (str, os.PathLike)):
            self.load_state_dict(read_state(to_str(start), self.storage_options))
        else:
            raise ConfigError(
                f"start must be a state (from state_dict()), a readplan Checkpoint or the "
                f"path of a file written by Reader.save(), got {type(start).__name__}",
                field="start",
                value=start,
            )

    def _restore(self, checkpoint: Checkpoint, *, owner: tuple[int, int] | None) -> None:
        self.plan.verify(checkpoint)
        if self.epochs is not None and checkpoint.epoch >= self.epochs:
            raise ConfigError(
                f"the state is in epoch {checkpoint.epoch}, but this reader reads epochs "
                f"0..{self.epochs - 1}; pass epochs > {checkpoint.epoch} (the total the run "
                "was started with)",
                field="epochs",
                value=self.epochs,
            )
        position = resumed_position(
            checkpoint, owner, self.rank, self.world_size, self.plan.num_examples
        )
        self.close()
        self._epoch, self._next, self._current = checkpoint.epoch, position, None
        self._binding.restore({})

    def _frontier(self) -> tuple[int, int]:
        current = self._current
        if current is not None:
            epoch, positions, rest = current
            done = len(positions) - operator.length_hint(rest)
            if done:
                return epoch, self._after(int(positions[done - 1]))
        return self._epoch, self._next

    def _after(self, position: int) -> int:
        return min(position + self.world_size, self.plan.num_examples)

    def _first_share(self, position: int) -> int:
        return first_share(position, self.rank, self.world_size, self.plan.num_examples)
