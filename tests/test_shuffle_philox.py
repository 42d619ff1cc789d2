"""Philox4x32-10 and the single-word stream, against known answers and the reference model.

The reference model (tests/reference_models.py) is written per element straight from
specs/shuffle.md (a Philox with a four-word counter that carries word by word, and a
one-word-at-a-time stream); it shares no code with the vectorised module.
``specs/shuffle.md`` §3 (Philox4x32-10) and §4 (the single-word stream).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import ConfigError
from readplan.planning.philox import philox4x32, stream_words
from readplan.planning.seeds import DEFAULT_GRAPH_SEED
from tests.reference_models import ref_block, ref_stream, ref_words
from tests.strategies import uint32

uint64 = st.integers(0, 2**64 - 1)


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
