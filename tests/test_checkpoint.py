"""Checkpoints: the exact state at every position, and resuming it exactly.

``specs/checkpoint.md`` §1 (the state) and §3 (computing a checkpoint).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan import Checkpoint, ExampleShuffle, ReadConfig, ReadPlan
from readplan.errors import ConfigError
from readplan.metadata.dataset_info import DatasetInfo, shard_lengths
from readplan.testing import assert_resumes_exactly, plans
from tests import checkpoint_plans
from tests.checkpoint_plans import pairs
from tests.reference_models import ReferenceInterleave
from tests.strategies import plain_configs


@given(plans(configs=plain_configs), st.integers(0, 4))
def test_state_equals_stepped_reference_model_at_every_position(plan: ReadPlan, epoch: int) -> None:
    files = plan.file_order(epoch).tolist()
    lengths = [plan.instructions[f].num_records for f in files]
    skips = [plan.instructions[f].skip for f in files]
    model = ReferenceInterleave(lengths, plan.cycle_length, plan.block_length)
    for position in range(plan.num_examples + 1):
        checkpoint = plan.checkpoint(epoch, position).expanded()
        expected = model.snapshot()
        assert checkpoint.position == position
        assert checkpoint.cursor == expected["cursor"]
        assert checkpoint.block_counter == expected["block_counter"]
        assert checkpoint.next_input == expected["next_input"]
        assert checkpoint.inputs_done == expected["inputs_done"]
        assert list(checkpoint.slots) == [
            None if i is None else (files[i], skips[i] + offset) for i, offset in expected["slots"]
        ]
        assert list(checkpoint.files) == [
            (files[k], c, lengths[k] - c) for k, c in enumerate(expected["consumed"])
        ]
        model.next()


@given(plans(), st.integers(0, 3))
@settings(max_examples=60)
def test_resume_after_every_position_equals_the_uninterrupted_suffix(
    plan: ReadPlan, epoch: int
) -> None:
    full = pairs(plan.epoch(epoch))
    for position in range(len(full) + 1):
        checkpoint = Checkpoint.from_json(plan.checkpoint(epoch, position).to_json())
        rest = plan.resume(checkpoint)
        assert rest.start == position
        assert pairs(rest) == full[position:]


@given(plans(), st.integers(0, 3), st.data())
@settings(max_examples=40)
def test_iter_from_continues_across_epochs(plan: ReadPlan, epoch: int, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, plan.num_examples))
    expected = [
        (e, pair)
        for e in range(epoch, epoch + 3)
        for pair in pairs(plan.epoch(e))[(position if e == epoch else 0) :]
    ]
    chunk = data.draw(st.integers(1, 7))
    got = [
        (c.epoch, pair)
        for c in plan.iter_from(
            plan.checkpoint(epoch, position), chunk_size=chunk, stop_epoch=epoch + 3
        )
        for pair in pairs(c)
    ]
    assert got == expected


def test_resume_helper_accepts_plan_iteration_with_checkpoints() -> None:
    """readplan.testing's resume assertion, applied to a plan walked record by record."""
    info = DatasetInfo(name="d", splits={"train": [5, 0, 7, 3, 6]})
    plan = ReadPlan(
        info,
        "train[2:]",
        ReadConfig(
            interleave_cycle_length=3, interleave_block_length=2, shuffle_files=True, shuffle_seed=5
        ),
    )

    class Walker:
        def __init__(self, state: Checkpoint | None) -> None:
            self.checkpoint = state or plan.checkpoint(1, 0)
            self.position = self.checkpoint.position

        def __iter__(self):  # type: ignore[no-untyped-def]
            for pair in pairs(plan.resume(self.checkpoint)):
                self.position += 1
                yield pair

        def state(self) -> Checkpoint:
            return plan.checkpoint(1, self.position)

    assert_resumes_exactly(Walker, Walker.state)


@pytest.fixture(scope="module")
def imagenet_plan() -> ReadPlan:
    info = DatasetInfo(name="imagenet2012", splits={"train": shard_lengths(1281167, 1024)})
    return ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))


def test_imagenet_resume_at_random_positions(imagenet_plan: ReadPlan) -> None:
    full = imagenet_plan.epoch(2)
    rng = np.random.default_rng(11)
    for position in [0, 1, 255, 256, 1281166, 1281167, *rng.integers(0, 1281167, 8).tolist()]:
        checkpoint = imagenet_plan.checkpoint(2, position)
        rest = imagenet_plan.resume(Checkpoint.from_json(checkpoint.to_json()))
        assert np.array_equal(rest.file_index, full.file_index[position:])
        assert np.array_equal(rest.record_index, full.record_index[position:])


def test_imagenet_checkpoint_is_small(imagenet_plan: ReadPlan) -> None:
    checkpoint = imagenet_plan.checkpoint(0, 640_000)
    assert len(checkpoint.to_json()) < 4096
    document = json.loads(checkpoint.expanded().to_json())
    assert len(document["state"]["interleave"]["slots"]) == 16
    assert len(document["state"]["files"]) == 1024
    assert Checkpoint.from_dict(document) == checkpoint


# -- example-level shuffle buffer ---------------------------------------------------------


@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=6).filter(sum),
    st.integers(1, 12),
    st.integers(0, 2**32),
    st.integers(1, 4),
    st.integers(0, 3),
)
@example([5, 7, 3], 4, 9, 2, 1)
def test_example_shuffle_resume_at_every_position(
    lengths: list[int], buffer: int, seed: int, cycle: int, epoch: int
) -> None:
    info = DatasetInfo(name="d", splits={"train": lengths})
    plan = ReadPlan(
        info,
        "train",
        ReadConfig(interleave_cycle_length=cycle, example_shuffle=ExampleShuffle(buffer, seed)),
    )
    full = pairs(plan.epoch(epoch))
    for position in range(len(full) + 1):
        checkpoint = Checkpoint.from_json(plan.checkpoint(epoch, position).to_json())
        assert checkpoint.example_buffer is not None
        assert checkpoint.example_buffer.draws == position
        assert pairs(plan.resume(checkpoint)) == full[position:]
        unread = plan.remaining_instructions(checkpoint)
        covered = sorted((fi.shard_index, fi.skip + k) for fi in unread for k in range(fi.take))
        assert covered == sorted((plan.instructions[f].shard_index, r) for f, r in full[position:])


@pytest.fixture
def shuffled_plan() -> ReadPlan:
    return checkpoint_plans.shuffled_plan()


def test_iter_from_checks_its_arguments_at_once(shuffled_plan: ReadPlan) -> None:
    checkpoint = shuffled_plan.checkpoint(2, 5)
    with pytest.raises(ConfigError):
        shuffled_plan.iter_from(checkpoint, chunk_size=0)
    assert list(shuffled_plan.iter_from(checkpoint, stop_epoch=1)) == []
    assert list(shuffled_plan.iter_from(checkpoint, stop_epoch=2)) == []
    rest = [len(c) for c in shuffled_plan.iter_from(checkpoint, stop_epoch=3, chunk_size=4)]
    assert sum(rest) == shuffled_plan.num_examples - 5
    assert all(size == 4 for size in rest[:-1])
