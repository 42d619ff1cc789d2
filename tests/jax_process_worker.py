"""One JAX process of the two-process test in tests/test_grain.py.

Usage: jax_process_worker.py PROCESS_ID NUM_PROCESSES PORT DATASET_DIR INDEX_DIR OUT_JSON

The process joins a JAX cluster on a loopback coordinator, takes its index and count from
``jax.process_index()``/``jax.process_count()``, and reads its share of the toy dataset's
``train`` split three ways: a Reader in elastic mode, a Reader over
``split_for_process(...)``, and Grain's DataLoader with readplan's OrderSampler and
``ShardByJaxProcess``.  Every process gathers all shares with JAX and writes what it saw.
"""

from __future__ import annotations

import json
import sys

import grain
import jax
import numpy as np
from jax.experimental import multihost_utils

from readplan import ReadConfig, ReadPlan
from readplan.grain import OrderSampler
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.instructions import split_for_process
from readplan.reading.data_source import data_source
from readplan.reading.reader import Reader

CONFIG = ReadConfig(
    interleave_cycle_length=2, interleave_block_length=3, shuffle_files=True, shuffle_seed=7
)


def record_id(record: object) -> int:
    assert isinstance(record, dict)
    return int(record["id"][0])


def gathered(values: list[int]) -> list[list[int]]:
    """Every process's ``values`` (padded with -1 to a common length for the gather)."""
    length = int(np.max(multihost_utils.process_allgather(np.array([len(values)]))))
    padded = np.full(length, -1, dtype=np.int64)
    padded[: len(values)] = values
    everyone = multihost_utils.process_allgather(padded)
    return [[int(v) for v in row if v != -1] for row in np.asarray(everyone)]


def main(argv: list[str]) -> None:
    process_id, count, port = int(argv[1]), int(argv[2]), int(argv[3])
    directory, index_dir, out = argv[4], argv[5], argv[6]
    jax.config.update("jax_platforms", "cpu")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=count,
        process_id=process_id,
        initialization_timeout=60,
    )
    try:
        rank, world_size = jax.process_index(), jax.process_count()
        info = DatasetInfo.load(directory)
        plan = ReadPlan(info, "train", CONFIG)
        elastic = [
            [item.position, record_id(item.record)]
            for item in Reader(plan, decode=True, rank=rank, world_size=world_size)
        ]
        own_split = split_for_process("train", rank, world_size, info=info)
        by_split = [
            record_id(item.record) for item in Reader(ReadPlan(info, own_split), decode=True)
        ]
        loader = grain.DataLoader(
            data_source=data_source(info, "train", decode=True, index_dir=index_dir),
            sampler=OrderSampler(plan, epochs=1),
            worker_count=0,
            shard_options=grain.sharding.ShardByJaxProcess(),
        )
        by_grain = [record_id(record) for record in loader]
        report = {
            "process": [rank, world_size],
            "elastic": elastic,
            "split": own_split,
            "by_split": by_split,
            "by_grain": by_grain,
            "gathered_split": gathered(by_split),
            "gathered_grain": gathered(by_grain),
        }
        multihost_utils.sync_global_devices("readplan test done")
    finally:
        jax.distributed.shutdown()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(report, handle)


if __name__ == "__main__":
    main(sys.argv)
