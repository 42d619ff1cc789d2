"""A reader's arguments, checked before any file is opened (``specs/reader.md`` §1), and
saved states read back from disk."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from readplan._internal.validate import is_int
from readplan.errors import CheckpointError, ConfigError
from readplan.plan import ReadPlan
from readplan.state.codec import parse_json
from readplan.state.limits import check_bounds, read_state_file
from readplan.storage import is_remote

__all__ = [
    "any_remote",
    "check_batching",
    "check_epochs",
    "check_files_reachable",
    "check_packed",
    "check_rank",
    "read_state",
]


def check_epochs(epochs: object) -> None:
    if epochs is not None and (not is_int(epochs) or epochs < 1):
        raise ConfigError(
            f"epochs must be a positive integer (epochs 0..epochs-1 are read) or None "
            f"(read forever), got {epochs!r}",
            field="epochs",
            value=epochs,
        )


def check_rank(rank: object, world_size: object) -> None:
    if not is_int(world_size) or world_size < 1:
        raise ConfigError(
            f"world_size must be a positive integer, got {world_size!r}",
            field="world_size",
            value=world_size,
        )
    if not is_int(rank) or not 0 <= rank < world_size:
        raise ConfigError(
            f"rank must be an integer in 0..{world_size - 1} for world_size {world_size}, "
            f"got {rank!r}",
            field="rank",
            value=rank,
        )


def check_batching(batch_size: object, drop_remainder: object) -> None:
    if batch_size is not None and (not is_int(batch_size) or batch_size < 1):
        raise ConfigError(
            f"batch_size must be a positive integer (or None: batches as read), got {batch_size!r}",
            field="batch_size",
            value=batch_size,
        )
    if not isinstance(drop_remainder, bool):
        raise ConfigError(
            f"drop_remainder must be True or False, got {drop_remainder!r}",
            field="drop_remainder",
            value=drop_remainder,
        )


def check_packed(packed: object, *, decoding: bool) -> None:
    if not isinstance(packed, bool):
        raise ConfigError(
            f"packed must be True or False, got {packed!r}", field="packed", value=packed
        )
    if packed and decoding:
        raise ConfigError(
            "packed=True packs raw records; this reader decodes them (decode=None packs)",
            field="packed",
            value=packed,
        )


def read_state(
    path: str, storage_options: Mapping[str, Any] | None = None, *, max_bytes: int | None = None
) -> Mapping[str, Any]:
    """A state written by :meth:`Reader.save` (or ``Checkpoint.save``), as a mapping; ``path``
    may be a URL (``specs/storage.md``).  At most ``max_bytes`` are read (default 16 MiB, or
    ``READPLAN_MAX_STATE_BYTES``; ``readplan.state.limits``), and the JSON may nest only as
    deep as a state does."""
    data = read_state_file(path, storage_options=storage_options, max_bytes=max_bytes)
    try:
        state = parse_json(data)
        check_bounds(state, "a saved reader state")
    except CheckpointError as err:
        raise CheckpointError(
            f"{path}: not a saved reader state (Reader.save writes JSON): {err}", field="$"
        ) from err
    if not isinstance(state, Mapping):
        raise CheckpointError(
            f"{path}: not a saved reader state: it holds a JSON {type(state).__name__}, not an "
            "object",
            field="$",
        )
    return state


def check_files_reachable(plan: ReadPlan, data_dir: str | None) -> None:
    """A plan whose files are bare names (a catalog layout) needs the folder they are in."""
    table = plan.instructions
    if data_dir is not None or plan.info.data_dir is not None or not len(table):
        return
    first = table.filename(0)
    if "/" not in first and "\\" not in first:
        raise ConfigError(
            f"the plan of {plan.info.name!r} names its shard files without a folder ({first}): "
            "its layout has no data_dir (a catalog layout, DatasetInfo.from_catalog). Pass "
            "Reader(plan, data_dir=<the folder holding the shard files>), or plan with "
            "DatasetInfo.load(<that folder>)",
            field="data_dir",
            value=None,
        )


def any_remote(plan: ReadPlan, data_dir: str | None, path_of: Callable[[int], str]) -> bool:
    """Whether any file is a storage URL (``path_of(k)``: where file ``k`` is opened).  The
    files share one directory (``data_dir``, or the dataset's when the names are its shard
    names), so one of them tells; names from a sort function are each looked at."""
    sorted_by_user = plan.config.experimental_interleave_sort_fn is not None
    shared = data_dir is not None or not sorted_by_user
    files = range(1 if shared else len(plan.instructions))
    return any(is_remote(path_of(k)) for k in files)
