"""The checkpoint values: the compact read state at one position, and its expanded form.

``specs/checkpoint.md`` is the normative description (state, invariants, JSON format,
fingerprint, data binding, and the bridge back to TFDS).  A :class:`Checkpoint` holds only
what the plan cannot derive: the epoch, the position and, with an example-level shuffle,
the buffer; the interleave's slots and per-file progress follow from the plan and the
position and are given on request by :meth:`Checkpoint.expanded` as an
:class:`ExpandedCheckpoint`.  Building, verifying and resuming live in
:mod:`readplan.state.resume`; the JSON documents in :mod:`readplan.state.codec`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from readplan._internal.validate import INT64_MAX, preview
from readplan.errors import CheckpointError
from readplan.planning.instructions import FileInstruction
from readplan.planning.shuffle import ShuffleBufferState
from readplan.state import codec
from readplan.state.bridge import continuation, never_empty, saved_instructions, unread
from readplan.state.fingerprint import digest
from readplan.state.limits import read_state_file
from readplan.storage import StorageOptions, to_str, write_bytes

__all__ = ["Checkpoint", "ExpandedCheckpoint", "Expander"]


class Expander(Protocol):
    """What can compute a checkpoint's expanded state: a :class:`readplan.ReadPlan`."""

    def expand(self, checkpoint: Checkpoint) -> ExpandedCheckpoint: ...


