"""TBL-RAW serving: readplan's Reader.image_batches against TurboLoader 2.39's
TblRawImageLoader on the same RAW_U8 file, and against decoding the source JPEGs on the fly
with readplan's own reader, same run.

Usage: python benchmarks/bench_raw.py [--images N] [--repeats R] [--quick]

A dataset of N (default 1024) 200 x 180 RGB JPEG images (a gradient with noise, so that
the JPEGs are not trivial) is written with ``readplan.write_dataset`` in one shard and
converted with ``convert(..., raw=True, image_size=160)`` into one RAW_U8 shard.  Each
side then serves one epoch of normalized float32 NCHW batches of 64, shuffled (readplan: an
example shuffle of the whole epoch, ``ExampleShuffle(N, seed)``; TurboLoader:
``shuffle=True``), with hflip 0.5:

* ``readplan raw``: ``Reader.image_batches`` over the converted dataset;
* ``turboloader raw``: ``TblRawImageLoader`` over its one shard file;
* ``readplan torch 0`` and ``readplan torch 2``: ``readplan.torch.ImageBatchDataset``
  through a PyTorch ``DataLoader(batch_size=None, num_workers=0 or 2)`` (workers
  persistent): with workers, each gathers its share and torch hands every batch to the
  main process through new shared memory;
* ``readplan jpeg``: ``Reader(decode="tfds").batches(64)`` over the JPEG source (the same
  images, the same order), each image stretched by ``resize_image`` and the batch flipped
  and normalized in numpy: the work the format saves.  Its first batch is checked to equal
  ``readplan raw``'s bit for bit.

Reported: images per second, median of R rounds (default 5) after a warm-up epoch, the
sides alternating within each round, and the ratios to ``readplan raw``; then the peak
growth of memory a fresh process owns (RssAnon, sampled after every batch) while it serves
two epochs, beside the size of one batch (the map is page cache, not owned memory); then
the kernel alone, ``gather_images`` against its numpy twin per output type; then
the conversion of 4 times as many such images (``--convert-images``, default 4096: a worker
process's start-up, about 0.7 s of CPU here, is then a small part) in 8 shards to 160 x 160
RAW_U8, images per second with ``workers=1`` and ``workers=2``, medians of 3 alternating
rounds.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from _images import write_image_dataset

import readplan
from readplan import DatasetInfo, ExampleShuffle, ReadConfig, Reader, ReadPlan
from readplan.convert import convert
from readplan.metadata.raw_images import resize_image
from readplan.reading.raw_batches import flip_draws
from readplan.records.tbl._gather import KINDS, gather_images, gather_images_pure, normalization

SIZE = 160
BATCH = 64
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
BATCH_BYTES = BATCH * 3 * SIZE * SIZE * 4


def write_source(path: str, count: int, shards: int) -> None:
    """A TFDS dataset of ``count`` 200 x 180 JPEG images in ``shards`` shards."""
    ramp = np.arange(200, dtype=np.int16)
    base = np.stack(np.broadcast_arrays(ramp[:, None], ramp[None, :180], ramp[:, None]), -1)
    noise = np.random.default_rng(0).integers(-24, 24, (16, 200, 180, 3), dtype=np.int16)
    write_image_dataset(
        path,
        "bench_raw",
        lambda k: np.clip(base + noise[k % 16] + k % 37, 0, 255).astype(np.uint8),
        count=count,
        shards=shards,
        encoding_format="jpeg",
    )


def _plan(dataset: str) -> ReadPlan:
    info = DatasetInfo.load(dataset)
    count = info.splits["train"].num_examples
    return ReadPlan(info, "train", ReadConfig(example_shuffle=ExampleShuffle(count, 0)))


def raw_batches(dataset: str, epochs: int | None) -> Iterator[np.ndarray]:
    """The served batches' images: readplan from the memory map."""
    reader = Reader(_plan(dataset), epochs=epochs)
    for batch in reader.image_batches(BATCH, normalize=(MEAN, STD), hflip=0.5, seed=0):
        yield batch.images


def jpeg_batches(source: str) -> Iterator[np.ndarray]:
    """The same batches decoded from the JPEGs on the fly: decode, resize, then flip and
    normalize in numpy (``x * scale + shift`` in float32, as the kernel computes it)."""
    scale, shift = (np.float32(v).reshape(1, 3, 1, 1) for v in normalization(MEAN, STD))
    for batch in Reader(_plan(source), decode="tfds", epochs=None).batches(BATCH):
        assert batch.features is not None
        images = np.stack([resize_image(image, SIZE) for image in batch.features["image"]])
        flips = flip_draws(0, batch.epoch, batch.positions, 0.5).astype(bool)
        images[flips] = images[flips, :, ::-1]
        out = np.empty((len(images), 3, SIZE, SIZE), np.float32)
        np.multiply(images.transpose(0, 3, 1, 2), scale, out=out)
        out += shift
        yield out


def torch_batches(dataset: str, workers: int) -> Iterator[Any]:
    """readplan's batches through a PyTorch DataLoader with ``workers`` worker processes,
    each gathering its share (one epoch per pass; the workers persist)."""
    from torch.utils.data import DataLoader

    from readplan.torch import ImageBatchDataset

    data = ImageBatchDataset(
        _plan(dataset), BATCH, normalize=(MEAN, STD), hflip=0.5, seed=0, epochs=1
    )
    loader = DataLoader(data, batch_size=None, num_workers=workers, persistent_workers=workers > 0)
    while True:
        yield from loader


