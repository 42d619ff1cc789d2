"""A decoding Reader against TFDS's own pipeline over the same 64-shard dataset.

Run: python benchmarks/bench_tfds_reader.py [--tf-python PATH] [--rounds N] [--dir DIR]

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
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _examples import FEATURES

from readplan import Reader, ReadPlan, write_dataset
from readplan.metadata.dataset_info import DatasetInfo
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


def readplan_pass(plan: ReadPlan, workers: int) -> float:
    start = time.perf_counter()
    count = sum(len(b) for b in Reader(plan, decode="tfds", decode_workers=workers).batches(BATCH))
    assert count == SHARDS * PER_SHARD
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", default="/tmp/tfenv/bin/python")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", help="write the dataset here (default: a temporary directory)")
    args = parser.parse_args()
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
