"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(
    fn: Callable[[], object], repeats: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Median time of ``fn`` in milliseconds, after one warm-up call.

    ``clock`` is wall time by default; ``time.process_time`` measures the process's CPU time,
    which on a shared machine leaves out the time other processes hold the cores.
    """
    fn()  # warm caches and imports
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times) * 1e3
