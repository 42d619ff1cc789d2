"""tf.data's shuffle buffer: the algorithm that turns Philox draws into an order.

This module reproduces ``tf.data.Dataset.range(n).shuffle(buffer_size, seed,
reshuffle_each_iteration)`` exactly: the buffer's fill, draw and refill (``specs/shuffle.md``
§5-§6), resumable from a :class:`ShuffleBufferState`.  The seeds come from
:mod:`readplan.planning.seeds`, the draws from :mod:`readplan.planning.philox`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from readplan._internal.arrays import IntArray
from readplan._internal.frozen import init_fields, plain_int
from readplan._internal.validate import a_type, check_int
from readplan.errors import ConfigError
from readplan.planning.philox import Pair, check_pair, stream_words
from readplan.planning.ring import advance_ring
from readplan.planning.seeds import epoch_seed_pair, seed_pair
from readplan.planning.swaps import swapped

__all__ = [
    "UNKNOWN_CARDINALITY",
    "ShuffleBufferState",
    "buffer_shuffle",
    "buffer_state",
    "permutation",
    "shuffle_order",
    "swapped",
]

UNKNOWN_CARDINALITY = -2
"""``tf.data.UNKNOWN_CARDINALITY``: as a buffer size, buffer the whole epoch."""

# Outputs of the sequential buffer loop are produced in batches of this many, which bounds
# the temporary arrays of draws without making per-batch overhead visible.
_BATCH = 1 << 16


def _effective_buffer_size(buffer_size: Any, n: int) -> int:
    """The number of elements the buffer holds when full; validates TF's rule (spec §5)."""
    size = check_int(buffer_size, "buffer_size")
    if size == UNKNOWN_CARDINALITY:
        return n
    if size <= 0:
        raise ConfigError(
            f"buffer_size={size} is invalid: tf.data accepts a buffer size > 0, or "
            f"UNKNOWN_CARDINALITY ({UNKNOWN_CARDINALITY}) to buffer the whole epoch, and "
            "rejects anything else with 'buffer_size must be greater than zero or "
            "UNKNOWN_CARDINALITY'; pass a positive buffer size",
            field="buffer_size",
            value=size,
        )
    return size


def _targets(pair: Pair, draws: int, sizes: IntArray) -> IntArray:
    """Draw ``draws + k`` reduced modulo ``sizes[k]``: one draw per output (spec §5)."""
    words = stream_words(pair, draws, len(sizes)).astype(np.int64)
    return np.remainder(words, sizes, out=words)


def _fisher_yates(items: list[int], targets: IntArray) -> None:
    """Step ``i`` swaps ``items[i]`` with ``items[i + targets[i]]``; outputs end up in order.

    Emitting ``items[j]`` and moving ``items[i]`` into the hole, as the spec states the
    drain, leaves the emitted element at position ``i`` when done as a swap.
    """
    moved = swapped(targets + np.arange(targets.size, dtype=np.int64), len(items))
    items[:] = [items[k] for k in moved.tolist()]


def permutation(n: int, pair: Pair) -> IntArray:
    """The full-buffer shuffle of ``range(n)`` for one iterator (specs/shuffle.md §5).

    ``pair`` is the iterator's own seed pair (see :func:`epoch_seed_pair`).  Equals
    ``buffer_shuffle(n, b, pair)`` for every ``b >= n``.
    """
    size = check_int(n, "n", minimum=0, maximum=None, what="a non-negative integer")
    checked = check_pair(pair)
    partners = _targets(checked, 0, np.arange(size, 0, -1, dtype=np.int64))
    partners += np.arange(size, dtype=np.int64)
    return swapped(partners, size)


