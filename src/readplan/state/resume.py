"""Building a checkpoint from an epoch schedule, expanding and verifying one, and the rest.

``specs/checkpoint.md`` is normative.  A compact checkpoint is built in constant time (an
example-level shuffle buffer is simulated, linear in the position because its contents
depend on every earlier draw, in memory bounded by the buffer).  Its expanded state comes
from the interleave's closed-form schedule
(:meth:`readplan.planning.interleave.InterleaveSchedule.state_at`) with vectorised work
over the files.  Verifying compares the plan summaries and checks
every field that resuming relies on; nothing here loops over files in Python except
building the expanded, self-describing form on request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from readplan._internal.arrays import IntArray
from readplan._internal.validate import check_int, preview
from readplan.errors import CheckpointError, ConfigError
from readplan.planning.instructions import FileInstruction
from readplan.planning.schedule import EpochSchedule
from readplan.planning.shuffle import buffer_shuffle, buffer_state
from readplan.state.bridge import continuation, never_empty, unread
from readplan.state.checkpoint import Checkpoint, ExpandedCheckpoint, Expander
from readplan.state.codec import state_sections
from readplan.state.fingerprint import check_compatible, digest

__all__ = [
    "build",
    "compare",
    "expand",
    "held_files",
    "plan_instructions",
    "rest",
    "upgrade_v1",
    "verify",
]


# The expanded fields a verified checkpoint must share with the state its position implies.
_STATE_FIELDS = {
    "interleave_position": "state.interleave.position",
    "cursor": "state.interleave.cursor",
    "block_counter": "state.interleave.block_counter",
    "next_input": "state.interleave.next_input",
    "inputs_done": "state.interleave.inputs_done",
    "slots": "state.interleave.slots",
    "files": "state.files",
    "fingerprint": "state.plan",
}


def build(
    summary: Mapping[str, Any],
    epoch: int,
    position: int,
    *,
    num_examples: int,
    source: Expander,
    schedule: EpochSchedule | None = None,
) -> Checkpoint:
    """The compact state after ``position`` records of epoch ``epoch`` were delivered.

    Constant time: nothing but the position is needed, except with an example-level
    shuffle, whose buffer is simulated from ``schedule`` (the epoch's, given exactly then):
    time linear in the position, memory bounded by the buffer.
    """
    position = _position(position, num_examples)
    buffer = None
    if schedule is not None:
        assert schedule.example_pair is not None
        assert schedule.buffer_size is not None
        buffer = buffer_state(
            num_examples, schedule.buffer_size, schedule.example_pair, count=position
        )
    return Checkpoint(
        plan=summary,
        epoch=epoch,
        position=position,
        num_examples=num_examples,
        example_buffer=buffer,
        source=source,
    )


def _position(position: object, num_examples: int) -> int:
    return check_int(
        position,
        "position",
        minimum=0,
        maximum=num_examples,
        what=f"a position of an epoch of {num_examples} records (its end included)",
    )


def expand(
    fields: Mapping[str, Any], schedule: EpochSchedule, checkpoint: Checkpoint
) -> ExpandedCheckpoint:
    """The expanded state of a verified ``checkpoint``: slots, per-file progress, plan."""
    state = schedule.interleave.state_at(checkpoint.interleave_position)
    files = schedule.files
    consumed = np.asarray(state.consumed, dtype=np.int64)
    remaining = schedule.interleave.lengths - consumed
    table = np.stack([files, consumed, remaining], axis=1).tolist()
    file_ids = files.tolist()
    return ExpandedCheckpoint(
        checkpoint=checkpoint,
        fingerprint=fields,
        interleave_position=checkpoint.interleave_position,
        cursor=state.cursor,
        block_counter=state.block_counter,
        next_input=state.next_input,
        inputs_done=state.inputs_done,
        slots=tuple(
            None
            if slot.input_index is None
            else (
                file_ids[slot.input_index],
                int(schedule.skips[file_ids[slot.input_index]]) + slot.consumed,
            )
            for slot in state.slots
        ),
        files=tuple((f, c, r) for f, c, r in table),
    )


def held_files(schedule: EpochSchedule, checkpoint: Checkpoint) -> list[int]:
    """The file indices the interleave holds in its slots at ``checkpoint``, sorted: the
    files a reader is in the middle of (``O(files)`` vectorised work, no per-file Python)."""
    state = schedule.interleave.state_at(checkpoint.interleave_position)
    return sorted(
        int(schedule.files[slot.input_index])
        for slot in state.slots
        if slot.input_index is not None
    )


def verify(
    summary: Mapping[str, Any],
    checkpoint: Checkpoint,
    *,
    num_examples: int,
    buffer_size: int | None,
) -> Checkpoint:
    """Refuse a checkpoint of another plan or dataset, or one the plan does not allow.

    ``summary`` is the current plan's compact fingerprint, ``num_examples`` its records per
    epoch and ``buffer_size`` its example shuffle's (``None`` without one).  The summaries
    must match (``CheckpointMismatchError`` listing every differing field); the record
    count, the position and the example buffer must be what the plan allows
    (``CheckpointError`` naming the field).  Constant time: no schedule is needed.  A
    checkpoint that carries an expanded state is then compared with :func:`compare`.
    """
    if not isinstance(checkpoint, Checkpoint):
        raise ConfigError(
            f"expected a readplan Checkpoint, got {type(checkpoint).__name__}",
            field="checkpoint",
            value=checkpoint,
        )
    check_compatible(checkpoint.plan, summary)
    if checkpoint.num_examples != num_examples:
        raise CheckpointError(
            f"checkpoint field 'num_examples' is {checkpoint.num_examples}, but the plan reads "
            f"{num_examples} records per epoch: the checkpoint was edited or damaged",
            field="num_examples",
        )
    _check_buffer(checkpoint, num_examples, buffer_size)
    return checkpoint


def _check_buffer(checkpoint: Checkpoint, num_examples: int, buffer_size: int | None) -> None:
    buffer = checkpoint.example_buffer
    has_shuffle = buffer_size is not None
    if (buffer is None) == has_shuffle:
        raise CheckpointError(
            "example_buffer is "
            + ("missing" if buffer is None else "present")
            + " but the plan "
            + ("has" if has_shuffle else "has no")
            + " example-level shuffle: the checkpoint was edited or damaged",
            field="example_buffer",
        )
    if buffer is None or buffer_size is None:
        return
    expected = _consumed_after(buffer.draws, buffer_size, num_examples)
    if buffer.consumed != expected:
        raise CheckpointError(
            f"example_buffer.consumed is {buffer.consumed}, but a buffer of {buffer_size} "
            f"over {num_examples} records has pulled {expected} after {buffer.draws} draws: "
            "the checkpoint was edited or damaged",
            field="example_buffer.consumed",
        )


def _consumed_after(draws: int, buffer_size: int, num_examples: int) -> int:
    """Records tf.data's shuffle buffer has pulled after ``draws`` outputs (specs/shuffle.md)."""
    if draws == 0:
        return 0
    return min(num_examples, buffer_size + draws - 1)


def compare(stored: ExpandedCheckpoint, implied: ExpandedCheckpoint) -> None:
    """Refuse an expanded state that differs from the one the plan implies, naming the field."""
    for name, field in _STATE_FIELDS.items():
        found, wanted = getattr(stored, name), getattr(implied, name)
        if found != wanted:
            raise CheckpointError(
                f"checkpoint field {field!r} is {_short(found)}, but position "
                f"{stored.position} of epoch {stored.epoch} of this plan implies "
                f"{_short(wanted)}: the checkpoint was edited or damaged",
                field=field,
            )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:117]}..."


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
    state: ExpandedCheckpoint,
    *,
    exact: bool,
) -> list[FileInstruction]:
    """The remaining records of a verified checkpoint as FileInstructions with the plan's
    paths: the exact tf.data continuation (``exact``) or TFDS's recipe, where records
    waiting in an example shuffle buffer come first, one instruction each
    (``specs/checkpoint.md`` §6)."""
    if exact:
        return [_planned(instructions, *triple) for triple in continuation(state)]
    out = []
    if state.example_buffer is not None:
        for ordinal in state.example_buffer.buffer:
            input_index, within = schedule.interleave.locate(ordinal)
            file_index = int(schedule.files[input_index])
            skip = int(schedule.skips[file_index]) + within
            out.append(_planned(instructions, file_index, skip, 1))
    tails = unread(state)
    triples = tails if out else never_empty(state, tails)
    return out + [_planned(instructions, *triple) for triple in triples]


