"""The checkpoint's versioned JSON documents: writing them, and reading them back field by field.

``specs/checkpoint.md`` §5 ("Format") and ``specs/checkpoint.schema.json`` are normative.
Every top-level section is covered by a digest in ``integrity``: a section that was edited,
damaged, added or removed after the checkpoint was written is refused with its name.
Reading then checks every field's type and names the dotted path of the first one at
fault, so that a document edited on purpose (digests recomputed) fails here or in
:func:`readplan.state.resume.verify`, not deep inside a resume.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from readplan._internal.jsonfields import MISSING, JsonFields
from readplan._internal.validate import INT64_MAX, check_int, preview
from readplan.errors import CheckpointError
from readplan.planning.shuffle import ShuffleBufferState
from readplan.state.fingerprint import FORMAT_VERSION, digest, expanded_disagreement
from readplan.state.limits import check_bounds

if TYPE_CHECKING:
    from readplan.state.checkpoint import Checkpoint, ExpandedCheckpoint

__all__ = [
    "FORMAT",
    "VERSION",
    "Parsed",
    "compact_document",
    "dumps",
    "expanded_document",
    "parse_document",
    "parse_json",
    "seal",
    "state_sections",
]

FORMAT = "readplan-checkpoint"
VERSION = FORMAT_VERSION
_INTEGRITY = "integrity"
_HEX32 = re.compile(r"[0-9a-f]{32}")
_CONVERT_V1 = (
    "checkpoint format version 1 is not read directly: it does not bind the dataset's config "
    "and version as version 2 does. Convert it once, verified against the plan that wrote "
    "it: `readplan checkpoint DATASET SPEC [read options] --upgrade OLD.json -o NEW.json`, or "
    "in Python `plan.upgrade_checkpoint(document)`"
)


@dataclass(frozen=True)
class Parsed:
    """A checked document: the compact checkpoint's fields, and the expanded state's."""

    checkpoint: dict[str, Any]
    state: dict[str, Any] | None


# More spaces per level than this is no indentation anyone reads.
_MAX_INDENT = 64


def dumps(document: Mapping[str, Any], indent: int | None) -> str:
    """A document as JSON text (no whitespace unless indented)."""
    if indent is not None:
        check_int(indent, "indent", minimum=0, maximum=_MAX_INDENT, what="a number of spaces")
    separators = (",", ":") if indent is None else None
    return json.dumps(document, indent=indent, separators=separators)


def seal(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with its ``integrity`` section: the digest of every other top-level field."""
    document = dict(body)
    document[_INTEGRITY] = {name: digest(value) for name, value in body.items()}
    return document


