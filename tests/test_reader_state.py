"""Reader state dicts: a checkpoint of the records delivered, that continues where it was
saved, is refused when edited, malformed or of another plan, and merges across ranks.

The plans read the TFDS-written toy dataset (tests/data/tfds).
"""

from __future__ import annotations

import os
from itertools import islice
from typing import Any

import pytest

from readplan import Checkpoint, ReadConfig, Reader, ReadPlan, merge_states
from readplan.errors import CheckpointError, CheckpointMismatchError, ConfigError
from readplan.reading.ranks import STATE_KEY
from tests.tfds_toy import TOY_INFO


def _plan(spec: str = "train", **config: Any) -> ReadPlan:
    return ReadPlan(TOY_INFO, spec, ReadConfig(**config))


def test_state_is_a_checkpoint_of_the_records_delivered() -> None:
    plan = _plan(shuffle_files=True, shuffle_seed=3, interleave_cycle_length=2)
    reader = Reader(plan, epochs=2)
    stream = iter(reader)
    for _ in range(60):
        next(stream)
    state = reader.state_dict()
    section = state[STATE_KEY]
    assert (section["rank"], section["world_size"]) == (0, 1)
    checkpoint = plan.checkpoint(1, 60 - plan.num_examples)
    # The data binding names the files the interleave holds, with their sizes.
    held = sorted(slot[0] for slot in checkpoint.expanded().slots if slot is not None)
    assert [entry[0] for entry in section["files"]] == held
    sizes = [os.path.getsize(plan.instructions[f].filename) for f in held]
    assert [entry[1] for entry in section["files"]] == sizes
    assert Checkpoint.from_dict(state) == checkpoint
    fresh = Reader(plan, epochs=2)
    assert fresh.state_dict()["position"] == 0
    assert Checkpoint.from_dict(fresh.state_dict()) == plan.checkpoint(0, 0)


def test_an_epoch_end_is_saved_as_the_epochs_last_position() -> None:
    plan = _plan()
    reader = Reader(plan, epochs=2)
    stream = iter(reader)
    for _ in range(plan.num_examples):
        next(stream)
    assert (reader.state_dict()["epoch"], reader.state_dict()["position"]) == (0, plan.num_examples)
    finished = Reader(plan, epochs=1)
    list(finished)
    resumed = Reader(plan, epochs=2)
    resumed.load_state_dict(finished.state_dict())
    assert [i.epoch for i in resumed] == [1] * plan.num_examples


def test_a_new_iteration_continues_and_batches_share_the_state() -> None:
    plan = _plan(interleave_cycle_length=3, interleave_block_length=2)
    expected = [(i.file_index, i.record_index) for i in Reader(plan)]
    reader = Reader(plan)
    first = [(i.file_index, i.record_index) for i in islice(reader, 5)]
    batches = reader.batches()
    batch = next(batches)
    assert reader.state_dict()["position"] == 5 + len(batch)
    rest = [(i.file_index, i.record_index) for i in reader]
    middle = list(zip(batch.file_index.tolist(), batch.record_index.tolist()))
    assert first + middle + rest == expected
    reader.close()
    assert reader.state_dict()["position"] == plan.num_examples


def test_endless_reading_continues_epoch_after_epoch() -> None:
    plan = _plan(shuffle_files=True, shuffle_seed=9)
    got = [(i.epoch, i.record) for i in islice(Reader(plan, epochs=None), 3 * plan.num_examples)]
    expected = [(i.epoch, i.record) for i in Reader(plan, epochs=3)]
    assert got == expected


def test_more_ranks_than_records_leaves_some_ranks_idle() -> None:
    plan = _plan("train[:3]")
    assert list(Reader(plan, epochs=None, rank=4, world_size=5)) == []
    assert [i.position for i in Reader(plan, epochs=2, rank=2, world_size=5)] == [2, 2]


def test_a_state_of_another_plan_is_refused() -> None:
    reader = Reader(_plan(interleave_cycle_length=2))
    with pytest.raises(CheckpointMismatchError) as raised:
        reader.load_state_dict(Reader(_plan(interleave_cycle_length=3)).state_dict())
    assert "cycle_length" in raised.value.differences


def test_an_edited_state_is_refused() -> None:
    plan = _plan(interleave_cycle_length=3)
    reader = Reader(plan)
    list(islice(reader, 10))
    state = reader.state_dict()
    state["epoch"] += 1
    with pytest.raises(CheckpointError, match="edited or damaged"):
        Reader(plan).load_state_dict(state)
    state = reader.state_dict()
    state[STATE_KEY]["rank"] = 1
    with pytest.raises(CheckpointError, match="edited or damaged"):
        Reader(plan).load_state_dict(state)
    state = reader.state_dict()
    state["position"] = 11
    with pytest.raises(CheckpointError):
        Reader(plan).load_state_dict(state)


