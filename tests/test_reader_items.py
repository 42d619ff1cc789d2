"""Item iteration over reads of up to 2,048 small records (specs/reader.md §1, "Items"): the
plan's records in its order, the state after every item exact, and large records read in
batches of 256 as before.  The expected records follow from the plan alone (named shards)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from readplan import ReadConfig, Reader, ReadPlan, example, tfrecord
from readplan.example import FixedLen
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading import reader as reader_module
from readplan.reading.items import Batch
from readplan.testing import assert_resumes_exactly
from tests.named_shards import NamedShards, plan_records

# 12 shards of 700 records: one 4,096-position first chunk, then one of 4,304 positions.
LAYOUT = {"train": [700] * 12}
CONFIG = ReadConfig(
    interleave_cycle_length=4, interleave_block_length=16, shuffle_files=True, shuffle_seed=3
)


def _spy_sizes(sink: list[int]) -> None:
    """Appends the size of every batch item iteration reads to ``sink``."""
    made = Batch.iter_items

    def spy(batch: Batch) -> Iterator[Any]:
        sink.append(len(batch))
        return made(batch)

    reader_module.Batch.iter_items = spy  # type: ignore[method-assign]


@pytest.fixture
def restore_iter_items() -> Iterator[None]:
    made = Batch.iter_items
    yield
    Batch.iter_items = made  # type: ignore[method-assign]


def test_small_records_are_read_for_items_in_batches_of_2048(restore_iter_items: None) -> None:
    info = DatasetInfo("items", LAYOUT)
    plan = ReadPlan(info, "train", CONFIG)
    with NamedShards(info) as shards:
        sizes: list[int] = []
        _spy_sizes(sizes)
        reader = Reader(plan, data_dir=shards.directory, epochs=2)
        items = list(reader)
    expected = [(e, p, r) for e in range(2) for p, r in enumerate(plan_records(plan, e))]
    assert [(i.epoch, i.position, i.record) for i in items] == expected
    # The first chunk's reads know no record size yet: 256 each; then up to 2,048.
    assert max(sizes) == 2_048
    assert sizes[:16] == [256] * 16


def test_the_state_after_every_item_of_large_reads_continues_exactly() -> None:
    info = DatasetInfo("items", LAYOUT)
    plan = ReadPlan(info, "train", CONFIG)
    with NamedShards(info) as shards:
        # Around the first chunk's end, the first 2,048-record read's end, the epoch's end.
        wanted = [*range(4_090, 4_100), *range(6_139, 6_149), 8_399, 8_400]
        assert_resumes_exactly(
            lambda state: Reader(plan, data_dir=shards.directory, start=state),
            lambda reader: json.loads(json.dumps(reader.state_dict())),
            positions=wanted,
            key=lambda i: (i.position, i.record),
        )


def test_large_records_keep_reads_of_256_for_items(restore_iter_items: None) -> None:
    with pytest.MonkeyPatch.context() as patch:
        # Records of about 55 bytes framed count as large when a read may hold 4 KiB.
        patch.setattr(reader_module, "_ITEM_BATCH_BYTES", 1 << 12)
        info = DatasetInfo("items", LAYOUT)
        plan = ReadPlan(info, "train", CONFIG)
        with NamedShards(info) as shards:
            sizes: list[int] = []
            _spy_sizes(sizes)
            reader = Reader(plan, data_dir=shards.directory)
            items = list(reader)
    assert [i.record for i in items] == plan_records(plan, 0)
    assert max(sizes) == 256


def test_a_decoding_reader_keeps_reads_of_256_for_items(restore_iter_items: None) -> None:
    with tempfile.TemporaryDirectory() as directory:
        info = DatasetInfo("items", {"train": [3_000] * 2}, data_dir=directory)
        plan = ReadPlan(info, "train", CONFIG)
        for path in info.shard_paths("train"):
            tfrecord.write(path, (example.encode({"k": [k]}) for k in range(3_000)))
        sizes: list[int] = []
        _spy_sizes(sizes)
        items = list(Reader(plan, data_dir=directory, decode={"k": FixedLen((), "int64")}))
    assert len(items) == 6_000
    assert max(sizes) == 256
