"""Bridges back to TFDS: a checkpoint's instructions, read by tf.data, give the rest of its epoch.

``specs/checkpoint.md`` §6. tf.data's reading of instructions is the reference interleave
model; the TFDS vectors were read by TFDS 4.9.10 / TF 2.21 themselves.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan import ReadConfig, ReadPlan
from readplan.metadata.dataset_info import DatasetInfo
from readplan.testing import plans
from tests.checkpoint_plans import pairs
from tests.conftest import DATA
from tests.reference_models import reference_interleave
from tests.strategies import plain_configs
from tests.tfds_toy import TOY_INFO


def _tfdata_read(instructions: list[Any], cycle: int, block: int) -> list[tuple[str, int]]:
    """What tf.data's interleave yields for a list of instructions (reference model)."""
    order = reference_interleave([fi.take for fi in instructions], cycle, block)
    return [(instructions[i].filename, instructions[i].skip + j) for i, j in order]


@given(plans(configs=plain_configs), st.integers(0, 3), st.data())
@example(
    ReadPlan(
        DatasetInfo(name="d", splits={"train": [1, 4, 1, 5, 1]}),
        "train",
        ReadConfig(interleave_cycle_length=2, interleave_block_length=2),
    ),
    0,
    None,
)
def test_resume_instructions_reproduce_the_rest_through_tfdata(
    plan: ReadPlan, epoch: int, data: st.DataObject | None
) -> None:
    full = [(plan.instructions[f].filename, r) for f, r in pairs(plan.epoch(epoch))]
    positions = (
        range(len(full) + 1)
        if data is None
        else [data.draw(st.integers(0, len(full))) for _ in range(5)]
    )
    for position in positions:
        checkpoint = plan.checkpoint(epoch, position).expanded()
        bridge = checkpoint.resume_instructions()
        assert _tfdata_read(bridge, plan.cycle_length, plan.block_length) == full[position:]
        if plan.cycle_length == 1:
            plain = checkpoint.remaining_instructions()
            assert _tfdata_read(plain, 1, plan.block_length) == full[position:]


def test_remaining_instructions_cover_exactly_the_unread_records() -> None:
    info = DatasetInfo(name="d", splits={"train": [5, 7, 3, 4]})
    plan = ReadPlan(
        info, "train[3:]", ReadConfig(interleave_cycle_length=3, interleave_block_length=2)
    )
    full = pairs(plan.epoch(0))
    for position in range(len(full) + 1):
        unread = plan.checkpoint(0, position).expanded().remaining_instructions()
        covered = sorted((fi.shard_index, fi.skip + k) for fi in unread for k in range(fi.take))
        assert covered == sorted((plan.instructions[f].shard_index, r) for f, r in full[position:])


def test_epoch_instructions_reproduce_an_epoch_without_a_file_shuffle() -> None:
    info = DatasetInfo(name="d", splits={"train": [5, 7, 3, 4, 2]})
    config = ReadConfig(
        interleave_cycle_length=2, interleave_block_length=3, shuffle_files=True, shuffle_seed=3
    )
    plan = ReadPlan(info, "train", config)
    for epoch in range(4):
        listed = plan.epoch_instructions(epoch)
        expected = [(plan.instructions[f].filename, r) for f, r in pairs(plan.epoch(epoch))]
        assert _tfdata_read(listed, 2, 3) == expected


# TFDS 4.9.10 / TF 2.21 reading plan.resume_instructions(checkpoint) of the fixture through
# ReadConfig(experimental_interleave_sort_fn=...) with shuffle_files=False: the order it
# yields is the rest of the checkpoint's epoch.
BRIDGE_TF = json.loads((DATA / "vectors" / "resume_bridge_tf.json").read_text())


@pytest.mark.parametrize(
    "case",
    BRIDGE_TF,
    ids=[
        f"{c['spec']}-c{c['cycle_length']}b{c['block_length']}-p{c['position']}" for c in BRIDGE_TF
    ],
)
def test_tfds_reading_the_bridge_continues_the_epoch(case: dict[str, Any]) -> None:
    config = ReadConfig(
        interleave_cycle_length=case["cycle_length"],
        interleave_block_length=case["block_length"],
        shuffle_files=case["shuffle_files"],
        shuffle_seed=case["shuffle_seed"],
    )
    plan = ReadPlan(TOY_INFO, case["spec"], config)
    checkpoint = plan.checkpoint(case["epoch"], case["position"])
    assert plan.resume(checkpoint).tfds_ids() == case["tf_order"]
    bridge = plan.resume_instructions(checkpoint)
    ids = [
        f"{os.path.basename(filename)}__{record}"
        for filename, record in _tfdata_read(bridge, plan.cycle_length, plan.block_length)
    ]
    assert ids == case["tf_order"]
