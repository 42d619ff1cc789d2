"""A decoding Reader against TFDS's own pipeline over the same 64-shard dataset.

Run: python benchmarks/bench_tfds_reader.py [--tf-python PATH] [--rounds N] [--dir DIR]
     python benchmarks/bench_tfds_reader.py --workers-only [--rounds N] [--dir DIR]

Writes 64 shards x 500 TFDS-like examples (benchmarks/_examples.py's features: an 80-88 byte
image string, a ClassLabel, a Text id, a box and a Sequence of two objects) with
``readplan.write_dataset``, then times full passes over ``train`` in batches of 256:

* ``Reader(plan, decode="tfds").batches(256)``, with ``decode_workers`` 1 and 2;
* the anchor, ``tfds.as_numpy(builder.as_dataset(split="train", batch_size=256))`` with
  ``tfds.builder_from_directory``, run by the interpreter given with ``--tf-python`` (an
  environment with TensorFlow and TFDS; readplan never imports them) in one long-lived
  subprocess, one pass per round, rounds interleaved with readplan's.

Prints the median wall time of each and the speed-ups (anchor time / readplan time, and
two decode workers against one).

``--workers-only`` leaves TFDS out and times ``decode_workers`` 1 and 2 on these records and
on 16 shards x 128 image records (a 224 x 224 JPEG each, decoded by ``decode="tfds"``), for the
Reader and for ``data_source(..., decode="tfds")`` (16 ``__getitems__`` calls of 256 random
keys).  The Reader's figures are passes of a training job: each round one Reader per worker
count reads four epochs, timed as a whole, per epoch (a Reader of one epoch, which also
opens the shards and takes its batches' memory for the first time, is printed apart).  Two more
figures from the same rounds: two workers with the process held to one CPU
(``os.sched_setaffinity``: what decoding in groups gains without a second core), and the
machine's own ceiling, two threads of a kernel that holds no GIL (SHA-256 of 4 MiB) against
one: on a shared machine the second core is not always free; and the images' JPEG decode
alone (into arrays used again) on two threads against one. It also prints, from more
passes with one and two workers, each pass's CPU time (``time.process_time``, which load
hardly moves) and the share ``p`` of it spent in the decode's calls that release the GIL (the
Example kernel's scan and fill, the JPEG decoder; the reads' own GIL-free calls are not
counted), and the speed-up over one worker that this allows two free cores (Amdahl: one
worker's CPU time over two workers' times ``1 - p / 2``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _examples import FEATURES

from readplan import Reader, ReadPlan, data_source, write_dataset
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.features import FeaturesDict, Image, Tensor
from readplan.records.native import CORE_NAME

SHARDS = 64
PER_SHARD = 500
BATCH = 256

ANCHOR = r"""
import os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow_datasets as tfds
builder = tfds.builder_from_directory(sys.argv[1])
def one_pass():
    count = 0
    for batch in tfds.as_numpy(builder.as_dataset(split="train", batch_size=int(sys.argv[2]))):
        count += len(batch["label"])
    return count
one_pass()
print("ready", flush=True)
for line in sys.stdin:
    start = time.perf_counter()
    count = one_pass()
    print(f"{time.perf_counter() - start} {count}", flush=True)
