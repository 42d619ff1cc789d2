"""TBL-RAW records decoded: ``decode="tfds"`` over a TBL-RAW dataset against the same records
decoded from the PNG source and resized on the fly, same run.

Usage: python benchmarks/bench_raw_records.py [--images N] [--repeats R]

A dataset of N (default 512) 200 x 180 RGB PNG images with a label is written with
``readplan.write_dataset`` and converted with ``convert(..., raw=True, image_size=160)``.
Each round reads one epoch, shuffled files, in four ways, alternating within the round:

* ``raw items``: ``Reader(raw plan, decode="tfds")``, each image a view of its shard's map;
* ``source items``: ``Reader(source plan, decode="tfds")`` and ``resize_image`` per record,
  the same records (the anchor);
* ``raw batches``: ``Reader(raw plan, decode="tfds").batches(64)``, collated;
* ``raw data source``: ``data_source(raw, "train", decode="tfds").__getitems__`` of 64
  random keys at a time.

Reported: records per second, the median of R rounds (default 5) after a warm-up round,
and each one's ratio to ``source items`` measured in the same round.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np
from _images import write_image_dataset

from readplan import DatasetInfo, ReadConfig, Reader, ReadPlan, data_source
from readplan.convert import convert
from readplan.metadata.raw_images import resize_image

SIZE = 160
BATCH = 64
CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=0)


def write_source(path: str, count: int) -> None:
    ramp = np.arange(200, dtype=np.uint8)
    base = np.stack(np.broadcast_arrays(ramp[:, None], ramp[None, :180], ramp[:, None]), -1)
    write_image_dataset(
        path,
        "bench_raw_records",
        lambda k: (base + np.uint8(k % 251)).astype(np.uint8),
        count=count,
        shards=4,
        encoding_format="png",
    )


def ways(source: str, raw: str, count: int) -> dict[str, Callable[[], int]]:
    raw_plan = ReadPlan(DatasetInfo.load(raw), "train", CONFIG)
    source_plan = ReadPlan(DatasetInfo.load(source), "train", CONFIG)
    keys = np.random.default_rng(0).permutation(count)

    def raw_items() -> int:
        return sum(
            item.record["image"].shape[0] == SIZE for item in Reader(raw_plan, decode="tfds")
        )

    def source_items() -> int:
        reader = Reader(source_plan, decode="tfds")
        return sum(resize_image(item.record["image"], SIZE).shape[0] == SIZE for item in reader)

    def raw_batches() -> int:
        batches = Reader(raw_plan, decode="tfds").batches(BATCH)
        return sum(len(batch.features["image"]) for batch in batches)

    def raw_source() -> int:
        keyed = data_source(raw, "train", decode="tfds")
        return sum(len(keyed.__getitems__(keys[k : k + BATCH])) for k in range(0, count, BATCH))

    return {
        "source items": source_items,
        "raw items": raw_items,
        "raw batches": raw_batches,
        "raw data source": raw_source,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        source, raw = f"{folder}/source", f"{folder}/raw"
        write_source(source, args.images)
        convert(source, raw, raw=True, image_size=SIZE)
        run = ways(source, raw, args.images)
        rates: dict[str, list[float]] = {name: [] for name in run}
        ratios: dict[str, list[float]] = {name: [] for name in run}
        for round_ in range(args.repeats + 1):
            measured = {}
            for name, read in run.items():
                start = time.perf_counter()
                assert read() == args.images
                measured[name] = args.images / (time.perf_counter() - start)
            if round_:  # the first round warms the page cache and the imports
                for name, rate in measured.items():
                    rates[name].append(rate)
                    ratios[name].append(rate / measured["source items"])
    print(f"{args.images} images, 200 x 180 PNG -> {SIZE} x {SIZE}; medians of {args.repeats}")
    for name in run:
        rate, ratio = statistics.median(rates[name]), statistics.median(ratios[name])
        print(f"  {name:16s} {rate:10,.0f} records/s   {ratio:5.2f}x source items")


if __name__ == "__main__":
    main()
