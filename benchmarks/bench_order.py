"""Read-order benchmark on the ImageNet layout (1,281,167 examples in 1,024 shards).

Run: python benchmarks/bench_order.py [--repeats N]

Measures, in one run:
* a full epoch's order (16/16, shuffled files, seed 32) against the yardstick
  ``np.random.permutation(1_281_167)`` ("one pass over an epoch-sized array");
* the peak extra memory of building that order, as a multiple of the output arrays;
* ``locate`` at random positions, in a cached epoch and in a fresh epoch each call;
* streaming a synthetic plan of 10^9 examples (100,000 shards of 10,000): the time to
  its first 10^6 positions and the process's peak resident memory (in a subprocess);
* ``locate`` in a fresh epoch of a 10^5-shard plan and ``np.random.permutation(10^5)``
  side by side: one of each per round, in CPU time, medians over the rounds (target
  <= 20x); the plan is new, so its first rounds also grow the schedule cache; and the
  same in a new process whose first work is 8 such locates (then 8 permutations), where
  every page the schedules keep is new to the process;
* at 10^4, 10^5 and 10^6 shards: building the plan, a fresh epoch's schedule (file shuffle
  and interleave), ``locate`` in a fresh epoch, ``position_of`` and the interleave state a
  checkpoint is built from, in CPU time, each as a ratio to
  ``np.random.permutation(num_files)`` timed in the same run (``--shards`` picks the sizes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _scale import SHARD_COUNTS, cpu_ms, fresh_epochs, permutation_ms, scale_plan
from _timing import median_ms

from readplan import ReadConfig, ReadPlan
from readplan.metadata.dataset_info import DatasetInfo, shard_lengths

N_EXAMPLES = 1_281_167
# Fresh-epoch locates of the new-process measurement: as many as the schedule cache holds.
FRESH_PROCESS_ROUNDS = 8
CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=32)


def imagenet_plan() -> ReadPlan:
    info = DatasetInfo(name="imagenet2012", splits={"train": shard_lengths(N_EXAMPLES, 1024)})
    return ReadPlan(info, "train", CONFIG)


def full_epoch(repeats: int) -> dict[str, float]:
    plan = imagenet_plan()
    epochs = iter(range(10**6))
    # A fresh epoch every call: the file shuffle and the schedule are computed too.
    order_ms = median_ms(lambda: plan.epoch(next(epochs)), repeats)
    permutation_ms = median_ms(lambda: np.random.permutation(N_EXAMPLES), repeats)
    tracemalloc.start()
    order = plan.epoch(next(epochs))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    output = order.file_index.nbytes + order.record_index.nbytes
    return {
        "epoch_ms": order_ms,
        "permutation_ms": permutation_ms,
        "ratio": order_ms / permutation_ms,
        "peak_extra_over_output": (peak - output) / output,
    }


def locate(repeats: int) -> dict[str, float]:
    plan = imagenet_plan()
    rng = np.random.default_rng(0)
    positions = rng.integers(0, N_EXAMPLES, max(repeats, 200)).tolist()
    plan.epoch(7)
    cached = []
    for position in positions:
        start = time.perf_counter()
        plan.locate(7, position)
        cached.append(time.perf_counter() - start)
    fresh = []
    for k, position in enumerate(positions):
        start = time.perf_counter()
        plan.locate(1000 + k, position)
        fresh.append(time.perf_counter() - start)
    return {
        "locate_cached_epoch_ms": statistics.median(cached) * 1e3,
        "locate_cached_epoch_max_ms": max(cached) * 1e3,
        "locate_fresh_epoch_ms": statistics.median(fresh) * 1e3,
        "locate_fresh_epoch_max_ms": max(fresh) * 1e3,
    }


STREAM_CHILD = """
import json, resource, time
from readplan.metadata.dataset_info import DatasetInfo
from readplan import ReadConfig, ReadPlan
info = DatasetInfo(name="synthetic", splits={"train": [10_000] * 100_000})
start = time.perf_counter()
plan = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))
seen = 0
for chunk in plan.iter_epoch(0, chunk_size=1 << 16):
    seen += len(chunk)
    if seen >= 10**6:
        break
