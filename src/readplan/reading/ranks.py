"""Rank states: merging the states of all ranks of an elastic group into one global
state that any number of ranks resumes (``specs/reader.md``, "Ranks")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from readplan._internal.validate import is_int, preview
from readplan.errors import CheckpointError
from readplan.state.binding import FileBinding, bindings_from_json
from readplan.state.binding import to_json as bindings_to_json
from readplan.state.checkpoint import Checkpoint

__all__ = [
    "STATE_KEY",
    "count_below",
    "first_share",
    "merge_states",
    "owner",
    "reader_bindings",
    "remaining",
    "resumed_position",
]

STATE_KEY = "reader"
"""The section a reader adds to the checkpoint document in its state:
``{"rank", "world_size", "files"}`` (``files``: the data binding, ``specs/checkpoint.md`` §4)."""


def _mapping(state: object) -> dict[str, Any]:
    if not isinstance(state, Mapping):
        raise CheckpointError(
            f"merge_states takes the states of every rank (mappings from state_dict()), got "
            f"a {type(state).__name__}: {preview(state)}",
            field="$",
        )
    return dict(state)


def merge_states(states: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One global state from the states of all ranks of a group (``specs/reader.md``).

    The result is the checkpoint at the lowest position no rank has delivered, marked as
    a one-rank state: any number of ranks can continue from it.  It is exact when every
    rank saved after the same number of deliveries since the group started (lockstep);
    otherwise the records some ranks delivered beyond that position would be delivered
    again, and :class:`~readplan.errors.CheckpointError` says which and how many.
    """
    listed = [_mapping(state) for state in states]
    if not listed:
        raise CheckpointError("merge_states needs the states of every rank, got none", field="$")
    checkpoints = [Checkpoint.from_dict(state) for state in listed]
    owners = [owner(state.get(STATE_KEY)) or (0, 1) for state in listed]
    _check_same_group(owners, checkpoints)
    size = checkpoints[0].num_examples
    world_size = owners[0][1]
    keys = [_key(c.epoch, c.position, size) for c in checkpoints]
    lowest = min(range(len(keys)), key=keys.__getitem__)
    excess = {
        rank: _shares(rank, world_size, size, keys[lowest], keys[k])
        for k, (rank, _) in enumerate(owners)
    }
    ahead = {rank: n for rank, n in sorted(excess.items()) if n}
    if ahead:
        listing = ", ".join(f"rank {rank}: {n}" for rank, n in ahead.items())
        position = checkpoints[lowest]
        raise CheckpointError(
            f"the ranks did not save in lockstep: every position below {position.position} "
            f"of epoch {position.epoch} was delivered, but some ranks also delivered positions "
            f"beyond it ({listing}); resuming from it would deliver those again. Save every "
            "rank's state after the same number of deliveries",
            field=f"{STATE_KEY}.rank",
        )
    # Every rank's data binding: the files held at each rank's own position.
    files: dict[int, FileBinding] = {}
    for state in listed:
        section = state.get(STATE_KEY)
        files.update(reader_bindings(section, None))
    section = {"rank": 0, "world_size": 1, "files": bindings_to_json(files.values())}
    return checkpoints[lowest].to_dict(extra={STATE_KEY: section})


def _check_same_group(owners: list[tuple[int, int]], checkpoints: list[Checkpoint]) -> None:
    sizes = sorted({w for _, w in owners})
    if len(sizes) != 1:
        raise CheckpointError(
            f"the states come from groups of different sizes {sizes}; merge the states of "
            "one group, saved at the same time",
            field=f"{STATE_KEY}.world_size",
        )
    ranks = sorted(rank for rank, _ in owners)
    if ranks != list(range(sizes[0])):
        missing = sorted(set(range(sizes[0])) - set(ranks))
        repeated = sorted({r for r in ranks if ranks.count(r) > 1})
        raise CheckpointError(
            f"merge_states needs exactly one state per rank 0..{sizes[0] - 1}; missing "
            f"{missing}, repeated {repeated}",
            field=f"{STATE_KEY}.rank",
        )
    digests = {c.plan_digest for c in checkpoints}
    if len(digests) != 1:
        raise CheckpointError(
            "the states were taken from different plans (their plan digests differ); merge "
            "the states of one job",
            field="plan_digest",
        )


