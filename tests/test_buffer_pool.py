"""A BufferPool hands memory out again only when nothing made from it is left
(specs/features.md §3.10, the JPEG batch arrays)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from readplan._internal.buffer_pool import BufferPool
from tests.array_memory import address_of, errors_of_threads


def test_the_memory_of_a_dropped_array_is_handed_out_again() -> None:
    pool = BufferPool()
    first = pool.empty((4, 6))
    where = address_of(first)
    del first
    again = pool.empty((2, 3, 4))
    assert again.shape == (2, 3, 4)
    assert again.dtype == np.uint8
    assert address_of(again) == where


@pytest.mark.parametrize(
    "hold",
    [
        lambda a: a,
        lambda a: a[1:],
        lambda a: a.reshape(-1)[::2],
        memoryview,
        lambda a: np.frombuffer(memoryview(a).cast("B"), dtype=np.uint8),
        lambda a: [a.T],
    ],
    ids=["array", "view", "view of a view", "memoryview", "frombuffer", "in a list"],
)
def test_memory_still_held_is_never_handed_out(hold: Callable[[np.ndarray], Any]) -> None:
    pool = BufferPool()
    first = pool.empty((4, 6))
    first[:] = 7
    held = hold(first)
    where = address_of(first)
    del first
    other = pool.empty((4, 6))
    other[:] = 1
    assert address_of(other) != where
    del held  # now it is free again
    assert address_of(pool.empty((4, 6))) == where


def test_only_a_buffer_of_the_same_size_is_taken() -> None:
    pool = BufferPool()
    where = address_of(pool.empty((4, 6)))
    assert address_of(pool.empty((4, 5))) != where


def test_the_pool_keeps_at_most_keep_buffers_and_max_bytes() -> None:
    pool = BufferPool(keep=2, max_bytes=100)
    held = [pool.empty((10,)) for _ in range(3)]
    addresses = [address_of(a) for a in held]
    del held
    # Only the first two were kept: two arrays take them, the third is new.
    taken = [pool.empty((10,)) for _ in range(3)]
    assert {address_of(a) for a in taken[:2]} == set(addresses[:2])
    big = BufferPool(keep=8, max_bytes=100)
    big.empty((101,))
    assert big.kept_sizes == []  # over max_bytes: never kept


def test_a_new_size_lets_go_of_free_buffers_of_other_sizes() -> None:
    pool = BufferPool(keep=2, max_bytes=1000)
    pool.empty((10,))
    pool.empty((20,))
    kept = pool.empty((30,))
    assert pool.kept_sizes == [30]
    where = address_of(kept)
    del kept
    assert address_of(pool.empty((30,))) == where


def test_threads_never_share_a_live_array() -> None:
    pool = BufferPool(keep=4)

    def work(mark: int, errors: list[str]) -> None:
        for _ in range(300):
            array = pool.empty((64, 64))
            array[:] = mark
            time.sleep(0)  # let another thread take an array meanwhile
            if not (array == mark).all():
                errors.append(f"thread {mark}'s array was written by another")

    assert errors_of_threads(work, 4) == []


@pytest.mark.parametrize(("keep", "max_bytes"), [(0, 1), (1, 0)])
def test_a_pool_needs_room_for_one_buffer(keep: int, max_bytes: int) -> None:
    with pytest.raises(ValueError, match="BufferPool needs keep, max_bytes >= 1"):
        BufferPool(keep, max_bytes)


def test_the_free_buffer_handed_out_last_goes_first() -> None:
    """Memory written lately is the one still in the caches: of the free buffers, the one
    handed out last is handed out again."""
    pool = BufferPool(keep=8)
    arrays = [pool.empty((16,)) for _ in range(3)]
    addresses = [address_of(a) for a in arrays]
    del arrays[1]  # the middle one is free, the others still held
    again = pool.empty((16,))
    assert address_of(again) == addresses[1]
    arrays.clear()  # the first and the last are free: the last was handed out later
    assert address_of(pool.empty((16,))) == addresses[2]
    assert address_of(again) == addresses[1]


def test_a_pool_of_many_buffers_of_one_size_hands_each_out_again_once_dropped() -> None:
    """The image pool's way: hundreds of buffers of one size, a batch of arrays held, then
    dropped, then as many again: every one of them from the memory the first batch had."""
    pool = BufferPool(keep=300, max_bytes=1 << 30)
    first = [pool.empty((8, 8, 3)) for _ in range(256)]
    addresses = {address_of(a) for a in first}
    first.clear()
    second = [pool.empty((8, 8, 3)) for _ in range(256)]
    assert {address_of(a) for a in second} == addresses
    # While they are held, new arrays get memory of their own, up to keep kept.
    third = [pool.empty((8, 8, 3)) for _ in range(100)]
    assert not {address_of(a) for a in third} & addresses
    assert len(pool.kept_sizes) == 300
