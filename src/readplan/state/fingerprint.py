"""The plan fingerprint: what identifies a plan and its data, its digest, and how two differ.

``specs/checkpoint.md`` §4 ("Fingerprint") is the normative description.  Two plans with
equal fingerprints read the same records of the same dataset in the same order.  The
*expanded* fingerprint lists every file instruction and shard length; the *summary* that
every checkpoint carries replaces each list by its count, total and digest, so its size
does not depend on the number of files while the report of differing fields stays
field by field.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from readplan.errors import CheckpointMismatchError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.naming import format_shard_name
from readplan.metadata.split_info import SplitInfo
from readplan.planning.config import ReadConfig
from readplan.planning.instructions import FileInstruction, InstructionTable

__all__ = [
    "FORMAT_VERSION",
    "check_compatible",
    "differences",
    "digest",
    "expanded_disagreement",
    "expanded_fingerprint",
    "files_digest",
    "lengths_digest",
    "summary",
]

# The checkpoint format version, recorded in the fingerprint as well: a plan section of
# another version must not compare equal by accident.
FORMAT_VERSION = 2


def digest(fields: Any) -> str:
    """The first 32 hex digits of the SHA-256 of the canonical JSON of ``fields``."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def lengths_digest(lengths: Sequence[int] | np.ndarray) -> str:
    """The digest of a list of shard lengths: SHA-256 of their little-endian int64 bytes."""
    # Hashed through the buffer protocol: a copy of 10^6 lengths would cost more than the hash.
    return hashlib.sha256(np.ascontiguousarray(lengths, dtype="<i8").data).hexdigest()[:32]


def files_digest(table: InstructionTable) -> str:
    """The digest of an instruction table (``specs/checkpoint.md`` §4), from its columns.

    SHA-256 of the split names joined by newlines, a zero byte, the base names of the
    instructions that name no shard of a split (joined by newlines), a zero byte, then the
    little-endian int64 bytes of the ``[split, shard_index, skip, take, examples_in_shard]``
    rows.  A shard's file name follows from its split and index (and the split's template,
    which the summary holds), so no per-file name is formatted for the usual plans.
    """
    unnamed = np.flatnonzero((table.split < 0) | (table.shard_index < 0)).tolist()
    hasher = hashlib.sha256("\n".join(table.split_names).encode("utf-8"))
    hasher.update(b"\x00")
    hasher.update("\n".join(table.filename(k).rpartition("/")[2] for k in unnamed).encode())
    hasher.update(b"\x00")
    columns = (table.split, table.shard_index, table.skip, table.take, table.examples_in_shard)
    hasher.update(np.stack(columns, axis=1, dtype="<i8").data)
    return hasher.hexdigest()[:32]