def _key(epoch: int, position: int, size: int) -> tuple[int, int]:
    """Orders states across epochs: the end of epoch ``e`` is the start of ``e + 1``."""
    return (epoch + 1, 0) if position >= size else (epoch, position)


def _shares(
    rank: int, world_size: int, size: int, low: tuple[int, int], high: tuple[int, int]
) -> int:
    """Positions of ``rank`` from ``low`` (inclusive) to ``high`` (exclusive), epochs spanned."""

    def below(position: int) -> int:
        return count_below(position, rank, world_size)

    if low[0] == high[0]:
        return below(high[1]) - below(low[1])
    whole = (high[0] - low[0] - 1) * below(size)
    return below(size) - below(low[1]) + whole + below(high[1])


def count_below(position: int, rank: int, world_size: int) -> int:
    """Positions ``p < position`` of ``rank``: those with ``p % world_size == rank``."""
    return max(0, (position - rank + world_size - 1) // world_size)


def first_share(position: int, rank: int, world_size: int, size: int) -> int:
    """The first position from ``position`` on that ``rank`` delivers, or ``size`` (the
    epoch's end) when there is none."""
    share = position + (rank - position) % world_size
    return min(share, size)


def resumed_position(
    checkpoint: Checkpoint,
    saved_by: tuple[int, int] | None,
    rank: int,
    world_size: int,
    size: int,
) -> int:
    """Where ``rank`` of ``world_size`` continues from ``checkpoint`` (of an epoch of ``size``
    positions), saved by rank ``saved_by`` (``(rank, world_size)``; ``None`` for a checkpoint
    or a merged state, which any rank continues from its first position after it)."""
    position = checkpoint.position
    if saved_by is None or saved_by[1] == 1:
        return first_share(position, rank, world_size, size)
    if saved_by != (rank, world_size):
        raise CheckpointError(
            f"this state belongs to rank {saved_by[0]} of {saved_by[1]}; it cannot be restored "
            f"by rank {rank} of {world_size} on its own. Gather the states of "
            "all ranks, merge them with readplan.merge_states(states), and load "
            "the result in every new rank",
            field=f"{STATE_KEY}.rank",
        )
    if position != checkpoint.num_examples and position % world_size != rank:
        raise CheckpointError(
            f"position {position} is not one of rank {rank}'s positions (those equal "
            f"to {rank} modulo {world_size}): the state was edited or damaged",
            field="position",
        )
    return position


def owner(reader: object) -> tuple[int, int] | None:
    if reader is None:
        return None
    if not isinstance(reader, Mapping):
        raise CheckpointError(
            f"{STATE_KEY!r} must be an object {{rank, world_size}}, got {preview(reader)}",
            field=STATE_KEY,
        )
    rank, world_size = reader.get("rank"), reader.get("world_size")
    if not (is_int(rank) and is_int(world_size) and 0 <= rank < world_size):
        raise CheckpointError(
            f"{STATE_KEY} must hold integers 0 <= rank < world_size, got rank={rank!r}, "
            f"world_size={world_size!r}",
            field=STATE_KEY,
        )
    return rank, world_size


def reader_bindings(reader: object, num_files: int | None) -> dict[int, FileBinding]:
    """The data binding of a state's reader section (none without one); ``num_files``, when
    given, bounds the file indices."""
    if not isinstance(reader, Mapping) or "files" not in reader:
        return {}
    bindings = bindings_from_json(reader["files"], f"{STATE_KEY}.files")
    beyond = [index for index in bindings if num_files is not None and index >= num_files]
    if beyond:
        raise CheckpointError(
            f"{STATE_KEY}.files names file {beyond[0]}, but the plan has {num_files} files: the "
            "state was edited or damaged",
            field=f"{STATE_KEY}.files",
        )
    return bindings


def remaining(epochs: int, epoch: int, position: int, size: int, rank: int, world_size: int) -> int:
    """Positions ``rank`` delivers from ``position`` of ``epoch`` to the end of ``epochs``
    epochs of ``size`` positions."""
    if epoch >= epochs:
        return 0
    per_epoch = count_below(size, rank, world_size)
    first = per_epoch - count_below(position, rank, world_size)
    return first + (epochs - epoch - 1) * per_epoch
