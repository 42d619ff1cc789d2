"""Reader throughput in plan order, and the time from a restore to the first record.

Usage: python benchmarks/bench_reader.py [--dir DIR] [--repeats N] [--large | --decoding]

Writes 256 shards x 4,000 records x 100 bytes (a TFDS layout) and reads them in the order
of a plan with cycle length 16, block length 16 and shuffled files (seed 32):

* throughput of ``Reader.batches()``, of ``batches(batch_size=1024)``, of item iteration
  and of one rank of four (elastic mode), against the framing reader's sequential
  ``readplan.tfrecord.read`` over the same files, as records per second relative to it,
  in wall time and in CPU time (steadier on a shared machine); the rank's figures are per
  rank (targets: batches >= 0.70, items >= 0.70; one rank of four >= 3 M records/s);
* the same records through the compiled kernels alone (``_floors.py``: whole files read,
  frames scanned, payloads cut and checked, an ``Item`` made per record, no plan): every
  record, and one in four as a rank of four takes them: the least that a reader which
  delivers checked ``bytes`` in ``Item`` objects pays on the machine;
* time from ``load_state_dict`` to the first record at an early and a late position
  (target: late/early <= 2, and <= 10 ms with index sidecars);

first without index sidecars, then with them (once they are settled: ``SETTLED_NS`` after
they were written, as a training job's files are), and finally the restore time without
sidecars relative to with them (target: <= 2).  Then one rank of four over 32 shards x 64
records of 100 KiB, without and with sidecars, against ``tfrecord.read`` of the same files
(``--large`` runs only that part).  Then decoding readers over 16 shards x 2,000
TFDS-like ``tf.train.Example`` records (``benchmarks/_examples.py``): ``batches()`` and items
with ``decode=True``, a schema and ``"tfds"``, whose batches are decoded through
``decode_batch``'s columns, and ``batches(256)`` (collated), against the undecoding
reader's batches decoded one record at a time (and collated), as CPU time.
``--decoding`` runs only that part.  Prints medians and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _examples import SCHEMA, cpu_ratio, write_examples
from _floors import items_floor, rank_floor

from readplan import ReadConfig, Reader, ReadPlan, example, tfrecord
from readplan._internal.progress import Progress
from readplan.index import build_index
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading.collate import collate
from readplan.records.index._checked import SETTLED_NS

SHARDS = 256
RECORDS = 4_000
SIZE = 100
# The large-record layout: a rank of four skips 300 KiB between its records of a block.
LARGE_SHARDS = 32
LARGE_RECORDS = 64
LARGE_SIZE = 100 * 1024
CONFIG = ReadConfig(
    interleave_cycle_length=16, interleave_block_length=16, shuffle_files=True, shuffle_seed=32
)


def write_layout(directory: Path) -> ReadPlan:
    info = DatasetInfo("bench", {"train": [RECORDS] * SHARDS}, data_dir=directory)
    records = [(k.to_bytes(4, "little") * (SIZE // 4 + 1))[:SIZE] for k in range(RECORDS)]
    with Progress("writing shards", total=SHARDS, unit=" files") as bar:
        for path in info.shard_paths("train"):
            tfrecord.write(path, records)
            bar.advance()
    return ReadPlan(info, "train", CONFIG)


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one run."""
    start, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - start, time.process_time() - cpu


def sequential(plan: ReadPlan) -> int:
    count = 0
    for fi in plan.instructions:
        for _ in tfrecord.read(fi.filename):
            count += 1
    return count


def batches(plan: ReadPlan) -> int:
    return sum(len(batch) for batch in Reader(plan).batches())


def sized_batches(plan: ReadPlan) -> int:
    return sum(len(batch) for batch in Reader(plan).batches(1024))


def items(plan: ReadPlan) -> int:
    return sum(1 for _ in Reader(plan))


def rank_items(plan: ReadPlan) -> int:
    return sum(1 for _ in Reader(plan, rank=1, world_size=4))


def first_record_after_restore(plan: ReadPlan, state: dict[str, object], repeats: int) -> float:
    times = []
    for _ in range(repeats + 1):
        reader = Reader(plan)
        start = time.perf_counter()
        reader.load_state_dict(state)
        next(iter(reader))
        times.append(time.perf_counter() - start)
        reader.close()
    return statistics.median(times[1:])


def report(plan: ReadPlan, label: str, repeats: int) -> float:
    """Prints one configuration's figures; returns the early restore time."""
    total = plan.num_examples
    megabytes = total * (SIZE + 16) / 1e6
    readers = {
        "Reader.batches(), plan order": (batches, total),
        "Reader.batches(1024)": (sized_batches, total),
        "Reader items, plan order": (items, total),
        "Reader items, rank 1 of 4": (rank_items, len(range(1, total, 4))),
        "floor: read + items, kernels": (items_floor, total),
        "floor: rank 1 of 4, kernels": (rank_floor, len(range(1, total, 4))),
    }
    # Runs alternate with the baseline so that a busy machine slows both alike; the ratio
    # is taken per round, then the median of the rounds is reported.
    base_times: list[tuple[float, float]] = []
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in readers}
    ratios: dict[str, list[tuple[float, float]]] = {name: [] for name in readers}
    for round_ in range(repeats + 1):
        base = timed(lambda: sequential(plan))
        for name, (run, share) in readers.items():
            seconds = timed(partial(run, plan))
            if round_:  # the first round warms the page cache and the plan's caches
                times[name].append(seconds)
                ratios[name].append(
                    (base[0] / seconds[0] * share / total, base[1] / seconds[1] * share / total)
                )
        if round_:
            base_times.append(base)
    print(f"\n[{label}] {total:,} records, {megabytes:.0f} MB, medians of {repeats} rounds")
    print("  (records/s and ratio to tfrecord.read: wall time; then in CPU time)")
    _row("tfrecord.read, shard by shard", total, base_times, None)
    for name, (_, share) in readers.items():
        _row(name, share, times[name], ratios[name])
    early = plan.checkpoint(0, 1_000).to_dict()
    late = plan.checkpoint(0, total - 1_000).to_dict()
    restores = 4 * repeats + 1
    early_s = first_record_after_restore(plan, early, restores)
    late_s = first_record_after_restore(plan, late, restores)
    print(
        f"  restore -> first record: early {early_s * 1e3:.2f} ms, late {late_s * 1e3:.2f} ms, "
        f"late/early {late_s / early_s:.2f}"
    )
    return early_s


