"""Read configuration values: flags are bools, integers are int64, absurd inputs stay cheap.

``specs/order.md`` ("Read configuration") is the normative text.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan import (
    DatasetInfo,
    ExampleShuffle,
    InputContext,
    ReadConfig,
    ReadPlan,
    split_for_process,
)
from readplan.errors import ConfigError, DatasetInfoError, ReadplanError
from readplan.testing import plans
from tests.reference_models import reference_interleave
from tests.tfds_toy import TOY_DIR, TOY_INFO

INT64_MAX = (1 << 63) - 1

not_bools = st.one_of(
    st.integers(),
    st.text(max_size=3),
    st.floats(allow_nan=False),
    st.lists(st.booleans(), max_size=2),
    st.sampled_from([np.int64(0), np.int8(1), np.float64(1.0)]),
)


# -- item 5: flags are bools -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["shuffle_files", "shuffle_reshuffle_each_iteration", "enable_ordering_guard"]
)
@given(value=not_bools)
def test_read_config_flags_refuse_non_bools(name: str, value: Any) -> None:
    arguments: dict[str, Any] = {name: value, "shuffle_seed": 1}
    with pytest.raises(ConfigError) as raised:
        ReadConfig(**arguments)
    assert raised.value.field == name
    assert isinstance(raised.value, TypeError)


@given(value=not_bools)
def test_example_shuffle_flag_refuses_non_bools(value: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        ExampleShuffle(4, 1, reshuffle_each_iteration=value)
    assert raised.value.field == "example_shuffle.reshuffle_each_iteration"


def test_zero_reshuffle_flag_is_not_read_as_true() -> None:
    with pytest.raises(ConfigError, match="True or False"):
        ReadConfig(shuffle_files=True, shuffle_seed=1, shuffle_reshuffle_each_iteration=0)


def test_numpy_values_are_normalised() -> None:
    config = ReadConfig(
        interleave_cycle_length=np.int64(3),
        interleave_block_length=np.uint8(2),
        shuffle_files=np.True_,
        shuffle_seed=np.int32(-4),
        shuffle_reshuffle_each_iteration=np.False_,
        global_seed=np.int64(9),
        example_shuffle=ExampleShuffle(np.int64(5), np.int16(2), np.True_),
        input_context=InputContext(np.int64(1), np.int64(2)),
    )
    values = [
        config.interleave_cycle_length,
        config.interleave_block_length,
        config.shuffle_seed,
        config.global_seed,
        config.example_shuffle.buffer_size if config.example_shuffle else None,
        config.example_shuffle.seed if config.example_shuffle else None,
        config.input_context.input_pipeline_id if config.input_context else None,
    ]
    assert [type(v) for v in values] == [int] * len(values)
    flags = [
        config.shuffle_files,
        config.shuffle_reshuffle_each_iteration,
        config.example_shuffle.reshuffle_each_iteration if config.example_shuffle else None,
    ]
    assert [type(v) for v in flags] == [bool] * 3
    assert config == ReadConfig(
        interleave_cycle_length=3,
        interleave_block_length=2,
        shuffle_files=True,
        shuffle_seed=-4,
        shuffle_reshuffle_each_iteration=False,
        global_seed=9,
        example_shuffle=ExampleShuffle(5, 2, True),
        input_context=InputContext(1, 2),
    )


# -- item 6: None is not TFDS's default ------------------------------------------------------


def test_cycle_length_none_is_refused_with_autotune_explained() -> None:
    with pytest.raises(ConfigError) as raised:
        ReadConfig(interleave_cycle_length=None)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "AUTOTUNE" in message
    assert "16" in message
    assert raised.value.field == "interleave_cycle_length"


def test_an_unset_cycle_length_is_tfds_default(tmp_path: Path) -> None:
    info = TOY_INFO
    assert ReadPlan(info, "train").cycle_length == len(info.split("train").shard_lengths)
    assert ReadPlan(info, "train", ReadConfig()).config == ReadConfig()
    wide = DatasetInfo("wide", {"train": [1] * 40})
    assert ReadPlan(wide, "train").cycle_length == 16
    # An ordered dataset (disable_shuffling) reads with cycle 1 when none is given, as in TFDS.
    ordered = DatasetInfo("ordered", {"train": [2] * 40}, disable_shuffling=True)
    assert ReadPlan(ordered, "train").cycle_length == 1
    with pytest.raises(ConfigError, match="interleave_cycle_length"):
        ReadPlan(ordered, "train", ReadConfig(interleave_cycle_length=16))


# -- items 12, 13: integers are int64 --------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"interleave_cycle_length": 1 << 63},
        {"interleave_block_length": 1 << 63},
    ],
)
def test_integers_beyond_int64_are_refused(arguments: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        ReadConfig(**arguments)
    assert raised.value.field in arguments


def test_example_shuffle_integers_are_int64_but_seeds_of_any_size() -> None:
    with pytest.raises(ConfigError):
        ExampleShuffle(1 << 63, 1)
    # Seeds are folded by TF whatever their size (specs/shuffle.md §1).
    assert ExampleShuffle(4, 1 << 64).seed == 1 << 64
    config = ReadConfig(shuffle_seed=1 << 63, shuffle_files=True, global_seed=-(1 << 63) - 1)
    assert (config.shuffle_seed, config.global_seed) == (1 << 63, -(1 << 63) - 1)


@pytest.mark.parametrize("length", ["9" * 5000, str(1 << 63), 1 << 63, -1])
def test_shard_lengths_beyond_int64_are_a_dataset_info_error(tmp_path: Path, length: Any) -> None:
    target = tmp_path / "toy"
    shutil.copytree(TOY_DIR, target)
    path = target / "dataset_info.json"
    document = json.loads(path.read_text())
    document["splits"][0]["shardLengths"][1] = length
    path.write_text(json.dumps(document))
    with pytest.raises(DatasetInfoError) as raised:
        DatasetInfo.load(target)
    assert "shardLengths" in str(raised.value)


def test_epochs_and_positions_beyond_int64_are_config_errors() -> None:
    plan = ReadPlan(TOY_INFO, "train")
    for call in (
        lambda: plan.checkpoint(1 << 63, 0),
        lambda: plan.checkpoint(0, 1 << 64),
        lambda: plan.locate(1 << 70, 0),
    ):
        with pytest.raises(ReadplanError):
            call()


# -- item 14: absurd inputs stay cheap -------------------------------------------------------


def test_a_huge_cycle_length_reads_like_one_slot_per_file() -> None:
    info = DatasetInfo("five", {"train": [3, 1, 4, 1, 5]})
    huge = ReadPlan(info, "train", ReadConfig(interleave_cycle_length=10**8))
    exact = ReadPlan(info, "train", ReadConfig(interleave_cycle_length=5))
    assert huge.cycle_length == 5
    assert huge.epoch(0).file_index.tolist() == exact.epoch(0).file_index.tolist()
    state = huge.checkpoint(0, 6).expanded()
    assert len(state.slots) == 5
    assert len(huge.checkpoint(0, 6).to_json()) < 4096


def test_split_for_process_computes_its_one_piece() -> None:
    info = DatasetInfo("big", {"train": [10, 10]})
    assert split_for_process("train", 0, 1 << 62, info=info) == "train[0:1]"
    assert split_for_process("train", (1 << 62) - 1, 1 << 62, info=info) == "train[20:20]"
    lazy = split_for_process("train", 3, INT64_MAX)
    assert ReadPlan(DatasetInfo("big", {"train": [1 << 61, 1 << 61]}), lazy).num_examples == 1


@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=7),
    st.integers(1, 4),
    st.integers(0, 20),
)
def test_slots_beyond_the_files_change_no_order(lengths: list[int], block: int, extra: int) -> None:
    """The reference state machine, stepped with more slots than inputs, yields the order of
    one slot per input: capping the cycle at the number of files is exact."""
    wide = reference_interleave(lengths, len(lengths) + extra, block)
    assert wide == reference_interleave(lengths, len(lengths), block)


@given(plans(), st.integers(0, 3), st.data())
def test_a_checkpoint_is_the_same_size_whatever_the_position(
    plan: ReadPlan, epoch: int, data: st.DataObject
) -> None:
    """Compact: the summary is the expanded fingerprint summarised, and the document does
    not grow with the position or the files (only an example buffer adds entries)."""
    from readplan.state.fingerprint import expanded_disagreement

    assert expanded_disagreement(plan.summary, plan.fingerprint) is None
    position = data.draw(st.integers(0, plan.num_examples))
    checkpoint = plan.checkpoint(epoch, position)
    buffer = checkpoint.example_buffer
    entries = 0 if buffer is None else len(buffer.buffer)
    assert len(checkpoint.to_json()) < 1500 + 21 * entries