def _planned(
    instructions: Sequence[FileInstruction], file_index: int, skip: int, take: int
) -> FileInstruction:
    return replace(instructions[file_index], skip=int(skip), take=take)


# -- format version 1 ----------------------------------------------------------------------


class _Planner(Expander, Protocol):
    def checkpoint(self, epoch: int, position: int) -> Checkpoint: ...


def upgrade_v1(
    document: Mapping[str, Any], fields: Mapping[str, Any], plan: _Planner, num_files: int
) -> Checkpoint:
    """The version 2 checkpoint of a version 1 ``document``, verified against ``plan``.

    ``fields`` is the plan's expanded fingerprint and ``num_files`` the number of files
    its interleave reads.  The version 1 plan section and every
    state field (the example buffer included) must be exactly what this plan computes: a
    version 1 document carries no dataset config or version, so only a plan that agrees
    with every field it does carry may adopt it.  Linear in the position with an example
    shuffle (the buffer is simulated once to compare).
    """
    if not isinstance(document, Mapping) or document.get("version") != 1:
        raise CheckpointError("not a version 1 checkpoint document", field="version")
    saved_plan = document.get("plan")
    if not isinstance(saved_plan, Mapping) or digest(saved_plan) != document.get("plan_digest"):
        raise CheckpointError(
            "plan_digest does not match the version 1 plan section: the checkpoint was edited "
            "or damaged",
            field="plan_digest",
        )
    document = _v1_capped(document, num_files)
    check_compatible(document["plan"], _v1_fields(fields))
    candidate = plan.checkpoint(_v1_count(document, "epoch"), _v1_count(document, "position"))
    implied = plan.expand(candidate)
    buffer = candidate.example_buffer
    wanted = {
        "num_examples": candidate.num_examples,
        **state_sections(implied),
        "example_buffer": None
        if buffer is None
        else {"buffer": list(buffer.buffer), "consumed": buffer.consumed, "draws": buffer.draws},
    }
    if "inputs_done" not in document["interleave"]:
        del wanted["interleave"]["inputs_done"]
    for name, value in wanted.items():
        if document.get(name) != value:
            raise CheckpointError(
                f"version 1 field {name!r} is not what position {candidate.position} of epoch "
                f"{candidate.epoch} of this plan implies: the checkpoint was edited or "
                "damaged, or belongs to another plan",
                field=name,
            )
    return candidate


