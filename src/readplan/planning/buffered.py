"""An epoch's order through its example shuffle buffer, streamed (``specs/order.md`` §4).

The buffer's outputs are interleave positions. Each one is given its interleave record
(input and index within it) by holding, next to the positions the buffer holds, their
records: the positions it pulls arrive in order, from the interleave's own stream, so
memory is the buffer, the files and a batch of outputs, whatever the epoch's size.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.planning.interleave import InterleaveSchedule
from readplan.planning.schedule import EpochSchedule
from readplan.planning.shuffle import ShuffleBufferState, buffer_shuffle, buffer_state

__all__ = ["iter_buffered", "iter_permuted"]

# Outputs drawn per batch: at least this many and a few buffers' worth, so that what each
# batch costs over the buffer is shared by many outputs.
_MIN_BATCH = 1 << 16
_BUFFERS_PER_BATCH = 4


def iter_buffered(
    schedule: EpochSchedule,
    *,
    start: int,
    chunk_size: int,
    state: ShuffleBufferState | None = None,
) -> Iterator[tuple[IntArray, IntArray]]:
    """Interleave ``(inputs, within)`` of the shuffled epoch from position ``start``, in
    chunks of ``chunk_size`` (the last may be shorter).

    ``state`` is the buffer's state at ``start`` when known (a checkpoint's); otherwise it
    is simulated (linear in ``start``, memory of the buffer).
    """
    assert schedule.example_pair is not None
    assert schedule.buffer_size is not None
    total, size, pair = schedule.num_examples, schedule.buffer_size, schedule.example_pair
    if state is None:
        state = buffer_state(total, size, pair, count=start)
    held = _Held.of(schedule.interleave, state)
    pulled = _Records(schedule.interleave, state.consumed)
    # The first chunk is drawn alone (a caller often wants just that one), the rest in
    # batches.
    batch = chunk_size
    pending = _Records.empty()
    while state.draws < total:
        out, after = buffer_shuffle(total, size, pair, state=state, count=batch)
        batch = max(chunk_size, _MIN_BATCH, _BUFFERS_PER_BATCH * min(size, total))
        held.add(state.consumed, pulled.take(after.consumed - state.consumed))
        state = after
        pending = _Records.joined(pending, held.pop(out))
        while pending[0].size >= chunk_size:
            yield pending[0][:chunk_size], pending[1][:chunk_size]
            pending = pending[0][chunk_size:], pending[1][chunk_size:]
    if pending[0].size:
        yield pending


def iter_permuted(
    order: tuple[IntArray, IntArray], positions: IntArray, *, start: int, chunk_size: int
) -> Iterator[tuple[IntArray, IntArray]]:
    """The same chunks from the whole interleave ``order`` and the buffer's permutation of
    the epoch ``positions`` (both held: a cached epoch walked again from any start)."""
    for first in range(start, positions.size, chunk_size):
        chosen = positions[first : first + chunk_size]
        yield order[0][chosen], order[1][chosen]


class _Held:
    """The positions in the buffer, ascending, with their interleave records."""

    def __init__(self, positions: IntArray, records: tuple[IntArray, IntArray]) -> None:
        self.positions = positions
        self.inputs, self.within = records

    @classmethod
    def of(cls, interleave: InterleaveSchedule, state: ShuffleBufferState) -> _Held:
        """The buffer of ``state``: its positions' records streamed from the oldest one."""
        positions = np.sort(np.array(state.buffer, dtype=np.int64))
        inputs = np.empty_like(positions)
        within = np.empty_like(positions)
        if positions.size:
            first = int(positions[0])
            stream = interleave.iter_chunks(start=first, chunk_size=_MIN_BATCH)
            for chunk_inputs, chunk_within in stream:
                ends = np.searchsorted(positions, [first, first + chunk_inputs.size])
                mine = slice(int(ends[0]), int(ends[1]))
                inputs[mine] = chunk_inputs[positions[mine] - first]
                within[mine] = chunk_within[positions[mine] - first]
                first += chunk_inputs.size
                if first >= state.consumed:
                    break
        return cls(positions, (inputs, within))

    def add(self, first: int, records: tuple[IntArray, IntArray]) -> None:
        """Positions ``first, first + 1, ...`` (beyond every held one) and their records."""
        count = records[0].size
        self.positions = np.concatenate(
            [self.positions, np.arange(first, first + count, dtype=np.int64)]
        )
        self.inputs = np.concatenate([self.inputs, records[0]])
        self.within = np.concatenate([self.within, records[1]])

    def pop(self, positions: IntArray) -> tuple[IntArray, IntArray]:
        """The records of ``positions`` (all held), no longer held."""
        where = np.searchsorted(self.positions, positions)
        records = self.inputs[where], self.within[where]
        keep = np.ones(self.positions.size, dtype=bool)
        keep[where] = False
        self.positions = self.positions.compress(keep)
        self.inputs = self.inputs.compress(keep)
        self.within = self.within.compress(keep)
        return records


class _Records:
    """The interleave's records from one position on, taken a number at a time."""

    def __init__(self, interleave: InterleaveSchedule, start: int) -> None:
        self._stream = interleave.iter_chunks(start=start, chunk_size=_MIN_BATCH)
        self._left = self.empty()

    def take(self, count: int) -> tuple[IntArray, IntArray]:
        parts = [self._left]
        have = self._left[0].size
        while have < count:
            part = next(self._stream)
            parts.append(part)
            have += part[0].size
        inputs, within = self.joined(*parts)
        self._left = inputs[count:], within[count:]
        return inputs[:count], within[:count]

    @staticmethod
    def empty() -> tuple[IntArray, IntArray]:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)

    @staticmethod
    def joined(*parts: tuple[IntArray, IntArray]) -> tuple[IntArray, IntArray]:
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
