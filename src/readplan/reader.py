"""The reader: a plan's records, from the shard files, in exactly the plan's order.

``specs/reader.md`` is normative.  A :class:`Reader` follows ``plan.epoch(e)`` position by
position, epoch after epoch.  It opens a shard when the plan's interleave first reads from
it and closes it after the plan's last read from it, so no more files are open than the
interleave has slots; within a file it reads records in runs, each run streamed from where
the previous one ended or found by seeking (index sidecar) or by a header walk, so no
payload is read that is not delivered.

Its state is a checkpoint (``specs/checkpoint.md``) plus the rank: restoring it seeks
straight to the next record, whatever the position.  In elastic mode rank ``r`` of ``w``
delivers the positions ``p`` with ``p mod w == r`` of one global order, and
:func:`merge_states` turns the states of all ranks, saved in lockstep, into one global
state from which any number of ranks continues exactly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice, pairwise
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from readplan import example, tfrecord
from readplan._checks import is_int
from readplan._closing import Closing
from readplan.checkpoint import Checkpoint, verify
from readplan.errors import (
    CheckpointError,
    ConfigError,
    CorruptRecordError,
    DatasetInfoError,
    ExampleError,
    ReadplanError,
)
from readplan.plan import EpochOrder, ReadPlan

__all__ = ["STATE_KEY", "Batch", "Item", "Reader", "Record", "merge_states"]

IntArray = npt.NDArray[np.int64]
Record: TypeAlias = bytes | dict[str, Any]
"""What a reader delivers per record: the raw bytes, or the decoded/parsed features."""

STATE_KEY = "reader"
"""The key a reader adds to the checkpoint document in its state: ``{"rank", "world_size"}``."""

# Positions of the plan taken per step, and records delivered per batch: large enough that
# numpy's fixed costs vanish, small enough that a batch of large records stays in memory.
_CHUNK = 1 << 16
_FIRST_CHUNK = 1 << 12
_BATCH = 256


@dataclass(frozen=True, slots=True)
class Item:
    """One delivered record and where it sits in the plan.

    ``record`` is the raw bytes, or the decoded features when the reader decodes;
    ``position`` is the record's position in epoch ``epoch`` of the plan's global order;
    ``file_index`` indexes ``plan.instructions``; ``record_index`` is the index in the file.
    """

    record: Record
    tfds_id: str
    epoch: int
    position: int
    file_index: int
    record_index: int

    def __post_init__(self) -> None:
        for name in ("epoch", "position", "file_index", "record_index"):
            value = getattr(self, name)
            if not is_int(value) or value < 0:
                raise ConfigError(
                    f"Item.{name} must be a non-negative int, got {value!r}",
                    field=name,
                    value=value,
                )


_ITEM_SETTERS = tuple(
    getattr(Item, name).__set__
    for name in ("record", "tfds_id", "epoch", "position", "file_index", "record_index")
)


def _new_items(
    records: Sequence[Record],
    ids: Sequence[str],
    epoch: int,
    positions: Sequence[int],
    files: Sequence[int],
    indices: Sequence[int],
) -> list[Item]:
    # A frozen dataclass's __init__ costs twice as much as filling the slots directly; the
    # reader's values are valid by construction, so its own items skip __post_init__.
    set_record, set_id, set_epoch, set_position, set_file, set_index = _ITEM_SETTERS
    new = object.__new__
    items = []
    for record, tfds_id, position, file_index, index in zip(
        records, ids, positions, files, indices
    ):
        item = new(Item)
        set_record(item, record)
        set_id(item, tfds_id)
        set_epoch(item, epoch)
        set_position(item, position)
        set_file(item, file_index)
        set_index(item, index)
        items.append(item)
    return items


@dataclass(frozen=True, eq=False)
class Batch:
    """Consecutive deliveries of one reader, all from epoch ``epoch``, in delivery order.

    ``records[k]`` sits at ``positions[k]`` of the epoch, record ``record_index[k]`` of file
    ``file_index[k]`` of ``plan.instructions``.
    """

    plan: ReadPlan = field(repr=False)
    epoch: int
    records: list[Record] = field(repr=False)
    positions: IntArray = field(repr=False)
    file_index: IntArray = field(repr=False)
    record_index: IntArray = field(repr=False)

    def __post_init__(self) -> None:
        size = len(self.records)
        for name in ("positions", "file_index", "record_index"):
            array = getattr(self, name)
            if array.shape != (size,):
                raise ConfigError(
                    f"Batch.{name} must be a 1-D array of {size} entries (one per record), "
                    f"got shape {array.shape}",
                    field=name,
                    value=array.shape,
                )

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        first = int(self.positions[0]) if len(self) else None
        return f"Batch(epoch={self.epoch}, first_position={first}, len={len(self)})"

    def tfds_ids(self) -> list[str]:
        """TFDS's ``tfds_id`` of each record, ``{file}__{index}``."""
        prefixes = self.plan.tfds_id_prefixes
        return [
            f"{prefixes[f]}__{r}"
            for f, r in zip(self.file_index.tolist(), self.record_index.tolist())
        ]

    def items(self) -> list[Item]:
        """The batch as :class:`Item` objects."""
        return _new_items(
            self.records,
            self.tfds_ids(),
            self.epoch,
            self.positions.tolist(),
            self.file_index.tolist(),
            self.record_index.tolist(),
        )


