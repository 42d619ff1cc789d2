"""What a plan refuses to hold in memory, and what stays bounded on a split of 10^12."""

from __future__ import annotations

import tracemalloc

import pytest

from readplan import ExampleShuffle, ReadConfig, ReadPlan
from readplan.errors import ConfigError
from readplan.metadata.dataset_info import DatasetInfo

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
    for call in (lambda: plan.locate(0, 5), lambda: next(plan.iter_epoch(0))):
        with pytest.raises(ConfigError, match=r"plan\.checkpoint\(0, position\)") as info:
            call()
        assert info.value.field == "max_examples"


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
