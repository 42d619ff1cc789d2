"""Checkpoints: the complete read state at any position, computed without replay.

``specs/checkpoint.md`` is the normative description (state, invariants, JSON format,
fingerprint, and the bridge back to TFDS).  A checkpoint is built from ``(epoch,
position)`` in time independent of the position: the interleave's state comes from its
closed-form schedule (:meth:`readplan.interleave.InterleaveSchedule.state_at`).  Only an
example-level shuffle buffer needs a simulation, linear in the position, because its
contents depend on every earlier draw.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from readplan._checks import is_int
from readplan.errors import CheckpointError, CheckpointMismatchError, ConfigError
from readplan.instructions import FileInstruction
from readplan.plan import EpochOrder, ReadPlan
from readplan.shuffle import ShuffleBufferState, buffer_shuffle

__all__ = [
    "FORMAT",
    "VERSION",
    "Checkpoint",
    "iter_from",
    "make_checkpoint",
    "remaining_instructions",
    "resume",
    "resume_instructions",
    "verify",
]

FORMAT = "readplan-checkpoint"
VERSION = 1


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
        buffer = self.example_buffer
        return {
            "format": FORMAT,
            "version": VERSION,
            "plan": dict(self.fingerprint),
            "plan_digest": digest(self.fingerprint),
            "epoch": self.epoch,
            "position": self.position,
            "num_examples": self.num_examples,
            "interleave": {
                "position": self.interleave_position,
                "cursor": self.cursor,
                "block_counter": self.block_counter,
                "next_input": self.next_input,
                "inputs_done": self.inputs_done,
                "slots": [None if slot is None else list(slot) for slot in self.slots],
            },
            "files": [list(entry) for entry in self.files],
            "example_buffer": None
            if buffer is None
            else {
                "buffer": list(buffer.buffer),
                "consumed": buffer.consumed,
                "draws": buffer.draws,
            },
        }

    def to_json(self, *, indent: int | None = None) -> str:
        separators = (",", ":") if indent is None else None
        return json.dumps(self.to_dict(), indent=indent, separators=separators)

    @classmethod
    def from_json(cls, text: str | bytes) -> Checkpoint:
        """Parse and validate a checkpoint; every problem names the field at fault."""
        try:
            document = json.loads(text)
        except (ValueError, RecursionError) as err:  # incl. decode and digit-limit errors
            raise CheckpointError(
                f"checkpoint is not valid JSON ({err}); was the file truncated or overwritten?",
                field="$",
            ) from err
        return cls.from_dict(document)

    @classmethod
    def from_dict(cls, document: Any) -> Checkpoint:
        reader = _Fields(document, "$")
        fmt = reader.get("format", str)
        if fmt != FORMAT:
            raise CheckpointError(
                f"format is {fmt!r}, expected {FORMAT!r}: this is not a readplan checkpoint",
                field="format",
            )
        version = reader.get("version", int)
        if version != VERSION:
            raise CheckpointError(
                f"checkpoint format version {version} is not supported: this readplan reads "
                f"version {VERSION}; use the readplan release that wrote it",
                field="version",
            )
        plan = reader.get("plan", dict)
        stored_digest = reader.get("plan_digest", str)
        if digest(plan) != stored_digest:
            raise CheckpointError(
                "plan_digest does not match the plan fields: the checkpoint's plan section "
                "was edited or damaged",
                field="plan_digest",
            )
        _check_plan_section(plan)
        inter = _Fields(reader.get("interleave", dict), "interleave")
        buffer_doc = reader.get("example_buffer", dict, optional=True)
        buffer = None
        if buffer_doc is not None:
            fields = _Fields(buffer_doc, "example_buffer")
            buffer_items = fields.get("buffer", list)
            consumed = fields.get("consumed", int)
            draws = fields.get("draws", int)
            try:
                buffer = ShuffleBufferState(
                    tuple(
                        _int(v, f"example_buffer.buffer[{k}]") for k, v in enumerate(buffer_items)
                    ),
                    consumed,
                    draws,
                )
            except ValueError as err:
                raise CheckpointError(str(err), field="example_buffer") from err
        return cls(
            fingerprint=plan,
            epoch=reader.get("epoch", int),
            position=reader.get("position", int),
            num_examples=reader.get("num_examples", int),
            interleave_position=inter.get("position", int),
            cursor=inter.get("cursor", int),
            block_counter=inter.get("block_counter", int),
            next_input=inter.get("next_input", int),
            inputs_done=inter.get("inputs_done", bool),
            slots=tuple(
                _slot(entry, f"interleave.slots[{k}]")
                for k, entry in enumerate(inter.get("slots", list))
            ),
            files=tuple(
                _file_entry(entry, f"files[{k}]")
                for k, entry in enumerate(reader.get("files", list))
            ),
            example_buffer=buffer,
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: a killed job leaves the old checkpoint or the new, never half."""
        target = Path(path)
        text = self.to_json()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_directory(target.parent)

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

    def _instruction(
        self, file_index: int, skip: int, take: int, data_dir: str | None
    ) -> FileInstruction:
        name, _, _, examples_in_shard = self.fingerprint["files"][file_index]
        split, shard = _split_and_shard(self.fingerprint, file_index)
        filename = name if data_dir is None else os.path.join(data_dir, name)
        return FileInstruction(
            filename, skip, take, examples_in_shard, split=split, shard_index=shard
        )

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
        return [self._instruction(f, skip, take, data_dir) for f, skip, take in self._unread()]

    def resume_instructions(self, *, data_dir: str | None = None) -> list[FileInstruction]:
        """FileInstructions that tf.data's interleave reads in exactly the remaining order.

        Feed them to TFDS through ``ReadConfig(experimental_interleave_sort_fn=lambda _:
        instructions, interleave_cycle_length=c, interleave_block_length=b)`` with
        ``shuffle_files=False`` and no ``input_context``.  File names as in
        :meth:`remaining_instructions` (:meth:`readplan.ReadPlan.resume_instructions`
        uses the plan's own paths).  See ``specs/checkpoint.md`` §6.
        """
        return [self._instruction(f, skip, take, data_dir) for f, skip, take in self._bridge()]

    def _unread(self) -> list[tuple[int, int, int]]:
        """``(file_index, skip, take)`` of every file's unread tail, in input order."""
        planned = self.fingerprint["files"]
        return [
            (file_index, planned[file_index][1] + consumed, remaining)
            for file_index, consumed, remaining in self.files
            if remaining
        ]

    def _bridge(self) -> list[tuple[int, int, int]]:
        """``(file_index, skip, take)`` of the exact tf.data continuation.

        The list rotates the slots so the cursor's slot comes first, splits a partly read
        block into a head that ends the block and a tail that the same slot opens next
        round, and uses empty (take 0) entries where the original slot would spend a visit
        producing nothing.
        """
        if self.example_buffer is not None:
            raise CheckpointError(
                "no instruction list reproduces a plan with an example-level shuffle: tf.data "
                "cannot be given the buffer's contents and generator position; resume with "
                "readplan's reader instead",
                field="example_buffer",
            )
        planned = self.fingerprint["files"]
        block = int(self.fingerprint["block_length"])
        cycle = len(self.slots)
        unopened = [
            (file_index, planned[file_index][1] + consumed, remaining)
            for file_index, consumed, remaining in self.files[self.next_input :]
        ]
        entries: list[tuple[int, int, int]] = []
        tail: tuple[int, int, int] | None = None
        placeholder = (self.files[0][0], 0, 0) if self.files else None
        for j in range(cycle):
            slot = self.slots[(self.cursor + j) % cycle]
            if slot is None:
                if not self.inputs_done and unopened:
                    entries.append(unopened.pop(0))
                elif placeholder is not None:
                    entries.append(placeholder)
                continue
            file_index, offset = slot
            remaining = planned[file_index][1] + planned[file_index][2] - offset
            if j == 0 and self.block_counter:
                # The head ends the partly read block.  When the file's records last at
                # least to the block's end, the original slot keeps the file for its next
                # visit, so the tail (possibly empty: the visit that finds the end) must be
                # what that slot opens next round.
                head = min(remaining, block - self.block_counter)
                entries.append((file_index, offset, head))
                if remaining >= block - self.block_counter:
                    tail = (file_index, offset + head, remaining - head)
            else:
                entries.append((file_index, offset, remaining))
        if tail is not None:
            entries.append(tail)
        entries.extend(unopened)
        while entries and entries[-1][2] == 0 and tail is None:
            entries.pop()
        return entries


