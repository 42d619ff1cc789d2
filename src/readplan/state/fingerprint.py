"""The plan fingerprint: what identifies a plan, its digest, and how two differ.

``specs/checkpoint.md`` ("Fingerprint") is the normative description.  Two plans with
equal fingerprints read the same records in the same order; a checkpoint carries its
plan's fingerprint so that resuming it into another plan is refused with every differing
field named.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from readplan.errors import CheckpointMismatchError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.config import ReadConfig
from readplan.planning.instructions import FileInstruction

__all__ = ["FORMAT_VERSION", "check_compatible", "differences", "digest", "fingerprint"]

# The checkpoint format version, recorded in the fingerprint as well: a plan section of
# another version must not compare equal by accident.
FORMAT_VERSION = 1

# Listing more differing files than this helps nobody; the count says the rest.
_MAX_LISTED_FILES = 20


def fingerprint(
    info: DatasetInfo,
    spec: str,
    instructions: Sequence[FileInstruction],
    config: ReadConfig,
    *,
    cycle_length: int,
    block_length: int,
) -> dict[str, Any]:
    """The fields that identify a plan; two plans with equal fingerprints read alike."""
    context = config.input_context
    shuffle = config.example_shuffle
    splits = {fi.split for fi in instructions if fi.split is not None}
    return {
        "dataset": info.name,
        "split": spec,
        "shard_lengths": {
            name: list(split.shard_lengths) for name, split in info.splits.items() if name in splits
        },
        "files": [
            [os.path.basename(fi.filename), fi.skip, fi.num_records, fi.examples_in_shard]
            for fi in instructions
        ],
        "cycle_length": cycle_length,
        "block_length": block_length,
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
        "format_version": FORMAT_VERSION,
    }


def digest(fields: Mapping[str, Any]) -> str:
    """A short SHA-256 of the canonical JSON of ``fields``."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def check_compatible(saved: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """Refuse a checkpoint of another plan, listing every differing field."""
    found = differences(dict(saved), dict(current))
    if found:
        listing = "\n".join(
            f"  {name}: checkpoint has {old!r}, this plan has {new!r}"
            for name, (old, new) in found.items()
        )
        raise CheckpointMismatchError(
            f"the checkpoint was taken from a different plan ({len(found)} "
            f"field(s) differ):\n{listing}\nResume with the plan that wrote it (same dataset "
            "version, split string and read configuration), or start a new run.",
            differences=found,
        )


def differences(old: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{field: (old, new)}`` for every field that differs, shards and files one by one."""
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
                    if len(out) > _MAX_LISTED_FILES:
                        break
            continue
        out[name] = (before, after)
    return out


def _shard_summary(lengths: Any) -> Any:
    if not isinstance(lengths, list):
        return lengths
    return f"{len(lengths)} shards, {sum(lengths)} examples"
