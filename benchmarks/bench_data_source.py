"""Random access with readplan.data_source against ArrayRecord's data source, same records.

Usage: python benchmarks/bench_data_source.py [--dir DIR] [--repeats N]

Writes a 256-shard TFDS-layout TFRecord dataset twice (records of 100 B and of 100 KiB),
converts every shard to ArrayRecord with ArrayRecord's own writer (``group_size:1``, what
its data source requires), and measures in the same run:

* ``source[k]`` at random keys, per record (target: within 2x of ArrayRecord's);
* ``source.__getitems__(keys)`` of 256 random keys, per record (target: at most
  ArrayRecord's time per record);
* sequential throughput of ``grain.DataLoader`` with readplan's ``OrderSampler`` over the
  data source, against the same loader with Grain's ``IndexSampler`` over ArrayRecord's
  data source, and against the ``Reader`` iterating the plan (100 B records).

Then ``__getitems__`` of 256 random keys with decoding (``decode=True``, a schema,
``"tfds"``) over 16 shards x 2,000 TFDS-like ``tf.train.Example`` records
(``benchmarks/_examples.py``), decoded through ``decode_batch``'s columns, against the raw
``__getitems__`` decoded one record at a time (what a decoding source did before), as CPU
time; ``--decoding`` runs only that part.

Prints medians.  Needs the ``grain`` extra (Grain installs ``array-record``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grain
import numpy as np
from _examples import SCHEMA, cpu_ratio, write_examples
from _timing import median_ms
from array_record.python.array_record_data_source import ArrayRecordDataSource
from array_record.python.array_record_module import ArrayRecordWriter

from readplan import ReadConfig, ReadPlan, tfrecord
from readplan._internal.progress import Progress
from readplan.grain import OrderSampler
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading.data_source import RecordSource, data_source
from readplan.reading.reader import Reader

SHARDS = 256
LAYOUTS = {"100 B": (100, 1_000), "100 KiB": (100 * 1024, 8)}  # record size, records/shard
SINGLE_KEYS = 2_000
BATCH = 256
STREAMED = 10_000
# Grain's default read options (16 threads, 500 records prefetched) and reading inline.
OPTIONS = {
    "default ReadOptions": grain.ReadOptions(),
    "ReadOptions(num_threads=0)": grain.ReadOptions(num_threads=0, prefetch_buffer_size=0),
}
CONFIG = ReadConfig(
    interleave_cycle_length=16, interleave_block_length=16, shuffle_files=True, shuffle_seed=32
)


def write_dataset(directory: Path, size: int, per_shard: int) -> tuple[DatasetInfo, list[str]]:
    """The TFRecord shards and their ArrayRecord twins; returns the info and twin paths."""
    info = DatasetInfo("bench", {"train": [per_shard] * SHARDS}, data_dir=directory)
    rng = np.random.default_rng(size)
    twins = []
    with Progress("writing shards", total=SHARDS, unit=" files") as bar:
        for k, path in enumerate(info.shard_paths("train")):
            records = [
                k.to_bytes(4, "little") + i.to_bytes(4, "little") + rng.bytes(size - 8)
                for i in range(per_shard)
            ]
            tfrecord.write(path, records)
            twin = f"{path}.array_record"
            writer = ArrayRecordWriter(twin, "group_size:1")
            for record in records:
                writer.write(record)
            writer.close()
            twins.append(twin)
            bar.advance()
    return info, twins


def per_record_us(
    reads: tuple[Callable[[Sequence[int]], object], Callable[[Sequence[int]], object]],
    batches: list[list[int]],
) -> tuple[float, float]:
    """Median over ``batches`` of the time per key of each of two readers, in microseconds.

    The two alternate batch by batch, so both see the same load on a shared machine.
    """
    times: tuple[list[float], list[float]] = ([], [])
    for keys in batches:
        for read, spent in zip(reads, times):
            start = time.perf_counter()
            read(keys)
            spent.append((time.perf_counter() - start) / len(keys))
    mine, anchor = (float(np.median(spent)) * 1e6 for spent in times)
    return mine, anchor


def singles(source: Any) -> Callable[[Sequence[int]], object]:
    def read(keys: Sequence[int]) -> object:
        return [source[k] for k in keys]

    return read


def compare_access(name: str, info: DatasetInfo, twins: list[str], repeats: int) -> None:
    started = time.perf_counter()
    ours: RecordSource = data_source(info, "train")
    built = time.perf_counter() - started
    theirs = ArrayRecordDataSource(twins)
    n = len(ours)
    assert len(theirs) == n
    rng = np.random.default_rng(1)
    check = rng.integers(0, n, size=200).tolist()
    assert ours.__getitems__(check) == list(theirs.__getitems__(check))
    for source in (ours, theirs):  # both from the page cache, files open: a fair start
        for first in range(0, n, 4096):
            source.__getitems__(list(range(first, min(n, first + 4096))))
    single = [rng.integers(0, n, size=SINGLE_KEYS // 10).tolist() for _ in range(10 * repeats)]
    batched = [rng.integers(0, n, size=BATCH).tolist() for _ in range(20 * repeats)]
    rows = {
        "source[k]": per_record_us((singles(ours), singles(theirs)), single),
        f"__getitems__({BATCH} keys)": per_record_us(
            (ours.__getitems__, theirs.__getitems__), batched
        ),
    }
    print(f"{name} records, {n:,} in {SHARDS} shards (sidecars built in {built:.2f} s)")
    for what, (mine, anchor) in rows.items():
        print(
            f"  {what:<22} readplan {mine:7.2f} us/record   ArrayRecord {anchor:7.2f} us/record"
            f"   ratio {mine / anchor:.2f}"
        )
    ours.close()


def compare_streaming(info: DatasetInfo, twins: list[str], repeats: int) -> None:
    plan = ReadPlan(info, "train", CONFIG)
    ours, theirs = data_source(info, "train"), ArrayRecordDataSource(twins)

    def loader(source: Any, sampler: Any, options: Any) -> Callable[[], None]:
        def run() -> None:
            stream = grain.DataLoader(
                data_source=source,
                sampler=sampler,
                worker_count=0,
                shard_options=grain.sharding.NoSharding(),
                read_options=options,
            )
            for count, _ in enumerate(stream, start=1):
                if count == STREAMED:
                    break

        return run

    def with_reader() -> None:
        for count, _ in enumerate(Reader(plan), start=1):
            if count == STREAMED:
                break

    print(f"sequential, first {STREAMED:,} records (plan 16/16, shuffled files; 100 B records)")
    index_sampler = grain.samplers.IndexSampler(len(theirs), num_epochs=1)
    for label, options in OPTIONS.items():
        mine = median_ms(loader(ours, OrderSampler(plan, epochs=1), options), repeats)
        anchor = median_ms(loader(theirs, index_sampler, options), repeats)
        print(
            f"  grain.DataLoader, {label}: RecordSource + OrderSampler "
            f"{STREAMED / mine:6.1f} k records/s   ArrayRecord + IndexSampler "
            f"{STREAMED / anchor:6.1f} k records/s   ratio {anchor / mine:.2f}"
        )
    reader = median_ms(with_reader, repeats)
    print(f"  Reader (items): {STREAMED / reader:6.1f} k records/s")


def compare_decoding(directory: Path, repeats: int) -> None:
    """Batched reads with decoding, through columns, against one record at a time."""
    info = write_examples(directory, shards=16, per_shard=2_000)
    raw = data_source(info, "train")
    rng = np.random.default_rng(2)
    batches = [rng.integers(0, len(raw), size=BATCH).tolist() for _ in range(40)]
    count = len(batches) * BATCH
    print(f"__getitems__({BATCH} keys) with decoding, TFDS-like records, CPU time")
    for name, mode in (("decode=True", True), ("decode=schema", SCHEMA), ("decode='tfds'", "tfds")):
        source = data_source(info, "train", decode=mode)
        one = source._decoder  # the source's one-record decoder, as source[k] applies it
        assert one is not None
        mine, old, ratio = cpu_ratio(
            lambda source=source: [source.__getitems__(keys) for keys in batches],
            lambda one=one: [list(map(one, raw.__getitems__(keys))) for keys in batches],
            repeats,
        )
        print(
            f"  {name:<14} {mine / count * 1e6:6.2f} us/record; one record at a time "
            f"{old / count * 1e6:6.2f} us/record; ratio {ratio:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--decoding", action="store_true", help="only batched decoding reads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        compare_decoding(Path(folder) / "examples", args.repeats)
        if args.decoding:
            return
        for name, (size, per_shard) in LAYOUTS.items():
            directory = Path(folder) / name.replace(" ", "")
            directory.mkdir()
            info, twins = write_dataset(directory, size, per_shard)
            compare_access(name, info, twins, args.repeats)
            if size == 100:
                compare_streaming(info, twins, args.repeats)


if __name__ == "__main__":
    main()
