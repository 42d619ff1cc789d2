"""The shuffle buffer algorithm and its resumable state, against the list model.

The list form of the buffer algorithm (tests/reference_models.py) is written per element
straight from specs/shuffle.md; it shares no code with the vectorised module.
``specs/shuffle.md`` §5 (the buffer algorithm) and §6 (resumable state).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import ConfigError
from readplan.planning.ring import advance_ring
from readplan.planning.seeds import epoch_seed_pair, seed_pair
from readplan.planning.shuffle import (
    UNKNOWN_CARDINALITY,
    ShuffleBufferState,
    buffer_shuffle,
    buffer_state,
    permutation,
    swapped,
)
from tests.reference_models import ref_buffer_order, ref_buffer_state, ref_stream
from tests.strategies import iterator_pairs

buffer_sizes = st.one_of(st.integers(1, 80), st.just(UNKNOWN_CARDINALITY))


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


@given(st.integers(0, 150), buffer_sizes, iterator_pairs, st.lists(st.integers(0, 60), max_size=4))
@example(10, 3, (1, 2), [7, 0, 2])  # into the drain, then through it
@example(10, 10, (1, 2), [1, 9])
def test_buffer_state_equals_the_list_model_and_buffer_shuffle(
    n: int, buffer_size: int, pair: tuple[int, int], pieces: list[int]
) -> None:
    state = ShuffleBufferState()
    for piece in pieces:
        state = buffer_state(n, buffer_size, pair, state=state, count=piece)
        assert state == ShuffleBufferState(*ref_buffer_state(n, buffer_size, pair, state.draws))
        assert state == buffer_shuffle(n, buffer_size, pair, count=state.draws)[1]
    end = buffer_shuffle(n, buffer_size, pair)[1]
    assert buffer_state(n, buffer_size, pair, state=state) == end


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


@st.composite
def forward_swaps(draw: st.DrawFn) -> tuple[list[int], int]:
    length = draw(st.integers(0, 60))
    steps = draw(st.integers(0, length))
    # Partners crowded onto a few positions as well, for many steps into one position.
    crowd = draw(st.integers(0, 3))
    partners = [
        draw(
            st.integers(i, length - 1)
            if crowd == 0
            else st.integers(max(i, length - crowd), length - 1)
        )
        for i in range(steps)
    ]
    return partners, length


@given(forward_swaps())
@example(([1, 2, 3, 3], 4))  # a chain: every step moves the previous step's item on
@example(([3, 3, 3, 3], 4))  # every step into one position
@example(([0, 1, 2], 5))  # no swap at all
@example(([99] * 99, 100))  # more steps into one position than rounds of peeling
@example(([24] * 25, 25))  # as many as the rounds: nothing left to sort
@example(([40] * 30 + [60] * 10 + [99] * 40, 100))
def test_swapped_equals_swapping_in_turn(case: tuple[list[int], int]) -> None:
    partners, length = case
    items = list(range(length))
    for i, j in enumerate(partners):
        items[i], items[j] = items[j], items[i]
    assert swapped(np.array(partners, dtype=np.int64), length).tolist() == items


def ref_words_from(pair: tuple[int, int], start: int, count: int) -> list[int]:
    """Words ``start .. start + count - 1`` of the per-word stream model."""
    stream = ref_stream(pair)
    for _ in range(start):
        next(stream)
    return [next(stream) for _ in range(count)]


@given(
    st.integers(1, 40),
    st.integers(0, 200),
    iterator_pairs,
    st.integers(1, 70),
    st.integers(0, 3000),
)
@example(1, 50, (1, 2), 7, 0)  # a ring of one: every pick is the front
@example(3, 200, (5, 6), 1, 17)  # one step per traced batch
def test_the_traced_ring_equals_stepping_it(
    size: int, steps: int, pair: tuple[int, int], batch: int, draws: int
) -> None:
    ring = list(range(size))
    words = ref_words_from(pair, draws, steps)
    pulled = size
    for t, word in enumerate(words):
        # specs/shuffle.md §5, the ring form: emit the pick, the front's element moves
        # there, the next input takes the front.
        front = t % size
        pick = (front + word % size) % size
        ring[pick] = ring[front]
        ring[front] = pulled + t
    assert advance_ring(list(range(size)), pair, draws, pulled, steps, batch=batch) == ring
