"""Item iteration (specs/reader.md §1, "Items"): a raw reader streaming its files makes items
straight from the streams, with only the runs that need a read of their own read in batches;
other readers read up to 2,048 small records per batch (large records 256).  The plan's
records in its order, the state after every item exact.  The expected records follow from
the plan alone (named shards)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from itertools import islice
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import ExampleShuffle, ReadConfig, Reader, ReadPlan, example, tfrecord
from readplan.example import FixedLen
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading import reader as reader_module
from readplan.reading.items import Batch, Item
from readplan.reading.runs import Shard
from readplan.testing import assert_resumes_exactly
from tests.named_shards import NamedShards, plan_records

# 12 shards of 700 records: one 4,096-position first chunk, then one of 4,304 positions.
LAYOUT = {"train": [700] * 12}
CONFIG = ReadConfig(
    interleave_cycle_length=4, interleave_block_length=16, shuffle_files=True, shuffle_seed=3
)
# Not streamed file by file: the reader reads its records in batches.
SHUFFLED = ReadConfig(
    interleave_cycle_length=4,
    interleave_block_length=16,
    shuffle_files=True,
    shuffle_seed=3,
    example_shuffle=ExampleShuffle(64, 5),
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


def test_a_streaming_reader_reads_only_some_runs_in_batches(restore_iter_items: None) -> None:
    info = DatasetInfo("items", LAYOUT)
    plan = ReadPlan(info, "train", CONFIG)
    with NamedShards(info) as shards:
        sizes: list[int] = []
        _spy_sizes(sizes)
        items = list(Reader(plan, data_dir=shards.directory, epochs=2))
    expected = [(e, p, r) for e in range(2) for p, r in enumerate(plan_records(plan, e))]
    assert [(i.epoch, i.position, i.record) for i in items] == expected
    # Per file and epoch only its last run (its end is checked): the first opens the file's
    # stream and is taken item by item.  Each run is one block of the interleave at most.
    assert len(sizes) == 12 * 2
    assert max(sizes) <= 16


def test_an_error_that_propagates_from_a_stream_ends_the_iteration() -> None:
    info = DatasetInfo("items", LAYOUT)
    plan = ReadPlan(info, "train", CONFIG)

    class Stop(BaseException):
        pass

    def failing(stream: Iterator[bytes]) -> Iterator[bytes]:
        yield from islice(stream, 300)
        raise Stop

    with NamedShards(info) as shards, pytest.MonkeyPatch.context() as patch:
        opened = Shard._open_stream
        patch.setattr(Shard, "_open_stream", lambda self, *a: failing(opened(self, *a)))
        reader = Reader(plan, data_dir=shards.directory)
        iterator = iter(reader)
        taken: list[bytes] = []
        with pytest.raises(Stop):
            taken.extend(item.record for item in iterator)
        assert taken == plan_records(plan, 0)[: len(taken)]
        assert reader.state_dict()["position"] == len(taken) > 300
        assert list(iterator) == []


def test_readers_not_streaming_read_small_records_for_items_in_batches_of_2048(
    restore_iter_items: None,
) -> None:
    info = DatasetInfo("items", LAYOUT)
    plan = ReadPlan(info, "train", SHUFFLED)
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
        plan = ReadPlan(info, "train", SHUFFLED)
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


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=6).filter(sum),
    st.integers(1, 4),
    st.integers(1, 5),
    st.booleans(),
    st.data(),
)
def test_streamed_items_are_the_plans_records_from_any_start(
    lengths: list[int], cycle: int, block: int, shuffle: bool, data: st.DataObject
) -> None:
    info = DatasetInfo("items", {"train": lengths})
    config = ReadConfig(
        interleave_cycle_length=cycle,
        interleave_block_length=block,
        shuffle_files=shuffle,
        shuffle_seed=7,
    )
    plan = ReadPlan(info, "train", config)
    total = plan.num_examples
    epoch = data.draw(st.integers(0, 1))
    position = data.draw(st.integers(0, total))
    with NamedShards(info) as shards:
        reader = Reader(
            plan, data_dir=shards.directory, epochs=2, start=plan.checkpoint(epoch, position)
        )
        items = list(reader)
        state = reader.state_dict()
    expected = [
        (e, p, f, r, rec)
        for e in range(epoch, 2)
        for p, (f, r, rec) in enumerate(
            zip(
                plan.epoch(e).file_index.tolist(),
                plan.epoch(e).record_index.tolist(),
                plan_records(plan, e),
            )
        )
        if e > epoch or p >= position
    ]
    got = [(i.epoch, i.position, i.file_index, i.record_index, i.record) for i in items]
    assert got == expected
    assert all(type(i) is Item for i in items)
    assert (state["epoch"], state["position"]) == (1, total)
