"""Tests for readplan.shuffle against TensorFlow's own orders and an independent model.

The reference model (tests/reference_models.py) is written per element straight from
specs/shuffle.md (a Philox with a four-word counter that carries word by word, a
one-word-at-a-time stream, and the list form of the buffer algorithm); it shares no code
with the vectorised module.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from readplan.errors import ConfigError, ReadplanError
from readplan.planning.philox import philox4x32, stream_words
from readplan.planning.seeds import DEFAULT_GRAPH_SEED, MAX_INT32, epoch_seed_pair, seed_pair
from readplan.planning.shuffle import (
    UNKNOWN_CARDINALITY,
    ShuffleBufferState,
    buffer_shuffle,
    permutation,
    shuffle_order,
    swapped,
)
from tests.reference_models import (
    ref_block,
    ref_buffer_order,
    ref_epoch_pair,
    ref_stream,
    ref_words,
)

VECTORS = Path(__file__).parent / "data" / "vectors" / "tfdata.json"
M = 2**31 - 1

# --- strategies ------------------------------------------------------------------------

uint32 = st.integers(0, 2**32 - 1)
uint64 = st.integers(0, 2**64 - 1)
iterator_pairs = st.tuples(uint32, uint32)
buffer_sizes = st.one_of(st.integers(1, 80), st.just(UNKNOWN_CARDINALITY))


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


@pytest.mark.parametrize(
    ("seed", "unseeded_index", "pair", "expected"),
    [
        (None, 0, (1234, 1892932127),
         [[0, 3, 4, 5, 8, 9, 1, 6, 7, 2], [4, 7, 8, 2, 3, 5, 6, 9, 0, 1]]),
        (None, 1, (1234, 501869158),
         [[8, 9, 4, 5, 2, 6, 7, 3, 0, 1], [5, 7, 6, 9, 0, 3, 8, 2, 4, 1]]),
        (32, 0, (1234, 32), [[3, 0, 9, 6, 1, 5, 8, 4, 7, 2], [5, 6, 2, 3, 1, 7, 0, 4, 9, 8]]),
        (-5, 2, (1234, 2147483642), [[2, 4, 6, 7, 8, 0, 5, 3, 9, 1]]),
    ],
)  # fmt: skip
def test_verified_orders_after_set_seed_1234(
    seed: int | None, unseeded_index: int, pair: tuple[int, int], expected: list[list[int]]
) -> None:
    assert seed_pair(seed, global_seed=1234, unseeded_index=unseeded_index) == pair
    orders = [permutation(10, epoch_seed_pair(pair, e)) for e in range(len(expected))]
    assert [order.tolist() for order in orders] == expected


@pytest.mark.parametrize(
    ("seed", "global_seed", "unseeded_index", "expected"),
    [
        (32, None, 0, (87654321, 32)),
        (-5, None, 0, (87654321, 2147483642)),
        (2**40 + 3, None, 0, (87654321, (2**40 + 3) % M)),
        (0, 0, 0, (0, 2147483647)),
        (0, 2**31 - 1, 0, (0, 2147483647)),
        (None, 1234, 0, (1234, 1892932127)),
        (None, 1234, 1, (1234, 501869158)),
        # From TF 2.21: negative and huge seeds fold with Python's modulo; an unseeded op
        # under a negative global seed draws what random.Random(abs(G)) draws.
        (2**63, None, 0, (87654321, 2)),
        (-(2**63), None, 0, (87654321, 2147483645)),
        (2**64 + 5, None, 0, (87654321, 9)),
        (2**63 - 1, 1234, 0, (1234, 1)),
        (None, -5, 0, (2147483642, 1097127993)),
        (None, -5, 1, (2147483642, 1539898300)),
        (None, 5, 0, (5, 1097127993)),
        (3, -5, 0, (2147483642, 3)),
        (None, 2**63, 0, (2, 1691753470)),
        (None, 2**64 + 7, 0, (11, 364536972)),
        (None, 0, 0, (0, 1654615998)),
        (None, 0, 2, (0, 173879092)),
        (None, -(2**40), 0, (2147483135, 445128065)),
        (2**31 - 1, 2**31 - 1, 0, (0, 2147483647)),
    ],
)
def test_seed_pair_table(
    seed: int | None, global_seed: int | None, unseeded_index: int, expected: tuple[int, int]
) -> None:
    assert seed_pair(seed, global_seed=global_seed, unseeded_index=unseeded_index) == expected


def test_per_epoch_seeds_for_seed_32() -> None:
    pair = seed_pair(32)
    assert [epoch_seed_pair(pair, e) for e in range(3)] == [
        (2390514801, 1543945521),
        (724364669, 527533645),
        (465395815, 2974967883),
    ]


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


# --- Philox known answers --------------------------------------------------------------


@pytest.mark.parametrize(
    ("counter", "key", "expected"),
    [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF),
         (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
         (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ],
)  # fmt: skip
def test_philox_known_answers(
    counter: tuple[int, ...], key: tuple[int, int], expected: tuple[int, ...]
) -> None:
    assert tuple(philox4x32(counter, key).tolist()) == expected
    assert tuple(ref_block(list(counter), key)) == expected


def test_stream_known_answer() -> None:
    expected = [2390514801, 1543945521, 724364669, 527533645, 465395815, 2974967883,
                3473561405, 1108840429]  # fmt: skip
    assert stream_words((DEFAULT_GRAPH_SEED, 32), 0, 8).tolist() == expected
    assert stream_words((DEFAULT_GRAPH_SEED, 32), 0, 8).dtype == np.uint32


@given(st.lists(st.tuples(uint32, uint32, uint32, uint32), min_size=1, max_size=6), uint32, uint32)
def test_philox_vectorised_matches_reference(
    counters: list[tuple[int, int, int, int]], k0: int, k1: int
) -> None:
    got = philox4x32(np.array(counters, dtype=np.uint32), (k0, k1))
    assert got.shape == (len(counters), 4)
    assert got.tolist() == [ref_block(list(c), (k0, k1)) for c in counters]
    nested = philox4x32(np.array(counters * 2, dtype=np.uint64).reshape(2, -1, 4), (k0, k1))
    assert nested.tolist() == [got.tolist(), got.tolist()]


@pytest.mark.parametrize(
    ("counters", "key"),
    [
        ([1, 2, 3], (0, 0)),
        (5, (0, 0)),
        ([0, 0, 0, 2**32], (0, 0)),
        ([0, 0, 0, -1], (0, 0)),
        ([0.5, 0, 0, 0], (0, 0)),
        ([0, 0, 0, 0], (2**32, 0)),
        ([0, 0, 0, 0], (1, 2, 3)),
    ],
)
def test_philox_rejects_bad_input(counters: Any, key: Any) -> None:
    with pytest.raises(ConfigError):
        philox4x32(counters, key)


# --- stream and per-epoch seeds --------------------------------------------------------


@given(uint64, uint64, st.integers(0, 40), st.integers(0, 40))
@example(0, 0, 0, 1)
@example(2**64 - 1, 2**64 - 1, 3, 9)
def test_stream_words_match_sequential_reference(lo: int, hi: int, start: int, count: int) -> None:
    expected = ref_words((lo, hi), start + count)[start:]
    assert stream_words((lo, hi), start, count).tolist() == expected


@given(uint64, uint64, st.integers(0, 2**130), st.integers(0, 12))
@example(7, 5, 4 * (2**64 - 2) + 1, 12)  # block counter carries from c1 into c2
@example(7, 2**64 - 1, 4 * (2**64 - 1), 8)  # the 128-bit counter wraps to zero
@example(7, 0xFFFFFFFF, 4 * (2**64 - 1) + 2, 8)  # carry ripples from c2 into c3
def test_stream_words_jump_anywhere(lo: int, hi: int, start: int, count: int) -> None:
    block, skip = divmod(start, 4)
    counter_value = ((hi << 64) + block) % 2**128
    counter = [(counter_value >> (32 * i)) & 0xFFFFFFFF for i in range(4)]
    stream = ref_stream((lo, hi), counter)
    expected = [next(stream) for _ in range(skip + count)][skip:]
    assert stream_words((lo, hi), start, count).tolist() == expected


@given(uint64, uint64, st.integers(0, 10**6), st.integers(0, 30), st.integers(0, 30))
def test_stream_words_split_anywhere(lo: int, hi: int, start: int, first: int, second: int) -> None:
    whole = stream_words((lo, hi), start, first + second)
    parts = np.concatenate(
        [stream_words((lo, hi), start, first), stream_words((lo, hi), start + first, second)]
    )
    assert whole.tolist() == parts.tolist()


@given(st.tuples(st.integers(0, M), st.integers(0, M)), st.integers(0, 150))
@example((DEFAULT_GRAPH_SEED, 32), 2)
@example((0, MAX_INT32), 0)
def test_epoch_seed_pair_matches_sequential_stream(pair: tuple[int, int], epoch: int) -> None:
    assert epoch_seed_pair(pair, epoch) == ref_epoch_pair(pair, epoch)
    assert epoch_seed_pair(pair, epoch, reshuffle_each_iteration=False) == pair


@given(st.tuples(st.integers(0, M), st.integers(0, M)), st.integers(0, 10**15))
@example((DEFAULT_GRAPH_SEED, 32), 10**12)
@example((DEFAULT_GRAPH_SEED, 32), 10**12 + 1)
def test_epoch_seed_pair_huge_epoch(pair: tuple[int, int], epoch: int) -> None:
    lo, hi = pair
    block = epoch // 2
    words = ref_block([block & 0xFFFFFFFF, block >> 32, hi, 0], (lo, 0))
    offset = 2 * (epoch % 2)
    assert epoch_seed_pair(pair, epoch) == (words[offset], words[offset + 1])


# --- seeds -----------------------------------------------------------------------------


def test_unseeded_without_global_seed_is_refused() -> None:
    with pytest.raises(ConfigError, match="seed=") as info:
        seed_pair(None)
    assert isinstance(info.value, ReadplanError)
    assert isinstance(info.value, ValueError)
    assert "not reproducible" in str(info.value)
    with pytest.raises(ConfigError, match="not reproducible"):
        shuffle_order(5, buffer_size=5, seed=None)


@given(st.integers(-(2**70), 2**70), st.integers(-5, 5))
def test_op_seed_folds_modulo(seed: int, turns: int) -> None:
    assert seed_pair(seed) == seed_pair(seed + turns * M)
    assert seed_pair(seed) == (DEFAULT_GRAPH_SEED, seed % M)


@given(st.integers(-(2**70), 2**70), st.integers(-(2**70), 2**70))
@example(0, 0)
@example(M, 2 * M)
def test_global_and_op_seed(global_seed: int, seed: int) -> None:
    pair = seed_pair(seed, global_seed=global_seed)
    if global_seed % M == 0 and seed % M == 0:
        assert pair == (0, M)
    else:
        assert pair == (global_seed % M, seed % M)


@given(st.integers(-(2**40), 2**40), st.integers(0, 5))
def test_unseeded_index_steps_through_python_draws(global_seed: int, index: int) -> None:
    draws = random.Random(global_seed)
    expected = [draws.randint(0, 2**31 - 1) for _ in range(index + 1)][-1]
    pair = seed_pair(None, global_seed=global_seed, unseeded_index=index)
    assert pair[0] == global_seed % M
    assert pair[1] == expected % M or pair == (0, M)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"seed": 1.5}, "seed"),
        ({"seed": True}, "seed"),
        ({"seed": "32"}, "seed"),
        ({"seed": 3, "global_seed": 2.0}, "global_seed"),
        ({"seed": None, "global_seed": 1, "unseeded_index": -1}, "unseeded_index"),
    ],
)
def test_seed_pair_rejects_bad_values(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        seed_pair(**kwargs)
    assert info.value.field == field


@pytest.mark.parametrize("pair", [(1, 2, 3), [1, 2], (-1, 0), (0, 2**64), (1.0, 2), "ab", None])
def test_bad_pairs_are_refused(pair: Any) -> None:
    with pytest.raises(ConfigError):
        epoch_seed_pair(pair, 0)
    with pytest.raises(ConfigError):
        permutation(3, pair)


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


# --- buffer algorithm properties -------------------------------------------------------


@given(st.integers(0, 120), buffer_sizes, iterator_pairs)
@example(0, 1, (0, 0))
@example(1, 1, (0, 0))
@example(10, 9, (2390514801, 1543945521))
@example(10, 11, (2390514801, 1543945521))
def test_buffer_shuffle_matches_list_model(n: int, buffer_size: int, pair: tuple[int, int]) -> None:
    order, state = buffer_shuffle(n, buffer_size, pair)
    assert order.dtype == np.int64
    assert order.tolist() == ref_buffer_order(n, buffer_size, pair)
    assert state == ShuffleBufferState((), n, n)


@given(st.integers(0, 300), buffer_sizes, iterator_pairs)
def test_every_order_is_a_permutation(n: int, buffer_size: int, pair: tuple[int, int]) -> None:
    order, _ = buffer_shuffle(n, buffer_size, pair)
    assert sorted(order.tolist()) == list(range(n))


@given(st.integers(0, 200), iterator_pairs)
def test_buffer_of_one_is_identity(n: int, pair: tuple[int, int]) -> None:
    assert buffer_shuffle(n, 1, pair)[0].tolist() == list(range(n))


@given(st.integers(0, 200), st.integers(0, 50), iterator_pairs)
@example(0, 0, (0, 0))
def test_full_buffer_equals_permutation(n: int, extra: int, pair: tuple[int, int]) -> None:
    expected = permutation(n, pair).tolist()
    assert buffer_shuffle(n, n + extra if n + extra > 0 else 1, pair)[0].tolist() == (
        expected if n + extra > 0 else list(range(n))
    )
    assert buffer_shuffle(n, UNKNOWN_CARDINALITY, pair)[0].tolist() == expected
    assert permutation(n, pair).tolist() == ref_buffer_order(n, UNKNOWN_CARDINALITY, pair)


@given(st.integers(0, 150), buffer_sizes, iterator_pairs, st.data())
def test_resume_equals_uninterrupted_suffix(
    n: int, buffer_size: int, pair: tuple[int, int], data: st.DataObject
) -> None:
    whole, end = buffer_shuffle(n, buffer_size, pair)
    k = data.draw(st.integers(0, n), label="k")
    head, state = buffer_shuffle(n, buffer_size, pair, count=k)
    assert head.tolist() == whole[:k].tolist()
    assert state.draws == k
    assert sorted(state.buffer + tuple(head.tolist())) == list(range(state.consumed))
    tail, final = buffer_shuffle(n, buffer_size, pair, state=state)
    assert tail.tolist() == whole[k:].tolist()
    assert final == end


@given(st.integers(0, 150), buffer_sizes, iterator_pairs, st.lists(st.integers(0, 40), max_size=8))
@example(10, 3, (1, 2), [1, 1, 1, 0, 1])
@example(10, 10, (1, 2), [0, 10])
def test_resume_in_many_pieces(
    n: int, buffer_size: int, pair: tuple[int, int], pieces: list[int]
) -> None:
    state = ShuffleBufferState()
    out: list[int] = []
    for piece in pieces:
        chunk, state = buffer_shuffle(n, buffer_size, pair, state=state, count=piece)
        assert len(chunk) == min(piece, n - len(out))
        out += chunk.tolist()
    rest, _ = buffer_shuffle(n, buffer_size, pair, state=state)
    assert out + rest.tolist() == ref_buffer_order(n, buffer_size, pair)


@pytest.mark.parametrize(
    ("k", "buffer", "consumed"),
    [
        (0, (), 0),
        (1, (1, 2), 3),
        (2, (2, 3), 4),
        (3, (3, 2), 5),
        (6, (3, 7), 8),
        (7, (7, 3), 9),
        (8, (3, 9), 10),
        (9, (3,), 10),
        (10, (), 10),
    ],
)
def test_state_counts_inputs_lazily(k: int, buffer: tuple[int, ...], consumed: int) -> None:
    # Epoch 0 of range(10).shuffle(3, seed=32) is [0,1,4,5,6,2,8,7,9,3] in TF 2.21.
    # Replaying it by hand through the list form of the algorithm gives these buffers
    # (oldest first); TF pulls an input only when the next output is asked for, so after
    # k >= 1 outputs a buffer of 3 has pulled min(10, 3 + k - 1) inputs.
    pair = epoch_seed_pair(seed_pair(32), 0)
    _, state = buffer_shuffle(10, 3, pair, count=k)
    assert (state.buffer, state.consumed, state.draws) == (buffer, consumed, k)


def test_count_beyond_the_end_stops_at_the_end() -> None:
    order, state = buffer_shuffle(5, 2, (3, 4), count=99)
    assert len(order) == 5
    again, same = buffer_shuffle(5, 2, (3, 4), state=state, count=3)
    assert again.tolist() == []
    assert same == state


@pytest.mark.parametrize(
    ("state", "n", "buffer_size"),
    [
        (ShuffleBufferState((0, 1), 3, 1), 10, 4),  # a buffer of 4 has pulled 4 by then
        (ShuffleBufferState((0, 1, 2), 3, 0), 10, 3),  # filled but nothing emitted yet
        (ShuffleBufferState((), 10, 10), 9, 3),  # longer than this epoch
        (ShuffleBufferState((1, 2), 4, 2), 10, 2),  # wrong buffer size
    ],
)
def test_state_from_another_shuffle_is_refused(
    state: ShuffleBufferState, n: int, buffer_size: int
) -> None:
    with pytest.raises(ConfigError, match="resume with the n and buffer_size") as info:
        buffer_shuffle(n, buffer_size, (1, 2), state=state)
    assert info.value.field == "state"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"buffer": (0,), "consumed": 2, "draws": 0}, "must hold consumed - draws = 2"),
        ({"buffer": (0, 0), "consumed": 2, "draws": 0}, "distinct"),
        ({"buffer": (0, 5), "consumed": 2, "draws": 0}, "distinct"),
        ({"buffer": (-1,), "consumed": 2, "draws": 1}, "distinct"),
        ({"buffer": [0], "consumed": 1, "draws": 0}, "tuple"),
        ({"buffer": (0.0,), "consumed": 1, "draws": 0}, "not an integer"),
        ({"buffer": (), "consumed": -1, "draws": -1}, "consumed=-1"),
        ({"buffer": (), "consumed": 1, "draws": 2}, "consumed - draws = -1"),
    ],
)
def test_state_validates_itself(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ShuffleBufferState(**kwargs)


def test_state_is_normalised_and_frozen() -> None:
    state = ShuffleBufferState((np.int64(1),), np.int64(2), 1)
    assert type(state.buffer[0]) is int
    assert type(state.consumed) is int
    assert state == ShuffleBufferState((1,), 2, 1)
    with pytest.raises(AttributeError):
        state.draws = 3  # type: ignore[misc]


def test_state_must_be_a_state() -> None:
    with pytest.raises(ConfigError, match="ShuffleBufferState"):
        buffer_shuffle(3, 2, (1, 2), state=(0, 1, 1))  # type: ignore[arg-type]


@given(st.integers(0, M - 1), st.integers(0, M - 1), st.booleans())
def test_different_seeds_give_different_orders(first: int, second: int, reshuffle: bool) -> None:
    assume(first != second)
    # Two equal orders of 200 elements by chance have probability about 1/200!.
    a = shuffle_order(200, buffer_size=200, seed=first, reshuffle_each_iteration=reshuffle)
    b = shuffle_order(200, buffer_size=200, seed=second, reshuffle_each_iteration=reshuffle)
    assert a[0].tolist() != b[0].tolist()


@given(iterator_pairs, st.integers(0, 30))
def test_epochs_differ_when_reshuffling(pair: tuple[int, int], epoch: int) -> None:
    assert epoch_seed_pair(pair, epoch) != epoch_seed_pair(pair, epoch + 1)


def test_zero_epochs() -> None:
    assert shuffle_order(5, buffer_size=2, seed=1, epochs=0) == []


@st.composite
def forward_swaps(draw: st.DrawFn) -> tuple[list[int], int]:
    length = draw(st.integers(0, 60))
    steps = draw(st.integers(0, length))
    partners = [draw(st.integers(i, length - 1)) for i in range(steps)]
    return partners, length


@given(forward_swaps())
@example(([1, 2, 3, 3], 4))  # a chain: every step moves the previous step's item on
@example(([3, 3, 3, 3], 4))  # every step into one position
@example(([0, 1, 2], 5))  # no swap at all
def test_swapped_equals_swapping_in_turn(case: tuple[list[int], int]) -> None:
    partners, length = case
    items = list(range(length))
    for i, j in enumerate(partners):
        items[i], items[j] = items[j], items[i]
    assert swapped(np.array(partners, dtype=np.int64), length).tolist() == items
