"""Plans of 10^4-10^6 shards for the scale benchmarks, and timing against the anchor.

The anchor of every figure is ``np.random.permutation(num_files)``, timed in the same run:
the inherent work of shuffling that many files. Times are CPU times of this process: on a
shared machine, wall time also counts the time other processes hold the cores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np
from _timing import median_ms

from readplan import DatasetInfo, ReadConfig, ReadPlan

# Examples per shard of the web-scale layouts: 5,510 at 10^4 and 10^5 shards, and
# 10^4 at 10^6 shards (a 10^10-example split).
SHARD_COUNTS = (10_000, 100_000, 1_000_000)
CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=32)


def per_shard(num_shards: int) -> int:
    return 10_000 if num_shards >= 1_000_000 else 5_510


def scale_info(num_shards: int) -> DatasetInfo:
    return DatasetInfo(name="web", splits={"train": [per_shard(num_shards)] * num_shards})


def scale_plan(num_shards: int, config: ReadConfig = CONFIG) -> ReadPlan:
    return ReadPlan(scale_info(num_shards), "train", config)


def cpu_ms(fn: Callable[[], object], repeats: int) -> float:
    """Median CPU milliseconds of ``fn`` (numpy works in this one thread)."""
    return median_ms(fn, repeats, clock=time.process_time)


def permutation_ms(num_files: int, repeats: int) -> float:
    """The anchor: ``np.random.permutation(num_files)``, in CPU time."""
    return cpu_ms(lambda: np.random.permutation(num_files), max(repeats, 5))


def fresh_epochs(first: int = 1_000) -> Iterator[int]:
    """Epochs never computed before in a plan: each call does the whole epoch's work."""
    return iter(range(first, first + 10**6))
