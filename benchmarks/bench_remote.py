"""Reading a dataset in plan order from local disk, a GCS emulator and a slow store.

One command: ``PYTHONPATH=src python benchmarks/bench_remote.py``.  It writes two 256-shard
datasets (100-byte and 100-KiB records), starts the GCS emulator on a loopback port, and
reads each dataset in plan order (interleave 16/16, shuffled files) from

* ``local``: the files on disk (the anchor),
* ``gcs``: the GCS emulator (``gs://``), through a request-counting wrapper,
* ``slow``: an in-process fsspec store that adds 20 ms to every request, standing in for
  a real region's time to first byte.

It prints records/s, bytes/s, the ratio to local, requests per epoch against the runs of
consecutive records in the plan, and the peak of the bytes held by the prefetcher against
its bound.

Readers that read by random access follow: rank 1 of 4 (elastic mode) and one rank with an
example shuffle (buffer of 1,024), over local disk and the slow store, first without index
sidecars, then (once the data source below has written them) with them.  Over the store
each runs twice in a row: ``ahead`` fetches the next spans in the background, ``sync``
(``SPAN_AHEAD = 0``) fetches each span when the reader reaches it, as before.  It prints
records/s, the ratio to local and data GETs and lookups per record.

Then random access with ``readplan.data_source`` over the same three cases (the local
source is the anchor): building the index sidecars on first use, opening every shard
(one batch holding a key of each), ``source[k]`` at random keys, and ``__getitems__`` of
256 random keys, with the requests each makes.  Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import fsspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.remote_stores import gcs_emulator, pin_clients_to_loopback, upload_tree

pin_clients_to_loopback()  # before gcsfs is imported

from readplan import (  # noqa: E402
    ExampleShuffle,
    storage,
    tfrecord,
)
from readplan.metadata.dataset_info import DatasetInfo  # noqa: E402
from readplan.plan import ReadConfig, ReadPlan  # noqa: E402
from readplan.reading import reader as reader_module  # noqa: E402
from readplan.reading.data_source import data_source  # noqa: E402
from readplan.reading.prefetch import DEFAULT_SPAN_AHEAD  # noqa: E402
from readplan.reading.reader import Reader  # noqa: E402

SHARDS = 256
LATENCY = 0.020
SINGLE_KEYS = 100
BATCHES = 15
BATCH = 256
CONFIG = ReadConfig(
    interleave_cycle_length=16, interleave_block_length=16, shuffle_files=True, shuffle_seed=0
)


def write_dataset(root: Path, name: str, per_shard: int, size: int) -> Path:
    folder = root / name / "1.0.0"
    folder.mkdir(parents=True)
    payload = bytes(range(256)) * (size // 256 + 1)
    for shard in range(SHARDS):
        records = (payload[k % 256 : k % 256 + size] for k in range(per_shard))
        tfrecord.write(folder / f"{name}-train.tfrecord-{shard:05d}-of-{SHARDS:05d}", records)
    info = {"name": name, "splits": [{"name": "train", "shardLengths": [per_shard] * SHARDS}]}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    return folder


def runs_in_plan(plan: ReadPlan) -> int:
    order = plan.epoch(0)
    files, records = order.file_index, order.record_index
    cuts = (files[1:] != files[:-1]) | (records[1:] != records[:-1] + 1)
    return int(np.count_nonzero(cuts)) + 1


# Readers by random access: (name, config, rank, world size).
RANDOM_ACCESS = (
    ("rank 1/4", CONFIG, 1, 4),
    (
        "shuffle",
        ReadConfig(
            interleave_cycle_length=16,
            interleave_block_length=16,
            shuffle_files=True,
            shuffle_seed=0,
            example_shuffle=ExampleShuffle(1024, 0),
        ),
        0,
        1,
    ),
)


def read_epoch(
    url: str,
    options: dict[str, Any] | None,
    config: ReadConfig = CONFIG,
    rank: int = 0,
    ranks: int = 1,
) -> tuple[float, int, int]:
    info = DatasetInfo.load(url, storage_options=options)
    plan = ReadPlan(info, "train", config)
    start = time.perf_counter()
    count = size = 0
    reader = Reader(plan, storage_options=options, rank=rank, world_size=ranks)
    for batch in reader.batches():
        count += len(batch)
        size += sum(map(len, batch.records))
    return time.perf_counter() - start, count, size


def wrapped(target: str, target_options: dict[str, Any], latency: float) -> dict[str, Any]:
    return {
        "target_protocol": target,
        "target_options": target_options,
        "latency": latency,
        "tag": uuid.uuid4().hex,
    }


def measure(url: str, options: dict[str, Any] | None, repeats: int, *how: Any) -> dict[str, Any]:
    times = []
    requests: dict[str, float] = {}
    peak = 0
    for _ in range(repeats):
        fs = fsspec.filesystem("wrapped", **options) if options else None
        if fs is not None:
            fs.requests.clear()
        storage.prefetcher().reset_peak()
        elapsed, count, size = read_epoch(url, options, *how)
        times.append(elapsed)
        peak = max(peak, storage.prefetcher().peak)
        if fs is not None:
            requests = {kind: float(n) for kind, n in fs.requests.items()}
    seconds = statistics.median(times)
    return {
        "seconds": seconds,
        "records": count,
        "records_per_s": count / seconds,
        "bytes_per_s": size / seconds,
        "requests": requests,
        "peak_prefetch_bytes": peak,
    }


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _gets(options: dict[str, Any] | None) -> Any:
    """A function returning the data GETs made since its last call (None for local)."""
    if not options:
        return lambda: None
    fs = fsspec.filesystem("wrapped", **options)
    fs.requests.clear()

    def since() -> int:
        count = fs.requests["get"]
        fs.requests.clear()
        return int(count)

    return since


def measure_source(url: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """Random access to the dataset at ``url``: seconds and GETs per phase."""
    gets = _gets(options)
    index_s, source = _timed(lambda: data_source(url, "train", storage_options=options))
    gets()
    n = len(source)
    rng = np.random.default_rng(7)
    one_per_shard = np.arange(0, n, n // SHARDS)
    open_s, _ = _timed(lambda: source.__getitems__(one_per_shard))
    open_gets = gets()
    single = []
    for key in rng.integers(0, n, SINGLE_KEYS).tolist():
        single.append(_timed(lambda key=key: source[key])[0])
    single_gets = gets()
    batches = []
    for keys in rng.integers(0, n, (BATCHES, BATCH)):
        batches.append(_timed(lambda keys=keys: source.__getitems__(keys))[0])
    batch_gets = gets()
    source.close()
    return {
        "index_s": index_s,
        "open_all_s": open_s,
        "open_gets": open_gets,
        "single_ms": statistics.median(single) * 1e3,
        "single_gets": None if single_gets is None else single_gets / SINGLE_KEYS,
        "batch_ms": statistics.median(batches) * 1e3,
        "batch_gets": None if batch_gets is None else batch_gets / BATCHES,
    }


def print_sources(rows: list[dict[str, Any]]) -> None:
    anchor = {r["dataset"]: r for r in rows if r["case"] == "local"}
    print(
        f"\n{'dataset':8} {'case':6} {'index s':>8} {'open 256':>9} {'GETs':>5} "
        f"{'source[k] ms':>13} {'x local':>8} {'GETs':>5} {'256 keys ms':>12} "
        f"{'us/rec':>7} {'x local':>8} {'GETs':>6}"
    )
    for row in rows:
        base = anchor[row["dataset"]]
        row["single_ratio"] = row["single_ms"] / base["single_ms"]
        row["batch_ratio"] = row["batch_ms"] / base["batch_ms"]
        print(
            f"{row['dataset']:8} {row['case']:6} {row['index_s']:8.2f} "
            f"{row['open_all_s']:8.2f}s {row['open_gets'] or 0:5} {row['single_ms']:13.3f} "
            f"{row['single_ratio']:8.0f} {row['single_gets'] or 0:5.1f} {row['batch_ms']:12.2f} "
            f"{row['batch_ms'] * 1e3 / BATCH:7.1f} {row['batch_ratio']:8.0f} "
            f"{row['batch_gets'] or 0:6.1f}"
        )


def measure_random_access(
    name: str, cases: dict[str, Any], sidecars: bool, repeats: int
) -> list[dict[str, Any]]:
    """The readers by random access over local disk and the slow store; over the store with
    the next spans fetched in the background (``ahead``) and without (``sync``), side by
    side in the same run."""
    rows = []
    for reader_name, config, rank, ranks in RANDOM_ACCESS:
        for case in ("local", "slow"):
            url, options = cases[case]
            for fetch in ("ahead", "sync") if options else ("ahead",):
                reader_module.SPAN_AHEAD = DEFAULT_SPAN_AHEAD if fetch == "ahead" else 0
                row = measure(url, options, repeats, config, rank, ranks)
                row.update(dataset=name, reader=reader_name, case=case, fetch=fetch)
                row["sidecars"] = sidecars
                rows.append(row)
    reader_module.SPAN_AHEAD = DEFAULT_SPAN_AHEAD
    return rows


def print_random_access(rows: list[dict[str, Any]]) -> None:
    key = ("dataset", "reader", "sidecars")
    anchor = {tuple(r[k] for k in key): r for r in rows if r["case"] == "local"}
    print(
        f"\n{'dataset':8} {'reader':9} {'sidecars':8} {'case':6} {'fetch':6} "
        f"{'records/s':>11} {'x local':>8} {'GETs/rec':>9} {'stats/rec':>9}"
    )
    for row in rows:
        base = anchor[tuple(row[k] for k in key)]
        row["ratio_to_local"] = row["records_per_s"] / base["records_per_s"]
        per = max(1, row["records"])
        gets, stats = (row["requests"].get(kind, 0) / per for kind in ("get", "info"))
        print(
            f"{row['dataset']:8} {row['reader']:9} {row['sidecars']!s:8} {row['case']:6} "
            f"{row['fetch']:6} {row['records_per_s']:11,.0f} {row['ratio_to_local']:8.3f} "
            f"{gets:9.4f} {stats:9.4f}"
        )


def copy_to_memory(folder: Path, bucket: str) -> str:
    fs = fsspec.filesystem("memory")
    for path in sorted(folder.iterdir()):
        fs.pipe_file(f"/{bucket}/{path.name}", path.read_bytes())
    return f"wrapped://{bucket}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--random-access-only",
        action="store_true",
        help="only the readers by random access (rank 1/4, example shuffle)",
    )
    args = parser.parse_args()
    results = []
    sources = []
    random_access = []
    with tempfile.TemporaryDirectory() as tmp, gcs_emulator() as gcs:
        root = Path(tmp)
        for name, per_shard, size in (("small", 400, 100), ("large", 8, 100 << 10)):
            folder = write_dataset(root, name, per_shard, size)
            plan = ReadPlan(DatasetInfo.load(folder), "train", CONFIG)
            runs = runs_in_plan(plan)
            bucket = f"bench-{name}-{uuid.uuid4().hex[:6]}"
            gcs_path = upload_tree(gcs, folder, bucket, "data").removeprefix("gs://")
            cases = {
                "local": (str(folder), None),
                "gcs": (f"wrapped://{gcs_path}", wrapped("gs", dict(gcs.storage_options), 0.0)),
                "slow": (copy_to_memory(folder, bucket), wrapped("memory", {}, LATENCY)),
            }
            for case, (url, options) in cases.items():
                if args.random_access_only:
                    break
                row = measure(url, options, args.repeats)
                row.update(dataset=name, case=case, runs=runs, record_bytes=size)
                results.append(row)
            random_access += measure_random_access(name, cases, False, args.repeats)
            # After every reading case: the data source writes sidecars beside the data.
            for case, (url, options) in cases.items():
                sources.append({"dataset": name, "case": case, **measure_source(url, options)})
            random_access += measure_random_access(name, cases, True, args.repeats)
    print_random_access(random_access)
    if args.random_access_only:
        return
    anchor = {r["dataset"]: r for r in results if r["case"] == "local"}
    print(
        f"{'dataset':8} {'case':6} {'records/s':>12} {'MB/s':>9} {'x local':>8} "
        f"{'GETs':>6} {'stats':>6} {'runs':>6} {'peak prefetch':>14}"
    )
    for row in results:
        ratio = row["records_per_s"] / anchor[row["dataset"]]["records_per_s"]
        row["ratio_to_local"] = ratio
        gets = int(row["requests"].get("get", 0))
        stats = int(row["requests"].get("info", 0))
        print(
            f"{row['dataset']:8} {row['case']:6} {row['records_per_s']:12,.0f} "
            f"{row['bytes_per_s'] / 1e6:9.1f} {ratio:8.2f} {gets:6} {stats:6} {row['runs']:6} "
            f"{row['peak_prefetch_bytes'] / 2**20:10.1f} MiB"
        )
    print(f"prefetch bound: {storage.prefetcher().max_bytes / 2**20:.0f} MiB")
    print_sources(sources)
    document = {"reader": results, "data_source": sources, "random_access": random_access}
    print(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
