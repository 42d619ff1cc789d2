"""Plain, element-by-element models of tf.data behaviour, written from the specification.

They are deliberately naive (one Python step per element, no shortcuts) so that the fast
closed forms in ``readplan`` can be checked against an independent implementation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field


@dataclass
class ReferenceInterleave:
    """The sequential interleave state machine of ``specs/order.md``, stepped per output.

    Inputs are given by their lengths; an input yields ``(input_index, record)`` pairs.
    """

    lengths: Sequence[int]
    cycle_length: int
    block_length: int
    slots: list[int | None] = field(init=False)
    offsets: list[int] = field(init=False)
    cursor: int = 0
    block_counter: int = 0
    next_input: int = 0
    inputs_done: bool = False
    consumed: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.slots = [None] * self.cycle_length
        self.offsets = [0] * self.cycle_length
        self.consumed = [0] * len(self.lengths)

    def _move_on(self) -> None:
        self.block_counter = 0
        self.cursor = (self.cursor + 1) % self.cycle_length

    def next(self) -> tuple[int, int] | None:
        while True:
            open_count = sum(s is not None for s in self.slots)
            if self.inputs_done and open_count == 0:
                return None
            current = self.slots[self.cursor]
            if current is None:
                if self.inputs_done:
                    self._move_on()
                    continue
                if self.next_input == len(self.lengths):
                    self.inputs_done = True
                    continue
                self.slots[self.cursor] = self.next_input
                self.offsets[self.cursor] = 0
                self.next_input += 1
                continue
            offset = self.offsets[self.cursor]
            if offset == self.lengths[current]:
                self.slots[self.cursor] = None
                self._move_on()
                continue
            self.offsets[self.cursor] = offset + 1
            self.consumed[current] += 1
            self.block_counter += 1
            if self.block_counter == self.block_length:
                self._move_on()
            return current, offset

    def __iter__(self) -> Iterator[tuple[int, int]]:
        while (item := self.next()) is not None:
            yield item

    def snapshot(self) -> dict[str, object]:
        return {
            "slots": [
                (s, self.offsets[k] if s is not None else 0) for k, s in enumerate(self.slots)
            ],
            "cursor": self.cursor,
            "block_counter": self.block_counter,
            "next_input": self.next_input,
            "inputs_done": self.inputs_done,
            "consumed": list(self.consumed),
        }


def reference_interleave(
    lengths: Sequence[int], cycle_length: int, block_length: int
) -> list[tuple[int, int]]:
    return list(ReferenceInterleave(list(lengths), cycle_length, block_length))
