"""Building a checkpoint from an epoch schedule, verifying one, and the rest of its epoch.

``specs/checkpoint.md`` is normative.  A checkpoint is built from ``(epoch, position)``
in time independent of the position: the interleave's state comes from its closed-form
schedule (:meth:`readplan.planning.interleave.InterleaveSchedule.state_at`).  Only an
example-level shuffle buffer needs a simulation, linear in the position, because its
contents depend on every earlier draw.  Everything here works from the public
:class:`~readplan.planning.schedule.EpochSchedule` value and the plan's fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.errors import CheckpointError
from readplan.planning.instructions import FileInstruction
from readplan.planning.schedule import EpochSchedule
from readplan.planning.shuffle import ShuffleBufferState, buffer_shuffle
from readplan.state.bridge import continuation, unread
from readplan.state.checkpoint import Checkpoint
from readplan.state.fingerprint import check_compatible

__all__ = ["build", "plan_instructions", "rest", "verify"]

IntArray = npt.NDArray[np.int64]

# The fields a verified checkpoint must share with the one its position implies.
_STATE_FIELDS = {
    "num_examples": "num_examples",
    "interleave_position": "interleave.position",
    "cursor": "interleave.cursor",
    "block_counter": "interleave.block_counter",
    "next_input": "interleave.next_input",
    "inputs_done": "interleave.inputs_done",
    "slots": "interleave.slots",
    "files": "files",
}


def build(fields: Mapping[str, Any], schedule: EpochSchedule, position: int) -> Checkpoint:
    """The state after ``position`` records of ``schedule``'s epoch were delivered."""
    schedule.check_position(position, allow_end=True)
    buffer = None
    interleaved = position
    if schedule.example_pair is not None:
        assert schedule.buffer_size is not None  # EpochSchedule holds both or neither
        _, buffer = buffer_shuffle(
            schedule.num_examples, schedule.buffer_size, schedule.example_pair, count=position
        )
        interleaved = buffer.consumed
    return _from_state(fields, schedule, position, interleaved, buffer)


def _from_state(
    fields: Mapping[str, Any],
    schedule: EpochSchedule,
    position: int,
    interleaved: int,
    buffer: ShuffleBufferState | None,
) -> Checkpoint:
    state = schedule.interleave.state_at(interleaved)
    file_ids = schedule.files.tolist()
    skips = schedule.skips
    lengths = schedule.interleave.lengths.tolist()
    return Checkpoint(
        fingerprint=fields,
        epoch=schedule.epoch,
        position=position,
        num_examples=schedule.num_examples,
        interleave_position=interleaved,
        cursor=state.cursor,
        block_counter=state.block_counter,
        next_input=state.next_input,
        inputs_done=state.inputs_done,
        slots=tuple(
            None
            if slot.input_index is None
            else (
                file_ids[slot.input_index],
                int(skips[file_ids[slot.input_index]]) + slot.consumed,
            )
            for slot in state.slots
        ),
        files=tuple(
            (file_ids[k], consumed, lengths[k] - consumed)
            for k, consumed in enumerate(state.consumed)
        ),
        example_buffer=buffer,
    )