class Reader(Closing):
    """Records of ``plan``, read from its shard files in the plan's order (``specs/reader.md``).

    Args:
        plan: the read plan.
        data_dir: the folder holding the shard files; by default the instructions' file
            names are used as they are (full paths when the DatasetInfo was loaded from a
            directory).
        epochs: read epochs ``0 .. epochs - 1`` (a start state skips what it delivered);
            ``None`` reads forever.
        decode: ``None``/``False`` delivers bytes, ``True`` decoded ``tf.train.Example``
            features (:func:`readplan.example.decode`), a schema mapping parsed features
            (:func:`readplan.example.parse`).
        start: a checkpoint to continue from (the next record is found by seeking).
        rank, world_size: elastic mode; this reader delivers the positions ``p`` of each
            epoch's global order with ``p % world_size == rank``.

    Iterating yields :class:`Item` objects; :meth:`batches` yields the same deliveries as
    :class:`Batch` objects, with less overhead per record.  A new iteration continues from
    the current state and ends the previous one.
    """

    def __init__(
        self,
        plan: ReadPlan,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        epochs: int | None = 1,
        decode: bool | Mapping[str, Any] | None = None,
        start: Checkpoint | None = None,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if not isinstance(plan, ReadPlan):
            raise ConfigError(
                f"plan must be a readplan.ReadPlan, got {type(plan).__name__}",
                field="plan",
                value=plan,
            )
        _check_epochs(epochs)
        _check_rank(rank, world_size)
        self.plan = plan
        self.data_dir = None if data_dir is None else os.fspath(data_dir)
        self.epochs = epochs
        self.rank = rank
        self.world_size = world_size
        self._decode = _decoder(decode)
        self._paths = tuple(self._path(fi.filename) for fi in plan.instructions)
        self._ends = tuple(fi.skip + fi.num_records for fi in plan.instructions)
        self._last_records = np.array(self._ends, dtype=np.int64) - 1
        self._sequential = world_size == 1 and plan.config.example_shuffle is None
        self._epoch = 0
        self._next = self._first_share(0)
        self._last: Item | None = None
        self._active: Generator[Any, None, None] | None = None
        if start is not None:
            if not isinstance(start, Checkpoint):
                raise ConfigError(
                    f"start must be a readplan Checkpoint, got {type(start).__name__}; for a "
                    "state dict use load_state_dict()",
                    field="start",
                    value=start,
                )
            self._restore(start, owner=None)

    def __repr__(self) -> str:
        epoch, position = self._frontier()
        return (
            f"Reader({self.plan!r}, epoch={epoch}, next_position={position}, "
            f"rank={self.rank}, world_size={self.world_size})"
        )

    # -- iteration --------------------------------------------------------------------

    def __iter__(self) -> Iterator[Item]:
        self._begin()
        items = self._items(*self._frontier())
        self._active = items
        return items

    def batches(self) -> Iterator[Batch]:
        """The deliveries as :class:`Batch` objects (``len <= 256``), in order."""
        self._begin()
        batches = self._delivered_batches(*self._frontier())
        self._active = batches
        return batches

    def _items(self, epoch: int, position: int) -> Generator[Item, None, None]:
        for batch in self._produce(epoch, position):
            for item in batch.items():
                self._last = item
                yield item

    def _delivered_batches(self, epoch: int, position: int) -> Generator[Batch, None, None]:
        for batch in self._produce(epoch, position):
            self._epoch = batch.epoch
            self._next = self._after(int(batch.positions[-1]))
            self._last = None
            yield batch

    def _begin(self) -> None:
        self._epoch, self._next = self._frontier()
        self._last = None
        self.close()

    def close(self) -> None:
        """End the current iteration and close its files; the state is kept."""
        active, self._active = self._active, None
        if active is not None:
            active.close()

    # -- state ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The checkpoint document after the last delivery, plus ``"reader"``: the rank.

        The checkpoint's position is the lowest position of its epoch this rank has not
        delivered (with one rank: the number of records delivered in the epoch).
        """
        epoch, position = self._frontier()
        state = self.plan.checkpoint(epoch, position).to_dict()
        state[STATE_KEY] = {"rank": self.rank, "world_size": self.world_size}
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from ``state``: a state of this rank, a merged state, or a checkpoint."""
        if not isinstance(state, Mapping):
            raise CheckpointError(
                f"a reader state must be a mapping (from state_dict()), got {type(state).__name__}",
                field="$",
            )
        owner = _owner(state.get(STATE_KEY))
        self._restore(Checkpoint.from_dict(dict(state)), owner=owner)

    def _restore(self, checkpoint: Checkpoint, *, owner: tuple[int, int] | None) -> None:
        verify(self.plan, checkpoint)
        if self.epochs is not None and checkpoint.epoch >= self.epochs:
            raise ConfigError(
                f"the state is in epoch {checkpoint.epoch}, but this reader reads epochs "
                f"0..{self.epochs - 1}; pass epochs > {checkpoint.epoch} (the total the run "
                "was started with)",
                field="epochs",
                value=self.epochs,
            )
        position = checkpoint.position
        if owner is None or owner[1] == 1:
            position = self._first_share(position)
        elif owner != (self.rank, self.world_size):
            raise CheckpointError(
                f"this state belongs to rank {owner[0]} of {owner[1]}; it cannot be restored "
                f"by rank {self.rank} of {self.world_size} on its own. Gather the states of "
                "all ranks, merge them with readplan.reader.merge_states(states), and load "
                "the result in every new rank",
                field=f"{STATE_KEY}.rank",
            )
        elif position != checkpoint.num_examples and position % self.world_size != self.rank:
            raise CheckpointError(
                f"position {position} is not one of rank {self.rank}'s positions (those equal "
                f"to {self.rank} modulo {self.world_size}): the state was edited or damaged",
                field="position",
            )
        self.close()
        self._epoch, self._next, self._last = checkpoint.epoch, position, None

    def _frontier(self) -> tuple[int, int]:
        last = self._last
        if last is None:
            return self._epoch, self._next
        return last.epoch, self._after(last.position)

    def _after(self, position: int) -> int:
        return min(position + self.world_size, self.plan.num_examples)

    def _first_share(self, position: int) -> int:
        share = position + (self.rank - position) % self.world_size
        return min(share, self.plan.num_examples)

    # -- production ---------------------------------------------------------------------

    def _produce(self, epoch: int, position: int) -> Iterator[Batch]:
        if self.rank >= self.plan.num_examples:
            # More ranks than positions: this one has nothing in any epoch.
            return
        while self.epochs is None or epoch < self.epochs:
            yield from self._epoch_batches(epoch, position)
            epoch, position = epoch + 1, self._first_share(0)

    def _epoch_batches(self, epoch: int, start: int) -> Iterator[Batch]:
        is_last = self._last_delivery(epoch)
        shards: dict[int, _Shard] = {}
        try:
            for chunk in self._chunks(epoch, start):
                yield from self._chunk_batches(chunk, is_last(chunk), shards)
        finally:
            for shard in shards.values():
                shard.close()

    def _chunks(self, epoch: int, start: int) -> Iterator[EpochOrder]:
        # A small first chunk: the first record after a start or a restore does not wait
        # for the plan of a whole large chunk.
        head = min(start + _FIRST_CHUNK, self.plan.num_examples)
        yield from islice(self.plan.iter_epoch(epoch, chunk_size=_FIRST_CHUNK, start=start), 1)
        yield from self.plan.iter_epoch(epoch, chunk_size=_CHUNK, start=head)

    def _last_delivery(self, epoch: int) -> Callable[[EpochOrder], npt.NDArray[np.bool_]]:
        """Marks, per position of a chunk, whether the plan reads its file there last."""
        if self.plan.config.example_shuffle is None:
            last_records = self._last_records
            return lambda chunk: chunk.record_index == last_records[chunk.file_index]
        # The example shuffle scatters a file's records: find each file's last position.
        order = self.plan.epoch(epoch)
        files, first_from_end = np.unique(order.file_index[::-1], return_index=True)
        last_positions = np.full(len(self.plan.instructions), -1, dtype=np.int64)
        last_positions[files] = len(order) - 1 - first_from_end

        def marks(chunk: EpochOrder) -> npt.NDArray[np.bool_]:
            positions = np.arange(chunk.start, chunk.start + len(chunk), dtype=np.int64)
            last: npt.NDArray[np.bool_] = positions == last_positions[chunk.file_index]
            return last

        return marks

    def _chunk_batches(
        self, chunk: EpochOrder, is_last: npt.NDArray[np.bool_], shards: dict[int, _Shard]
    ) -> Iterator[Batch]:
        runs = _Runs.of(chunk, is_last, self.rank, self.world_size)
        closes = iter(zip(runs.close_before, runs.close_files))
        pending = next(closes, None)
        for first_run, stop_run in runs.batches():
            records: list[Any] = []
            failure: Exception | None = None
            try:
                for k, file_index, first, count in zip(
                    range(first_run, stop_run),
                    runs.file[first_run:stop_run],
                    runs.first[first_run:stop_run],
                    runs.count[first_run:stop_run],
                ):
                    while pending is not None and pending[0] <= k:
                        _close(shards, pending[1])
                        pending = next(closes, None)
                    shard = shards.get(file_index)
                    if shard is None:
                        shard = shards[file_index] = self._open(file_index)
                    shard.take_into(records, first, count)
            except (ReadplanError, OSError) as err:
                failure = err
            records, failure = self._decoded(records, failure)
            begin = runs.start[first_run]
            done = begin + len(records)
            if records:
                yield Batch(
                    plan=self.plan,
                    epoch=chunk.epoch,
                    records=records,
                    positions=runs.positions[begin:done],
                    file_index=runs.file_index[begin:done],
                    record_index=runs.record_index[begin:done],
                )
            if failure is not None:
                raise self._located(failure, chunk.epoch, runs, done) from failure
        while pending is not None:
            _close(shards, pending[1])
            pending = next(closes, None)

    def _decoded(
        self, records: list[Any], failure: Exception | None
    ) -> tuple[list[Any], Exception | None]:
        decode = self._decode
        if decode is None:
            return records, failure
        decoded: list[Any] = []
        try:
            decoded.extend(map(decode, records))
        except ExampleError as err:
            return decoded, err
        return decoded, failure

    def _located(self, failure: Exception, epoch: int, runs: _Runs, done: int) -> Exception:
        """The failure, with the plan position of the record that could not be delivered."""
        position = int(runs.positions[done])
        file_index = int(runs.file_index[done])
        where = (
            f"position {position} of epoch {epoch} (file {file_index}: "
            f"{self._paths[file_index]}, record {int(runs.record_index[done])})"
        )
        skip_hint = (
            f"; to go on without it, continue from plan.checkpoint({epoch}, {position + 1})"
            if self.world_size == 1
            else ""
        )
        if isinstance(failure, CorruptRecordError):
            return CorruptRecordError(
                f"{failure}\nThe reader stopped at {where}; every earlier record was "
                f"delivered{skip_hint}.",
                path=failure.path,
                offset=failure.offset,
                record_index=failure.record_index,
                kind=failure.kind,
                compressed_offset=failure.compressed_offset,
                stored_crc=failure.stored_crc,
                computed_crc=failure.computed_crc,
                tf_message=failure.tf_message,
            )
        if isinstance(failure, ExampleError):
            return ExampleError(f"{failure}\nThe record is at {where}.", key=failure.key)
        return failure

    def _open(self, file_index: int) -> _Shard:
        instruction = self.plan.instructions[file_index]
        return _Shard(
            self._paths[file_index],
            end=self._ends[file_index],
            planned=instruction.examples_in_shard,
            sequential=self._sequential,
        )

    def _path(self, filename: str) -> str:
        if self.data_dir is None:
            return filename
        return os.path.join(self.data_dir, os.path.basename(filename))


@dataclass(frozen=True, eq=False)
class _Runs:
    """One chunk's deliveries of a rank, cut into runs of consecutive records of one file.

    Run ``k`` delivers ``count[k]`` records of file ``file[k]`` from record ``first[k]``;
    they are the rank's deliveries ``start[k] ..`` of the chunk.  Runs never cross a
    multiple of the batch size, so batches are whole runs.  File ``close_files[j]`` is read
    for the last time before run ``close_before[j]``.
    """

    positions: IntArray
    file_index: IntArray
    record_index: IntArray
    start: list[int]
    file: list[int]
    first: list[int]
    count: list[int]
    close_files: list[int]
    close_before: list[int]

    @classmethod
    def of(
        cls, chunk: EpochOrder, is_last: npt.NDArray[np.bool_], rank: int, world_size: int
    ) -> _Runs:
        offset = (rank - chunk.start) % world_size
        file_index = chunk.file_index[offset::world_size]
        record_index = chunk.record_index[offset::world_size]
        size = file_index.size
        positions = chunk.start + offset + world_size * np.arange(size, dtype=np.int64)
        cut = np.ones(size, dtype=bool)
        cut[1:] = (file_index[1:] != file_index[:-1]) | (record_index[1:] != record_index[:-1] + 1)
        cut[::_BATCH] = True
        starts = np.flatnonzero(cut)
        counts = np.diff(starts, append=size)
        ends = np.flatnonzero(is_last)
        close_before = np.searchsorted(positions[starts], chunk.start + ends, side="right")
        return cls(
            positions=positions,
            file_index=file_index,
            record_index=record_index,
            start=starts.tolist(),
            file=file_index[starts].tolist(),
            first=record_index[starts].tolist(),
            count=counts.tolist(),
            close_files=chunk.file_index[ends].tolist(),
            close_before=close_before.tolist(),
        )

    def batches(self) -> Iterator[tuple[int, int]]:
        """``(first run, stop run)`` of each batch."""
        if not self.start:
            return
        bounds = np.searchsorted(
            np.asarray(self.start), np.arange(0, len(self.positions), _BATCH), side="left"
        ).tolist()
        bounds.append(len(self.start))
        yield from pairwise(bounds)


class _Shard:
    """One open shard file, read in runs.

    With ``sequential`` (one rank, no example shuffle) the plan reads the file's records in
    order, so one stream serves every run; otherwise each run is read on its own, seeking.
    """

    def __init__(self, path: str, *, end: int, planned: int, sequential: bool) -> None:
        self.path = path
        self._end = end
        self._planned = planned
        self._sequential = sequential
        self._file: tfrecord.RecordFile | None = None
        self._stream: Iterator[bytes] | None = None

    def take_into(self, out: list[Any], first: int, count: int) -> None:
        """Append records ``first .. first + count - 1`` to ``out``."""
        before = len(out)
        if self._sequential:
            if self._stream is None:
                self._stream = self._open_stream(first, count)
            out.extend(islice(self._stream, count))
        elif count == 1:
            out.append(self._records(first + 1)[first])
        else:
            out.extend(self._records(first + count).read(first, count))
        got = len(out) - before
        if got < count:
            raise self._short(first + got)

    def _open_stream(self, first: int, count: int) -> Iterator[bytes]:
        if first == 0:
            # From the start a stream needs no offsets: no index, no header walk.
            return tfrecord.read(self.path)
        return chain.from_iterable(self._windows(first, count))

    def _windows(self, first: int, count: int) -> Iterator[Iterator[bytes]]:
        """The first run on its own, then the rest of the file.

        A stream verifies the frames of a whole read-ahead buffer at once; reading the
        first run on its own keeps a restore's first record from waiting for that.
        """
        records = self._records(self._end)
        yield records.read(first, count)
        rest = self._end - first - count
        # Each stream holds its own descriptor: the file itself is not needed any more.
        stream = records.read(first + count, rest) if rest else iter(())
        self._close_file()
        yield stream

    def _records(self, needed: int) -> tfrecord.RecordFile:
        if self._file is None:
            self._file = tfrecord.RecordFile(self.path)
        if len(self._file) < needed:
            raise self._short(len(self._file))
        return self._file

    def _short(self, found: int) -> DatasetInfoError:
        return DatasetInfoError(
            f"{self.path} holds only {found} records, but the plan reads up to record "
            f"{self._end - 1} of it (dataset_info.json's shardLengths gives it "
            f"{self._planned}): the file and its metadata disagree; regenerate or re-download "
            "the shard, or fix shardLengths",
            path=self.path,
            field="shardLengths",
        )

    def close(self) -> None:
        self._stream = None
        self._close_file()

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _close(shards: dict[int, _Shard], file_index: int) -> None:
    shard = shards.pop(file_index, None)
    if shard is not None:
        shard.close()


# -- states of several ranks ---------------------------------------------------------------


def merge_states(states: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One global state from the states of all ranks of a group (``specs/reader.md``).

    The result is the checkpoint at the lowest position no rank has delivered, marked as
    a one-rank state: any number of ranks can continue from it.  It is exact when every
    rank saved after the same number of deliveries since the group started (lockstep);
    otherwise the records some ranks delivered beyond that position would be delivered
    again, and :class:`~readplan.errors.CheckpointError` says which and how many.
    """
    listed = [dict(state) for state in states]
    if not listed:
        raise CheckpointError("merge_states needs the states of every rank, got none", field="$")
    owners = [_owner(state.get(STATE_KEY)) or (0, 1) for state in listed]
    checkpoints = [Checkpoint.from_dict(state) for state in listed]
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
    merged = checkpoints[lowest].to_dict()
    merged[STATE_KEY] = {"rank": 0, "world_size": 1}
    return merged


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
    digests = {c.to_dict()["plan_digest"] for c in checkpoints}
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
        return max(0, (position - rank + world_size - 1) // world_size)

    if low[0] == high[0]:
        return below(high[1]) - below(low[1])
    whole = (high[0] - low[0] - 1) * below(size)
    return below(size) - below(low[1]) + whole + below(high[1])


# -- argument checks -------------------------------------------------------------------


def _owner(reader: object) -> tuple[int, int] | None:
    if reader is None:
        return None
    if not isinstance(reader, Mapping):
        raise CheckpointError(
            f"{STATE_KEY!r} must be an object {{rank, world_size}}, got {reader!r:.80}",
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


def _decoder(decode: bool | Mapping[str, Any] | None) -> Callable[[bytes], Any] | None:
    if decode is None or decode is False:
        return None
    if decode is True:
        return example.decode
    if isinstance(decode, Mapping):
        schema = dict(decode)
        return lambda raw: example.parse(raw, schema)
    raise ConfigError(
        f"decode must be None/False (bytes), True (decoded tf.train.Example features) or a "
        f"schema mapping of readplan.example.FixedLen/VarLen, got {decode!r:.80}",
        field="decode",
        value=decode,
    )


def _check_epochs(epochs: object) -> None:
    if epochs is not None and (not is_int(epochs) or epochs < 1):
        raise ConfigError(
            f"epochs must be a positive integer (epochs 0..epochs-1 are read) or None "
            f"(read forever), got {epochs!r}",
            field="epochs",
            value=epochs,
        )


def _check_rank(rank: object, world_size: object) -> None:
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
