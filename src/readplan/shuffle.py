"""tf.data shuffle orders, reproduced exactly without TensorFlow.

This module reproduces ``tf.data.Dataset.range(n).shuffle(buffer_size, seed,
reshuffle_each_iteration)`` under TensorFlow's global/op seed rules: the seed pair an op
gets, the seeds each new iterator draws, the Philox4x32-10 stream, and the buffer
algorithm that turns draws into an order.  The normative description is
``specs/shuffle.md``; every function here points to the section it implements.
"""

from __future__ import annotations

import operator
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.errors import ConfigError

__all__ = [
    "DEFAULT_GRAPH_SEED",
    "MAX_INT32",
    "UNKNOWN_CARDINALITY",
    "ShuffleBufferState",
    "buffer_shuffle",
    "epoch_seed_pair",
    "permutation",
    "philox4x32",
    "seed_pair",
    "shuffle_order",
    "stream_words",
]

DEFAULT_GRAPH_SEED = 87654321
"""First seed of an op that has an op seed but no global seed (specs/shuffle.md §1)."""

MAX_INT32 = 2**31 - 1
"""Modulus that folds user seeds into range; also the replacement for a zero second seed."""

UNKNOWN_CARDINALITY = -2
"""``tf.data.UNKNOWN_CARDINALITY``: as a buffer size, buffer the whole epoch."""

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1
_MUL_A = 0xD2511F53
_MUL_B = 0xCD9E8D57
_BUMP_0 = 0x9E3779B9
_BUMP_1 = 0xBB67AE85
_ROUNDS = 10
_WORDS_PER_BLOCK = 4
# Multipliers as a column so one ufunc call forms both products of a round.
_MULTIPLIERS = np.array([[_MUL_A], [_MUL_B]], dtype=np.uint64)
# Outputs of the sequential buffer loop are produced in batches of this many, which bounds
# the temporary arrays of draws without making per-batch overhead visible.
_BATCH = 1 << 16

Pair = tuple[int, int]
Int64Array = npt.NDArray[np.int64]
UInt32Array = npt.NDArray[np.uint32]


def _integer(value: Any, field: str) -> int:
    """``value`` as a Python int; ConfigError for bools, floats, strings and the like."""
    if isinstance(value, bool):
        raise ConfigError(f"{field}={value!r} is a bool; pass an integer", field=field, value=value)
    try:
        return operator.index(value)
    except TypeError:
        raise ConfigError(
            f"{field}={value!r} is not an integer ({type(value).__name__}); pass an int",
            field=field,
            value=value,
        ) from None


def _non_negative(value: Any, field: str) -> int:
    number = _integer(value, field)
    if number < 0:
        raise ConfigError(
            f"{field}={number} is negative; it counts something and must be >= 0",
            field=field,
            value=number,
        )
    return number


def _checked_pair(pair: Any) -> Pair:
    """A seed pair of two uint64 values, the form Philox is constructed from (spec §3)."""
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise ConfigError(
            f"pair={pair!r} is not a (seed, seed2) tuple of two integers; build it with "
            "seed_pair() or epoch_seed_pair()",
            field="pair",
            value=pair,
        )
    lo, hi = (_integer(word, "pair") for word in pair)
    if not (0 <= lo <= _MASK64 and 0 <= hi <= _MASK64):
        raise ConfigError(
            f"pair={pair!r} has a value outside [0, 2**64): Philox takes two unsigned 64-bit "
            "seeds; build the pair with seed_pair(), which folds any int into range",
            field="pair",
            value=pair,
        )
    return lo, hi


# --- seeds (spec §1, §2) ---------------------------------------------------------------


def _fold(value: int) -> int:
    return value % MAX_INT32


def _unseeded_op_seed(global_seed: int, unseeded_index: int) -> int:
    """The op seed TF invents for the ``unseeded_index``-th unseeded op after set_seed.

    TF draws these from Python's own ``random.Random(global_seed)``, so using the same
    generator here keeps readplan in step with TF running under the same Python.
    """
    draws = random.Random(global_seed)
    seed = 0
    for _ in range(unseeded_index + 1):
        seed = draws.randint(0, MAX_INT32)
    return seed


