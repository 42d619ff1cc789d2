"""tfds_id prefixes named on demand, and a restore at many files naming only what it opens."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan import Checkpoint, ReadConfig, Reader, ReadPlan, tfrecord
from readplan.metadata.dataset_info import DatasetInfo, SplitInfo
from readplan.planning.instructions import FileInstruction

TEMPLATES = [None, "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_INDEX}", "{SPLIT}{SHARD_X_OF_Y}"]


def _elsewhere(fis: list[FileInstruction]) -> list[FileInstruction]:
    """A sort function moving every other file to another directory."""
    moved = [
        replace(fi, filename=f"/mnt/b{k % 2}/ds/{os.path.basename(fi.filename)}")
        for k, fi in enumerate(fis)
    ]
    return list(reversed(moved))


SORT_FNS: list[Any] = [None, lambda fis: list(reversed(fis)), _elsewhere]


@given(
    templates=st.tuples(st.sampled_from(TEMPLATES), st.sampled_from(TEMPLATES)),
    data_dir=st.sampled_from([None, "/data/ds/1.0.0", "rel/ds/"]),
    spec=st.sampled_from(["train", "train+test", "test[1:]+train[:3]"]),
    sort_fn=st.sampled_from(SORT_FNS),
    picks=st.lists(st.integers(0, 10**6), max_size=40),
)
def test_prefixes_of_files_are_the_prefixes_of_the_whole_plan(
    templates: tuple[str | None, str | None],
    data_dir: str | None,
    spec: str,
    sort_fn: Any,
    picks: list[int],
) -> None:
    splits = {
        "train": SplitInfo("train", (2, 3, 1, 4), filepath_template=templates[0]),
        "test": SplitInfo("test", (5, 2), filepath_template=templates[1]),
    }
    info = DatasetInfo("ds", splits, data_dir=data_dir)
    plan = ReadPlan(info, spec, ReadConfig(experimental_interleave_sort_fn=sort_fn))
    files = np.array([k % len(plan.instructions) for k in picks], dtype=np.int64)
    every = plan.tfds_id_prefixes
    assert plan.tfds_id_prefixes_of(files) == [every[f] for f in files.tolist()]
    names = [plan.instructions[f].filename for f in files.tolist()]
    if len({os.path.dirname(fi.filename) for fi in plan.instructions}) == 1:
        # One directory: the prefix is the base name (specs/order.md §5).
        assert plan.tfds_id_prefixes_of(files) == [os.path.basename(n) for n in names]
    records = np.arange(files.size, dtype=np.int64)
    assert plan.tfds_ids(files, records) == [
        f"{every[f]}__{r}" for f, r in zip(files.tolist(), records.tolist())
    ]


def test_a_restore_at_many_files_names_only_the_files_it_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    num_files = 20_000
    info = DatasetInfo("web", {"train": [3] * num_files}, data_dir=tmp_path)
    plan = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=5))
    position = plan.num_examples // 2
    head = next(plan.iter_epoch(1, chunk_size=4_096, start=position))
    opened = np.unique(head.file_index).tolist()
    for file_index in opened:
        tfrecord.write(plan.instructions.filename(file_index), [b"a", b"b", b"c"])
    saved = tmp_path / "checkpoint.json"
    plan.checkpoint(1, position).save(saved)
    plan.summary  # noqa: B018 - computed with the plan, not by the restore
    named: list[tuple[str, int]] = []
    shard_path = DatasetInfo.shard_path

    def counting(self: DatasetInfo, split: str, shard_index: int) -> str:
        named.append((split, shard_index))
        return shard_path(self, split, shard_index)

    monkeypatch.setattr(DatasetInfo, "shard_path", counting)
    with Reader(plan, start=Checkpoint.load(saved), epochs=2) as reader:
        item = next(iter(reader))
    file_index, record_index = plan.locate(1, position)
    assert (item.epoch, item.position) == (1, position)
    assert (item.file_index, item.record_index) == (file_index, record_index)
    assert item.tfds_id == f"{info.shard_filename('train', file_index)}__{record_index}"
    assert len(named) <= 4 * len(opened)


@pytest.mark.parametrize("ask", ["of", "table"])
def test_files_asked_together_are_all_named_when_the_cache_starts_again(ask: str) -> None:
    # 5,000 files: more than the prefixes kept named, so naming file 4,500 empties the cache.
    info = DatasetInfo("many", {"train": [1] * 5_000}, data_dir="/data/many")
    plan = ReadPlan(info, "train", ReadConfig())
    every = plan.tfds_id_prefixes
    plan.tfds_id_prefixes_of(np.arange(4_096))
    files = np.array([0, 4_500, 1], dtype=np.int64)
    if ask == "of":
        assert plan.tfds_id_prefixes_of(files) == [every[0], every[4_500], every[1]]
    else:
        table = plan.tfds_id_prefix_table(files)
        assert [table[f] for f in files.tolist()] == [every[0], every[4_500], every[1]]
