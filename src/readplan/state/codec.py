"""The checkpoint's versioned JSON document: writing it, and reading it back field by field.

``specs/checkpoint.md`` ("JSON format") and ``specs/checkpoint.schema.json`` are
normative.  Reading checks every field's type and names the dotted path of the first one at
fault; the digest of the ``plan`` section catches accidental damage to it, and its
fields are checked one by one too, so that a hand-edited section fails here, not deep
inside a resume.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from readplan._internal.jsonfields import JsonFields
from readplan.errors import CheckpointError
from readplan.planning.shuffle import ShuffleBufferState
from readplan.state.fingerprint import FORMAT_VERSION, digest

if TYPE_CHECKING:
    from readplan.state.checkpoint import Checkpoint

__all__ = ["FORMAT", "VERSION", "fields_from_document", "parse_json", "to_document"]

FORMAT = "readplan-checkpoint"
VERSION = FORMAT_VERSION


def to_document(checkpoint: Checkpoint) -> dict[str, Any]:
    """The versioned JSON document of ``checkpoint`` (``specs/checkpoint.schema.json``)."""
    buffer = checkpoint.example_buffer
    return {
        "format": FORMAT,
        "version": VERSION,
        "plan": dict(checkpoint.fingerprint),
        "plan_digest": digest(checkpoint.fingerprint),
        "epoch": checkpoint.epoch,
        "position": checkpoint.position,
        "num_examples": checkpoint.num_examples,
        "interleave": {
            "position": checkpoint.interleave_position,
            "cursor": checkpoint.cursor,
            "block_counter": checkpoint.block_counter,
            "next_input": checkpoint.next_input,
            "inputs_done": checkpoint.inputs_done,
            "slots": [None if slot is None else list(slot) for slot in checkpoint.slots],
        },
        "files": [list(entry) for entry in checkpoint.files],
        "example_buffer": None
        if buffer is None
        else {"buffer": list(buffer.buffer), "consumed": buffer.consumed, "draws": buffer.draws},
    }


def parse_json(text: str | bytes) -> Any:
    """The JSON value of ``text``, or a CheckpointError saying it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:  # incl. decode and digit-limit errors
        raise CheckpointError(
            f"checkpoint is not valid JSON ({err}); was the file truncated or overwritten?",
            field="$",
        ) from err


def fields_from_document(document: Any) -> dict[str, Any]:
    """The :class:`Checkpoint` constructor's arguments, each checked, from a document."""
    top = JsonFields(document, "", _error)
    fmt = top.get("format", str)
    if fmt != FORMAT:
        raise CheckpointError(
            f"format is {fmt!r}, expected {FORMAT!r}: this is not a readplan checkpoint",
            field="format",
        )
    version = top.get("version", int)
    if version != VERSION:
        raise CheckpointError(
            f"checkpoint format version {version} is not supported: this readplan reads "
            f"version {VERSION}; use the readplan release that wrote it",
            field="version",
        )
    plan = top.get("plan", dict)
    if digest(plan) != top.get("plan_digest", str):
        raise CheckpointError(
            "plan_digest does not match the plan fields: the checkpoint's plan section "
            "was edited or damaged",
            field="plan_digest",
        )
    _check_plan_section(JsonFields(plan, "plan", _error))
    interleave = top.child("interleave")
    assert interleave is not None
    return {
        "fingerprint": plan,
        "epoch": top.get("epoch", int),
        "position": top.get("position", int),
        "num_examples": top.get("num_examples", int),
        "interleave_position": interleave.get("position", int),
        "cursor": interleave.get("cursor", int),
        "block_counter": interleave.get("block_counter", int),
        "next_input": interleave.get("next_input", int),
        "inputs_done": interleave.get("inputs_done", bool),
        "slots": tuple(
            _slot(interleave, k, entry) for k, entry in enumerate(interleave.get("slots", list))
        ),
        "files": tuple(
            _file_entry(top, k, entry) for k, entry in enumerate(top.get("files", list))
        ),
        "example_buffer": _buffer(top.child("example_buffer", optional=True)),
    }


