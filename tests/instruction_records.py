"""What file instructions read, worked out without readplan, and the reference notes' layout."""

from __future__ import annotations

import os
from typing import Any

from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.instructions import FileInstruction

# The layout of the reference notes: shard 1 of train is empty.
NOTES = DatasetInfo("ds", {"train": [10, 0, 25, 15, 50], "test": [7, 3], "validation": [1]})


def rows(instructions: list[FileInstruction]) -> list[list[Any]]:
    return [
        [os.path.basename(fi.filename), fi.skip, fi.take, fi.examples_in_shard]
        for fi in instructions
    ]


def records(info: DatasetInfo, instructions: list[FileInstruction]) -> list[tuple[str, int]]:
    """(split, global index) of every record read, in order (a negative take reads the rest)."""
    out = []
    for fi in instructions:
        assert fi.split is not None
        assert fi.shard_index is not None
        start = sum(info.splits[fi.split].shard_lengths[: fi.shard_index])
        out += [(fi.split, start + fi.skip + i) for i in range(fi.num_records)]
    return out
