"""A training loop that test_torch_passes.py kills with SIGKILL in the middle of a pass.

Usage: torch_kill_worker.py DATASET_DIR STATE_FILE EPOCH STEP

Reads the toy dataset's ``train`` split with a StatefulDataLoader over two workers,
``for epoch in range(3): for x in loader``, and after each item saves the items seen so
far and the loader's state to STATE_FILE (atomically).  After item STEP of pass EPOCH it
prints "ready" and waits to be killed.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
import warnings

from torchdata.stateful_dataloader import StatefulDataLoader  # type: ignore[import-untyped]

from readplan import Item, ReadConfig, ReadPlan
from readplan.metadata.dataset_info import DatasetInfo
from readplan.torch import ReadplanIterableDataset

CONFIG = ReadConfig(
    interleave_cycle_length=2, interleave_block_length=3, shuffle_files=True, shuffle_seed=7
)


def key(item: Item) -> tuple[int, int, int]:
    assert isinstance(item.record, dict)
    return item.epoch, item.position, int(item.record["id"][0])


def main(argv: list[str]) -> None:
    directory, out, stop_epoch, stop_step = argv[1], argv[2], int(argv[3]), int(argv[4])
    warnings.simplefilter("ignore", UserWarning)
    plan = ReadPlan(DatasetInfo.load(directory), "train", CONFIG)
    dataset = ReadplanIterableDataset(plan, decode=True, transform=key)
    loader = StatefulDataLoader(dataset, batch_size=None, num_workers=2)
    seen: list[list[int]] = []
    for epoch in range(3):
        for step, item in enumerate(loader):
            seen.append([int(v) for v in item])
            record = pickle.dumps({"seen": seen, "state": loader.state_dict()})
            with open(out + ".tmp", "wb") as handle:
                handle.write(record)
            os.replace(out + ".tmp", out)
            if (epoch, step) == (stop_epoch, stop_step):
                print("ready", flush=True)
                time.sleep(600)


if __name__ == "__main__":
    main(sys.argv)
