"""What a plan refuses to hold in memory, and what stays bounded on a split of 10^12."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan import ExampleShuffle, ReadConfig, ReadPlan
from readplan.errors import ConfigError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.buffered import iter_buffered
from readplan.testing import plans

# 10^5 shards of 10^7 records: an epoch of 10^12, 16 TB as int64 index pairs.
HUGE = DatasetInfo(name="huge", splits={"train": [10**7] * 10**5})
SMALL = DatasetInfo(name="small", splits={"train": [7, 5, 9, 3]})


def test_a_whole_epoch_of_a_huge_split_is_refused_naming_the_bounded_calls() -> None:
    plan = ReadPlan(HUGE, "train", ReadConfig(shuffle_files=True, shuffle_seed=3))
    with pytest.raises(ConfigError) as info:
        plan.epoch(0)
    message = str(info.value)
    for name in ("1,000,000,000,000", "plan.iter_epoch(0", "plan.locate(0", "plan.checkpoint(0"):
        assert name in message
    assert info.value.field == "max_examples"
    assert info.value.value == 10**12


def test_the_bounded_calls_still_work_on_a_huge_split() -> None:
    plan = ReadPlan(HUGE, "train", ReadConfig(shuffle_files=True, shuffle_seed=3))
    # 16 slots, blocks of 16, shards of equal length: the last record is the last record
    # of one of the last 16 files the epoch opens.
    last_files = set(plan.file_order(0)[-16:].tolist())
    file_index, record_index = plan.locate(0, 10**12 - 1)
    assert (file_index in last_files, record_index) == (True, 10**7 - 1)
    assert plan.position_of(0, file_index, record_index) == 10**12 - 1
    checkpoint = plan.checkpoint(0, 7 * 10**11)
    assert plan.verify(checkpoint).position == 7 * 10**11
    chunk = next(plan.iter_epoch(0, chunk_size=1_000, start=10**12 - 10))
    assert len(chunk) == 10
    assert (int(chunk.file_index[-1]), int(chunk.record_index[-1])) == (file_index, record_index)
    first = next(plan.iter_from(checkpoint, chunk_size=4))
    assert (first.start, len(first)) == (7 * 10**11, 4)
    with pytest.raises(ConfigError, match=r"plan\.iter_from\(checkpoint"):
        plan.resume(checkpoint)


def test_the_bound_is_exact_and_can_be_raised() -> None:
    plan = ReadPlan(SMALL, "train", ReadConfig(shuffle_files=True, shuffle_seed=1))
    assert len(plan.epoch(0, max_examples=24)) == 24
    with pytest.raises(ConfigError, match=r"24 records in memory.*bound of 23"):
        plan.epoch(0, max_examples=23)
    rest = plan.resume(plan.checkpoint(0, 4), max_examples=20)
    assert len(rest) == 20
    with pytest.raises(ConfigError, match="bound of 19"):
        plan.resume(plan.checkpoint(0, 4), max_examples=19)


@pytest.mark.parametrize("bound", [0, -1, True, 1.5, None])
def test_a_bound_that_is_not_a_positive_integer_is_refused(bound: object) -> None:
    plan = ReadPlan(SMALL, "train")
    with pytest.raises(ConfigError) as info:
        plan.epoch(0, max_examples=bound)  # type: ignore[arg-type]
    assert info.value.field == "max_examples"


def test_an_example_shuffle_permutation_of_a_huge_split_is_refused_naming_checkpoint() -> None:
    config = ReadConfig(example_shuffle=ExampleShuffle(buffer_size=1_000, seed=4))
    plan = ReadPlan(HUGE, "train", config)
    for call in (lambda: plan.locate(0, 5), lambda: plan.position_of(0, 0, 0)):
        with pytest.raises(ConfigError, match=r"plan\.checkpoint\(0, position\)") as info:
            call()
        assert info.value.field == "max_examples"
        assert "plan.iter_epoch(0, ...)" in str(info.value)
    # Streaming the shuffled epoch holds the buffer, not the epoch.
    first = next(plan.iter_epoch(0, chunk_size=500))
    assert len(first) == 500
    assert len(set(zip(first.file_index.tolist(), first.record_index.tolist()))) == 500


def test_an_example_shuffle_checkpoint_needs_memory_of_the_buffer_not_the_position() -> None:
    # 10^6 positions into an epoch with a buffer of 1,000: the outputs up to there would
    # take 8 MB as an array and about 40 MB as a list.
    info = DatasetInfo(name="long", splits={"train": [10**6] * 4})
    config = ReadConfig(example_shuffle=ExampleShuffle(buffer_size=1_000, seed=4))
    plan = ReadPlan(info, "train", config)
    plan.checkpoint(0, 10)  # the schedule and summary, outside the measurement
    tracemalloc.start()
    checkpoint = plan.checkpoint(0, 10**6)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 << 20  # a batch of 2^16 draws, and the buffer
    buffer = checkpoint.example_buffer
    assert buffer is not None
    assert (len(buffer.buffer), buffer.consumed, buffer.draws) == (999, 10**6 + 999, 10**6)
    assert plan.verify(checkpoint) is checkpoint


@pytest.mark.parametrize(
    ("buffer_size", "start", "chunk"), [(7, 0, 50_000), (3_000, 123_457, 70_001)]
)
def test_a_streamed_shuffled_epoch_is_the_whole_epoch_across_batches(
    buffer_size: int, start: int, chunk: int
) -> None:
    # 3 * 10^5 records: several of the stream's batches of outputs (2^16 at least).
    info = DatasetInfo(name="mid", splits={"train": [30_011] * 10})
    config = ReadConfig(
        shuffle_files=True,
        shuffle_seed=2,
        example_shuffle=ExampleShuffle(buffer_size=buffer_size, seed=8),
    )
    plan = ReadPlan(info, "train", config)
    whole = plan.epoch(1)
    schedule = plan.epoch_schedule(1)
    chunks = list(iter_buffered(schedule, start=start, chunk_size=chunk))
    assert [c[0].size for c in chunks[:-1]] == [chunk] * (len(chunks) - 1)
    files, records = schedule.records(*(np.concatenate(part) for part in zip(*chunks)))
    assert files.tolist() == whole.file_index[start:].tolist()
    assert records.tolist() == whole.record_index[start:].tolist()
    resumed = plan.iter_from(plan.checkpoint(1, start), chunk_size=chunk, stop_epoch=2)
    assert np.concatenate([c.record_index for c in resumed]).tolist() == (
        whole.record_index[start:].tolist()
    )


def test_a_streamed_shuffled_epoch_needs_memory_of_the_buffer_not_the_epoch() -> None:
    # 5 * 10^6 records, walked as a stream: the epoch's permutation and order would take
    # 160 MB.
    info = DatasetInfo(name="long", splits={"train": [10**6] * 5})
    config = ReadConfig(example_shuffle=ExampleShuffle(buffer_size=1_000, seed=4))
    plan = ReadPlan(info, "train", config)
    plan.epoch_schedule(0)
    tracemalloc.start()
    chunk = next(plan.iter_epoch(0, chunk_size=10_000, start=2 * 10**6))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 24 << 20
    assert (chunk.start, len(chunk)) == (2 * 10**6, 10_000)
    assert chunk.tfds_ids()[0] == plan.epoch(0).tfds_ids()[2 * 10**6]


@given(plans(), st.integers(0, 3), st.integers(1, 7), st.data())
def test_the_stream_of_a_shuffled_epoch_from_any_start_is_its_suffix(
    plan: ReadPlan, epoch: int, chunk: int, data: st.DataObject
) -> None:
    schedule = plan.epoch_schedule(epoch)
    if schedule.example_pair is None:
        return
    whole = plan.epoch(epoch)
    start = data.draw(st.integers(0, len(whole)))
    chunks = list(iter_buffered(schedule, start=start, chunk_size=chunk))
    assert all(c[0].size == chunk for c in chunks[:-1])
    got = [pair for c in chunks for pair in zip(*schedule.records(*c))]
    expected = list(zip(whole.file_index.tolist(), whole.record_index.tolist()))[start:]
    assert [(int(f), int(r)) for f, r in got] == expected