def seed_pair(seed: int | None, *, global_seed: int | None = None, unseeded_index: int = 0) -> Pair:
    """The ``(seed, seed2)`` pair TF gives a shuffle op (specs/shuffle.md §1).

    ``global_seed`` is the value of the last ``tf.random.set_seed`` (None: never set or
    cleared).  ``unseeded_index`` only matters when ``seed`` is None: it counts the
    unseeded random ops created since that ``set_seed`` before this one.
    """
    index = _non_negative(unseeded_index, "unseeded_index")
    op_seed = None if seed is None else _integer(seed, "seed")
    graph_seed = None if global_seed is None else _integer(global_seed, "global_seed")
    if graph_seed is None:
        if op_seed is None:
            raise ConfigError(
                "seed=None with no global seed: TensorFlow would draw fresh random seeds "
                "for every run, so the order is not reproducible and cannot be computed; "
                "pass seed=<int> (the shuffle seed) or global_seed=<int> "
                "(the value given to tf.random.set_seed)",
                field="seed",
                value=None,
            )
        return DEFAULT_GRAPH_SEED, _fold(op_seed)
    if op_seed is None:
        op_seed = _unseeded_op_seed(graph_seed, index)
    pair = (_fold(graph_seed), _fold(op_seed))
    # (0, 0) is the kernel's "pick random seeds" sentinel, so TF moves it out of the way.
    return (0, MAX_INT32) if pair == (0, 0) else pair


def epoch_seed_pair(pair: Pair, epoch: int, *, reshuffle_each_iteration: bool = True) -> Pair:
    """The seed pair of the ``epoch``-th iterator over a shuffle dataset (spec §2).

    With reshuffling these are words ``2*epoch`` and ``2*epoch + 1`` of the op's own
    stream, found in O(1) because Philox is counter-based; without it, ``pair`` itself.
    """
    checked = _checked_pair(pair)
    index = _non_negative(epoch, "epoch")
    if not reshuffle_each_iteration:
        return checked
    first, second = stream_words(checked, 2 * index, 2).tolist()
    return int(first), int(second)


# --- Philox4x32-10 (spec §3, §4) -------------------------------------------------------


def _round_keys(k0: int, k1: int) -> npt.NDArray[np.uint64]:
    """The key of every round, shape (rounds, 2, 1): the key bumped once per round."""
    keys = [((k0 + r * _BUMP_0) & _MASK32, (k1 + r * _BUMP_1) & _MASK32) for r in range(_ROUNDS)]
    return np.array(keys, dtype=np.uint64).reshape(_ROUNDS, 2, 1)


def _philox_words(
    even: npt.NDArray[np.uint64], odd: npt.NDArray[np.uint64], k0: int, k1: int
) -> UInt32Array:
    """Blocks for the counters ``(even[0], odd[0], even[1], odd[1])``, as words (m, 4).

    Words 0 and 2 of a block are multiplied and words 1 and 3 are mixed in, so the state
    is kept as those two pairs and each round is five whole-array operations in place.
    """
    products = np.empty_like(even)
    for key in _round_keys(k0, k1):
        np.multiply(even, _MULTIPLIERS, out=products)
        swapped = products[::-1]
        np.right_shift(swapped, 32, out=even)
        np.bitwise_xor(even, odd, out=even)
        np.bitwise_xor(even, key, out=even)
        np.bitwise_and(swapped, _MASK32, out=odd)
    words = np.empty((even.shape[1], _WORDS_PER_BLOCK), dtype=np.uint32)
    words[:, 0::2] = even.T
    words[:, 1::2] = odd.T
    return words