def _config_fields(
    config: ReadConfig, cycle_length: int, block_length: int, file_order_frozen: bool
) -> dict[str, Any]:
    context = config.input_context
    shuffle = config.example_shuffle
    # Only a plan whose later epochs TFDS's autocache freezes carries the key, so the
    # fingerprints of every other plan are what they were before it was modelled.
    frozen = {"file_order": "epoch 0 (TFDS autocache)"} if file_order_frozen else {}
    return frozen | {
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


def _identity(info: DatasetInfo, spec: str) -> dict[str, Any]:
    """The dataset (name, config, version) and the split string."""
    return {
        "dataset": info.name,
        "config": info.config_name,
        "version": info.version,
        "split": spec,
    }


def _read_splits(info: DatasetInfo, table: InstructionTable) -> list[str]:
    return [name for name in info.splits if name in table.split_names]


def summary(
    info: DatasetInfo,
    spec: str,
    instructions: InstructionTable,
    config: ReadConfig,
    *,
    cycle_length: int,
    block_length: int,
    file_order_frozen: bool = False,
) -> dict[str, Any]:
    """The compact fingerprint a checkpoint carries, from the instruction table's columns:
    its size does not grow with the files, and no per-file Python work builds it."""
    return {
        **_identity(info, spec),
        "shard_lengths": {
            name: _lengths_summary(info.splits[name]) for name in _read_splits(info, instructions)
        },
        "files": {
            "count": len(instructions),
            "records": int(instructions.num_records.sum()),
            "digest": files_digest(instructions),
        },
        **_config_fields(config, cycle_length, block_length, file_order_frozen),
    }


def _lengths_summary(split: SplitInfo) -> dict[str, Any]:
    return {
        "shards": split.num_shards,
        "examples": split.num_examples,
        "num_bytes": split.num_bytes,
        "template": split.filepath_template,
        "digest": lengths_digest(split.shard_lengths),
    }


def expanded_fingerprint(
    info: DatasetInfo,
    spec: str,
    instructions: InstructionTable,
    config: ReadConfig,
    *,
    cycle_length: int,
    block_length: int,
    file_order_frozen: bool = False,
) -> dict[str, Any]:
    """The self-describing fingerprint: the summary's fields with the lists themselves
    (``O(files)``, built on request)."""
    return {
        **_identity(info, spec),
        "shard_lengths": {
            name: {
                "lengths": list(info.splits[name].shard_lengths),
                "num_bytes": info.splits[name].num_bytes,
                "template": info.splits[name].filepath_template,
            }
            for name in _read_splits(info, instructions)
        },
        "files": [
            [_record_file_name(info, fi), fi.skip, fi.num_records, fi.examples_in_shard]
            for fi in instructions
        ],
        **_config_fields(config, cycle_length, block_length, file_order_frozen),
    }


def _record_file_name(info: DatasetInfo, fi: FileInstruction) -> str:
    """The shard's name as a TFRecord dataset names it.

    The container does not change which records a plan reads in which order, so a dataset
    converted to TBL v2 (fileFormat "tbl") keeps the expanded fingerprint of its TFRecord
    original, as it keeps the summary (which names no file).
    """
    if info.file_format == "tfrecord" or fi.split is None or fi.shard_index is None:
        return os.path.basename(fi.filename)
    split = info.split(fi.split)
    return format_shard_name(
        split.filepath_template,
        dataset=info.name,
        split=fi.split,
        file_format="tfrecord",
        shard_index=fi.shard_index,
        num_shards=split.num_shards,
    )


def expanded_disagreement(summary: Mapping[str, Any], fields: Mapping[str, Any]) -> str | None:
    """The first field where an expanded fingerprint (already type-checked) contradicts
    ``summary``, or ``None``.  The instruction list's digest needs the plan's columns, so
    the list is checked here by count and records, and in full against the plan on resume."""
    for name in sorted(set(summary) | set(fields)):
        if name not in ("shard_lengths", "files") and summary.get(name) != fields.get(name):
            return name
    splits = {
        name: {
            "shards": len(entry["lengths"]),
            "examples": sum(entry["lengths"]),
            "num_bytes": entry["num_bytes"],
            "template": entry["template"],
            "digest": lengths_digest(entry["lengths"]),
        }
        for name, entry in fields["shard_lengths"].items()
    }
    if splits != summary["shard_lengths"]:
        return "shard_lengths"
    files = fields["files"]
    listed = {"count": len(files), "records": sum(entry[2] for entry in files)}
    if listed != {key: summary["files"][key] for key in listed}:
        return "files"
    return None


def check_compatible(saved: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """Refuse a checkpoint of another plan or dataset, listing every differing field."""
    found = differences(saved, current)
    if found:
        listing = "\n".join(
            f"  {name}: checkpoint has {old!r}, this plan has {new!r}"
            for name, (old, new) in found.items()
        )
        raise CheckpointMismatchError(
            f"the checkpoint was taken from a different plan or dataset ({len(found)} "
            f"field(s) differ):\n{listing}\nResume with the plan that wrote it (same dataset, "
            "config and version, split string and read configuration), or start a new run.",
            differences=found,
        )


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{dotted field: (old, new)}`` for every leaf field that differs."""
    out: dict[str, tuple[Any, Any]] = {}
    _collect(old, new, "", out)
    return out


def _collect(old: Any, new: Any, prefix: str, out: dict[str, tuple[Any, Any]]) -> None:
    if old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for name in sorted(set(old) | set(new), key=str):
            _collect(old.get(name), new.get(name), f"{prefix}{name}.", out)
        return
    out[prefix[:-1]] = (old, new)
