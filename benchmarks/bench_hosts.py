"""A 1,024-host job on a 10^6-shard, 10^10-example split, simulated without reading data.

Run: python benchmarks/bench_hosts.py [--hosts 1024] [--checkpoints 1]

Every host builds its own plan of the same split, as a TFDS input pipeline does with
``input_context`` (host ``h`` of ``H`` reads files ``h, h + H, ...``), with shuffled files
(seed 32). Measured per host: building the plan (the dataset's metadata, loaded once per host,
is timed on its own) and its first epoch's schedule; for ``--checkpoints`` of the hosts (and
the first host at least), the peak memory of both, and a checkpoint at a random position
(time, JSON size, peak memory). Memory is traced (tracemalloc) in calls of its own, since
tracing slows the work: every timed call runs untraced. Computed over all hosts: every file
of the split belongs to exactly one host, each host's epoch feeds exactly its own files, and
the hosts' epochs add up to the split's 10^10 examples, so together they read one epoch
exactly once. The anchor for the per-host work is ``np.random.permutation(10**6)``, timed
in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from _timing import median_ms

from readplan import DatasetInfo, InputContext, ReadConfig, ReadPlan

T = TypeVar("T")

SHARDS = 1_000_000
PER_SHARD = 10_000


def _timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()``'s result and seconds, untraced."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def _peak_mb(fn: Callable[[], object]) -> float:
    """Peak traced megabytes of ``fn()``; tracing slows it, so it is never the timed call."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1024)
    parser.add_argument("--checkpoints", type=int, default=1)
    args = parser.parse_args()
    hosts = args.hosts

    def metadata() -> DatasetInfo:
        return DatasetInfo(name="web", splits={"train": [PER_SHARD] * SHARDS})

    info, info_s = _timed(metadata)
    info_mb = _peak_mb(metadata)
    anchor_ms = median_ms(lambda: np.random.permutation(SHARDS), 5)
    owner = np.zeros(SHARDS, dtype=np.int64)
    total = 0
    build_s, schedule_s, peaks = [], [], []
    rng = np.random.default_rng(0)
    checkpoint_rows = []
    for host in range(hosts):
        config = ReadConfig(
            shuffle_files=True, shuffle_seed=32, input_context=InputContext(host, hosts)
        )
        start = time.perf_counter()
        plan = ReadPlan(info, "train", config)
        built = time.perf_counter()
        files = plan.file_order(0)
        done = time.perf_counter()
        build_s.append(built - start)
        schedule_s.append(done - built)
        # The epoch feeds exactly the host's own files, each once.
        assert np.array_equal(np.sort(files), plan.selected)
        np.add.at(owner, plan.selected, 1)
        total += plan.num_examples
        if host < max(1, args.checkpoints):
            peaks.append(_peak_mb(lambda c=config: ReadPlan(info, "train", c).file_order(0)))
        if host < args.checkpoints:
            position = int(rng.integers(0, plan.num_examples))
            checkpoint, seconds = _timed(lambda plan=plan, p=position: plan.checkpoint(0, p))
            # A plan of its own, so the traced checkpoint does the same work as the timed one.
            fresh = ReadPlan(info, "train", config)
            fresh.file_order(0)
            peak = _peak_mb(lambda plan=fresh, p=position: plan.checkpoint(0, p))
            size = len(checkpoint.to_json())
            checkpoint_rows.append((host, position, seconds, size, peak))
    covered = bool((owner == 1).all()) and total == SHARDS * PER_SHARD

    print(f"{hosts:,} hosts, {SHARDS:,} shards, {SHARDS * PER_SHARD:,} examples")
    print(f"dataset metadata (once per host): {info_s:.2f} s, {info_mb:.0f} MB peak")
    print(f"anchor np.random.permutation({SHARDS:,}): {anchor_ms:.1f} ms")
    print(
        f"per-host plan: {statistics.median(build_s) * 1e3:.0f} ms median "
        f"(max {max(build_s) * 1e3:.0f} ms); first epoch's schedule "
        f"{statistics.median(schedule_s) * 1e3:.2f} ms median; peak of both "
        f"{max(peaks, default=0):.0f} MB (over {len(peaks)} hosts)"
    )
    for host, position, seconds, size, peak in checkpoint_rows:
        print(
            f"host {host}: checkpoint at position {position:,}: {seconds * 1e3:.1f} ms, "
            f"{size:,} bytes of JSON, {peak:.0f} MB peak"
        )
    print(
        f"every file read by exactly one host and the hosts' epochs add up to the split: "
        f"{covered} ({total:,} examples)"
    )
    if not covered:
        raise SystemExit("the hosts do not cover the epoch exactly once")


if __name__ == "__main__":
    main()
