"""A checkpoint resumes only the plan it was taken from: every differing field is listed.

``specs/checkpoint.md`` §4 (fingerprint and data binding).
"""

from __future__ import annotations

from typing import Any

import pytest

from readplan import ExampleShuffle, InputContext, ReadConfig, ReadPlan
from readplan.errors import CheckpointMismatchError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.state.fingerprint import digest
from tests import checkpoint_plans


@pytest.fixture
def small_plan() -> ReadPlan:
    return checkpoint_plans.small_plan()


@pytest.mark.parametrize(
    ("other", "fields"),
    [
        (
            lambda info: ReadPlan(info, "train[2:]+test", _cfg()),
            {"split", "files.digest", "files.records"},
        ),
        (lambda info: ReadPlan(info, "train[1:]+test", _cfg(shuffle_seed=7)), {"shuffle_seed"}),
        (
            lambda info: ReadPlan(info, "train[1:]+test", _cfg(interleave_cycle_length=3)),
            {"cycle_length"},
        ),
        (
            lambda info: ReadPlan(
                DatasetInfo(name="toy", splits={"train": [5, 8, 3], "test": [4]}),
                "train[1:]+test",
                _cfg(),
            ),
            {"shard_lengths.train.digest", "shard_lengths.train.examples", "files.digest"},
        ),
    ],
)
def test_checkpoint_from_another_plan_lists_every_difference(
    small_plan: ReadPlan, other: Any, fields: set[str]
) -> None:
    checkpoint = small_plan.checkpoint(0, 4)
    with pytest.raises(CheckpointMismatchError) as raised:
        other(small_plan.info).resume(checkpoint)
    assert fields <= set(raised.value.differences)
    for name in fields:
        assert name in str(raised.value)


def _cfg(**overrides: Any) -> ReadConfig:
    base: dict[str, Any] = {
        "interleave_cycle_length": 2,
        "interleave_block_length": 2,
        "shuffle_files": True,
        "shuffle_seed": 32,
    }
    base.update(overrides)
    return ReadConfig(**base)


def test_digest_is_order_independent() -> None:
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})


def test_input_context_plans_checkpoint_their_own_files() -> None:
    info = DatasetInfo(name="d", splits={"train": [3, 4, 5, 6]})
    plans_ = [
        ReadPlan(
            info, "train", ReadConfig(interleave_cycle_length=2, input_context=InputContext(i, 2))
        )
        for i in range(2)
    ]
    for plan in plans_:
        checkpoint = plan.checkpoint(0, 2).expanded()
        assert {entry[0] for entry in checkpoint.files} == set(plan.selected.tolist())
    with pytest.raises(CheckpointMismatchError, match="input_context"):
        plans_[1].resume(plans_[0].checkpoint(0, 2))


BASE_CONFIG: dict[str, Any] = {
    "interleave_cycle_length": 2,
    "interleave_block_length": 2,
    "shuffle_files": True,
    "shuffle_seed": 32,
    "example_shuffle": ExampleShuffle(4, 1),
}


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"interleave_block_length": 3}, {"block_length"}),
        ({"interleave_cycle_length": 3}, {"cycle_length"}),
        ({"shuffle_files": False, "shuffle_seed": None}, {"shuffle_files", "shuffle_seed"}),
        ({"shuffle_seed": 33}, {"shuffle_seed"}),
        ({"shuffle_reshuffle_each_iteration": False}, {"reshuffle_each_iteration"}),
        ({"global_seed": 5}, {"global_seed"}),
        ({"input_context": InputContext(0, 1)}, {"input_context"}),
        ({"example_shuffle": ExampleShuffle(4, 2)}, {"example_shuffle.seed"}),
        ({"example_shuffle": ExampleShuffle(5, 1)}, {"example_shuffle.buffer_size"}),
        ({"example_shuffle": ExampleShuffle(4, 1, reshuffle_each_iteration=False)},
         {"example_shuffle.reshuffle_each_iteration"}),
        ({"example_shuffle": None}, {"example_shuffle"}),
    ],
)  # fmt: skip
def test_every_fingerprint_field_is_checked(change: dict[str, Any], fields: set[str]) -> None:
    info = DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]})
    saved = ReadPlan(info, "train", ReadConfig(**BASE_CONFIG)).checkpoint(0, 3)
    other = ReadPlan(info, "train", ReadConfig(**{**BASE_CONFIG, **change}))
    with pytest.raises(CheckpointMismatchError) as raised:
        other.resume(saved)
    assert set(raised.value.differences) == fields


@pytest.mark.parametrize(
    ("info", "spec", "fields"),
    [
        (DatasetInfo(name="other", splits={"train": [5, 7, 3], "test": [4]}), "train",
         {"dataset"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 4], "test": [4]}), "train",
         {"shard_lengths.train.examples", "shard_lengths.train.digest", "files.digest",
          "files.records"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]}), "train[1:]",
         {"split", "files.digest", "files.records"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]}, version="2.0.0"),
         "train", {"version"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]}, config_name="x"),
         "train", {"config"}),
    ],
)  # fmt: skip
def test_dataset_and_split_changes_are_listed(
    info: DatasetInfo, spec: str, fields: set[str]
) -> None:
    base = DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]})
    saved = ReadPlan(base, "train", ReadConfig(**BASE_CONFIG)).checkpoint(0, 3)
    with pytest.raises(CheckpointMismatchError) as raised:
        ReadPlan(info, spec, ReadConfig(**BASE_CONFIG)).resume(saved)
    assert set(raised.value.differences) == fields