def philox4x32(counters: npt.ArrayLike, key: tuple[int, int]) -> UInt32Array:
    """Philox4x32-10 blocks (specs/shuffle.md §3), vectorised over counters.

    ``counters`` has shape ``(..., 4)`` holding ``c0..c3`` (``c0`` least significant) as
    values in [0, 2**32); ``key`` is ``(k0, k1)``.  Returns the output words, same shape.
    """
    array = np.asarray(counters)
    if array.ndim == 0 or array.shape[-1] != _WORDS_PER_BLOCK:
        raise ConfigError(
            f"counters has shape {array.shape}; Philox4x32 counters are four 32-bit words, "
            "so pass an array of shape (..., 4)",
            field="counters",
            value=array.shape,
        )
    if array.size and (
        not np.issubdtype(array.dtype, np.integer) or array.min() < 0 or array.max() > _MASK32
    ):
        raise ConfigError(
            f"counters has dtype {array.dtype} or values outside [0, 2**32); each counter "
            "word is an unsigned 32-bit integer",
            field="counters",
            value=array.dtype,
        )
    if not isinstance(key, tuple) or len(key) != 2:
        raise ConfigError(
            f"key={key!r} is not a (k0, k1) tuple; Philox4x32 has a 64-bit key as two 32-bit words",
            field="key",
            value=key,
        )
    k0, k1 = (_integer(word, "key") for word in key)
    if not (0 <= k0 <= _MASK32 and 0 <= k1 <= _MASK32):
        raise ConfigError(
            f"key={key!r} has a word outside [0, 2**32); each key word is 32-bit",
            field="key",
            value=key,
        )
    flat = array.reshape(-1, _WORDS_PER_BLOCK).astype(np.uint64)
    even = np.ascontiguousarray(flat[:, 0::2].T)
    odd = np.ascontiguousarray(flat[:, 1::2].T)
    return _philox_words(even, odd, k0, k1).reshape(array.shape)


