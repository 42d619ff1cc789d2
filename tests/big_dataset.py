"""The "big" datasets of the object-store tests: TFRecord shards of fixed-size records whose
bytes follow from their shard and index, so expected records and offsets need no reading
through readplan (a record of ``size`` bytes is a frame of ``size + 16``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from readplan import tfrecord


def big_record(shard: int, k: int, size: int = 1024) -> bytes:
    """Record ``k`` of shard ``shard``: its number, repeated to ``size`` bytes."""
    return (shard * 1_000_003 + k).to_bytes(8, "little") * (size // 8)


def big_records(count: int, size: int, shard: int) -> Iterator[bytes]:
    for k in range(count):
        yield big_record(shard, k, size)


def big_name(shard: int, shards: int) -> str:
    return f"big-train.tfrecord-{shard:05d}-of-{shards:05d}"


def write_big(folder: Path, lengths: Sequence[int], size: int = 1024) -> Path:
    """The dataset ``big`` 1.0.0 in ``folder`` (created): its train split's shards hold
    ``lengths`` records of ``size`` bytes."""
    folder.mkdir(parents=True)
    for shard, count in enumerate(lengths):
        tfrecord.write(folder / big_name(shard, len(lengths)), big_records(count, size, shard))
    info = {
        "name": "big",
        "version": "1.0.0",
        "splits": [{"name": "train", "shardLengths": [str(n) for n in lengths]}],
    }
    (folder / "dataset_info.json").write_text(json.dumps(info))
    return folder
