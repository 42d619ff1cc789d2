"""The seed pair of a shuffle op and its per-iterator seeds, against TensorFlow 2.21's
values, Python's random draws and the sequential stream of the reference model.

``specs/shuffle.md`` §1 (the seed pair) and §2 (per-iterator seeds).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from readplan.errors import ConfigError, ReadplanError
from readplan.planning.seeds import DEFAULT_GRAPH_SEED, MAX_INT32, epoch_seed_pair, seed_pair
from readplan.planning.shuffle import permutation, shuffle_order
from tests.reference_models import ref_block, ref_epoch_pair
from tests.strategies import iterator_pairs

M = 2**31 - 1


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
        ({"seed": "32"}, "seed"),
        ({"seed": 3, "global_seed": 2.0}, "global_seed"),
        ({"seed": None, "global_seed": 1, "unseeded_index": -1}, "unseeded_index"),
    ],
)
def test_seed_pair_rejects_bad_values(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        seed_pair(**kwargs)
    assert info.value.field == field


def test_a_bool_seed_is_its_int_as_in_tf() -> None:
    # TF takes seed=True as 1 (tests/data/tfds_round3 records its order).
    assert seed_pair(True) == seed_pair(1)
    assert seed_pair(None, global_seed=False) == seed_pair(None, global_seed=0)


@pytest.mark.parametrize("pair", [(1, 2, 3), [1, 2], (-1, 0), (0, 2**64), (1.0, 2), "ab", None])
def test_bad_pairs_are_refused(pair: Any) -> None:
    with pytest.raises(ConfigError):
        epoch_seed_pair(pair, 0)
    with pytest.raises(ConfigError):
        permutation(3, pair)


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
