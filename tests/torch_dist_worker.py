"""One rank of the two-process ``torch.distributed`` test in tests/test_torch.py.

Usage: torch_dist_worker.py RANK WORLD_SIZE PORT DATASET_DIR STEPS OUT_JSON

The rank reads its share of the toy dataset's ``train`` split through
``ReadplanIterableDataset`` (consumer index from ``torch.distributed``), saves its state
after STEPS records, reads the rest, gathers every rank's saved state, then reads two
passes of two epochs through a DataLoader with two persistent workers, and writes what it
saw (and the loader's len) to OUT_JSON.
"""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

import torch.distributed as dist
from torch.utils.data import DataLoader

from readplan import Item, ReadConfig, ReadPlan
from readplan.metadata.dataset_info import DatasetInfo
from readplan.torch import ReadplanIterableDataset, consumer

CONFIG = ReadConfig(
    interleave_cycle_length=2, interleave_block_length=3, shuffle_files=True, shuffle_seed=7
)


def key(item: Item) -> list[int]:
    assert isinstance(item.record, dict)
    return [item.epoch, item.position, int(item.record["id"][0])]


def main(argv: list[str]) -> None:
    rank, world_size, rendezvous = int(argv[1]), int(argv[2]), argv[3]
    directory, steps, out = argv[4], int(argv[5]), argv[6]
    dist.init_process_group(
        "gloo",
        # A file rendezvous: no port to pick, so nothing to race for.
        init_method=f"file://{rendezvous}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=30),
    )
    try:
        plan = ReadPlan(DatasetInfo.load(directory), "train", CONFIG)
        dataset = ReadplanIterableDataset(plan, decode=True, transform=key)
        stream = iter(dataset)
        before = [next(stream) for _ in range(steps)]
        state = dataset.state_dict()
        rest = list(stream)
        gathered: list[Any] = [None] * world_size
        dist.all_gather_object(gathered, state)
        # Two passes of two epochs each, over two persistent DataLoader workers per rank.
        loader = DataLoader(
            ReadplanIterableDataset(plan, decode=True, transform=key, epochs=2),
            batch_size=None,
            num_workers=2,
            persistent_workers=True,
        )
        passes = [[list(map(int, k)) for k in loader] for _ in range(2)]
        report = {
            "consumer": list(consumer()),
            "before": before,
            "rest": rest,
            "gathered": gathered,
            "passes": passes,
            "len": len(loader),
        }
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(report, handle)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv)
