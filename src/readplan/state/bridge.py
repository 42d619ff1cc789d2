"""The bridge back to TFDS: FileInstructions that continue a checkpoint's epoch.

``specs/checkpoint.md`` §6 is normative.  :func:`unread` is TFDS's own recipe (every
file's unread tail, exact with ``cycle_length=1``); :func:`continuation` is the exact
tf.data continuation for any cycle and block length.  Both work on ``(file_index, skip,
take)`` triples; :func:`saved_instructions` turns them into FileInstructions named from
the checkpoint's own plan section.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from readplan.errors import CheckpointError
from readplan.planning.instructions import FileInstruction

if TYPE_CHECKING:
    from readplan.state.checkpoint import ExpandedCheckpoint

__all__ = ["continuation", "never_empty", "saved_instructions", "unread"]

Triple = tuple[int, int, int]


def unread(state: ExpandedCheckpoint) -> list[Triple]:
    """``(file_index, skip, take)`` of every file's unread tail, in input order."""
    planned = state.fingerprint["files"]
    return [
        (file_index, planned[file_index][1] + consumed, remaining)
        for file_index, consumed, remaining in state.files
        if remaining
    ]


def never_empty(state: ExpandedCheckpoint, triples: list[Triple]) -> list[Triple]:
    """``triples``, or one instruction that reads nothing when no record remains.

    TFDS refuses an empty instruction list (tf.data cannot type an empty list of file
    names) but reads ``skip = examples_in_shard, take = 0`` as an empty dataset.
    """
    if triples or not state.files:
        return triples
    first = state.files[0][0]
    return [(first, state.fingerprint["files"][first][3], 0)]


def continuation(checkpoint: ExpandedCheckpoint) -> list[Triple]:
    """``(file_index, skip, take)`` of the exact tf.data continuation.

    The list rotates the slots so the cursor's slot comes first, splits a partly read
    block into a head that ends the block and a tail that the same slot opens next
    round, and uses empty (take 0) entries where the original slot would spend a visit
    producing nothing.
    """
    if checkpoint.example_buffer is not None:
        raise CheckpointError(
            "no instruction list reproduces a plan with an example-level shuffle: tf.data "
            "cannot be given the buffer's contents and generator position; resume with "
            "readplan's reader instead",
            field="example_buffer",
        )
    planned = checkpoint.fingerprint["files"]
    block = int(checkpoint.fingerprint["block_length"])
    cycle = len(checkpoint.slots)
    unopened = [
        (file_index, planned[file_index][1] + consumed, remaining)
        for file_index, consumed, remaining in checkpoint.files[checkpoint.next_input :]
    ]
    entries: list[Triple] = []
    tail: Triple | None = None
    placeholder = (checkpoint.files[0][0], 0, 0) if checkpoint.files else None
    for j in range(cycle):
        slot = checkpoint.slots[(checkpoint.cursor + j) % cycle]
        if slot is None:
            if not checkpoint.inputs_done and unopened:
                entries.append(unopened.pop(0))
            elif placeholder is not None:
                entries.append(placeholder)
            continue
        file_index, offset = slot
        remaining = planned[file_index][1] + planned[file_index][2] - offset
        if j == 0 and checkpoint.block_counter:
            # The head ends the partly read block.  When the file's records last at
            # least to the block's end, the original slot keeps the file for its next
            # visit, so the tail (possibly empty: the visit that finds the end) must be
            # what that slot opens next round.
            head = min(remaining, block - checkpoint.block_counter)
            entries.append((file_index, offset, head))
            if remaining >= block - checkpoint.block_counter:
                tail = (file_index, offset + head, remaining - head)
        else:
            entries.append((file_index, offset, remaining))
    if tail is not None:
        entries.append(tail)
    entries.extend(unopened)
    while entries and entries[-1][2] == 0 and tail is None:
        entries.pop()
    return never_empty(checkpoint, entries)


def saved_instructions(
    fields: Mapping[str, Any], triples: Sequence[Triple], data_dir: str | None
) -> list[FileInstruction]:
    """FileInstructions of ``triples`` named from the plan section ``fields``.

    Names are the planned base names, joined to ``data_dir`` when given.
    """
    out = []
    for file_index, skip, take in triples:
        name, _, _, examples_in_shard = fields["files"][file_index]
        split, shard = _split_and_shard(fields, file_index)
        filename = name if data_dir is None else os.path.join(data_dir, name)
        out.append(
            FileInstruction(filename, skip, take, examples_in_shard, split=split, shard_index=shard)
        )
    return out


def _split_and_shard(fields: Mapping[str, Any], file_index: int) -> tuple[str | None, int | None]:
    name = fields["files"][file_index][0]
    prefix = f"{fields['dataset']}-"
    for split, entry in fields["shard_lengths"].items():
        lengths = entry["lengths"]
        stem = f"{prefix}{split}."
        if name.startswith(stem):
            tail = name.rsplit("-", 3)
            if len(tail) == 4 and tail[-2] == "of" and tail[-3].isdigit():
                shard = int(tail[-3])
                if shard < len(lengths):
                    return split, shard
    return None, None
