"""Conversion speed: the local runner with 1 and 2 processes and Apache Beam's DirectRunner,
in process and with 2 worker processes, same dataset, same run.

Usage: python benchmarks/bench_convert.py [--images N] [--shards S] [--rounds R]

A TFDS dataset of N (default 4096) 200 x 180 RGB PNG images in S (default 8) shards is
written with ``readplan.write_dataset`` and converted to TBL-RAW at 160 x 160
(``convert(..., raw=True, image_size=160)``: decode, resize, write) by each runner in turn,
into a fresh folder each time, the runners alternating within each of R rounds (default 3).
Reported per runner: images per second (median of the rounds, wall time of the whole
``convert`` call, pipeline start-up included), images per second per process, and the
ratio to the local runner with one process measured in the same rounds; and each runner's
fixed cost, the median time to convert a dataset of one image per shard (pipeline or
process start-up and teardown).  Every runner's files are checked to be the anchor's,
byte for byte.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
from _images import write_image_dataset

from readplan.convert import convert

SIZE = 160
# name: (processes, convert() keyword arguments)
RUNNERS: dict[str, tuple[int, dict[str, object]]] = {
    "local, 1 process": (1, {}),
    "local, workers=2": (2, {"workers": 2}),
    "beam DirectRunner, in process": (
        1,
        {"runner": "beam", "beam_options": "--runner=DirectRunner"},
    ),
    "beam DirectRunner, 2 processes": (
        2,
        {
            "runner": "beam",
            "beam_options": "--runner=DirectRunner --direct_num_workers=2 "
            "--direct_running_mode=multi_processing",
        },
    ),
}
ANCHOR = "local, 1 process"


def write_images(path: str, count: int, shards: int) -> None:
    """``count`` PNG images of 200 x 180, each a different shift of two ramps, and labels."""
    rows = np.arange(200, dtype=np.uint16)[:, None]
    cols = np.arange(180, dtype=np.uint16)[None, :]

    def image(k: int) -> np.ndarray:
        red = (rows + k) % 256
        green = (cols * 2 + k) % 256
        blue = (rows + cols + 3 * k) % 256
        return np.stack(np.broadcast_arrays(red, green, blue), -1).astype(np.uint8)

    write_image_dataset(
        path, "bench_convert", image, count=count, shards=shards, encoding_format="png"
    )


def same_files(a: str, b: str) -> bool:
    names = sorted(os.listdir(a))
    return names == sorted(os.listdir(b)) and all(
        filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names
    )


def timed_rounds(source: str, anchor: str, rounds: int) -> dict[str, float]:
    """Median seconds per runner converting ``source``, the runners alternating."""
    times: dict[str, list[float]] = {name: [] for name in RUNNERS}
    target = os.path.join(os.path.dirname(source), "out")
    for round_ in range(rounds):
        order = list(RUNNERS)
        for name in order[round_ % len(order) :] + order[: round_ % len(order)]:
            start = time.perf_counter()
            convert(source, target, raw=True, image_size=SIZE, **RUNNERS[name][1])
            times[name].append(time.perf_counter() - start)
            assert same_files(target, anchor), name
            shutil.rmtree(target)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4096)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-convert-") as root:
        seconds = {}
        for count in (args.images, args.shards):
            folder = os.path.join(root, str(count))
            source, anchor = os.path.join(folder, "src"), os.path.join(folder, "anchor")
            write_images(source, count, args.shards)
            convert(source, anchor, raw=True, image_size=SIZE)  # warm-up: page cache, imports
            seconds[count] = timed_rounds(source, anchor, args.rounds)
        print(
            f"{args.images} PNG images 200x180 in {args.shards} shards -> {SIZE}x{SIZE} "
            f"RAW_U8, medians of {args.rounds} rounds, on {os.cpu_count()} cores"
        )
        rate = {name: args.images / t for name, t in seconds[args.images].items()}
        for name, (processes, _) in RUNNERS.items():
            print(
                f"  {name:32s} {rate[name]:8.0f} images/s  {rate[name] / processes:8.0f} per "
                f"process  {rate[name] / rate[ANCHOR]:5.2f}x  fixed cost "
                f"{seconds[args.shards][name]:5.2f} s"
            )


if __name__ == "__main__":
    main()
