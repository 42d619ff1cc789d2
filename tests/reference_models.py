"""Plain, element-by-element models of tf.data behaviour, written from the specification.

They are deliberately naive (one Python step per element, no shortcuts) so that the fast
closed forms in ``readplan`` can be checked against an independent implementation. The
TFRecord frame layout is modelled the same way: frames built and walked field by field.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from crc32c import crc32c

from readplan.records._crc import mask

# tf.data.UNKNOWN_CARDINALITY as a shuffle buffer size: buffer the whole input.
UNKNOWN_CARDINALITY = -2


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


# -- tf.data shuffle: per-word Philox4x32-10 and the list form of the buffer ---------------


def ref_block(counter: list[int], key: tuple[int, int]) -> list[int]:
    x0, x1, x2, x3 = counter
    u, v = key
    for r in range(10):
        p = 0xD2511F53 * x0
        q = 0xCD9E8D57 * x2
        x0, x1, x2, x3 = (q >> 32) ^ x1 ^ u, q & 0xFFFFFFFF, (p >> 32) ^ x3 ^ v, p & 0xFFFFFFFF
        if r < 9:
            u = (u + 0x9E3779B9) & 0xFFFFFFFF
            v = (v + 0xBB67AE85) & 0xFFFFFFFF
    return [x0, x1, x2, x3]


def ref_increment(counter: list[int]) -> None:
    for i in range(4):
        counter[i] = (counter[i] + 1) & 0xFFFFFFFF
        if counter[i] != 0:
            return


def ref_stream(pair: tuple[int, int], counter: list[int] | None = None) -> Iterator[int]:
    lo, hi = pair
    key = (lo & 0xFFFFFFFF, lo >> 32)
    ctr = [0, 0, hi & 0xFFFFFFFF, hi >> 32] if counter is None else list(counter)
    while True:
        yield from ref_block(ctr, key)
        ref_increment(ctr)


def ref_words(pair: tuple[int, int], count: int) -> list[int]:
    stream = ref_stream(pair)
    return [next(stream) for _ in range(count)]


def ref_epoch_pair(pair: tuple[int, int], epoch: int) -> tuple[int, int]:
    words = ref_words(pair, 2 * epoch + 2)
    return words[2 * epoch], words[2 * epoch + 1]


def ref_buffer_order(n: int, buffer_size: int, pair: tuple[int, int]) -> list[int]:
    stream = ref_stream(pair)
    limit = n if buffer_size == UNKNOWN_CARDINALITY else buffer_size
    buf: list[int] = []
    pulled = 0
    out: list[int] = []
    while True:
        while len(buf) < limit and pulled < n:
            buf.append(pulled)
            pulled += 1
        if not buf:
            return out
        j = next(stream) % len(buf)
        out.append(buf[j])
        buf[j] = buf[0]
        del buf[0]


def ref_buffer_state(
    n: int, buffer_size: int, pair: tuple[int, int], count: int
) -> tuple[tuple[int, ...], int, int]:
    """``(buffer, pulled, draws)`` of the list model right after its first ``count`` outputs
    (TF refills only when the next output is asked for)."""
    stream = ref_stream(pair)
    limit = n if buffer_size == UNKNOWN_CARDINALITY else buffer_size
    buf: list[int] = []
    pulled = draws = 0
    while draws < count:
        while len(buf) < limit and pulled < n:
            buf.append(pulled)
            pulled += 1
        if not buf:
            break
        j = next(stream) % len(buf)
        draws += 1
        buf[j] = buf[0]
        del buf[0]
    return tuple(buf), pulled, draws


def tfrecord_frames(data: bytes) -> list[tuple[int, int]]:
    """(start, data length) of every TFRecord frame, parsed from the format's layout."""
    out, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        out.append((offset, length))
        offset += 16 + length
    return out


def tfrecord_frame(data: bytes, *, length: int | None = None) -> bytes:
    """A TFRecord frame built from the format's definition (``length`` overrides the header's
    length field, to build damaged frames)."""
    head = struct.pack("<Q", len(data) if length is None else length)
    return (
        head + struct.pack("<I", mask(crc32c(head))) + data + struct.pack("<I", mask(crc32c(data)))
    )
