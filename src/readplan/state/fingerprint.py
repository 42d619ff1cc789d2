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
from readplan.planning.config import ReadConfig
from readplan.planning.instructions import FileInstruction

__all__ = [
    "FORMAT_VERSION",
    "check_compatible",
    "differences",
    "digest",
    "expanded_fingerprint",
    "files_digest",
    "instruction_numbers",
    "lengths_digest",
    "summary",
    "summary_of_expanded",
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
    data = np.ascontiguousarray(lengths, dtype="<i8").tobytes()
    return hashlib.sha256(data).hexdigest()[:32]


def files_digest(basenames: Sequence[str], numbers: np.ndarray) -> str:
    """The digest of an instruction list (``specs/checkpoint.md`` §4).

    SHA-256 of the base names joined by newlines, a zero byte, then the little-endian int64
    bytes of the ``(files, 3)`` array of ``[skip, take, examples_in_shard]`` rows.
    """
    hasher = hashlib.sha256("\n".join(basenames).encode("utf-8"))
    hasher.update(b"\x00")
    hasher.update(np.ascontiguousarray(numbers, dtype="<i8").tobytes())
    return hasher.hexdigest()[:32]


def _config_fields(config: ReadConfig, cycle_length: int, block_length: int) -> dict[str, Any]:
    context = config.input_context
    shuffle = config.example_shuffle
    return {
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


def _read_splits(info: DatasetInfo, instructions: Sequence[FileInstruction]) -> list[str]:
    names = {fi.split for fi in instructions if fi.split is not None}
    return [name for name in info.splits if name in names]


def summary(
    info: DatasetInfo,
    spec: str,
    instructions: Sequence[FileInstruction],
    config: ReadConfig,
    *,
    cycle_length: int,
    block_length: int,
    numbers: np.ndarray | None = None,
) -> dict[str, Any]:
    """The compact fingerprint a checkpoint carries; its size does not grow with the files.

    ``numbers``, the ``(files, 3)`` int64 array of ``[skip, take, examples_in_shard]``
    rows, may be passed when the caller already holds it.
    """
    if numbers is None:
        numbers = instruction_numbers(instructions)
    basenames = [fi.filename.rpartition("/")[2] for fi in instructions]
    return {
        **_identity(info, spec),
        "shard_lengths": {
            name: _lengths_summary(info.splits[name].shard_lengths, info.splits[name].num_bytes)
            for name in _read_splits(info, instructions)
        },
        "files": _files_summary(basenames, numbers),
        **_config_fields(config, cycle_length, block_length),
    }


def instruction_numbers(instructions: Sequence[FileInstruction]) -> np.ndarray:
    """The ``(files, 3)`` int64 array of ``[skip, take, examples_in_shard]`` rows."""
    return np.array(
        [(fi.skip, fi.num_records, fi.examples_in_shard) for fi in instructions], dtype=np.int64
    ).reshape(-1, 3)


def _files_summary(basenames: Sequence[str], numbers: np.ndarray) -> dict[str, Any]:
    return {
        "count": len(basenames),
        "records": int(numbers[:, 1].sum()),
        "digest": files_digest(basenames, numbers),
    }


def _lengths_summary(lengths: Sequence[int], num_bytes: int) -> dict[str, Any]:
    return {
        "shards": len(lengths),
        "examples": int(sum(lengths)),
        "num_bytes": num_bytes,
        "digest": lengths_digest(lengths),
    }


def expanded_fingerprint(
    info: DatasetInfo,
    spec: str,
    instructions: Sequence[FileInstruction],
    config: ReadConfig,
    *,
    cycle_length: int,
    block_length: int,
) -> dict[str, Any]:
    """The self-describing fingerprint: the summary's fields with the lists themselves."""
    return {
        **_identity(info, spec),
        "shard_lengths": {
            name: {
                "lengths": list(info.splits[name].shard_lengths),
                "num_bytes": info.splits[name].num_bytes,
            }
            for name in _read_splits(info, instructions)
        },
        "files": [
            [os.path.basename(fi.filename), fi.skip, fi.num_records, fi.examples_in_shard]
            for fi in instructions
        ],
        **_config_fields(config, cycle_length, block_length),
    }


def summary_of_expanded(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The summary an expanded fingerprint (already type-checked) stands for."""
    files = fields["files"]
    numbers = np.array([entry[1:] for entry in files], dtype=np.int64).reshape(-1, 3)
    out = dict(fields)
    out["shard_lengths"] = {
        name: _lengths_summary(entry["lengths"], entry["num_bytes"])
        for name, entry in fields["shard_lengths"].items()
    }
    out["files"] = _files_summary([entry[0] for entry in files], numbers)
    return out


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