@dataclass(frozen=True, init=False)
class ShuffleBufferState:
    """Where a shuffle buffer stands within one epoch (specs/shuffle.md §6).

    Attributes:
        buffer: input ordinals in the buffer, oldest first (the logical order of spec §5).
        consumed: input elements pulled so far; the next one pulled is ``consumed``.
        draws: stream words used so far, which is also the number of outputs so far.

    The default value is the start of an epoch.
    """

    buffer: tuple[int, ...]
    consumed: int
    draws: int

    def __init__(self, buffer: tuple[int, ...] = (), consumed: int = 0, draws: int = 0) -> None:
        # numpy integers (ordinals often come out of arrays) are stored as ints.
        if isinstance(buffer, tuple):
            buffer = tuple(map(plain_int, buffer))
        init_fields(self, buffer=buffer, consumed=plain_int(consumed), draws=plain_int(draws))
        self.__post_init__()

    def __post_init__(self) -> None:
        consumed = check_int(
            self.consumed, "consumed", minimum=0, maximum=None, what="a non-negative integer"
        )
        draws = check_int(
            self.draws, "draws", minimum=0, maximum=None, what="a non-negative integer"
        )
        if not isinstance(self.buffer, tuple):
            raise ConfigError(
                f"buffer={self.buffer!r} is {a_type(self.buffer)}; pass a tuple of input ordinals",
                field="buffer",
                value=self.buffer,
            )
        if len(self.buffer) != consumed - draws:
            raise ConfigError(
                f"buffer holds {len(self.buffer)} elements but consumed={consumed} and "
                f"draws={draws}: every pulled element is either emitted or buffered, so it "
                f"must hold consumed - draws = {consumed - draws}",
                field="buffer",
                value=self.buffer,
            )
        ordinals = [check_int(item, "buffer") for item in self.buffer]
        if len(set(ordinals)) != len(ordinals) or any(
            not 0 <= item < consumed for item in ordinals
        ):
            raise ConfigError(
                f"buffer={self.buffer!r} must hold distinct input ordinals in "
                f"[0, consumed={consumed})",
                field="buffer",
                value=self.buffer,
            )


def _check_state_fits(state: ShuffleBufferState, n: int, size: int) -> None:
    """A state must be one the buffer reaches over ``n`` inputs with this buffer size.

    Before output ``k`` (1-based) the buffer was filled, so after ``k`` outputs exactly
    ``min(n, size + k - 1)`` inputs were pulled; a different count means the state was
    taken with another ``n`` or buffer size.
    """
    expected = 0 if state.draws == 0 else min(n, size + state.draws - 1)
    if state.draws > n or state.consumed != expected:
        raise ConfigError(
            f"state (consumed={state.consumed}, draws={state.draws}) does not belong to a "
            f"shuffle of n={n} elements with a buffer of {size}: after {state.draws} outputs "
            f"that shuffle has pulled {expected} inputs; resume with the n and buffer_size "
            "the state was taken with",
            field="state",
            value=state,
        )


def _steady(ring: list[int], pair: Pair, draws: int, pulled: int, steps: int) -> list[int]:
    """``steps`` outputs from a full ring (front at 0), each followed by a refill (spec §5).

    Removing the front and appending the next input puts that input exactly where the
    front was, so the ring never moves; afterwards its front is at ``steps % len(ring)``.
    """
    size = len(ring)
    out: list[int] = []
    emit = out.append
    for done in range(0, steps, _BATCH):
        batch = min(_BATCH, steps - done)
        fronts = (np.arange(done, done + batch, dtype=np.int64)) % size
        words = stream_words(pair, draws + done, batch).astype(np.int64)
        chosen = (fronts + words % size) % size
        first_input = pulled + done
        for front, pick, item in zip(
            fronts.tolist(),
            chosen.tolist(),
            range(first_input, first_input + batch),
            strict=True,
        ):
            emit(ring[pick])
            ring[pick] = ring[front]
            ring[front] = item
    return out


def _drain(buffer: list[int], pair: Pair, draws: int, steps: int) -> list[int]:
    """``steps`` outputs once the input is exhausted; ``buffer`` keeps what is left."""
    out: list[int] = []
    for done in range(0, steps, _BATCH):
        batch = min(_BATCH, steps - done)
        length = len(buffer)
        sizes = np.arange(length, length - batch, -1, dtype=np.int64)
        _fisher_yates(buffer, _targets(pair, draws + done, sizes))
        out.extend(buffer[:batch])
        del buffer[:batch]
    return out


def buffer_shuffle(
    n: int,
    buffer_size: int,
    pair: Pair,
    *,
    state: ShuffleBufferState | None = None,
    count: int | None = None,
) -> tuple[IntArray, ShuffleBufferState]:
    """Run the shuffle buffer over inputs ``0..n-1`` (specs/shuffle.md §5, §6).

    Starting from ``state`` (None: start of the epoch), emits up to ``count`` outputs
    (None: all the rest of the epoch) for the iterator whose seed pair is ``pair``, and
    returns them with the state after them.  Resuming from that state continues the
    uninterrupted order exactly.
    """
    return _run(n, buffer_size, pair, state, count, keep=True)