@pytest.mark.parametrize(
    ("state", "field"),
    [
        ([1, 2], "$"),
        ({"format": "other"}, "format"),
    ],
)
def test_malformed_states_are_refused(state: Any, field: str) -> None:
    with pytest.raises(CheckpointError) as raised:
        Reader(_plan()).load_state_dict(state)
    assert raised.value.field == field


@pytest.mark.parametrize(
    "owner", ["rank 0", {"rank": 2, "world_size": 2}, {"rank": True, "world_size": 2}, {}]
)
def test_malformed_rank_entries_are_refused(owner: Any) -> None:
    state = Reader(_plan()).state_dict()
    state[STATE_KEY] = owner
    with pytest.raises(CheckpointError) as raised:
        Reader(_plan()).load_state_dict(state)
    assert raised.value.field == STATE_KEY


def test_a_rank_state_restores_only_its_own_rank() -> None:
    plan = _plan()
    reader = Reader(plan, rank=1, world_size=3)
    list(islice(reader, 4))
    state = reader.state_dict()
    assert state["position"] == 1 + 4 * 3
    same = Reader(plan, rank=1, world_size=3)
    same.load_state_dict(state)
    assert next(iter(same)).position == 13
    for rank, world_size in ((0, 3), (1, 2), (0, 1)):
        with pytest.raises(CheckpointError, match="merge_states"):
            Reader(plan, rank=rank, world_size=world_size).load_state_dict(state)
    state = plan.checkpoint(0, 12).to_dict(extra={STATE_KEY: {"rank": 1, "world_size": 3}})
    with pytest.raises(CheckpointError, match="not one of rank 1's positions"):
        Reader(plan, rank=1, world_size=3).load_state_dict(state)


def test_a_global_state_starts_every_rank_at_its_first_position_after_it() -> None:
    plan = _plan()
    checkpoint = plan.checkpoint(0, 10)
    firsts = [
        next(iter(Reader(plan, start=checkpoint, rank=r, world_size=4))).position for r in range(4)
    ]
    assert firsts == [12, 13, 10, 11]


def test_a_state_beyond_the_epochs_read_is_refused() -> None:
    plan = _plan()
    with pytest.raises(ConfigError, match="epochs > 2"):
        Reader(plan, epochs=2, start=plan.checkpoint(2, 0))


def _rank_states(plan: ReadPlan, world_size: int, counts: list[int]) -> list[dict[str, Any]]:
    states = []
    for rank, count in enumerate(counts):
        reader = Reader(plan, epochs=3, rank=rank, world_size=world_size)
        list(islice(reader, count))
        states.append(reader.state_dict())
    return states


def test_merge_finds_the_global_position_of_lockstep_ranks() -> None:
    plan = _plan()
    merged = merge_states(_rank_states(plan, 3, [5, 5, 5]))
    assert (merged["epoch"], merged["position"]) == (0, 15)
    assert (merged[STATE_KEY]["rank"], merged[STATE_KEY]["world_size"]) == (0, 1)
    assert Checkpoint.from_dict(merged) == plan.checkpoint(0, 15)
    # 49 positions over 3 ranks: rank 0 has 17, ranks 1 and 2 have 16 each.
    merged = merge_states(_rank_states(plan, 3, [17, 16, 16]))
    assert (merged["epoch"], merged["position"]) == (0, 49)
    merged = merge_states(_rank_states(plan, 3, [18, 17, 17]))
    assert (merged["epoch"], merged["position"]) == (1, 3)


def test_merge_refuses_states_that_would_repeat_records() -> None:
    plan = _plan()
    with pytest.raises(CheckpointError, match="rank 1: 2, rank 2: 1"):
        merge_states(_rank_states(plan, 3, [4, 6, 5]))
    # Across an epoch end: rank 0 finished epoch 0 (17) and went on, the others did not.
    with pytest.raises(CheckpointError, match="rank 0: 1"):
        merge_states(_rank_states(plan, 3, [18, 16, 16]))


def test_merge_needs_one_state_per_rank_of_one_plan() -> None:
    plan = _plan()
    states = _rank_states(plan, 3, [2, 2, 2])
    with pytest.raises(CheckpointError, match="missing \\[2\\]"):
        merge_states(states[:2])
    with pytest.raises(CheckpointError, match="repeated \\[1\\]"):
        merge_states([states[0], states[1], states[1]])
    with pytest.raises(CheckpointError, match="different sizes"):
        merge_states([*states, *_rank_states(plan, 2, [1, 1])])
    other = _rank_states(_plan(interleave_cycle_length=2), 3, [2, 2, 2])
    with pytest.raises(CheckpointError, match="different plans"):
        merge_states([states[0], states[1], other[2]])
    with pytest.raises(CheckpointError, match="got none"):
        merge_states([])
    single = Reader(plan).state_dict()
    assert merge_states([single]) == single
