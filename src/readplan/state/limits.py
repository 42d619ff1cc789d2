"""Bounds on state input, which may come from anywhere (``specs/checkpoint.md`` §5).

A saved state (``Reader.save``, ``Checkpoint.save``) is about a kilobyte, plus some 30
bytes per shard a reader holds open, and nests a handful of levels.  A file far larger, or
a document nested far deeper, is not one: it is refused with
:class:`~readplan.errors.CheckpointError` before it can take memory or the interpreter's
stack.  A state file is read up to :func:`max_state_bytes` bytes (16 MiB unless raised with
the ``READPLAN_MAX_STATE_BYTES`` environment variable or the ``max_bytes`` argument of the
functions that read one); a document is checked to nest at most :data:`MAX_STATE_DEPTH`
levels, and to hold no integer of more than :data:`MAX_STATE_INT_BITS` bits, before any
field of it is used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from readplan import storage
from readplan.errors import CheckpointError, ConfigError

__all__ = [
    "DEFAULT_MAX_STATE_BYTES",
    "MAX_STATE_BYTES_VARIABLE",
    "MAX_STATE_DEPTH",
    "MAX_STATE_INT_BITS",
    "check_bounds",
    "max_state_bytes",
    "read_state_file",
]

DEFAULT_MAX_STATE_BYTES = 16 << 20
MAX_STATE_BYTES_VARIABLE = "READPLAN_MAX_STATE_BYTES"
# The deepest state (an expanded checkpoint's instruction list in a loader state in a
# list of ranks' states) nests under ten levels.
MAX_STATE_DEPTH = 64
# Positions and counts are int64; seeds may be any size TF folds, but none needs this many.
MAX_STATE_INT_BITS = 1024


def max_state_bytes(given: object = None) -> int:
    """The bound on a state file's size: ``given``, else ``READPLAN_MAX_STATE_BYTES``, else
    16 MiB."""
    source, value = "max_bytes", given
    if given is None:
        text = os.environ.get(MAX_STATE_BYTES_VARIABLE)
        if text is None:
            return DEFAULT_MAX_STATE_BYTES
        source = MAX_STATE_BYTES_VARIABLE
        value = int(text) if text.strip().isdigit() and len(text) < 20 else text
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value < 1 << 62:
        raise ConfigError(
            f"{source}={value!r:.40} is not a number of bytes: the bound on a state file's "
            "size is a positive integer (default 16 MiB)",
            field=source,
            value=value,
        )
    return value


def read_state_file(
    path: storage.PathLike,
    *,
    storage_options: storage.StorageOptions = None,
    max_bytes: int | None = None,
) -> bytes:
    """The bytes of the state file at ``path`` (local or URL), refused past the bound."""
    limit = max_state_bytes(max_bytes)
    data = storage.read_capped(path, limit, storage_options=storage_options)
    if len(data) > limit:
        raise CheckpointError(
            f"{storage.to_str(path)}: more than {limit} bytes, which no saved state is (a "
            "state is about a kilobyte, some 30 bytes more per open shard); if it really is "
            f"one, raise the bound with max_bytes= or {MAX_STATE_BYTES_VARIABLE}",
            field="$",
        )
    return data


def check_bounds(document: Any, what: str = "a checkpoint") -> None:
    """Refuse a document whose lists and objects nest deeper than :data:`MAX_STATE_DEPTH`,
    or that holds an integer of more than :data:`MAX_STATE_INT_BITS` bits (which Python
    cannot even print), without recursion: the walk visits each value once."""
    pending: list[tuple[Any, int]] = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, int) and value.bit_length() > MAX_STATE_INT_BITS:
            raise CheckpointError(
                f"{what} holds an integer of {value.bit_length()} bits; a state's numbers "
                f"have at most {MAX_STATE_INT_BITS}: this one was damaged or made up",
                field="$",
            )
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth > MAX_STATE_DEPTH:
            raise CheckpointError(
                f"{what} nests lists and objects more than {MAX_STATE_DEPTH} levels deep; a "
                "saved state nests a few levels: this one was damaged or made up",
                field="$",
            )
        pending.extend((child, depth + 1) for child in children)