def large_rank_report(directory: Path, repeats: int) -> None:
    """One rank of four on 100 KiB records, without and then with sidecars, against
    ``tfrecord.read`` of the same files, in CPU time."""
    directory.mkdir(parents=True, exist_ok=True)
    info = DatasetInfo("large", {"train": [LARGE_RECORDS] * LARGE_SHARDS}, data_dir=directory)
    record = bytes(range(256)) * (LARGE_SIZE // 256)
    for path in info.shard_paths("train"):
        tfrecord.write(path, [record] * LARGE_RECORDS)
    plan = ReadPlan(info, "train", CONFIG)
    total = plan.num_examples
    share = len(range(1, total, 4))
    print(f"\n[100 KiB records] {total:,} records, rank 1 of 4, CPU time, medians of {repeats}")
    for label in ("without index sidecars", "with index sidecars"):
        if label.startswith("with "):
            for path in info.shard_paths("train"):
                build_index(path)
        mine, base, ratio = cpu_ratio(partial(rank_items, plan), partial(sequential, plan), repeats)
        print(
            f"  {label:<23} {share / mine / 1e3:6.2f} k records/s per rank; tfrecord.read "
            f"{total / base / 1e3:6.2f} k/s; ratio {share / total / ratio:.2f}"
        )


def decoding_report(directory: Path, repeats: int) -> None:
    """Decoding readers, batched through columns, against decoding one record at a time."""
    info = write_examples(directory / "examples", shards=16, per_shard=2_000)
    plan = ReadPlan(info, "train", CONFIG)
    features = info.features
    assert features is not None
    modes: dict[str, tuple[Any, Callable[[bytes], Any]]] = {
        "decode=True": (True, example.decode),
        "decode=schema": (SCHEMA, partial(example.parse, schema=SCHEMA)),
        "decode='tfds'": ("tfds", features.decoder()),
    }
    total = plan.num_examples
    print(f"\n[decoding] {total:,} TFDS-like records, CPU time, medians of {repeats} rounds")
    for name, (mode, one) in modes.items():
        for label, run, anchor in (
            (
                "batches()",
                lambda mode=mode: sum(map(len, Reader(plan, decode=mode).batches())),
                lambda one=one: sum(len(list(map(one, b.records))) for b in Reader(plan).batches()),
            ),
            (
                "items",
                lambda mode=mode: sum(1 for _ in Reader(plan, decode=mode)),
                lambda one=one: sum(len(list(map(one, b.records))) for b in Reader(plan).batches()),
            ),
            (
                "batches(256)",
                lambda mode=mode: sum(map(len, Reader(plan, decode=mode).batches(256))),
                lambda one=one: sum(
                    len(collate(list(map(one, b.records)))) for b in Reader(plan).batches(256)
                ),
            ),
        ):
            mine, old, ratio = cpu_ratio(run, anchor, repeats)
            print(
                f"  {name:<14} {label:<13} {mine / total * 1e6:6.2f} us/record; one record at "
                f"a time {old / total * 1e6:6.2f} us/record; ratio {ratio:.2f}"
            )


def _row(
    name: str,
    records: int,
    times: list[tuple[float, float]],
    ratios: list[tuple[float, float]] | None,
) -> None:
    wall = statistics.median(t[0] for t in times)
    cpu = statistics.median(t[1] for t in times)
    line = f"  {name:<31} {wall:6.3f} s  {records / wall / 1e6:5.2f} M rec/s"
    if ratios is not None:
        line += f"  ratio {statistics.median(r[0] for r in ratios):.2f}"
    line += f"  | CPU {records / cpu / 1e6:5.2f} M rec/s"
    if ratios is not None:
        line += f"  ratio {statistics.median(r[1] for r in ratios):.2f}"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", help="write the shards here (default: a temporary directory)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per figure")
    parser.add_argument("--decoding", action="store_true", help="only the decoding readers")
    parser.add_argument("--large", action="store_true", help="only the 100 KiB rank figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="readplan-bench-") as scratch:
        directory = Path(args.dir or scratch)
        directory.mkdir(parents=True, exist_ok=True)
        if args.decoding:
            decoding_report(directory, args.repeats)
            return
        if args.large:
            large_rank_report(directory, args.repeats)
            return
        plan = write_layout(directory)
        print(f"plan: {plan}")
        print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        walked = report(plan, "without index sidecars", args.repeats)
        with Progress("building index sidecars", total=SHARDS, unit=" files") as bar:
            for fi in plan.instructions:
                build_index(fi.filename)
                bar.advance()
        # A sidecar's check is kept for reuse only once both files have not changed for
        # SETTLED_NS (specs/tfrecord.md §8.2); until then every open checks it again.  A
        # training job reads settled files: time that, not the first seconds after writing.
        time.sleep(SETTLED_NS / 1e9 + 0.1)
        indexed = report(plan, "with index sidecars", args.repeats)
        print(f"\nrestore without sidecars / with sidecars: {walked / indexed:.2f}")
        large_rank_report(directory / "large", args.repeats)
        decoding_report(directory, args.repeats)
        print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
