"""Shuffle orders against TensorFlow 2.21's own: the golden vectors, orders verified and
pinned from TF, and the arguments it refuses.

``specs/shuffle.md`` §5 (the buffer algorithm); the vectors are in
``tests/data/vectors/tfdata.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from readplan.errors import ConfigError
from readplan.planning.philox import stream_words
from readplan.planning.seeds import epoch_seed_pair, seed_pair
from readplan.planning.shuffle import (
    UNKNOWN_CARDINALITY,
    buffer_shuffle,
    permutation,
    shuffle_order,
)

VECTORS = Path(__file__).parent / "data" / "vectors" / "tfdata.json"


# --- golden vectors from TF 2.21 --------------------------------------------------------


def _shuffle_vectors() -> list[Any]:
    cases = [case for case in json.loads(VECTORS.read_text()) if case["kind"] == "shuffle"]
    return [
        pytest.param(
            case,
            id=f"{i}-n{case['n']}-b{case['buffer_size']}-s{case['seed']}-g{case['global_seed']}",
        )
        for i, case in enumerate(cases)
    ]


@pytest.mark.parametrize("case", _shuffle_vectors())
def test_golden_shuffle_vector(case: dict[str, Any]) -> None:
    orders = shuffle_order(
        case["n"],
        buffer_size=case["buffer_size"],
        seed=case["seed"],
        global_seed=case["global_seed"],
        epochs=len(case["epochs"]),
    )
    assert [order.tolist() for order in orders] == case["epochs"]


# --- verified orders from the reference notes (TF 2.21) ---------------------------------


@pytest.mark.parametrize(
    ("n", "buffer_size", "seed", "expected"),
    [
        (
            10,
            10,
            32,
            [[9, 7, 6, 5, 0, 2, 3, 1, 4, 8], [3, 7, 1, 9, 0, 6, 8, 2, 4, 5],
             [9, 8, 2, 1, 6, 5, 3, 4, 0, 7]],
        ),
        (
            10,
            3,
            32,
            [[0, 1, 4, 5, 6, 2, 8, 7, 9, 3], [0, 1, 3, 5, 6, 7, 8, 2, 9, 4],
             [0, 2, 1, 3, 6, 4, 8, 5, 9, 7]],
        ),
        (
            20,
            5,
            7,
            [[2, 4, 0, 3, 8, 1, 9, 10, 5, 13, 12, 14, 15, 7, 6, 19, 16, 17, 11, 18],
             [4, 0, 3, 7, 2, 6, 8, 9, 5, 1, 12, 15, 14, 10, 11, 17, 13, 18, 16, 19]],
        ),
        (10, 10, -5, [[6, 5, 3, 2, 7, 8, 1, 0, 9, 4]]),
    ],
)  # fmt: skip
def test_verified_orders_without_global_seed(
    n: int, buffer_size: int, seed: int, expected: list[list[int]]
) -> None:
    orders = shuffle_order(n, buffer_size=buffer_size, seed=seed, epochs=len(expected))
    assert [order.tolist() for order in orders] == expected


def test_verified_order_without_reshuffle() -> None:
    orders = shuffle_order(10, buffer_size=10, seed=32, epochs=3, reshuffle_each_iteration=False)
    assert [order.tolist() for order in orders] == [[1, 4, 7, 5, 3, 8, 2, 0, 9, 6]] * 3


def test_take_prefix_per_iteration() -> None:
    # range(10).shuffle(10, seed=32).take(3) iterated three times: each is a new epoch.
    orders = shuffle_order(10, buffer_size=10, seed=32, epochs=3)
    assert [order[:3].tolist() for order in orders] == [[9, 7, 6], [3, 7, 1], [9, 8, 2]]


def test_verified_1024_file_shuffle() -> None:
    orders = shuffle_order(1024, buffer_size=1024, seed=32, epochs=3)
    assert [order[:4].tolist() for order in orders] == [
        [141, 568, 582, 652],
        [777, 46, 87, 451],
        [445, 809, 568, 208],
    ]
    fixed = shuffle_order(1024, buffer_size=1024, seed=32, epochs=2, reshuffle_each_iteration=False)
    assert [order[:4].tolist() for order in fixed] == [[113, 163, 709, 305]] * 2


# --- orders pinned from TF 2.21 (behaviour the golden vectors do not cover) -------------


@pytest.mark.parametrize(
    ("n", "buffer_size", "seed", "global_seed", "unseeded_index", "expected"),
    [
        (10, 10, 2**63, None, 0,
         [[0, 9, 4, 1, 6, 2, 7, 5, 3, 8], [7, 5, 0, 2, 9, 3, 4, 1, 8, 6],
          [7, 1, 3, 6, 8, 0, 2, 9, 4, 5]]),
        (10, 10, -(2**63), None, 0,
         [[4, 9, 0, 1, 2, 8, 6, 7, 3, 5], [3, 4, 8, 2, 9, 1, 7, 6, 5, 0],
          [7, 4, 9, 8, 3, 6, 0, 1, 5, 2]]),
        (10, 10, None, -5, 1,
         [[9, 7, 2, 4, 1, 5, 6, 3, 0, 8], [3, 5, 4, 1, 9, 7, 6, 2, 0, 8],
          [6, 1, 4, 5, 0, 8, 2, 7, 9, 3]]),
        (10, 10, None, 2**64 + 7, 0,
         [[2, 5, 4, 9, 8, 7, 6, 1, 0, 3], [7, 4, 1, 8, 9, 0, 2, 5, 3, 6],
          [1, 2, 7, 3, 6, 8, 0, 9, 4, 5]]),
        (10, 10, 0, 0, 0,
         [[4, 9, 1, 0, 7, 3, 5, 2, 8, 6], [0, 5, 2, 6, 4, 3, 7, 1, 8, 9],
          [8, 0, 9, 4, 2, 7, 6, 5, 3, 1]]),
        (10, UNKNOWN_CARDINALITY, 32, None, 0,
         [[9, 7, 6, 5, 0, 2, 3, 1, 4, 8], [3, 7, 1, 9, 0, 6, 8, 2, 4, 5],
          [9, 8, 2, 1, 6, 5, 3, 4, 0, 7]]),
        (10, 4, None, -(2**40), 0,
         [[0, 3, 4, 5, 6, 7, 9, 8, 1, 2], [2, 4, 0, 6, 7, 3, 9, 5, 1, 8],
          [2, 0, 4, 6, 1, 3, 5, 9, 7, 8]]),
        (10, 2**20, 32, None, 0, [[9, 7, 6, 5, 0, 2, 3, 1, 4, 8]]),
        (0, 4, 32, None, 0, [[]]),
    ],
)  # fmt: skip
def test_tf_pinned_orders(
    n: int,
    buffer_size: int,
    seed: int | None,
    global_seed: int | None,
    unseeded_index: int,
    expected: list[list[int]],
) -> None:
    pair = seed_pair(seed, global_seed=global_seed, unseeded_index=unseeded_index)
    orders = [
        buffer_shuffle(n, buffer_size, epoch_seed_pair(pair, e))[0] for e in range(len(expected))
    ]
    assert [order.tolist() for order in orders] == expected


def test_tf_pinned_twelve_epochs() -> None:
    # From TF 2.21: twelve successive iterators over range(10).shuffle(10, seed=32).
    expected = [
        [9, 7, 6, 5, 0, 2, 3, 1, 4, 8], [3, 7, 1, 9, 0, 6, 8, 2, 4, 5],
        [9, 8, 2, 1, 6, 5, 3, 4, 0, 7], [4, 8, 1, 6, 9, 5, 3, 2, 7, 0],
        [2, 5, 8, 9, 1, 6, 4, 0, 7, 3], [9, 3, 6, 1, 4, 8, 0, 7, 2, 5],
        [7, 3, 5, 9, 6, 4, 8, 1, 2, 0], [9, 2, 3, 1, 0, 5, 6, 4, 8, 7],
        [8, 0, 5, 6, 3, 4, 1, 9, 2, 7], [7, 6, 4, 3, 8, 2, 1, 5, 9, 0],
        [0, 1, 8, 6, 3, 9, 2, 4, 7, 5], [7, 1, 0, 3, 2, 6, 5, 4, 9, 8],
    ]  # fmt: skip
    orders = shuffle_order(10, buffer_size=10, seed=32, epochs=12)
    assert [order.tolist() for order in orders] == expected


def test_tf_pinned_small_buffer_without_reshuffle() -> None:
    # From TF 2.21: range(10).shuffle(4, seed=32, reshuffle_each_iteration=False).
    orders = shuffle_order(10, buffer_size=4, seed=32, epochs=3, reshuffle_each_iteration=False)
    assert [order.tolist() for order in orders] == [[1, 2, 3, 4, 7, 8, 0, 5, 9, 6]] * 3


@pytest.mark.parametrize("buffer_size", [0, -1, -3, -(2**40)])
def test_invalid_buffer_size(buffer_size: int) -> None:
    # TF 2.21 raises InvalidArgumentError "buffer_size must be greater than zero or
    # UNKNOWN_CARDINALITY" for 0, -1 (AUTOTUNE) and -3.
    with pytest.raises(ConfigError, match="UNKNOWN_CARDINALITY") as info:
        shuffle_order(10, buffer_size=buffer_size, seed=32)
    assert info.value.field == "buffer_size"
    assert str(buffer_size) in str(info.value)
    with pytest.raises(ValueError, match="buffer_size"):
        buffer_shuffle(10, buffer_size, (1, 2))


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ConfigError, match="epoch=-1"):
        epoch_seed_pair((1, 2), -1)
    with pytest.raises(ConfigError, match="start=-4"):
        stream_words((1, 2), -4, 2)
    with pytest.raises(ConfigError, match="n=-3"):
        permutation(-3, (1, 2))
    with pytest.raises(ConfigError, match="epochs=-1"):
        shuffle_order(3, buffer_size=3, seed=1, epochs=-1)
    with pytest.raises(ConfigError, match="count=-1"):
        buffer_shuffle(3, 2, (1, 2), count=-1)


def test_zero_epochs() -> None:
    assert shuffle_order(5, buffer_size=2, seed=1, epochs=0) == []