@dataclass(frozen=True)
class Checkpoint:
    """The read state after ``position`` records of epoch ``epoch`` were delivered.

    Attributes:
        plan: the plan's compact fingerprint (dataset, config, version, split string,
            shard and file summaries with digests, read configuration); see
            ``specs/checkpoint.md`` §4.
        epoch, position: where the reader stands; ``position == num_examples`` is the end
            of the epoch.
        num_examples: records per epoch of the plan.
        example_buffer: the example shuffle buffer's state, or ``None``.
    """

    plan: Mapping[str, Any]
    epoch: int
    position: int
    num_examples: int
    example_buffer: ShuffleBufferState | None = None
    # How the expanded state is obtained without a plan argument: the plan that built this
    # checkpoint, or the state an expanded document carried.  Not part of the value.
    source: Expander | ExpandedCheckpoint | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("epoch", "position", "num_examples"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool)) or not (
                0 <= value <= INT64_MAX
            ):
                raise CheckpointError(
                    f"checkpoint field {name!r} must be an integer in 0..{INT64_MAX}, got "
                    f"{preview(value)}",
                    field=name,
                )
        if self.position > self.num_examples:
            raise CheckpointError(
                f"position {self.position} is beyond the epoch's {self.num_examples} records",
                field="position",
            )
        buffer = self.example_buffer
        if buffer is not None and buffer.draws != self.position:
            raise CheckpointError(
                f"example_buffer.draws is {buffer.draws} but position is {self.position}: "
                "the buffer draws once per delivered record",
                field="example_buffer.draws",
            )
        if buffer is not None and buffer.consumed > self.num_examples:
            raise CheckpointError(
                f"example_buffer.consumed is {buffer.consumed}, beyond the epoch's "
                f"{self.num_examples} records",
                field="example_buffer.consumed",
            )

    @property
    def plan_digest(self) -> str:
        """The digest of :attr:`plan`: equal digests, equal plans."""
        return digest(self.plan)

    @property
    def interleave_position(self) -> int:
        """Records the interleave has produced (the buffer holds the difference)."""
        return self.position if self.example_buffer is None else self.example_buffer.consumed

    # -- serialisation --------------------------------------------------------------

    def to_dict(self, *, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The compact JSON document (``specs/checkpoint.schema.json``).

        ``extra`` adds top-level sections (a reader adds ``"reader"``); they are covered
        by the document's integrity digests like every other field.
        """
        return codec.compact_document(self, extra)

    def to_json(self, *, indent: int | None = None) -> str:
        return codec.dumps(self.to_dict(), indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Checkpoint:
        """Parse and validate a checkpoint (either form); every problem names the field."""
        return cls.from_dict(codec.parse_json(text))

    @classmethod
    def from_dict(cls, document: Any) -> Checkpoint:
        """Validate a checkpoint document (compact or expanded) and build its value."""
        parsed = codec.parse_document(document)
        checkpoint = cls(**parsed.checkpoint)
        if parsed.state is None:
            return checkpoint
        state = ExpandedCheckpoint(checkpoint=checkpoint, **parsed.state)
        return replace(checkpoint, source=state)

    def save(self, path: str | os.PathLike[str], *, storage_options: StorageOptions = None) -> None:
        """Write atomically: a killed job leaves the old checkpoint or the new, never half.

        ``path`` may be a URL (``gs://bucket/run/step_1000.json``): one upload replaces the
        object whole (``specs/storage.md``).
        """
        write_bytes(path, self.to_json().encode("utf-8"), storage_options=storage_options)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        storage_options: StorageOptions = None,
        max_bytes: int | None = None,
    ) -> Checkpoint:
        """The checkpoint saved at ``path`` (a local path or a URL).

        At most ``max_bytes`` are read (default 16 MiB, or ``READPLAN_MAX_STATE_BYTES``): a
        larger file is refused with :class:`CheckpointError` (``readplan.state.limits``).
        """
        data = read_state_file(path, storage_options=storage_options, max_bytes=max_bytes)
        try:
            return cls.from_json(data)
        except CheckpointError as err:
            raise CheckpointError(f"{to_str(path)}: {err}", field=err.field) from err

    # -- the expanded state ---------------------------------------------------------

    def expanded(self, plan: Expander | None = None) -> ExpandedCheckpoint:
        """The self-describing state: slots, per-file progress and the instruction list.

        ``plan`` (a :class:`readplan.ReadPlan`) verifies the checkpoint and computes it;
        without one, the plan that built this checkpoint or the state its (expanded)
        document carried is used.
        """
        source = plan if plan is not None else self.source
        if isinstance(source, ExpandedCheckpoint):
            return source
        if source is None:
            raise CheckpointError(
                "this checkpoint was loaded from its compact form, which holds only what the "
                "plan cannot derive; pass the plan: checkpoint.expanded(plan)",
                field="state",
            )
        return source.expand(self)


@dataclass(frozen=True)
class ExpandedCheckpoint:
    """A checkpoint with every derived field spelled out (``specs/checkpoint.md`` §1).

    Attributes:
        checkpoint: the compact checkpoint.
        fingerprint: the expanded plan section: the instruction list
            (``[basename, skip, take, examples_in_shard]`` each) and shard lengths.
        interleave_position: records the interleave has produced.
        cursor, block_counter, next_input, inputs_done: the interleave's state machine.
        slots: per interleave slot, ``(file_index, next record index in that file)`` or
            ``None`` for an empty slot.
        files: per file in this epoch's input order, ``(file_index, consumed, remaining)``.
    """

    checkpoint: Checkpoint
    fingerprint: Mapping[str, Any]
    interleave_position: int
    cursor: int
    block_counter: int
    next_input: int
    inputs_done: bool
    slots: tuple[tuple[int, int] | None, ...]
    files: tuple[tuple[int, int, int], ...]

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def epoch(self) -> int:
        return self.checkpoint.epoch

    @property
    def position(self) -> int:
        return self.checkpoint.position

    @property
    def example_buffer(self) -> ShuffleBufferState | None:
        return self.checkpoint.example_buffer

    @property
    def file_order(self) -> tuple[int, ...]:
        """Instruction indices in the order this epoch feeds them to the interleave."""
        return tuple(entry[0] for entry in self.files)

    def to_dict(self, *, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The expanded JSON document: the compact one plus a ``state`` section."""
        return codec.expanded_document(self, extra)

    def to_json(self, *, indent: int | None = None) -> str:
        return codec.dumps(self.to_dict(), indent)

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
        return saved_instructions(self.fingerprint, never_empty(self, unread(self)), data_dir)

    def resume_instructions(self, *, data_dir: str | None = None) -> list[FileInstruction]:
        """FileInstructions that tf.data's interleave reads in exactly the remaining order.

        Feed them to TFDS through ``ReadConfig(experimental_interleave_sort_fn=lambda _:
        instructions, interleave_cycle_length=c, interleave_block_length=b)`` with
        ``shuffle_files=False`` and no ``input_context``; ``c`` is the plan's
        ``cycle_length``.  File names as in :meth:`remaining_instructions`.  See
        ``specs/checkpoint.md`` §6.
        """
        return saved_instructions(self.fingerprint, continuation(self), data_dir)


def _validate(state: ExpandedCheckpoint) -> None:
    """Internal consistency that holds for every genuine expanded state (ranges, sums)."""
    files = state.fingerprint.get("files")
    if not isinstance(files, list):
        raise CheckpointError(
            "state.plan.files must be a list of file instructions", field="state.plan.files"
        )
    limit = state.checkpoint.num_examples
    if state.interleave_position > limit:
        raise CheckpointError(
            f"state.interleave.position {state.interleave_position} is beyond the epoch's "
            f"{limit} records",
            field="state.interleave.position",
        )
    for k, (file_index, _, _) in enumerate(state.files):
        if file_index >= len(files):
            raise CheckpointError(
                f"state.files[{k}] names file {file_index}, but the plan has {len(files)} files",
                field=f"state.files[{k}]",
            )
    for k, slot in enumerate(state.slots):
        if slot is not None and slot[0] >= len(files):
            raise CheckpointError(
                f"state.interleave.slots[{k}] names file {slot[0]}, but the plan has "
                f"{len(files)} files",
                field=f"state.interleave.slots[{k}]",
            )
    if state.next_input > len(state.files):
        raise CheckpointError(
            f"state.interleave.next_input {state.next_input} is beyond the "
            f"{len(state.files)} files of the epoch",
            field="state.interleave.next_input",
        )
    if sum(entry[1] for entry in state.files) != state.interleave_position:
        raise CheckpointError(
            "state.files[*].consumed do not add up to state.interleave.position: the "
            "checkpoint was edited or damaged",
            field="state.files",
        )