"""


def examples(count: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [
        {
            "image": bytes(rng.integers(0, 256, rng.integers(80, 89), dtype=np.uint8)),
            "label": int(rng.integers(0, 1000)),
            "id": f"train_{seed:03d}_{k:04d}",
            "bbox": rng.random(4, dtype=np.float32),
            "objects": {
                "label": rng.integers(0, 80, 2),
                "area": rng.random(2, dtype=np.float32),
            },
        }
        for k in range(count)
    ]


def write(directory: Path) -> DatasetInfo:
    stream = (e for shard in range(SHARDS) for e in examples(PER_SHARD, shard))
    return write_dataset(
        directory,
        name="tfds_like",
        version="1.0.0",
        features=FEATURES,
        splits={"train": stream},
        examples_per_shard=PER_SHARD,
    )


EPOCHS = 4


def readplan_pass(plan: ReadPlan, workers: int, epochs: int = 1) -> float:
    """The wall time per epoch of one Reader reading ``epochs`` epochs in batches (several:
    a training job's passes; the reads and decodes running ahead cross from one epoch into
    the next, so only the whole run is timed)."""
    reader = Reader(plan, decode="tfds", decode_workers=workers, epochs=epochs)
    start = time.perf_counter()
    count = sum(len(batch) for batch in reader.batches(BATCH))
    assert count == epochs * plan.num_examples
    return (time.perf_counter() - start) / epochs


IMAGE_SHARDS = 16
IMAGES_PER_SHARD = 128


def write_images(directory: Path) -> DatasetInfo:
    """16 shards x 128 records of a 224 x 224 JPEG (smooth noise, about 10 KB) and a label."""
    rng = np.random.default_rng(0)

    def image() -> np.ndarray:
        small = rng.integers(0, 256, (28, 28, 3), dtype=np.uint8)
        return np.ascontiguousarray(np.repeat(np.repeat(small, 8, 0), 8, 1))

    rows = ({"image": image(), "label": k % 10} for k in range(IMAGE_SHARDS * IMAGES_PER_SHARD))
    return write_dataset(
        directory,
        name="images",
        version="1.0.0",
        features=FeaturesDict(
            {"image": Image(encoding_format="jpeg"), "label": Tensor((), "int64")}
        ),
        splits={"train": rows},
        examples_per_shard=IMAGES_PER_SHARD,
    )


def pinned_pass(plan: ReadPlan, workers: int) -> float:
    """:func:`readplan_pass` of :data:`EPOCHS` with the process held to one CPU (restored
    afterwards)."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        return readplan_pass(plan, workers, EPOCHS)
    finally:
        os.sched_setaffinity(0, cpus)


_BLOCK = bytes(4 << 20)


def ceiling_ratio() -> float:
    """Two threads of SHA-256 (which releases the GIL) against one, same work."""

    def work(count: int) -> None:
        for _ in range(count):
            hashlib.sha256(_BLOCK).digest()

    return two_threads_ratio(lambda: work(16), (lambda: work(8), lambda: work(8)))


def two_threads_ratio(one: Callable[[], None], halves: tuple[Callable[[], None], ...]) -> float:
    """The wall time of ``one`` over that of ``halves`` (its work cut in two) on two
    threads."""
    start = time.perf_counter()
    one()
    alone = time.perf_counter() - start
    threads = [threading.Thread(target=half) for half in halves]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return alone / (time.perf_counter() - start)


def jpeg_batches(plan: ReadPlan) -> list[list[bytes]]:
    """The JPEGs of the plan's records, batch by batch."""
    from readplan import example

    return [
        [example.decode(raw)["image"][0] for raw in batch.records]
        for batch in Reader(plan).batches(BATCH)
    ]


def decode_alone_ratio(batches: list[list[bytes]]) -> float:
    """The JPEGs decoded as ``decode="tfds"`` decodes them, batch by batch into arrays used
    again, on two threads against one: what two decode workers can gain over these images
    on this machine at most."""
    import simplejpeg

    outs = [np.empty((BATCH, 224, 224, 3), dtype=np.uint8) for _ in range(2)]

    def work(mine: list[list[bytes]], out: np.ndarray) -> None:
        for batch in mine:
            for data, slot in zip(batch, out):
                simplejpeg.decode_jpeg(
                    data, colorspace="RGB", fastdct=True, fastupsample=False, buffer=slot
                )

    halves = tuple(partial(work, batches[k::2], outs[k]) for k in range(2))
    return two_threads_ratio(partial(work, batches, outs[0]), halves)


