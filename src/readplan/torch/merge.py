"""``merge_loader_states``: one global state from the loader states of every rank
(``specs/reader.md`` §6, "Elastic resume")."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from readplan.errors import CheckpointError
from readplan.reading.ranks import STATE_KEY, merge_states, reader_bindings
from readplan.state.binding import FileBinding
from readplan.state.binding import to_json as bindings_to_json
from readplan.state.checkpoint import Checkpoint
from readplan.state.codec import FORMAT
from readplan.state.limits import MAX_STATE_DEPTH, check_bounds
from readplan.torch.dealing import LOADER_KEY, Dealing

__all__ = ["merge_loader_states"]

# Consumer frontiers further apart than this many epochs are out of step whatever the layout.
_MAX_EPOCHS_APART = 2


def merge_loader_states(states: Iterable[Any]) -> dict[str, Any]:
    """One global state from the saved states of every rank's loader (or dataset).

    ``states`` holds, per rank, a ``StatefulDataLoader.state_dict()`` (or the dataset's own
    ``state_dict()``); the consumer states nested in them (one per DataLoader worker of
    each rank) are merged into the state at the first position not yet delivered, from
    which any number of ranks and workers continues exactly: load it with
    ``dataset.load_state_dict(merged)`` before building the new loaders.  A loader that
    yields its items in plan order leaves a state that merges at any step; when some
    consumers delivered positions beyond that first one (workers collating batches of
    their own), :class:`~readplan.errors.CheckpointError` says which and what to do.
    """
    found: list[Mapping[str, Any]] = []
    for state in states:
        found.extend(_reader_states(state))
    if not found:
        raise CheckpointError(
            "merge_loader_states found no readplan state in the states given; pass the "
            "StatefulDataLoader.state_dict() (or dataset.state_dict()) of every rank",
            field="$",
        )
    if all(LOADER_KEY not in state for state in found):
        return merge_states(found)  # states of plain Readers
    return _merge_consumers(found)


def _merge_consumers(states: list[Mapping[str, Any]]) -> dict[str, Any]:
    if any(LOADER_KEY not in state for state in states):
        raise CheckpointError(
            "some states come from a ReadplanIterableDataset and some from plain Readers; "
            "merge the states of one loader layout",
            field=LOADER_KEY,
        )
    checkpoints = [Checkpoint.from_dict(dict(state)) for state in states]
    size = checkpoints[0].num_examples
    dealings = [Dealing.from_section(state[LOADER_KEY], size) for state in states]
    _check_one_layout(dealings, checkpoints)
    frontiers = [_key(c.epoch, c.position, size) for c in checkpoints]
    lowest = min(range(len(states)), key=frontiers.__getitem__)
    low = frontiers[lowest]
    ahead = {
        d.consumer: n
        for d, high in zip(dealings, frontiers)
        if (n := _owned_between(d, low, high)) > 0
    }
    if ahead:
        _refuse(checkpoints[lowest], dealings[0].consumers, ahead)
    files: dict[int, FileBinding] = {}
    for state in states:
        files.update(reader_bindings(state.get(STATE_KEY), None))
    section = {"rank": 0, "world_size": 1, "files": bindings_to_json(files.values())}
    return checkpoints[lowest].to_dict(extra={STATE_KEY: section})


def _check_one_layout(dealings: list[Dealing], checkpoints: list[Checkpoint]) -> None:
    counts = sorted({d.consumers for d in dealings})
    origins = sorted({(d.origin_epoch, d.origin_position) for d in dealings})
    if len(counts) != 1 or len(origins) != 1:
        raise CheckpointError(
            f"the states come from different loader layouts (consumer counts {counts}, "
            f"origins {origins}); merge the states of one run, saved at the same step",
            field=f"{LOADER_KEY}.consumers",
        )
    indices = sorted(d.consumer for d in dealings)
    if indices != list(range(counts[0])):
        missing = sorted(set(range(counts[0])) - set(indices))
        repeated = sorted({i for i in indices if indices.count(i) > 1})
        raise CheckpointError(
            f"merge_loader_states needs the state of every consumer 0..{counts[0] - 1} "
            f"(every DataLoader worker of every rank); missing {missing}, repeated "
            f"{repeated}: pass the loader state of every rank",
            field=f"{LOADER_KEY}.consumer",
        )
    if len({c.plan_digest for c in checkpoints}) != 1:
        raise CheckpointError(
            "the states were taken from different plans (their plan digests differ); merge "
            "the states of one job",
            field="plan_digest",
        )


def _key(epoch: int, position: int, size: int) -> tuple[int, int]:
    """Orders frontiers across epochs: the end of epoch ``e`` is the start of ``e + 1``."""
    return (epoch + 1, 0) if position >= size else (epoch, position)


def _owned_between(dealing: Dealing, low: tuple[int, int], high: tuple[int, int]) -> int:
    """The consumer's positions from ``low`` (inclusive) to ``high`` (exclusive)."""
    if high <= low:
        return 0
    if high[0] - low[0] > _MAX_EPOCHS_APART:
        return dealing.size * (high[0] - low[0] - 1) // dealing.consumers + 1
    size = dealing.size
    total = 0
    for epoch in range(low[0], high[0] + 1):
        begin = low[1] if epoch == low[0] else 0
        end = high[1] if epoch == high[0] else size
        total += dealing.owned(epoch, begin, end)
    return total


def _refuse(lowest: Checkpoint, consumers: int, ahead: dict[int, int]) -> None:
    listing = ", ".join(f"consumer {c}: {n}" for c, n in sorted(ahead.items()))
    raise CheckpointError(
        f"the consumers did not save at one point of the order: every position below "
        f"{lowest.position} of epoch {lowest.epoch} was delivered, but some of the "
        f"{consumers} consumers (consumer = worker * ranks + rank) also delivered positions "
        f"beyond it ({listing}); merging would deliver those again. This happens when "
        "DataLoader workers collate batches of their own (the DataLoader's batch_size, or "
        "the dataset's, with num_workers > 1): then save after a number of steps that is a "
        "multiple of num_workers, or read with batch_size=None (every step of such a loader "
        "merges), or resume in the same layout without merging "
        "(StatefulDataLoader.load_state_dict(state))",
        field=f"{LOADER_KEY}.consumer",
    )


def _reader_states(value: Any) -> Iterator[Mapping[str, Any]]:
    """The reader states nested in a loader's state, in order, found without recursion (a
    state nested 100,000 levels deep is refused by its depth, not by Python's stack)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if not isinstance(node, Mapping | list | tuple):
            continue
        if depth > MAX_STATE_DEPTH:
            check_bounds(value, "a loader state")  # raises, naming the bound
        if isinstance(node, Mapping):
            if node.get("format") == FORMAT and STATE_KEY in node:
                yield node
                continue
            children = list(node.values())
        else:
            children = list(node)
        pending.extend((child, depth + 1) for child in reversed(children))
