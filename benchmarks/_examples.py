"""TFDS-like ``tf.train.Example`` records, their features and schema, for the decoding benchmarks.

Each record is about 230 bytes: a small encoded image (stored as a string tensor, so that
no image library is needed), a class label, an id, a box and two objects with a label and an
area each. ``cpu_ratio`` times a batched path against the one-record path it replaces.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from readplan import tfrecord
from readplan.example import FixedLen, VarLen, encode
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.features import ClassLabel, FeaturesDict, Sequence, Tensor, Text

FEATURES = FeaturesDict(
    {
        "image": Tensor((), "string"),
        "label": ClassLabel(num_classes=1000),
        "id": Text(),
        "bbox": Tensor((4,), "float32"),
        "objects": Sequence(
            FeaturesDict({"label": ClassLabel(num_classes=80), "area": Tensor((), "float32")})
        ),
    }
)
SCHEMA: dict[str, FixedLen | VarLen] = {
    "image": FixedLen((), "bytes"),
    "label": FixedLen((), "int64"),
    "id": FixedLen((), "bytes"),
    "bbox": FixedLen((4,), "float32"),
    "objects/label": VarLen("int64"),
    "objects/area": VarLen("float32"),
}


def tfds_like(count: int, seed: int = 1) -> list[bytes]:
    """``count`` records of about 230 bytes, as FEATURES stores them."""
    rng = np.random.default_rng(seed)
    return [
        encode(
            {
                "image": bytes(rng.integers(0, 256, rng.integers(80, 89), dtype=np.uint8)),
                "label": np.int64(rng.integers(0, 1000)),
                "id": f"train_{k:06d}",
                "bbox": rng.random(4, dtype=np.float32),
                "objects/label": rng.integers(0, 80, 2),
                "objects/area": rng.random(2, dtype=np.float32),
            }
        )
        for k in range(count)
    ]


def write_examples(directory: Path, shards: int, per_shard: int) -> DatasetInfo:
    """A TFDS-layout dataset of TFDS-like records with FEATURES as its features."""
    directory.mkdir(parents=True, exist_ok=True)
    info = DatasetInfo(
        "examples", {"train": [per_shard] * shards}, data_dir=directory, features=FEATURES
    )
    for k, path in enumerate(info.shard_paths("train")):
        tfrecord.write(path, tfds_like(per_shard, seed=k))
    return info


def cpu_ratio(
    batched: Callable[[], Any], one_by_one: Callable[[], Any], repeats: int
) -> tuple[float, float, float]:
    """CPU seconds of each (medians) and the median of their per-round ratios.

    The two alternate round by round, so that both see the same load on a shared machine.
    """
    batched(), one_by_one()  # warm caches
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for run, spent in zip((batched, one_by_one), times):
            start = time.process_time()
            run()
            spent.append(time.process_time() - start)
    ratios = [mine / theirs for mine, theirs in zip(*times)]
    return statistics.median(times[0]), statistics.median(times[1]), statistics.median(ratios)