def buffer_state(
    n: int,
    buffer_size: int,
    pair: Pair,
    *,
    state: ShuffleBufferState | None = None,
    count: int | None = None,
) -> ShuffleBufferState:
    """The state :func:`buffer_shuffle` returns, without its outputs (specs/shuffle.md §6).

    Memory is bounded by the buffer (and a batch of draws) whatever ``count``; time is
    linear in it, as the buffer's contents depend on every earlier draw, but no step is a
    Python step (:mod:`readplan.planning.ring` traces each position back instead).
    """
    return _run(n, buffer_size, pair, state, count, keep=False)[1]


def _run(
    n: int,
    buffer_size: int,
    pair: Pair,
    state: ShuffleBufferState | None,
    count: int | None,
    *,
    keep: bool,
) -> tuple[IntArray, ShuffleBufferState]:
    """``count`` outputs of the buffer from ``state``, and the state after them; without
    ``keep`` the outputs are not collected (an empty array is returned)."""
    total = check_int(n, "n", minimum=0, maximum=None, what="a non-negative integer")
    size = _effective_buffer_size(buffer_size, total)
    checked = check_pair(pair)
    start = ShuffleBufferState() if state is None else state
    if not isinstance(start, ShuffleBufferState):
        raise ConfigError(
            f"state={start!r} is not a ShuffleBufferState; pass one returned by "
            "buffer_shuffle(), or None for the start of the epoch",
            field="state",
            value=start,
        )
    _check_state_fits(start, total, size)
    remaining = total - start.draws
    wanted = (
        remaining
        if count is None
        else min(
            check_int(count, "count", minimum=0, maximum=None, what="a non-negative integer"),
            remaining,
        )
    )
    if wanted == 0:
        return np.empty(0, dtype=np.int64), start

    buffer = list(start.buffer)
    pulled, draws = start.consumed, start.draws
    fill = min(size - len(buffer), total - pulled)
    buffer.extend(range(pulled, pulled + fill))
    pulled += fill

    steady = min(wanted, total - pulled)
    if keep:
        out = _steady(buffer, checked, draws, pulled, steady)
    else:
        out = []
        buffer = advance_ring(buffer, checked, draws, pulled, steady)
    front = steady % len(buffer)
    buffer = buffer[front:] + buffer[:front]
    pulled += steady
    draws += steady
    if steady == wanted and steady > 0:
        # TF pulls the next input only when the next output is asked for.
        buffer.pop()
        pulled -= 1
    drained = _drain(buffer, checked, draws, wanted - steady)
    if keep:
        out += drained
    draws += wanted - steady
    return np.array(out, dtype=np.int64), ShuffleBufferState(tuple(buffer), pulled, draws)


def shuffle_order(
    n: int,
    *,
    buffer_size: int,
    seed: int | None,
    global_seed: int | None = None,
    epochs: int = 1,
    reshuffle_each_iteration: bool = True,
) -> list[IntArray]:
    """Orders of ``tf.data.Dataset.range(n).shuffle(buffer_size, seed)``, one per epoch.

    Epoch ``e`` is the ``e``-th iterator created over that one dataset object, which was
    created right after ``tf.random.set_seed(global_seed)`` (no ``set_seed`` when None).
    Normative description: specs/shuffle.md.
    """
    total = check_int(n, "n", minimum=0, maximum=None, what="a non-negative integer")
    size = _effective_buffer_size(buffer_size, total)
    count = check_int(epochs, "epochs", minimum=0, maximum=None, what="a non-negative integer")
    pair = seed_pair(seed, global_seed=global_seed)
    orders = []
    for epoch in range(count):
        iterator_pair = epoch_seed_pair(
            pair, epoch, reshuffle_each_iteration=reshuffle_each_iteration
        )
        if size >= total:
            orders.append(permutation(total, iterator_pair))
        else:
            orders.append(buffer_shuffle(total, size, iterator_pair)[0])
    return orders
