"""TBL-RAW serving: readplan's Reader.image_batches against TurboLoader 2.39's
TblRawImageLoader on the same RAW_U8 file, same run.

Usage: python benchmarks/bench_raw.py [--images N] [--repeats R] [--quick]

A dataset of N (default 1024) 200 x 180 RGB images is written with
``readplan.write_dataset`` and converted with ``convert(..., raw=True, image_size=160)``
into one RAW_U8 shard.  Each side then serves one epoch of normalized float32 NCHW batches
of 64 from that file, shuffled (readplan: an example shuffle of the whole epoch,
``ExampleShuffle(N, seed)``; TurboLoader: ``shuffle=True``), with hflip 0.5.  Reported:
images per second, median of R rounds (default 5) after a warm-up epoch, the two sides
alternating within each round, and the ratio readplan / TurboLoader; then the growth of
memory a fresh process owns (RssAnon, sampled after every batch) while it serves two
epochs, for each side, beside the file's size (the map is page cache, not owned memory;
one float32 batch is 18.8 MiB); then the conversion itself, 200 x 180 PNGs in 4 shards to
160 x 160 RAW_U8, in images per second with ``workers=1`` and ``workers=2``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np
import turboloader.tbl as tl_tbl

import readplan
from readplan import DatasetInfo, ExampleShuffle, ReadConfig, Reader, ReadPlan, features
from readplan.convert import convert

SIZE = 160
BATCH = 64
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def write_source(path: str, count: int, shards: int) -> None:
    """A TFDS dataset of ``count`` 200 x 180 PNG images (stretched to 160 x 160 on
    conversion) in ``shards`` shards."""
    ramp = np.arange(200, dtype=np.uint8)
    base = np.stack(np.broadcast_arrays(ramp[:, None], ramp[None, :180], ramp[:, None]), -1)
    readplan.write_dataset(
        path,
        name="bench_raw",
        version="1.0.0",
        features=features.FeaturesDict(
            {"image": features.Image(encoding_format="png"), "label": np.int64}
        ),
        splits={
            "train": [
                {"image": (base + np.uint8(k % 251)).astype(np.uint8), "label": k % 10}
                for k in range(count)
            ]
        },
        examples_per_shard=-(-count // shards),
    )


def make_dataset(root: str, count: int) -> str:
    """The served dataset: one shard, converted to TBL-RAW; returns its folder."""
    write_source(os.path.join(root, "src"), count, 1)
    target = os.path.join(root, "raw")
    convert(os.path.join(root, "src"), target, raw=True, image_size=SIZE)
    return target


def conversion_rates(root: str, count: int) -> dict[int, float]:
    """Images per second converting a 4-shard dataset with 1 and 2 worker processes."""
    source = os.path.join(root, "src4")
    write_source(source, count, 4)
    rates = {}
    for workers in (1, 2):
        target = os.path.join(root, f"raw4-{workers}")
        start = time.perf_counter()
        convert(source, target, raw=True, image_size=SIZE, workers=workers)
        rates[workers] = count / (time.perf_counter() - start)
    return rates


def readplan_epoch(dataset: str) -> Callable[[], int]:
    """One epoch per call from one reader reading forever (its maps stay open, as the
    reference loader's does)."""
    info = DatasetInfo.load(dataset)
    count = info.splits["train"].num_examples
    plan = ReadPlan(info, "train", ReadConfig(example_shuffle=ExampleShuffle(count, 0)))
    reader = Reader(plan, epochs=None)
    batches = reader.image_batches(BATCH, normalize=(MEAN, STD), hflip=0.5, seed=0)

    def epoch() -> int:
        served = 0
        while served < count:
            served += len(next(batches).images)
        return served

    return epoch


def turbo_epoch(path: str) -> Callable[[], int]:
    loader = tl_tbl.TblRawImageLoader(
        path, batch_size=BATCH, mean=MEAN, std=STD, shuffle=True, seed=0, hflip_prob=0.5
    )

    def epoch() -> int:
        return sum(len(batch) for batch, _ in loader)

    return epoch


def _rss_anon_kb() -> int:
    """Resident anonymous memory (owned by the process; the map's pages are RssFile)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def _rss_child(side: str, dataset: str, shard: str, queue: multiprocessing.Queue[int]) -> None:
    if side == "readplan":
        info = DatasetInfo.load(dataset)
        count = info.splits["train"].num_examples
        config = ReadConfig(example_shuffle=ExampleShuffle(count, 0))
        reader = Reader(ReadPlan(info, "train", config), epochs=2)
        batches = (b.images for b in reader.image_batches(BATCH, normalize=(MEAN, STD), hflip=0.5))
    else:
        loader = tl_tbl.TblRawImageLoader(
            shard, batch_size=BATCH, mean=MEAN, std=STD, shuffle=True, seed=0, hflip_prob=0.5
        )
        batches = (b for _ in range(2) for b, _ in loader)
    before = peak = _rss_anon_kb()
    for _ in batches:
        peak = max(peak, _rss_anon_kb())
    queue.put(peak - before)


def rss_growth_mb(side: str, dataset: str, shard: str) -> float:
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[int] = context.Queue()
    child = context.Process(target=_rss_child, args=(side, dataset, shard, queue))
    child.start()
    grown = queue.get()
    child.join()
    return grown / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="256 images, 3 rounds")
    args = parser.parse_args()
    count, repeats = (256, 3) if args.quick else (args.images, args.repeats)
    with tempfile.TemporaryDirectory(prefix="bench-raw-") as root:
        dataset = make_dataset(root, count)
        shard = next(os.path.join(dataset, n) for n in sorted(os.listdir(dataset)) if ".tbl-" in n)
        sides = {"readplan": readplan_epoch(dataset), "turboloader": turbo_epoch(shard)}
        times: dict[str, list[float]] = {name: [] for name in sides}
        for run in sides.values():
            assert run() == count  # warm-up: page cache, imports
        for _ in range(repeats):
            for name, run in sides.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        rate = {name: count / statistics.median(t) for name, t in times.items()}
        print(
            f"{count} images {SIZE}x{SIZE}, batches of {BATCH}, float32 NCHW, "
            f"shuffled, hflip 0.5; file {os.path.getsize(shard) / 2**20:.1f} MiB"
        )
        for name in sides:
            print(f"  {name:12s} {rate[name]:10.0f} images/s")
        print(f"  ratio readplan / turboloader: {rate['readplan'] / rate['turboloader']:.2f}x")
        for name in sides:
            grown = rss_growth_mb(name, dataset, shard)
            print(f"  {name:12s} owned memory (RssAnon) growth over two epochs: {grown:.1f} MB")
        rates = conversion_rates(root, count)
        print(
            f"conversion (200x180 PNG -> 160x160 RAW_U8, 4 shards): {rates[1]:.0f} images/s "
            f"with 1 process, {rates[2]:.0f} with 2 (workers=2)"
        )


if __name__ == "__main__":
    main()
