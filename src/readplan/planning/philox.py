"""TensorFlow's Philox4x32-10 generator and the word stream its shuffles draw from.

``specs/shuffle.md`` §3-§4 is normative: the key and counter a seed pair gives, four words
per block, and the stream any word of which costs the same to reach.  Vectorised over
blocks with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import U32Array, U64Array
from readplan._internal.validate import check_int
from readplan.errors import ConfigError

__all__ = ["Pair", "check_pair", "philox4x32", "stream_words"]

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

Pair = tuple[int, int]


def check_pair(pair: Any) -> Pair:
    """A seed pair of two uint64 values, the form Philox is constructed from (spec §3)."""
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise ConfigError(
            f"pair={pair!r} is not a (seed, seed2) tuple of two integers; build it with "
            "seed_pair() or epoch_seed_pair()",
            field="pair",
            value=pair,
        )
    lo, hi = (check_int(word, "pair", minimum=0, maximum=_MASK64) for word in pair)
    if not (0 <= lo <= _MASK64 and 0 <= hi <= _MASK64):
        raise ConfigError(
            f"pair={pair!r} has a value outside [0, 2**64): Philox takes two unsigned 64-bit "
            "seeds; build the pair with seed_pair(), which folds any int into range",
            field="pair",
            value=pair,
        )
    return lo, hi


def _round_keys(k0: int, k1: int) -> U64Array:
    """The key of every round, shape (rounds, 2, 1): the key bumped once per round."""
    keys = [((k0 + r * _BUMP_0) & _MASK32, (k1 + r * _BUMP_1) & _MASK32) for r in range(_ROUNDS)]
    return np.array(keys, dtype=np.uint64).reshape(_ROUNDS, 2, 1)


def _philox_words(even: U64Array, odd: U64Array, k0: int, k1: int) -> U32Array:
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


def philox4x32(counters: npt.ArrayLike, key: tuple[int, int]) -> U32Array:
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
    k0, k1 = (check_int(word, "key", minimum=0, maximum=_MASK32) for word in key)
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


def _block_counters(hi: int, first_block: int, blocks: int) -> tuple[U64Array, U64Array]:
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


def stream_words(pair: Pair, start: int, count: int) -> U32Array:
    """Words ``[start, start + count)`` of the stream ``SingleSample(Philox(pair))``.

    The stream is specified in specs/shuffle.md §3-§4: key ``(lo & 0xFFFFFFFF, lo >> 32)``,
    counter ``(0, 0, hi & 0xFFFFFFFF, hi >> 32)``, four words per block in order.  Any
    ``start`` costs the same: only the blocks covering the requested words are computed.
    """
    lo, hi = check_pair(pair)
    first = check_int(start, "start", minimum=0, maximum=None, what="a non-negative integer")
    length = check_int(count, "count", minimum=0, maximum=None, what="a non-negative integer")
    if length == 0:
        return np.empty(0, dtype=np.uint32)
    first_block, skip = divmod(first, _WORDS_PER_BLOCK)
    blocks = (skip + length + _WORDS_PER_BLOCK - 1) // _WORDS_PER_BLOCK
    even, odd = _block_counters(hi, first_block, blocks)
    words = _philox_words(even, odd, lo & _MASK32, lo >> 32).reshape(-1)
    return words[skip : skip + length]