def _error(message: str, field: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {message}", field=field)


def _buffer(fields: JsonFields | None) -> ShuffleBufferState | None:
    if fields is None:
        return None
    items = fields.get("buffer", list)
    entries = tuple(fields.non_negative(f"buffer[{k}]", v) for k, v in enumerate(items))
    try:
        return ShuffleBufferState(entries, fields.get("consumed", int), fields.get("draws", int))
    except ValueError as err:
        raise CheckpointError(str(err), field="example_buffer") from err


def _slot(fields: JsonFields, k: int, entry: Any) -> tuple[int, int] | None:
    if entry is None:
        return None
    name = f"slots[{k}]"
    if not isinstance(entry, list) or len(entry) != 2:
        raise fields.fail(
            name,
            f"field {fields.field(name)!r} must be null or [file_index, next_record], got "
            f"{entry!r:.80}",
        )
    return fields.non_negative(name, entry[0]), fields.non_negative(name, entry[1])


def _file_entry(fields: JsonFields, k: int, entry: Any) -> tuple[int, int, int]:
    name = f"files[{k}]"
    if not isinstance(entry, list) or len(entry) != 3:
        raise fields.fail(
            name,
            f"field {name!r} must be [file_index, consumed, remaining], got {entry!r:.80}",
        )
    first, consumed, remaining = (fields.non_negative(name, value) for value in entry)
    return first, consumed, remaining


def _check_plan_section(fields: JsonFields) -> None:
    """The ``plan`` section has every field of ``checkpoint.schema.json``, well typed."""
    fields.get("dataset", str)
    fields.get("split", str)
    for split, lengths in fields.get("shard_lengths", dict).items():
        name = f"shard_lengths.{split}"
        if not isinstance(lengths, list):
            raise fields.fail(name, f"field 'plan.{name}' must be a list of shard lengths")
        for k, value in enumerate(lengths):
            fields.non_negative(f"{name}[{k}]", value)
    for k, entry in enumerate(fields.get("files", list)):
        name = f"files[{k}]"
        if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)):
            raise fields.fail(
                name,
                f"field 'plan.{name}' must be [basename, skip, take, examples_in_shard], "
                f"got {entry!r:.80}",
            )
        for value in entry[1:]:
            fields.non_negative(name, value)
    for name in ("cycle_length", "block_length"):
        if fields.get(name, int) < 1:
            raise fields.fail(name, f"field 'plan.{name}' must be >= 1")
    fields.get("shuffle_files", bool)
    fields.get("reshuffle_each_iteration", bool)
    for name in ("shuffle_seed", "global_seed"):
        _signed_int_or_none(fields, name)
    context = fields.get("input_context", list, optional=True)
    if context is not None and (
        len(context) != 2 or not all(isinstance(v, int) and v >= 0 for v in context)
    ):
        raise fields.fail(
            "input_context", "field 'plan.input_context' must be null or [pipeline_id, pipelines]"
        )
    example = fields.child("example_shuffle", optional=True)
    if example is not None:
        if example.get("buffer_size", int) < 1:
            raise example.fail(
                "buffer_size", "field 'plan.example_shuffle.buffer_size' must be >= 1"
            )
        _signed_int_or_none(example, "seed")
        example.get("reshuffle_each_iteration", bool)
    if fields.get("format_version", int) != VERSION:
        raise fields.fail("format_version", f"field 'plan.format_version' must be {VERSION}")


def _signed_int_or_none(fields: JsonFields, name: str) -> None:
    value = fields.raw(name)
    if not (value is None or (isinstance(value, int) and not isinstance(value, bool))):
        raise fields.fail(
            name, f"field {fields.field(name)!r} must be an integer or null, got {value!r:.80}"
        )