# -- building, resuming --------------------------------------------------------------


def fingerprint(plan: ReadPlan) -> dict[str, Any]:
    """The fields that identify a plan; two plans with equal fingerprints read alike."""
    config = plan.config
    context = config.input_context
    shuffle = config.example_shuffle
    splits = {fi.split for fi in plan.instructions if fi.split is not None}
    return {
        "dataset": plan.info.name,
        "split": plan.spec,
        "shard_lengths": {
            name: list(split.shard_lengths)
            for name, split in plan.info.splits.items()
            if name in splits
        },
        "files": [
            [os.path.basename(fi.filename), fi.skip, fi.num_records, fi.examples_in_shard]
            for fi in plan.instructions
        ],
        "cycle_length": plan.cycle_length,
        "block_length": plan.block_length,
        "shuffle_files": config.shuffle_files,
        "shuffle_seed": config.shuffle_seed,
        "reshuffle_each_iteration": config.reshuffle_each_iteration,
        "global_seed": config.global_seed,
        "input_context": None
        if context is None
        else [context.input_pipeline_id, context.num_input_pipelines],
        "example_shuffle": None
        if shuffle is None
        else {
            "buffer_size": shuffle.buffer_size,
            "seed": shuffle.seed,
            "reshuffle_each_iteration": shuffle.reshuffle_each_iteration,
        },
        "format_version": VERSION,
    }


