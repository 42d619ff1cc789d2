"""Shard files whose records name themselves, so the record at any position is known.

A record of shard file ``name`` at index ``k`` is ``b"<name>#<k>"``: the records a plan should
deliver follow from its order alone, without reading anything through readplan.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from readplan import ReadPlan, tfrecord
from readplan.metadata.dataset_info import DatasetInfo


class NamedShards:
    """Shard files of a layout whose records are ``b"<file name>#<record index>"``."""

    def __init__(self, info: DatasetInfo) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.directory = Path(self._tmp.name)
        for split, layout in info.splits.items():
            for shard, count in enumerate(layout.shard_lengths):
                name = info.shard_filename(split, shard)
                tfrecord.write(
                    self.directory / name, (f"{name}#{k}".encode() for k in range(count))
                )

    def __enter__(self) -> NamedShards:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()


def plan_records(plan: ReadPlan, epoch: int) -> list[bytes]:
    """The records of ``epoch`` of ``plan`` over named shards, in the plan's order."""
    order = plan.epoch(epoch)
    return [
        f"{os.path.basename(plan.instructions[f].filename)}#{r}".encode()
        for f, r in zip(order.file_index.tolist(), order.record_index.tolist())
    ]
