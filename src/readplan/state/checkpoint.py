"""The checkpoint value: the complete read state at one position, and its invariants.

``specs/checkpoint.md`` is the normative description (state, invariants, JSON format,
fingerprint, and the bridge back to TFDS).  Building a checkpoint from a plan, verifying
one and resuming from it live in :mod:`readplan.state.resume`; the JSON document in
:mod:`readplan.state.codec`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from readplan._internal.atomic import atomic_write
from readplan.errors import CheckpointError
from readplan.planning.instructions import FileInstruction
from readplan.planning.shuffle import ShuffleBufferState
from readplan.state.bridge import continuation, saved_instructions, unread
from readplan.state.codec import fields_from_document, parse_json, to_document

__all__ = ["Checkpoint"]


@dataclass(frozen=True)
class Checkpoint:
    """The read state after ``position`` records of epoch ``epoch`` were delivered.

    Attributes:
        fingerprint: what identifies the plan (dataset, shard lengths, split string, file
            instructions, read configuration, format version); see :func:`fingerprint`.
        epoch, position: where the reader stands; ``position == num_examples`` is the end
            of the epoch.
        num_examples: records per epoch of the plan.
        interleave_position: records the interleave has produced; differs from
            ``position`` only with an example-level shuffle (the buffer holds the rest).
        cursor, block_counter, next_input, inputs_done: the interleave's state machine.
        slots: per interleave slot, ``(file_index, next record index in that file)`` or
            ``None`` for an empty slot.
        files: per file in this epoch's input order, ``(file_index, consumed, remaining)``
            where ``consumed`` counts records read from the file.
        example_buffer: the example shuffle buffer's state, or ``None``.
    """

    fingerprint: Mapping[str, Any]
    epoch: int
    position: int
    num_examples: int
    interleave_position: int
    cursor: int
    block_counter: int
    next_input: int
    inputs_done: bool
    slots: tuple[tuple[int, int] | None, ...]
    files: tuple[tuple[int, int, int], ...]
    example_buffer: ShuffleBufferState | None = None

    def __post_init__(self) -> None:
        _validate(self)

    # -- serialisation --------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The versioned JSON document (``specs/checkpoint.schema.json``)."""
        return to_document(self)

    def to_json(self, *, indent: int | None = None) -> str:
        separators = (",", ":") if indent is None else None
        return json.dumps(self.to_dict(), indent=indent, separators=separators)

    @classmethod
    def from_json(cls, text: str | bytes) -> Checkpoint:
        """Parse and validate a checkpoint; every problem names the field at fault."""
        return cls.from_dict(parse_json(text))

    @classmethod
    def from_dict(cls, document: Any) -> Checkpoint:
        return cls(**fields_from_document(document))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: a killed job leaves the old checkpoint or the new, never half."""
        atomic_write(path, self.to_json().encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Checkpoint:
        data = Path(path).read_bytes()
        try:
            return cls.from_json(data)
        except CheckpointError as err:
            raise CheckpointError(f"{os.fspath(path)}: {err}", field=err.field) from err

    # -- views ----------------------------------------------------------------------

    @property
    def file_order(self) -> tuple[int, ...]:
        """Instruction indices in the order this epoch feeds them to the interleave."""
        return tuple(entry[0] for entry in self.files)

    def remaining_instructions(self, *, data_dir: str | None = None) -> list[FileInstruction]:
        """FileInstructions covering exactly the records not yet delivered in this epoch.

        TFDS's recipe: every file's unread tail, in this epoch's input order.  Read with
        ``cycle_length=1`` it continues the order exactly; with a larger cycle use
        :meth:`resume_instructions` (``specs/checkpoint.md`` §6).  File names are the
        planned base names, joined to ``data_dir`` when given
        (:meth:`readplan.ReadPlan.remaining_instructions` uses the plan's own paths).
        With an example-level shuffle the buffered records are only known to the plan:
        use :meth:`readplan.ReadPlan.remaining_instructions`.
        """
        if self.example_buffer is not None:
            raise CheckpointError(
                "this checkpoint holds an example shuffle buffer whose records are numbered "
                "by interleave position; call plan.remaining_instructions(checkpoint)",
                field="example_buffer",
            )
        return saved_instructions(self.fingerprint, unread(self), data_dir)

    def resume_instructions(self, *, data_dir: str | None = None) -> list[FileInstruction]:
        """FileInstructions that tf.data's interleave reads in exactly the remaining order.

        Feed them to TFDS through ``ReadConfig(experimental_interleave_sort_fn=lambda _:
        instructions, interleave_cycle_length=c, interleave_block_length=b)`` with
        ``shuffle_files=False`` and no ``input_context``.  File names as in
        :meth:`remaining_instructions` (:meth:`readplan.ReadPlan.resume_instructions`
        uses the plan's own paths).  See ``specs/checkpoint.md`` §6.
        """
        return saved_instructions(self.fingerprint, continuation(self), data_dir)


def _validate(checkpoint: Checkpoint) -> None:
    """Internal consistency that holds for every genuine checkpoint (ranges, sums)."""
    fields = checkpoint.fingerprint
    files = fields.get("files") if isinstance(fields, Mapping) else None
    if not isinstance(files, list):
        raise CheckpointError("plan.files must be a list of file instructions", field="plan.files")
    if checkpoint.position > checkpoint.num_examples:
        raise CheckpointError(
            f"position {checkpoint.position} is beyond the epoch's {checkpoint.num_examples} "
            "records",
            field="position",
        )
    if checkpoint.interleave_position > checkpoint.num_examples:
        raise CheckpointError(
            f"interleave.position {checkpoint.interleave_position} is beyond the epoch's "
            f"{checkpoint.num_examples} records",
            field="interleave.position",
        )
    for k, (file_index, _, _) in enumerate(checkpoint.files):
        if file_index >= len(files):
            raise CheckpointError(
                f"files[{k}] names file {file_index}, but the plan has {len(files)} files",
                field=f"files[{k}]",
            )
    for k, slot in enumerate(checkpoint.slots):
        if slot is not None and slot[0] >= len(files):
            raise CheckpointError(
                f"interleave.slots[{k}] names file {slot[0]}, but the plan has {len(files)} files",
                field=f"interleave.slots[{k}]",
            )
    if checkpoint.next_input > len(checkpoint.files):
        raise CheckpointError(
            f"interleave.next_input {checkpoint.next_input} is beyond the "
            f"{len(checkpoint.files)} files of the epoch",
            field="interleave.next_input",
        )
    buffer = checkpoint.example_buffer
    if buffer is not None and buffer.draws != checkpoint.position:
        raise CheckpointError(
            f"example_buffer.draws is {buffer.draws} but position is {checkpoint.position}: "
            "the buffer draws once per delivered record",
            field="example_buffer.draws",
        )
    if buffer is not None and buffer.consumed != checkpoint.interleave_position:
        raise CheckpointError(
            f"example_buffer.consumed is {buffer.consumed} but interleave.position is "
            f"{checkpoint.interleave_position}: the buffer holds what the interleave produced",
            field="example_buffer.consumed",
        )
    if sum(entry[1] for entry in checkpoint.files) != checkpoint.interleave_position:
        raise CheckpointError(
            "files[*].consumed do not add up to interleave.position: the checkpoint was "
            "edited or damaged",
            field="files",
        )