class _Timed:
    """Calls of ``names`` on ``target`` add their thread CPU time to ``spent``."""

    def __init__(self, target: Any, names: tuple[str, ...], spent: list[float]) -> None:
        self._target, self._names, self._spent = target, names, spent

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._target, name)
        if name not in self._names:
            return found

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return found(*args, **kwargs)
            finally:
                self._spent[0] += time.thread_time() - start

        return timed


def gil_free_cpu(plan: ReadPlan, workers: int) -> tuple[float, float]:
    """A pass's CPU time (every thread's) and the share of it spent in decode calls that
    release the GIL."""
    import simplejpeg

    from readplan.records.example import _kernel

    spent = [0.0]
    core, decoder = _kernel.CORE, simplejpeg.decode_jpeg
    _kernel.CORE = _Timed(core, ("example_scan", "example_fill"), spent)
    simplejpeg.decode_jpeg = _Timed(simplejpeg, ("decode_jpeg",), spent).decode_jpeg
    try:
        start = time.process_time()
        readplan_pass(plan, workers)
        total = time.process_time() - start
    finally:
        _kernel.CORE, simplejpeg.decode_jpeg = core, decoder
    return total, spent[0] / total


SOURCE_CALLS = 16
SOURCE_KEYS = 256


def source_pass(info: DatasetInfo, index_dir: Path, workers: int) -> float:
    """``SOURCE_CALLS`` ``__getitems__`` calls of 256 random keys, ``decode="tfds"``."""
    source = data_source(info, "train", decode="tfds", index_dir=index_dir, decode_workers=workers)
    keys = np.random.default_rng(0).integers(0, len(source), (SOURCE_CALLS, SOURCE_KEYS))
    start = time.perf_counter()
    for row in keys:
        assert len(source.__getitems__(row)) == SOURCE_KEYS
    return time.perf_counter() - start