elapsed = time.perf_counter() - start
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "maxrss_mb": rss_mb}))
"""

BASELINE_CHILD = """
import json, resource
import numpy, readplan.plan
print(json.dumps({"maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def streaming(repeats: int) -> dict[str, float]:
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", STREAM_CHILD], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(max(3, repeats // 5))
    ]
    base = json.loads(
        subprocess.run(
            [sys.executable, "-c", BASELINE_CHILD], check=True, capture_output=True, text=True
        ).stdout
    )
    return {
        "stream_first_1e6_s": statistics.median(r["seconds"] for r in runs),
        "stream_maxrss_mb": statistics.median(r["maxrss_mb"] for r in runs),
        "interpreter_numpy_baseline_mb": base["maxrss_mb"],
    }


def scale(num_shards: int, repeats: int) -> dict[str, float]:
    """Per-file costs of one plan of ``num_shards`` shards, against the anchor."""
    repeats = max(3, repeats // (5 if num_shards >= 1_000_000 else 1))
    start = time.process_time()
    plan = scale_plan(num_shards)
    build_ms = (time.process_time() - start) * 1e3
    anchor = permutation_ms(num_shards, repeats)
    rng = np.random.default_rng(1)
    epochs = fresh_epochs()
    position = int(rng.integers(0, plan.num_examples))
    schedule_ms = cpu_ms(lambda: plan.epoch_schedule(next(epochs)), repeats)
    locate_ms = cpu_ms(lambda: plan.locate(next(epochs), position), repeats)
    plan.epoch_schedule(3)
    file_index, record_index = plan.locate(3, position)
    position_of_ms = cpu_ms(lambda: plan.position_of(3, file_index, record_index), repeats)
    state_ms = cpu_ms(lambda: plan.schedule(3).state_at(position), repeats)
    results = {
        "build_ms": build_ms,
        "permutation_ms": anchor,
        "schedule_fresh_ms": schedule_ms,
        "locate_fresh_ms": locate_ms,
        "position_of_cached_ms": position_of_ms,
        "state_cached_ms": state_ms,
    }
    return {
        **results,
        **{f"{k[:-3]}_ratio": v / anchor for k, v in results.items() if k != "build_ms"},
    }


def fresh_locate(rounds: int, num_shards: int = 100_000) -> dict[str, float]:
    """``locate`` at a fresh epoch against the anchor, one of each per round (CPU time)."""
    plan = scale_plan(num_shards)
    rng = np.random.default_rng(2)
    locate, anchor = [], []
    for epoch in range(1_000, 1_000 + rounds):
        position = int(rng.integers(0, plan.num_examples))
        start = time.process_time()
        np.random.permutation(num_shards)
        anchor.append(time.process_time() - start)
        start = time.process_time()
        plan.locate(epoch, position)
        locate.append(time.process_time() - start)
    return {
        "fresh_locate_ms": statistics.median(locate) * 1e3,
        "fresh_locate_max_ms": max(locate) * 1e3,
        "fresh_locate_permutation_ms": statistics.median(anchor) * 1e3,
        "fresh_locate_ratio": statistics.median(locate) / statistics.median(anchor),
        "fresh_locate_ratio_per_round": statistics.median(
            a / b for a, b in zip(locate, anchor, strict=True)
        ),
    }


FRESH_PROCESS_CHILD = """
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, {here!r})
from _scale import scale_plan
plan = scale_plan(100_000)
rng = np.random.default_rng(3)
locate, anchor = [], []
for epoch in range(1_000, 1_000 + {rounds}):
    position = int(rng.integers(0, plan.num_examples))
    start = time.process_time()
    plan.locate(epoch, position)
    locate.append(time.process_time() - start)
for _ in range({rounds}):
    start = time.process_time()
    np.random.permutation(100_000)
    anchor.append(time.process_time() - start)
print(json.dumps([statistics.median(locate) * 1e3, statistics.median(anchor) * 1e3]))
"""


def fresh_process_locate(rounds: int) -> dict[str, float]:
    """The same in a new process that does nothing else first: the locates run before any
    permutation, while the schedule cache grows (its pages are new to the process)."""
    here = str(Path(__file__).resolve().parent)
    child = FRESH_PROCESS_CHILD.format(here=here, rounds=rounds)
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", child], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(3)
    ]
    locate_ms = statistics.median(r[0] for r in runs)
    anchor_ms = statistics.median(r[1] for r in runs)
    return {
        "fresh_process_locate_ms": locate_ms,
        "fresh_process_permutation_ms": anchor_ms,
        "fresh_process_locate_ratio": locate_ms / anchor_ms,
    }


def print_fresh_locate(r: dict[str, float]) -> None:
    print(
        f"locate at a fresh epoch, 10^5 shards: {r['fresh_locate_ms']:.2f} ms median "
        f"(max {r['fresh_locate_max_ms']:.2f}), np.random.permutation(10^5) "
        f"{r['fresh_locate_permutation_ms']:.3f} ms median, side by side: ratio "
        f"{r['fresh_locate_ratio']:.1f}x (per round {r['fresh_locate_ratio_per_round']:.1f}x; "
        "target <= 20x)"
    )
    print(
        f"  in a new process, {FRESH_PROCESS_ROUNDS} fresh-epoch locates first, then as many "
        f"permutations (medians of 3 processes): {r['fresh_process_locate_ms']:.2f} ms / "
        f"{r['fresh_process_permutation_ms']:.3f} ms, ratio "
        f"{r['fresh_process_locate_ratio']:.1f}x"
    )


def print_scale(results: dict[int, dict[str, float]]) -> None:
    print("\nper-file work at scale, CPU ms median (ratio to np.random.permutation(num_files))")
    print(
        f"{'shards':>10}{'plan build':>12}{'permutation':>13}{'fresh schedule':>20}"
        f"{'locate, fresh':>20}{'position_of':>18}{'interleave state':>20}"
    )
    for shards, r in results.items():
        cells = [
            f"{r[key]:.1f} ({r[key[:-3] + '_ratio']:.1f}x)"
            for key in ("schedule_fresh_ms", "locate_fresh_ms", "position_of_cached_ms")
        ]
        print(
            f"{shards:>10,}{r['build_ms']:>12.0f}{r['permutation_ms']:>13.2f}{cells[0]:>20}"
            f"{cells[1]:>20}{cells[2]:>18}"
            f"{r['state_cached_ms']:>11.1f} ({r['state_cached_ratio']:.1f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--shards", type=int, nargs="*", default=list(SHARD_COUNTS))
    parser.add_argument(
        "--fresh-locate-only", action="store_true", help="only the fresh-epoch locate figure"
    )
    args = parser.parse_args()
    fresh = {
        **fresh_locate(max(args.repeats, 11)),
        **fresh_process_locate(FRESH_PROCESS_ROUNDS),
    }
    print_fresh_locate(fresh)
    if args.fresh_locate_only:
        print(json.dumps(fresh))
        return
    print_scale({n: scale(n, args.repeats) for n in args.shards})
    results = {
        **fresh,
        **full_epoch(args.repeats),
        **locate(args.repeats),
        **streaming(args.repeats),
    }
    print(f"full epoch order (16/16, shuffled): {results['epoch_ms']:.1f} ms median")
    print(f"np.random.permutation(1,281,167):   {results['permutation_ms']:.1f} ms median")
    print(f"  ratio: {results['ratio']:.2f}x the yardstick (target <= 2x)")
    print(
        f"  peak extra memory: {results['peak_extra_over_output']:.2f}x the output arrays "
        "(target <= 3x)"
    )
    print(
        f"locate, cached epoch: {results['locate_cached_epoch_ms']:.3f} ms median, "
        f"{results['locate_cached_epoch_max_ms']:.3f} ms max"
    )
    print(
        f"locate, fresh epoch each call: {results['locate_fresh_epoch_ms']:.3f} ms median, "
        f"{results['locate_fresh_epoch_max_ms']:.3f} ms max (target <= 1 ms)"
    )
    print(
        f"streaming 10^9-example plan: first 10^6 positions in "
        f"{results['stream_first_1e6_s']:.3f} s, peak RSS {results['stream_maxrss_mb']:.0f} MB "
        f"(interpreter + numpy alone: {results['interpreter_numpy_baseline_mb']:.0f} MB)"
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