def _v1_capped(document: Mapping[str, Any], num_files: int) -> dict[str, Any]:
    """A version 1 document written with more interleave slots than files, in today's terms.

    Version 1 kept every slot of the configured cycle; slots beyond the number of files
    never hold one, so the plan now caps the cycle there (``specs/order.md``).  The state
    machines agree except for the cursor parked on the first dead slot (now slot 0) and for
    when a request for a new file first fails, which only the dead slots made earlier and
    which changes no record's order: that one flag is not compared.
    """
    out = dict(document)
    plan = document["plan"]
    interleave = document.get("interleave")
    cycle = plan.get("cycle_length") if isinstance(plan, Mapping) else None
    if not (isinstance(cycle, int) and cycle > num_files and isinstance(interleave, Mapping)):
        return out
    slots = interleave.get("slots")
    if not isinstance(slots, list) or any(slot is not None for slot in slots[num_files:]):
        raise CheckpointError(
            "version 1 field 'interleave.slots' holds a file beyond the plan's files: the "
            "checkpoint was edited or damaged",
            field="interleave.slots",
        )
    cursor = interleave.get("cursor")
    out["plan"] = dict(plan) | {"cycle_length": num_files}
    out["interleave"] = {k: v for k, v in interleave.items() if k != "inputs_done"} | {
        "slots": slots[:num_files],
        "cursor": cursor % num_files if isinstance(cursor, int) else cursor,
    }
    return out


def _v1_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The version 1 plan section this plan would have written."""
    out = {key: value for key, value in fields.items() if key not in ("config", "version")}
    out["shard_lengths"] = {
        name: entry["lengths"] for name, entry in fields["shard_lengths"].items()
    }
    out["format_version"] = 1
    return out


def _v1_count(document: Mapping[str, Any], name: str) -> int:
    value = document.get(name)
    if not (isinstance(value, int) and not isinstance(value, bool)) or value < 0:
        raise CheckpointError(
            f"version 1 field {name!r} must be a non-negative integer, got {preview(value)}",
            field=name,
        )
    return value