def verify(
    fields: Mapping[str, Any], schedule: EpochSchedule, checkpoint: Checkpoint
) -> Checkpoint:
    """Refuse a checkpoint of another plan, or one whose state its position does not imply.

    ``fields`` is the current plan's fingerprint and ``schedule`` its schedule of the
    checkpoint's epoch.  The fingerprint must match (``CheckpointMismatchError``), and
    the interleave state and per-file progress must equal what the plan computes for the
    checkpoint's position (``CheckpointError`` naming the field).  An example buffer's
    contents are checked for consistency, not replayed, so verifying costs the same at
    every position.
    """
    check_compatible(checkpoint.fingerprint, fields)
    has_shuffle = schedule.example_pair is not None
    if (checkpoint.example_buffer is None) == has_shuffle:
        raise CheckpointError(
            "example_buffer is "
            + ("missing" if checkpoint.example_buffer is None else "present")
            + " but the plan "
            + ("has" if has_shuffle else "has no")
            + " example-level shuffle: the checkpoint was edited or damaged",
            field="example_buffer",
        )
    buffer = checkpoint.example_buffer
    if buffer is None:
        expected = build(checkpoint.fingerprint, schedule, checkpoint.position)
    else:
        schedule.check_position(checkpoint.position, allow_end=True)
        _check_buffer_fits(schedule, buffer)
        expected = _from_state(
            checkpoint.fingerprint, schedule, checkpoint.position, buffer.consumed, buffer
        )
    for name, field in _STATE_FIELDS.items():
        found, implied = getattr(checkpoint, name), getattr(expected, name)
        if found != implied:
            raise CheckpointError(
                f"checkpoint field {name!r} is {found!r}, but position "
                f"{checkpoint.position} of epoch {checkpoint.epoch} of this plan implies "
                f"{implied!r}: the checkpoint was edited or damaged",
                field=field,
            )
    return expected


def _check_buffer_fits(schedule: EpochSchedule, buffer: ShuffleBufferState) -> None:
    """Invariant 5: after ``draws`` outputs the buffer has pulled exactly
    ``min(num_examples, buffer_size + draws - 1)`` records (none before the first draw)."""
    assert schedule.buffer_size is not None
    draws = buffer.draws
    pulled = 0 if draws == 0 else min(schedule.num_examples, schedule.buffer_size + draws - 1)
    if buffer.consumed != pulled:
        raise CheckpointError(
            f"example_buffer.consumed is {buffer.consumed}, but a buffer of "
            f"{schedule.buffer_size} over {schedule.num_examples} records has pulled {pulled} "
            f"after {draws} outputs: the checkpoint was edited or damaged",
            field="example_buffer.consumed",
        )


def rest(schedule: EpochSchedule, checkpoint: Checkpoint) -> tuple[IntArray, IntArray]:
    """Interleave ``(inputs, within)`` of the rest of a verified checkpoint's epoch."""
    buffer = checkpoint.example_buffer
    if buffer is None:
        size = max(1, schedule.num_examples - checkpoint.position)
        chunks = list(schedule.interleave.iter_chunks(start=checkpoint.position, chunk_size=size))
        if not chunks:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])
    assert schedule.example_pair is not None
    assert schedule.buffer_size is not None
    order, _ = buffer_shuffle(
        schedule.num_examples, schedule.buffer_size, schedule.example_pair, state=buffer
    )
    inputs, within = schedule.interleave.order()
    return inputs[order], within[order]


def plan_instructions(
    instructions: Sequence[FileInstruction],
    schedule: EpochSchedule,
    checkpoint: Checkpoint,
    *,
    exact: bool,
) -> list[FileInstruction]:
    """The remaining records of a verified checkpoint as FileInstructions with the plan's
    paths: the exact tf.data continuation (``exact``) or TFDS's recipe, where records
    waiting in an example shuffle buffer come first, one instruction each
    (``specs/checkpoint.md`` §6)."""
    if exact:
        return [_planned(instructions, *triple) for triple in continuation(checkpoint)]
    out = []
    if checkpoint.example_buffer is not None:
        for ordinal in checkpoint.example_buffer.buffer:
            input_index, within = schedule.interleave.locate(ordinal)
            file_index = int(schedule.files[input_index])
            skip = int(schedule.skips[file_index]) + within
            out.append(_planned(instructions, file_index, skip, 1))
    return out + [_planned(instructions, *triple) for triple in unread(checkpoint)]


def _planned(
    instructions: Sequence[FileInstruction], file_index: int, skip: int, take: int
) -> FileInstruction:
    return replace(instructions[file_index], skip=int(skip), take=take)