def _block_counters(
    hi: int, first_block: int, blocks: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Counter word pairs of blocks ``first_block ..``, as (even, odd) rows (spec §3).

    A stream's counter starts at ``hi << 64`` and block ``b`` uses that plus ``b``, modulo
    2**128; the low half is advanced in uint64 and a wrap carries into the high half.
    """
    start = ((hi << 64) + first_block) & _MASK128
    low = np.arange(blocks, dtype=np.uint64)
    low += np.uint64(start & _MASK64)
    high = np.full(blocks, start >> 64, dtype=np.uint64)
    high += low < np.uint64(start & _MASK64)
    even = np.stack([low & _MASK32, high & _MASK32])
    odd = np.stack([low >> 32, high >> 32])
    return even, odd


def stream_words(pair: Pair, start: int, count: int) -> UInt32Array:
    """Words ``[start, start + count)`` of the stream ``SingleSample(Philox(pair))``.

    The stream is specified in specs/shuffle.md §3-§4: key ``(lo & 0xFFFFFFFF, lo >> 32)``,
    counter ``(0, 0, hi & 0xFFFFFFFF, hi >> 32)``, four words per block in order.  Any
    ``start`` costs the same: only the blocks covering the requested words are computed.
    """
    lo, hi = _checked_pair(pair)
    first = _non_negative(start, "start")
    length = _non_negative(count, "count")
    if length == 0:
        return np.empty(0, dtype=np.uint32)
    first_block, skip = divmod(first, _WORDS_PER_BLOCK)
    blocks = (skip + length + _WORDS_PER_BLOCK - 1) // _WORDS_PER_BLOCK
    even, odd = _block_counters(hi, first_block, blocks)
    words = _philox_words(even, odd, lo & _MASK32, lo >> 32).reshape(-1)
    return words[skip : skip + length]


# --- buffer algorithm (spec §5, §6) ----------------------------------------------------


def _effective_buffer_size(buffer_size: Any, n: int) -> int:
    """The number of elements the buffer holds when full; validates TF's rule (spec §5)."""
    size = _integer(buffer_size, "buffer_size")
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


def _targets(pair: Pair, draws: int, sizes: Int64Array) -> Int64Array:
    """Draw ``draws + k`` reduced modulo ``sizes[k]``: one draw per output (spec §5)."""
    words = stream_words(pair, draws, len(sizes)).astype(np.int64)
    return words % sizes


def _fisher_yates(items: list[int], targets: Int64Array) -> None:
    """Step ``i`` swaps ``items[i]`` with ``items[i + targets[i]]``; outputs end up in order.

    Emitting ``items[j]`` and moving ``items[i]`` into the hole, as the spec states the
    drain, leaves the emitted element at position ``i`` when done as a swap.
    """
    for i, j in enumerate((targets + np.arange(len(targets))).tolist()):
        items[i], items[j] = items[j], items[i]


def permutation(n: int, pair: Pair) -> Int64Array:
    """The full-buffer shuffle of ``range(n)`` for one iterator (specs/shuffle.md §5).

    ``pair`` is the iterator's own seed pair (see :func:`epoch_seed_pair`).  Equals
    ``buffer_shuffle(n, b, pair)`` for every ``b >= n``.
    """
    size = _non_negative(n, "n")
    checked = _checked_pair(pair)
    order = list(range(size))
    _fisher_yates(order, _targets(checked, 0, np.arange(size, 0, -1, dtype=np.int64)))
    return np.array(order, dtype=np.int64)


@dataclass(frozen=True)
class ShuffleBufferState:
    """Where a shuffle buffer stands within one epoch (specs/shuffle.md §6).

    Attributes:
        buffer: input ordinals in the buffer, oldest first (the logical order of spec §5).
        consumed: input elements pulled so far; the next one pulled is ``consumed``.
        draws: stream words used so far, which is also the number of outputs so far.

    The default value is the start of an epoch.
    """

    buffer: tuple[int, ...] = ()
    consumed: int = 0
    draws: int = 0

    def __post_init__(self) -> None:
        consumed = _non_negative(self.consumed, "consumed")
        draws = _non_negative(self.draws, "draws")
        if not isinstance(self.buffer, tuple):
            raise ConfigError(
                f"buffer={self.buffer!r} is a {type(self.buffer).__name__}; pass a tuple of "
                "input ordinals",
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
        ordinals = [_integer(item, "buffer") for item in self.buffer]
        if len(set(ordinals)) != len(ordinals) or any(
            not 0 <= item < consumed for item in ordinals
        ):
            raise ConfigError(
                f"buffer={self.buffer!r} must hold distinct input ordinals in "
                f"[0, consumed={consumed})",
                field="buffer",
                value=self.buffer,
            )
        object.__setattr__(self, "buffer", tuple(ordinals))
        object.__setattr__(self, "consumed", consumed)
        object.__setattr__(self, "draws", draws)


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
) -> tuple[Int64Array, ShuffleBufferState]:
    """Run the shuffle buffer over inputs ``0..n-1`` (specs/shuffle.md §5, §6).

    Starting from ``state`` (None: start of the epoch), emits up to ``count`` outputs
    (None: all the rest of the epoch) for the iterator whose seed pair is ``pair``, and
    returns them with the state after them.  Resuming from that state continues the
    uninterrupted order exactly.
    """
    total = _non_negative(n, "n")
    size = _effective_buffer_size(buffer_size, total)
    checked = _checked_pair(pair)
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
    wanted = remaining if count is None else min(_non_negative(count, "count"), remaining)
    if wanted == 0:
        return np.empty(0, dtype=np.int64), start

    buffer = list(start.buffer)
    pulled, draws = start.consumed, start.draws
    fill = min(size - len(buffer), total - pulled)
    buffer.extend(range(pulled, pulled + fill))
    pulled += fill

    steady = min(wanted, total - pulled)
    out = _steady(buffer, checked, draws, pulled, steady)
    front = steady % len(buffer)
    buffer = buffer[front:] + buffer[:front]
    pulled += steady
    draws += steady
    if steady == wanted and steady > 0:
        # TF pulls the next input only when the next output is asked for.
        buffer.pop()
        pulled -= 1
    out += _drain(buffer, checked, draws, wanted - steady)
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
) -> list[Int64Array]:
    """Orders of ``tf.data.Dataset.range(n).shuffle(buffer_size, seed)``, one per epoch.

    Epoch ``e`` is the ``e``-th iterator created over that one dataset object, which was
    created right after ``tf.random.set_seed(global_seed)`` (no ``set_seed`` when None).
    Normative description: specs/shuffle.md.
    """
    total = _non_negative(n, "n")
    size = _effective_buffer_size(buffer_size, total)
    count = _non_negative(epochs, "epochs")
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
