"""TensorFlow's seed rules: the seed pair a shuffle op gets, and each epoch's pair.

``specs/shuffle.md`` §1-§2 is normative: global and op seeds (``tf.random.set_seed``),
the seeds TF invents for unseeded ops, and the seeds each new iterator over a shuffle
dataset draws from the op's generator.
"""

from __future__ import annotations

import random

from readplan._internal.validate import check_int, check_seed
from readplan.errors import ConfigError
from readplan.planning.philox import Pair, check_pair, stream_words

__all__ = ["DEFAULT_GRAPH_SEED", "MAX_INT32", "epoch_seed_pair", "seed_pair"]

DEFAULT_GRAPH_SEED = 87654321
"""First seed of an op that has an op seed but no global seed (specs/shuffle.md §1)."""

MAX_INT32 = 2**31 - 1
"""Modulus that folds user seeds into range; also the replacement for a zero second seed."""


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
    index = check_int(
        unseeded_index, "unseeded_index", minimum=0, maximum=None, what="a non-negative integer"
    )
    # Any integer (or bool) of any size, as TF takes them; floats and strings are refused.
    op_seed = check_seed(seed, "seed")
    graph_seed = check_seed(global_seed, "global_seed")
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
    checked = check_pair(pair)
    index = check_int(epoch, "epoch", minimum=0, maximum=None, what="a non-negative integer")
    if not reshuffle_each_iteration:
        return checked
    first, second = stream_words(checked, 2 * index, 2).tolist()
    return int(first), int(second)


# --- Philox4x32-10 (spec §3, §4) -------------------------------------------------------
