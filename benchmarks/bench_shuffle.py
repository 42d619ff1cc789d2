"""Speed of readplan.shuffle: file permutations, buffer shuffles, stream jumps.

Run: python benchmarks/bench_shuffle.py

Prints the median of several runs for each case and, where it makes sense, the ratio to
a straightforward pure-Python implementation of the same specification (a per-word
Philox and the list form of the buffer algorithm, specs/shuffle.md §3-§5).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from readplan import buffer_shuffle, epoch_seed_pair, permutation
from readplan.planning.philox import stream_words

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reference_models import ref_buffer_order

PAIR = (2390514801, 1543945521)  # epoch 0 of seed=32


def median_seconds(fn: Callable[[], object], *, repeats: int, number: int = 1) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def report(
    label: str, seconds: float, *, items: int | None = None, naive: float | None = None
) -> None:
    line = f"{label:<48} median {seconds * 1e3:10.3f} ms"
    if items:
        line += f"   {items / seconds / 1e6:7.2f} M items/s"
    if naive is not None:
        line += f"   {naive / seconds:7.1f}x faster than pure Python"
    print(line)


def main() -> None:
    fast = median_seconds(lambda: permutation(1024, PAIR), repeats=7, number=50)
    slow = median_seconds(lambda: ref_buffer_order(1024, 1024, PAIR), repeats=5)
    report("permutation(1024)  [file shuffle of 1024 shards]", fast, naive=slow)

    fast = median_seconds(lambda: permutation(100_000, PAIR), repeats=5)
    report("permutation(100_000)", fast, items=100_000)

    n = 1_000_000
    for size in (1_000, 10_000):
        fast = median_seconds(partial(buffer_shuffle, n, size, PAIR), repeats=3)
        report(f"buffer_shuffle(n=1M, buffer_size={size})", fast, items=n)

    # Per-output rate of the pure-Python model on a shorter input (its cost per output
    # grows with the buffer because removing the front of a list is O(buffer)).
    small = 50_000
    fast = median_seconds(lambda: buffer_shuffle(small, 1_000, PAIR), repeats=5)
    slow = median_seconds(lambda: ref_buffer_order(small, 1_000, PAIR), repeats=3)
    report("buffer_shuffle(n=50k, buffer_size=1000)", fast, items=small, naive=slow)

    _, state = buffer_shuffle(n, 10_000, PAIR, count=n // 2)
    fast = median_seconds(
        lambda: buffer_shuffle(n, 10_000, PAIR, state=state, count=1_000), repeats=7
    )
    report("resume at 500k, buffer 10000, next 1000 outputs", fast)

    fast = median_seconds(lambda: epoch_seed_pair(PAIR, 10**12), repeats=7, number=200)
    report("epoch_seed_pair(epoch=10**12)", fast)

    fast = median_seconds(lambda: stream_words(PAIR, 2**70, 1_000_000), repeats=5)
    report("stream_words(start=2**70, count=1M)", fast, items=1_000_000)


if __name__ == "__main__":
    main()