def compact_document(checkpoint: Checkpoint, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The compact document of ``checkpoint`` plus ``extra`` sections, sealed."""
    return seal(_body(checkpoint, "compact") | _extra(extra))


def expanded_document(state: ExpandedCheckpoint, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The expanded document: the compact fields plus the ``state`` section, sealed."""
    body = _body(state.checkpoint, "expanded")
    body["state"] = {"plan": dict(state.fingerprint), **state_sections(state)}
    return seal(body | _extra(extra))


def state_sections(state: ExpandedCheckpoint) -> dict[str, Any]:
    """The ``interleave`` and ``files`` sections of an expanded state (as JSON values)."""
    return {
        "interleave": {
            "position": state.interleave_position,
            "cursor": state.cursor,
            "block_counter": state.block_counter,
            "next_input": state.next_input,
            "inputs_done": state.inputs_done,
            "slots": [None if slot is None else list(slot) for slot in state.slots],
        },
        "files": [list(entry) for entry in state.files],
    }


def _body(checkpoint: Checkpoint, form: str) -> dict[str, Any]:
    buffer = checkpoint.example_buffer
    return {
        "format": FORMAT,
        "version": VERSION,
        "form": form,
        "plan": dict(checkpoint.plan),
        "plan_digest": checkpoint.plan_digest,
        "epoch": checkpoint.epoch,
        "position": checkpoint.position,
        "num_examples": checkpoint.num_examples,
        "example_buffer": None
        if buffer is None
        else {"buffer": list(buffer.buffer), "consumed": buffer.consumed, "draws": buffer.draws},
    }


def _extra(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    sections = dict(extra or {})
    reserved = sorted(set(sections) & {*_RESERVED, _INTEGRITY})
    if reserved:
        raise CheckpointError(
            f"extra sections may not replace the checkpoint's own fields {reserved}",
            field=reserved[0],
        )
    return sections


_RESERVED = (
    "format",
    "version",
    "form",
    "plan",
    "plan_digest",
    "epoch",
    "position",
    "num_examples",
    "example_buffer",
    "state",
)


def parse_json(text: str | bytes) -> Any:
    """The JSON value of ``text``, or a CheckpointError saying it is not JSON."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise CheckpointError(
            f"a checkpoint is JSON text (str or bytes), got {type(text).__name__}", field="$"
        )
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:  # incl. decode and digit-limit errors
        raise CheckpointError(
            f"checkpoint is not valid JSON ({err}); was the file truncated or overwritten?",
            field="$",
        ) from err


def parse_document(document: Any) -> Parsed:
    """Check a document of either form: nesting, format, version, integrity, then every
    field."""
    check_bounds(document)
    top = JsonFields(document, "", _error)
    fmt = top.get("format", str)
    if fmt != FORMAT:
        raise CheckpointError(
            f"format is {preview(fmt)}, expected {FORMAT!r}: this is not a readplan checkpoint",
            field="format",
        )
    version = top.get("version", int)
    if version == 1:
        raise CheckpointError(_CONVERT_V1, field="version")
    if version != VERSION:
        raise CheckpointError(
            f"checkpoint format version {version} is not supported: this readplan reads "
            f"version {VERSION} (and converts version 1); use the readplan release that "
            "wrote it",
            field="version",
        )
    _check_integrity(top.document)
    form = top.get("form", str)
    if form not in ("compact", "expanded"):
        raise CheckpointError(
            f"checkpoint field 'form' must be 'compact' or 'expanded', got {preview(form)}",
            field="form",
        )
    plan = top.get("plan", dict)
    _check_plan_summary(JsonFields(plan, "plan", _error))
    if digest(plan) != top.get("plan_digest", str):
        raise CheckpointError(
            "plan_digest does not match the plan section: the checkpoint was edited or damaged",
            field="plan_digest",
        )
    fields = {
        "plan": plan,
        "epoch": top.get("epoch", int),
        "position": top.get("position", int),
        "num_examples": top.get("num_examples", int),
        "example_buffer": _buffer(top.child("example_buffer", optional=True)),
    }
    state = None
    if form == "expanded":
        state = _state(top.child("state"), plan)
    elif top.raw("state") is not MISSING:
        raise CheckpointError(
            "a compact checkpoint has no 'state' section (form is 'compact')", field="state"
        )
    return Parsed(fields, state)


def _check_integrity(document: dict[str, Any]) -> None:
    """Every top-level field matches its digest, and every one has a digest."""
    digests = document.get(_INTEGRITY)
    if not isinstance(digests, dict) or not all(
        isinstance(value, str) and _HEX32.fullmatch(value) for value in digests.values()
    ):
        raise CheckpointError(
            f"checkpoint field {_INTEGRITY!r} must be an object of 32-hex-digit digests, one per "
            "top-level field; the checkpoint was damaged or not written by readplan",
            field=_INTEGRITY,
        )
    for name in sorted(set(document) - {_INTEGRITY}):
        if name not in digests:
            raise CheckpointError(
                f"checkpoint field {name!r} has no integrity digest: it was added after the "
                "checkpoint was written",
                field=name,
            )
    for name in sorted(digests):
        if name not in document:
            raise CheckpointError(
                f"checkpoint field {name!r} is missing but its integrity digest is present: "
                "the checkpoint was edited or damaged",
                field=name,
            )
        if digest(document[name]) != digests[name]:
            raise CheckpointError(
                f"checkpoint field {name!r} does not match its integrity digest: it was "
                "edited or damaged after the checkpoint was written",
                field=name,
            )


def _error(message: str, field: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {message}", field=field)


def _count(fields: JsonFields, name: str, value: Any = MISSING) -> int:
    """A non-negative int64 at ``name`` (or the given ``value`` found there)."""
    number = fields.non_negative(name, fields.raw(name) if value is MISSING else value)
    if number > INT64_MAX:
        raise fields.fail(name, f"field {fields.field(name)!r} is beyond int64: {number}")
    return number


def _buffer(fields: JsonFields | None) -> ShuffleBufferState | None:
    if fields is None:
        return None
    items = fields.get("buffer", list)
    entries = tuple(_count(fields, f"buffer[{k}]", v) for k, v in enumerate(items))
    try:
        return ShuffleBufferState(entries, _count(fields, "consumed"), _count(fields, "draws"))
    except ValueError as err:
        raise CheckpointError(str(err), field="example_buffer") from err


def _check_plan_summary(fields: JsonFields) -> None:
    """The compact ``plan`` section has every field of the schema, well typed."""
    _identity(fields)
    lengths = fields.child("shard_lengths")
    assert lengths is not None
    for split in lengths.document:
        entry = lengths.child(split)
        assert entry is not None
        for name in ("shards", "examples", "num_bytes"):
            _count(entry, name)
        _string_or_null(entry, "template")
        _hex(entry, "digest")
    files = fields.child("files")
    assert files is not None
    _count(files, "count")
    _count(files, "records")
    _hex(files, "digest")
    _config(fields)


def _identity(fields: JsonFields) -> None:
    fields.get("dataset", str)
    for name in ("config", "version"):
        _string_or_null(fields, name)
    fields.get("split", str)


def _string_or_null(fields: JsonFields, name: str) -> None:
    value = fields.raw(name)
    if value is MISSING or not (value is None or isinstance(value, str)):
        raise fields.fail(
            name, f"field {fields.field(name)!r} must be a string or null, got {preview(value)}"
        )


def _config(fields: JsonFields) -> None:
    for name in ("cycle_length", "block_length"):
        if _count(fields, name) < 1:
            raise fields.fail(name, f"field {fields.field(name)!r} must be >= 1")
    fields.get("shuffle_files", bool)
    fields.get("reshuffle_each_iteration", bool)
    for name in ("shuffle_seed", "global_seed"):
        _seed_or_none(fields, name)
    context = fields.get("input_context", list, optional=True)
    if context is not None and (
        len(context) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in context)
        or not 0 <= context[0] < context[1] <= INT64_MAX
    ):
        raise fields.fail(
            "input_context",
            f"field {fields.field('input_context')!r} must be null or [pipeline_id, pipelines] "
            "with 0 <= pipeline_id < pipelines",
        )
    example = fields.child("example_shuffle", optional=True)
    if example is not None:
        if _count(example, "buffer_size") < 1:
            raise example.fail("buffer_size", "field 'example_shuffle.buffer_size' must be >= 1")
        _seed_or_none(example, "seed", optional=False)
        example.get("reshuffle_each_iteration", bool)
    if fields.get("format_version", int) != VERSION:
        raise fields.fail(
            "format_version", f"field {fields.field('format_version')!r} must be {VERSION}"
        )


def _hex(fields: JsonFields, name: str) -> None:
    value = fields.get(name, str)
    if not _HEX32.fullmatch(value):
        raise fields.fail(name, f"field {fields.field(name)!r} must be 32 hex digits")


def _seed_or_none(fields: JsonFields, name: str, *, optional: bool = True) -> None:
    # Seeds are integers of any size, as TF takes them (specs/shuffle.md §1).
    value = fields.raw(name)
    if (value is None and optional) or (isinstance(value, int) and not isinstance(value, bool)):
        return
    what = "an integer or null" if optional else "an integer"
    raise fields.fail(name, f"field {fields.field(name)!r} must be {what}, got {preview(value)}")


# -- the expanded state ------------------------------------------------------------------


def _state(fields: JsonFields | None, summary: dict[str, Any]) -> dict[str, Any]:
    assert fields is not None
    plan = fields.child("plan")
    assert plan is not None
    _check_expanded_plan(plan)
    name = expanded_disagreement(summary, plan.document)
    if name is not None:
        raise CheckpointError(
            f"the expanded plan section does not match the plan summary (field {name!r}): the "
            "checkpoint was edited or damaged",
            field=f"state.plan.{name}",
        )
    interleave = fields.child("interleave")
    assert interleave is not None
    return {
        "fingerprint": plan.document,
        "interleave_position": _count(interleave, "position"),
        "cursor": _count(interleave, "cursor"),
        "block_counter": _count(interleave, "block_counter"),
        "next_input": _count(interleave, "next_input"),
        "inputs_done": interleave.get("inputs_done", bool),
        "slots": tuple(
            _slot(interleave, k, entry) for k, entry in enumerate(interleave.get("slots", list))
        ),
        "files": tuple(
            _file_entry(fields, k, entry) for k, entry in enumerate(fields.get("files", list))
        ),
    }


def _check_expanded_plan(fields: JsonFields) -> None:
    _identity(fields)
    lengths = fields.child("shard_lengths")
    assert lengths is not None
    for split in lengths.document:
        entry = lengths.child(split)
        assert entry is not None
        for k, value in enumerate(entry.get("lengths", list)):
            _count(entry, f"lengths[{k}]", value)
        _count(entry, "num_bytes")
        _string_or_null(entry, "template")
    for k, entry in enumerate(fields.get("files", list)):
        name = f"files[{k}]"
        if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)):
            raise fields.fail(
                name,
                f"field {fields.field(name)!r} must be [basename, skip, take, "
                f"examples_in_shard], got {preview(entry)}",
            )
        for value in entry[1:]:
            _count(fields, name, value)
    _config(fields)


def _slot(fields: JsonFields, k: int, entry: Any) -> tuple[int, int] | None:
    if entry is None:
        return None
    name = f"slots[{k}]"
    if not isinstance(entry, list) or len(entry) != 2:
        raise fields.fail(
            name,
            f"field {fields.field(name)!r} must be null or [file_index, next_record], got "
            f"{preview(entry)}",
        )
    return _count(fields, name, entry[0]), _count(fields, name, entry[1])


def _file_entry(fields: JsonFields, k: int, entry: Any) -> tuple[int, int, int]:
    name = f"files[{k}]"
    if not isinstance(entry, list) or len(entry) != 3:
        raise fields.fail(
            name,
            f"field {fields.field(name)!r} must be [file_index, consumed, remaining], got "
            f"{preview(entry)}",
        )
    first, consumed, remaining = (_count(fields, name, value) for value in entry)
    return first, consumed, remaining