def digest(fields: Mapping[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def make_checkpoint(plan: ReadPlan, epoch: int, position: int) -> Checkpoint:
    """The state after ``position`` records of ``epoch``; see :meth:`ReadPlan.checkpoint`."""
    return _build(plan, fingerprint(plan), epoch, position)


def _build(plan: ReadPlan, fields: Mapping[str, Any], epoch: int, position: int) -> Checkpoint:
    files, schedule = plan._epoch(epoch)
    plan._check_position(position, allow_end=True)
    buffer = None
    interleaved = position
    pair = plan.example_pair(epoch)
    if pair is not None:
        assert plan.config.example_shuffle is not None
        size = plan.config.example_shuffle.buffer_size
        _, buffer = buffer_shuffle(plan.num_examples, size, pair, count=position)
        interleaved = buffer.consumed
    return _from_state(plan, fields, epoch, position, files, schedule, interleaved, buffer)


def _from_state(
    plan: ReadPlan,
    fields: Mapping[str, Any],
    epoch: int,
    position: int,
    files: np.ndarray,
    schedule: Any,
    interleaved: int,
    buffer: ShuffleBufferState | None,
) -> Checkpoint:
    state = schedule.state_at(interleaved)
    file_ids = files.tolist()
    skips = plan._skips
    lengths = schedule.lengths.tolist()
    return Checkpoint(
        fingerprint=fields,
        epoch=epoch,
        position=position,
        num_examples=plan.num_examples,
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


def check_compatible(plan: ReadPlan, checkpoint: Checkpoint) -> None:
    """Refuse a checkpoint of another plan, listing every differing field."""
    current = fingerprint(plan)
    differences = _differences(dict(checkpoint.fingerprint), current)
    if differences:
        listing = "\n".join(
            f"  {name}: checkpoint has {old!r}, this plan has {new!r}"
            for name, (old, new) in differences.items()
        )
        raise CheckpointMismatchError(
            f"the checkpoint was taken from a different plan ({len(differences)} "
            f"field(s) differ):\n{listing}\nResume with the plan that wrote it (same dataset "
            "version, split string and read configuration), or start a new run.",
            differences=differences,
        )


def verify(plan: ReadPlan, checkpoint: Checkpoint) -> Checkpoint:
    """Refuse a checkpoint of another plan, or one whose state its position does not imply.

    The fingerprint must match (``CheckpointMismatchError``), and the interleave state and
    per-file progress must equal what the plan computes for the checkpoint's position
    (``CheckpointError`` naming the field).  An example buffer's contents are checked for
    consistency, not replayed, so verifying costs the same at every position.
    """
    check_compatible(plan, checkpoint)
    if (checkpoint.example_buffer is None) != (plan.config.example_shuffle is None):
        raise CheckpointError(
            "example_buffer is "
            + ("missing" if checkpoint.example_buffer is None else "present")
            + " but the plan "
            + ("has" if plan.config.example_shuffle is not None else "has no")
            + " example-level shuffle: the checkpoint was edited or damaged",
            field="example_buffer",
        )
    if checkpoint.example_buffer is None:
        expected = _build(plan, checkpoint.fingerprint, checkpoint.epoch, checkpoint.position)
    else:
        files, schedule = plan._epoch(checkpoint.epoch)
        plan._check_position(checkpoint.position, allow_end=True)
        expected = _from_state(
            plan,
            checkpoint.fingerprint,
            checkpoint.epoch,
            checkpoint.position,
            files,
            schedule,
            checkpoint.example_buffer.consumed,
            checkpoint.example_buffer,
        )
    for name in (
        "num_examples",
        "interleave_position",
        "cursor",
        "block_counter",
        "next_input",
        "inputs_done",
        "slots",
        "files",
    ):
        if getattr(checkpoint, name) != getattr(expected, name):
            raise CheckpointError(
                f"checkpoint field {name!r} is {getattr(checkpoint, name)!r}, but position "
                f"{checkpoint.position} of epoch {checkpoint.epoch} of this plan implies "
                f"{getattr(expected, name)!r}: the checkpoint was edited or damaged",
                field=_json_field(name),
            )
    return expected


def resume(plan: ReadPlan, checkpoint: Checkpoint) -> EpochOrder:
    """The rest of the checkpoint's epoch, exactly the uninterrupted order's suffix."""
    verify(plan, checkpoint)
    return _rest(plan, checkpoint)


def _rest(plan: ReadPlan, checkpoint: Checkpoint) -> EpochOrder:
    """The rest of the epoch from a verified checkpoint."""
    files, schedule = plan._epoch(checkpoint.epoch)
    buffer = checkpoint.example_buffer
    if buffer is None:
        chunks = list(
            schedule.iter_chunks(
                start=checkpoint.position,
                chunk_size=max(1, plan.num_examples - checkpoint.position),
            )
        )
        inputs = np.concatenate([c[0] for c in chunks]) if chunks else np.empty(0, np.int64)
        within = np.concatenate([c[1] for c in chunks]) if chunks else np.empty(0, np.int64)
    else:
        pair = plan.example_pair(checkpoint.epoch)
        shuffle = plan.config.example_shuffle
        assert pair is not None
        assert shuffle is not None
        rest, _ = buffer_shuffle(plan.num_examples, shuffle.buffer_size, pair, state=buffer)
        base_inputs, base_within = schedule.order()
        inputs, within = base_inputs[rest], base_within[rest]
    return plan._epoch_order(checkpoint.epoch, checkpoint.position, files, inputs, within)


def remaining_instructions(plan: ReadPlan, checkpoint: Checkpoint) -> list[FileInstruction]:
    """FileInstructions covering exactly the records not yet delivered, with the plan's paths.

    Records waiting in an example shuffle buffer come first, one instruction each, then
    every file's unread tail in this epoch's input order (``specs/checkpoint.md`` §6).
    """
    verify(plan, checkpoint)
    out = []
    if checkpoint.example_buffer is not None:
        files, schedule = plan._epoch(checkpoint.epoch)
        for ordinal in checkpoint.example_buffer.buffer:
            input_index, within = schedule.locate(ordinal)
            file_index = int(files[input_index])
            out.append(_planned(plan, file_index, plan._skips[file_index] + within, 1))
    out += [_planned(plan, f, skip, take) for f, skip, take in checkpoint._unread()]
    return out


def resume_instructions(plan: ReadPlan, checkpoint: Checkpoint) -> list[FileInstruction]:
    """The exact tf.data continuation (:meth:`Checkpoint.resume_instructions`), with the
    plan's file paths."""
    verify(plan, checkpoint)
    return [_planned(plan, f, skip, take) for f, skip, take in checkpoint._bridge()]


def _planned(plan: ReadPlan, file_index: int, skip: int, take: int) -> FileInstruction:
    return replace(plan.instructions[file_index], skip=int(skip), take=take)


def iter_from(
    plan: ReadPlan,
    checkpoint: Checkpoint,
    *,
    chunk_size: int = 1 << 20,
    stop_epoch: int | None = None,
) -> Iterator[EpochOrder]:
    """Continue from ``checkpoint`` through later epochs (until ``stop_epoch``, exclusive).

    The checkpoint and the arguments are checked when this is called, not at the first
    chunk.
    """
    if not is_int(chunk_size) or chunk_size < 1:
        raise ConfigError(
            f"chunk_size must be a positive integer, got {chunk_size!r}",
            field="chunk_size",
            value=chunk_size,
        )
    if stop_epoch is not None and not is_int(stop_epoch):
        raise ConfigError(
            f"stop_epoch must be an integer or None, got {stop_epoch!r}",
            field="stop_epoch",
            value=stop_epoch,
        )
    verify(plan, checkpoint)
    return _continue(plan, checkpoint, chunk_size, stop_epoch)


def _continue(
    plan: ReadPlan, checkpoint: Checkpoint, chunk_size: int, stop_epoch: int | None
) -> Iterator[EpochOrder]:
    epoch, start = checkpoint.epoch, checkpoint.position
    if stop_epoch is not None and epoch >= stop_epoch:
        return
    if checkpoint.example_buffer is not None:
        # The buffer's state continues only this epoch; later epochs start afresh.
        rest = _rest(plan, checkpoint)
        for first in range(0, len(rest), chunk_size):
            yield EpochOrder(
                plan=plan,
                epoch=epoch,
                start=start + first,
                file_index=rest.file_index[first : first + chunk_size],
                record_index=rest.record_index[first : first + chunk_size],
            )
        epoch, start = epoch + 1, 0
    while stop_epoch is None or epoch < stop_epoch:
        yield from plan.iter_epoch(epoch, chunk_size=chunk_size, start=start)
        epoch, start = epoch + 1, 0


# -- validation helpers ---------------------------------------------------------------


def _differences(old: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    out: dict[str, tuple[Any, Any]] = {}
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if name == "shard_lengths" and isinstance(before, dict) and isinstance(after, dict):
            for split in sorted(set(before) | set(after)):
                a, b = before.get(split), after.get(split)
                if a != b:
                    out[f"shard_lengths.{split}"] = (_shard_summary(a), _shard_summary(b))
            continue
        if name == "files" and isinstance(before, list) and isinstance(after, list):
            for k in range(max(len(before), len(after))):
                a = before[k] if k < len(before) else None
                b = after[k] if k < len(after) else None
                if a != b:
                    out[f"files[{k}]"] = (a, b)
                    if len(out) > 20:
                        break
            continue
        out[name] = (before, after)
    return out


def _shard_summary(lengths: Any) -> Any:
    if not isinstance(lengths, list):
        return lengths
    return f"{len(lengths)} shards, {sum(lengths)} examples"


def _json_field(name: str) -> str:
    if name in {"cursor", "block_counter", "next_input", "inputs_done", "slots"}:
        return f"interleave.{name}"
    if name == "interleave_position":
        return "interleave.position"
    return name


def _split_and_shard(fields: Mapping[str, Any], file_index: int) -> tuple[str | None, int | None]:
    name = fields["files"][file_index][0]
    prefix = f"{fields['dataset']}-"
    for split, lengths in fields["shard_lengths"].items():
        stem = f"{prefix}{split}."
        if name.startswith(stem):
            tail = name.rsplit("-", 3)
            if len(tail) == 4 and tail[-2] == "of" and tail[-3].isdigit():
                shard = int(tail[-3])
                if shard < len(lengths):
                    return split, shard
    return None, None


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


class _Fields:
    """Typed access to a JSON object that names the field path in every error."""

    def __init__(self, document: Any, path: str) -> None:
        if not isinstance(document, dict):
            raise CheckpointError(
                f"{path} must be a JSON object, got {type(document).__name__}", field=path
            )
        self.document = document
        self.path = path

    def get(self, name: str, kind: type, *, optional: bool = False) -> Any:
        field = name if self.path == "$" else f"{self.path}.{name}"
        if name not in self.document:
            if optional:
                return None
            raise CheckpointError(f"checkpoint field {field!r} is missing", field=field)
        value = self.document[name]
        if value is None and optional:
            return None
        if kind is int:
            return _int(value, field)
        if kind is bool:
            if not isinstance(value, bool):
                raise CheckpointError(
                    f"checkpoint field {field!r} must be true or false, got {value!r}", field=field
                )
            return value
        if not isinstance(value, kind):
            raise CheckpointError(
                f"checkpoint field {field!r} must be a JSON {_json_kind(kind)}, got {value!r:.80}",
                field=field,
            )
        return value


def _json_kind(kind: type) -> str:
    names: dict[type, str] = {str: "string", dict: "object", list: "array"}
    return names.get(kind, kind.__name__)


def _int(value: Any, field: str) -> int:
    if not is_int(value) or value < 0:
        raise CheckpointError(
            f"checkpoint field {field!r} must be a non-negative integer, got {value!r:.80}",
            field=field,
        )
    return value


def _slot(entry: Any, field: str) -> tuple[int, int] | None:
    if entry is None:
        return None
    if not isinstance(entry, list) or len(entry) != 2:
        raise CheckpointError(
            f"checkpoint field {field!r} must be null or [file_index, next_record], got "
            f"{entry!r:.80}",
            field=field,
        )
    return _int(entry[0], field), _int(entry[1], field)


def _file_entry(entry: Any, field: str) -> tuple[int, int, int]:
    if not isinstance(entry, list) or len(entry) != 3:
        raise CheckpointError(
            f"checkpoint field {field!r} must be [file_index, consumed, remaining], got "
            f"{entry!r:.80}",
            field=field,
        )
    return _int(entry[0], field), _int(entry[1], field), _int(entry[2], field)


def _check_plan_section(plan: dict[str, Any]) -> None:
    """The ``plan`` section has every field of ``checkpoint.schema.json``, well typed.

    Its digest only proves it was not damaged by accident; a hand-edited section with a
    recomputed digest must still fail with the field named, not deep inside a resume.
    """
    fields = _Fields(plan, "plan")
    fields.get("dataset", str)
    fields.get("split", str)
    for split, lengths in fields.get("shard_lengths", dict).items():
        if not isinstance(lengths, list):
            raise CheckpointError(
                f"checkpoint field 'plan.shard_lengths.{split}' must be a list of shard lengths",
                field=f"plan.shard_lengths.{split}",
            )
        for k, value in enumerate(lengths):
            _int(value, f"plan.shard_lengths.{split}[{k}]")
    for k, entry in enumerate(fields.get("files", list)):
        field = f"plan.files[{k}]"
        if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)):
            raise CheckpointError(
                f"checkpoint field {field!r} must be [basename, skip, take, examples_in_shard], "
                f"got {entry!r:.80}",
                field=field,
            )
        for value in entry[1:]:
            _int(value, field)
    for name in ("cycle_length", "block_length"):
        if fields.get(name, int) < 1:
            raise CheckpointError(
                f"checkpoint field 'plan.{name}' must be >= 1", field=f"plan.{name}"
            )
    fields.get("shuffle_files", bool)
    fields.get("reshuffle_each_iteration", bool)
    for name in ("shuffle_seed", "global_seed"):
        _signed_int_or_none(fields, name)
    context = fields.get("input_context", list, optional=True)
    if context is not None and (
        len(context) != 2 or not all(isinstance(v, int) and v >= 0 for v in context)
    ):
        raise CheckpointError(
            "checkpoint field 'plan.input_context' must be null or [pipeline_id, pipelines]",
            field="plan.input_context",
        )
    shuffle = fields.get("example_shuffle", dict, optional=True)
    if shuffle is not None:
        example = _Fields(shuffle, "plan.example_shuffle")
        if example.get("buffer_size", int) < 1:
            raise CheckpointError(
                "checkpoint field 'plan.example_shuffle.buffer_size' must be >= 1",
                field="plan.example_shuffle.buffer_size",
            )
        _signed_int_or_none(example, "seed")
        example.get("reshuffle_each_iteration", bool)
    if fields.get("format_version", int) != VERSION:
        raise CheckpointError(
            f"checkpoint field 'plan.format_version' must be {VERSION}",
            field="plan.format_version",
        )


def _signed_int_or_none(fields: _Fields, name: str) -> None:
    value = fields.document.get(name)
    if name not in fields.document or not (
        value is None or (isinstance(value, int) and not isinstance(value, bool))
    ):
        field = f"{fields.path}.{name}"
        raise CheckpointError(
            f"checkpoint field {field!r} must be an integer or null, got {value!r:.80}",
            field=field,
        )


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