def turbo_batches(shard: str, epochs: int | None) -> Iterator[Any]:
    import turboloader.tbl as tl_tbl  # here: conversion workers re-import this module

    loader = tl_tbl.TblRawImageLoader(
        shard, batch_size=BATCH, mean=MEAN, std=STD, shuffle=True, seed=0, hflip_prob=0.5
    )
    done = 0
    while epochs is None or done < epochs:
        for batch, _ in loader:
            yield batch
        done += 1


def epochs_of(batches: Iterator[Any], count: int) -> Callable[[], int]:
    """One epoch of ``count`` images per call from one endless stream of batches (a reader's
    maps stay open between epochs, as the reference loader's do)."""

    def epoch() -> int:
        served = 0
        while served < count:
            served += len(next(batches))
        return served

    return epoch


def _rss_anon_kb() -> int:
    """Resident anonymous memory (owned by the process; the map's pages are RssFile)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def _rss_child(side: str, dataset: str, shard: str, queue: multiprocessing.Queue[int]) -> None:
    batches = raw_batches(dataset, 2) if side == "readplan raw" else turbo_batches(shard, 2)
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
    return grown * 1024 / 1e6


def conversion_rates(root: str, count: int, rounds: int) -> dict[int, float]:
    """Images per second converting an 8-shard JPEG dataset with 1 and 2 worker processes."""
    source = os.path.join(root, "src8")
    write_source(source, count, 8)
    times: dict[int, list[float]] = {1: [], 2: []}
    for run in range(rounds):
        for workers in (1, 2):
            target = os.path.join(root, f"raw8-{workers}-{run}")
            start = time.perf_counter()
            convert(source, target, raw=True, image_size=SIZE, workers=workers)
            times[workers].append(time.perf_counter() - start)
    return {workers: count / statistics.median(t) for workers, t in times.items()}


def kernel_times(images: np.ndarray, rounds: int) -> dict[str, tuple[float, float]]:
    """Seconds per batch of 64 random rows (half flipped) for the compiled ``gather_images``
    and its numpy twin, per output type and layout: medians of ``rounds`` alternating calls."""
    scale, shift = normalization(MEAN, STD)
    rng = np.random.default_rng(1)
    out: dict[str, tuple[float, float]] = {}
    for kind, last in ((1, False), (2, False), (0, True)):
        name = f"{KINDS[kind]} {'NHWC' if last else 'NCHW'}"
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(rounds):
            rows = rng.integers(0, len(images), BATCH).astype(np.int64)
            flips = rng.integers(0, 2, BATCH).astype(np.uint8)
            for side, gather in enumerate((gather_images, gather_images_pure)):
                target = np.empty((BATCH, 3, SIZE, SIZE), KINDS[kind])
                start = time.perf_counter()
                gather(images, rows, flips, scale, shift, target, kind, last)
                times[side].append(time.perf_counter() - start)
        out[name] = (statistics.median(times[0]), statistics.median(times[1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--convert-images", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="256 images, 3 rounds")
    args = parser.parse_args()
    count, repeats = (256, 3) if args.quick else (args.images, args.repeats)
    with tempfile.TemporaryDirectory(prefix="bench-raw-") as root:
        source = os.path.join(root, "src")
        write_source(source, count, 1)
        dataset = os.path.join(root, "raw")
        convert(source, dataset, raw=True, image_size=SIZE)
        shard = next(os.path.join(dataset, n) for n in sorted(os.listdir(dataset)) if ".tbl-" in n)
        same = np.array_equal(next(raw_batches(dataset, 1)), next(jpeg_batches(source)))
        sides = {
            "readplan raw": epochs_of(raw_batches(dataset, None), count),
            "turboloader raw": epochs_of(turbo_batches(shard, None), count),
            "readplan torch 0": epochs_of(torch_batches(dataset, 0), count),
            "readplan torch 2": epochs_of(torch_batches(dataset, 2), count),
            "readplan jpeg": epochs_of(jpeg_batches(source), count),
        }
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
            f"{count} images {SIZE}x{SIZE}, batches of {BATCH}, float32 NCHW, shuffled, "
            f"hflip 0.5; RAW_U8 file {os.path.getsize(shard) / 2**20:.1f} MiB; medians of "
            f"{repeats} epochs"
        )
        anchor = rate["readplan raw"]
        for name in sides:
            ratio = anchor / rate[name]
            print(f"  {name:16s} {rate[name]:9.0f} images/s  readplan raw / it: {ratio:.2f}x")
        print(f"  readplan raw's first batch equals the JPEG side's bit for bit: {same}")
        print(f"  one batch: {BATCH_BYTES / 1e6:.1f} MB")
        for name in ("readplan raw", "turboloader raw"):
            grown = rss_growth_mb(name, dataset, shard)
            print(
                f"  {name:16s} owned memory (RssAnon) peak growth over two epochs: "
                f"{grown:.1f} MB = {grown * 1e6 / BATCH_BYTES:.1f} batches"
            )
        with readplan.tbl.TblFile(shard) as samples:
            kernels = kernel_times(samples.raw_view(), 3 * repeats)
        print(f"gather_images per batch of {BATCH} (compiled; numpy twin), medians:")
        for name, (compiled, twin) in kernels.items():
            print(
                f"  {name:13s} {compiled * 1e3:7.2f} ms; {twin * 1e3:7.2f} ms: "
                f"{twin / compiled:.1f}x"
            )
        converted = args.convert_images or 4 * count
        rates = conversion_rates(root, converted, 3)
        print(
            f"conversion of {converted} 200x180 JPEGs -> 160x160 RAW_U8, 8 shards, medians "
            "of 3: "
            f"{rates[1]:.0f} images/s with 1 process, {rates[2]:.0f} with 2 (workers=2): "
            f"{rates[2] / rates[1]:.2f}x"
        )


if __name__ == "__main__":
    main()