def workers_only(directory: Path, rounds: int) -> None:
    """decode_workers 1 and 2 side by side on both record kinds, with the ceiling."""
    plans = {}
    for name, writer in (("TFDS-like", write), ("224 x 224 JPEG", write_images)):
        folder = directory / name.replace(" ", "_") / "1.0.0"
        info = writer(folder) if not folder.exists() else DatasetInfo.load(folder)
        plans[name] = ReadPlan(info, "train")
    times: dict[tuple[str, str], list[float]] = {}
    ceilings, decode_alone = [], []
    images = jpeg_batches(plans["224 x 224 JPEG"])
    for plan in plans.values():
        readplan_pass(plan, 1)
        readplan_pass(plan, 2)
    index_dir = directory / "indexes"
    for name, plan in plans.items():
        source_pass(plan.info, index_dir / name.replace(" ", "_"), 1)
    for _ in range(rounds):
        ceilings.append(ceiling_ratio())
        decode_alone.append(decode_alone_ratio(images))
        for name, plan in plans.items():
            for workers in (1, 2):
                times.setdefault((name, f"first {workers}"), []).append(
                    readplan_pass(plan, workers)
                )
                times.setdefault((name, str(workers)), []).append(
                    readplan_pass(plan, workers, EPOCHS)
                )
            times.setdefault((name, "2 on 1 CPU"), []).append(pinned_pass(plan, 2))
            where = index_dir / name.replace(" ", "_")
            for workers in (1, 2):
                spent = source_pass(plan.info, where, workers)
                times.setdefault((name, f"source {workers}"), []).append(spent)
    median = {key: statistics.median(values) for key, values in times.items()}
    print(f"decode_workers, batches of {BATCH}, {CORE_NAME}, medians of {rounds} rounds")
    print(f"  ceiling (SHA-256, 2 threads / 1): {statistics.median(ceilings):.2f}x")
    print(
        "  the JPEGs' decode alone into arrays used again, 2 threads / 1: "
        f"{statistics.median(decode_alone):.2f}x"
    )
    for name, plan in plans.items():
        one, two, pinned = (median[name, k] for k in ("1", "2", "2 on 1 CPU"))
        first_one, first_two = median[name, "first 1"], median[name, "first 2"]
        print(
            f"  {name:<15} {plan.num_examples:>6} records, {EPOCHS} epochs: 1 worker "
            f"{one * 1e3:7.1f} ms, 2 workers {two * 1e3:7.1f} ms ({one / two:.2f}x), 2 workers "
            f"on 1 CPU {pinned * 1e3:7.1f} ms ({one / pinned:.2f}x)"
        )
        print(
            f"    a Reader of one epoch: 1 worker {first_one * 1e3:.1f} ms, 2 workers "
            f"{first_two * 1e3:.1f} ms ({first_one / first_two:.2f}x)"
        )
        source_one, source_two = median[name, "source 1"], median[name, "source 2"]
        print(
            f"    data_source, {SOURCE_CALLS} x __getitems__ of {SOURCE_KEYS} keys: 1 worker "
            f"{source_one * 1e3:.1f} ms, 2 workers {source_two * 1e3:.1f} ms "
            f"({source_one / source_two:.2f}x)"
        )
        cpu = {k: [gil_free_cpu(plan, k) for _ in range(3)] for k in (1, 2)}
        (cpu1, share1), (cpu2, share2) = (
            (statistics.median(c for c, _ in runs), statistics.median(p for _, p in runs))
            for runs in cpu.values()
        )
        print(
            f"    CPU per pass, GIL-free share: 1 worker {cpu1 * 1e3:.1f} ms, {share1:.2f}; "
            f"2 workers {cpu2 * 1e3:.1f} ms, {share2:.2f}: on 2 free cores at most "
            f"{cpu1 / (cpu2 * (1 - share2 / 2)):.2f}x one worker"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", default="/tmp/tfenv/bin/python")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", help="write the dataset here (default: a temporary directory)")
    parser.add_argument("--workers-only", action="store_true", help="decode_workers 1 and 2")
    args = parser.parse_args()
    if args.workers_only:
        with tempfile.TemporaryDirectory() as temporary:
            workers_only(Path(args.dir or temporary), args.rounds)
        return
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(args.dir or temporary) / "tfds_like"
        info = write(directory / "1.0.0") if not directory.exists() else None
        info = info or DatasetInfo.load(directory / "1.0.0")
        plan = ReadPlan(info, "train")
        anchor = subprocess.Popen(
            [args.tf_python, "-c", ANCHOR, str(info.data_dir), str(BATCH)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert anchor.stdin is not None
        assert anchor.stdout is not None
        assert anchor.stdout.readline().strip() == "ready"
        times: dict[str, list[float]] = {"tfds": [], "readplan": [], "readplan, 2 workers": []}
        readplan_pass(plan, 1)
        for _ in range(args.rounds):
            anchor.stdin.write("pass\n")
            anchor.stdin.flush()
            seconds, count = anchor.stdout.readline().split()
            assert int(count) == SHARDS * PER_SHARD
            times["tfds"].append(float(seconds))
            times["readplan"].append(readplan_pass(plan, 1))
            times["readplan, 2 workers"].append(readplan_pass(plan, 2))
        anchor.stdin.close()
        anchor.wait()
    median = {name: statistics.median(values) for name, values in times.items()}
    records = SHARDS * PER_SHARD
    print(f"{records:,} TFDS-like examples in {SHARDS} shards, batches of {BATCH}, {CORE_NAME}")
    print(f"medians of {args.rounds} rounds, wall time per pass:")
    for name, seconds in median.items():
        print(f"  {name:<22} {seconds * 1e3:9.1f} ms  {records / seconds / 1e3:9.1f} k examples/s")
    print(
        f"  speed-up over tfds: {median['tfds'] / median['readplan']:.1f}x one thread, "
        f"{median['tfds'] / median['readplan, 2 workers']:.1f}x two decode workers"
    )
    print(f"  two decode workers / one: {median['readplan'] / median['readplan, 2 workers']:.2f}x")


if __name__ == "__main__":
    main()
