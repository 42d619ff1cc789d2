"""Plans the checkpoint test modules share, and the (file, record) pairs of an order."""

from __future__ import annotations

from typing import Any

from readplan import ExampleShuffle, ReadConfig, ReadPlan
from readplan.metadata.dataset_info import DatasetInfo


def pairs(order: Any) -> list[tuple[int, int]]:
    """``(file, record)`` of each position of an epoch order (or the rest of one)."""
    return list(zip(order.file_index.tolist(), order.record_index.tolist()))


def small_plan() -> ReadPlan:
    """Two splits, a shuffled file order and an interleave of two: the documents' plan."""
    info = DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]})
    return ReadPlan(
        info,
        "train[1:]+test",
        ReadConfig(
            interleave_cycle_length=2,
            interleave_block_length=2,
            shuffle_files=True,
            shuffle_seed=32,
        ),
    )


def shuffled_plan() -> ReadPlan:
    """A plan with an example shuffle buffer of four."""
    info = DatasetInfo(name="d", splits={"train": [5, 7, 13]})
    return ReadPlan(info, "train", ReadConfig(example_shuffle=ExampleShuffle(4, 9)))
