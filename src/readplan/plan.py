"""Read plans: the exact order in which TFDS reads a split, epoch by epoch.

``specs/order.md`` is the normative description.  A :class:`ReadPlan` follows TFDS's
reader step for step: file instructions of the split, the optional sort function,
``input_context`` sharding by file, the seeded per-epoch file shuffle, then the
interleave.  Every epoch is computed on its own (the file shuffle's seeds come from a
counter-based generator), so epoch 1000 costs the same as epoch 0.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray
from readplan._internal.validate import check_int, check_optional_int, not_int
from readplan.errors import ConfigError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.autocache import tfds_autocaches
from readplan.planning.buffered import iter_buffered, iter_permuted
from readplan.planning.config import ReadConfig
from readplan.planning.guards import (
    MAX_MATERIALIZED_EXAMPLES,
    check_cardinality,
    check_materializable,
    check_not_empty,
    check_ordering_guard,
    pipeline_files,
)
from readplan.planning.instructions import (
    FileInstruction,
    InstructionTable,
    LazySplit,
    instruction_table,
)
from readplan.planning.interleave import InterleaveSchedule
from readplan.planning.record_ids import PrefixTable, RecordIds
from readplan.planning.schedule import EpochSchedule, check_epoch
from readplan.planning.seeds import epoch_seed_pair, seed_pair
from readplan.planning.shuffle import buffer_shuffle, permutation
from readplan.planning.splits import SplitArg
from readplan.state import resume as _state
from readplan.state.checkpoint import Checkpoint, ExpandedCheckpoint
from readplan.state.fingerprint import expanded_fingerprint, summary

__all__ = ["EpochOrder", "ReadPlan"]


# Shuffled epochs up to this many records are walked through their cached permutation (a
# later walk from another start costs only its chunks); larger ones are streamed, in memory
# of the buffer (planning.buffered), the buffer simulated up to the start of each walk.
_STREAM_SHUFFLED_ABOVE = 1 << 22
# What a refused whole epoch offers instead (plan.epoch past its bound).
_BOUNDED_CALLS = (
    "stream it with plan.iter_epoch({epoch}, chunk_size=...), and use plan.locate({epoch}, "
    "position) for one record and plan.checkpoint({epoch}, position) for a read state, "
    "which stay O(1) in the position without an example shuffle; pass a larger "
    "max_examples= where the memory is there"
)
_SCHEDULE_CACHE_SIZE = 8
# Cached schedules may hold this much at most (the latest is always kept): at 10^6 files one
# epoch's schedule takes 48 MB (4.8 MB at 10^5, once located in), so a recent epoch of a
# large plan stays cached while the cache of a small plan is bounded by the count.
_SCHEDULE_CACHE_BYTES = 64 << 20


class ReadPlan:
    """The read order of ``spec`` over ``info`` under ``config``; see ``specs/order.md``.

    Attributes:
        instructions: the FileInstructions in TFDS order (after the sort function);
            ``file_index`` values everywhere index into this tuple.
        autocached: whether TFDS's autocache caches this dataset, so that every epoch
            repeats epoch 0's file order (``specs/order.md`` §8a).
        num_examples: records this plan reads per epoch (after ``input_context``).
    """

    def __init__(
        self,
        info: DatasetInfo,
        spec: SplitArg,
        config: ReadConfig | None = None,
        *,
        strict: bool = False,
    ) -> None:
        self.info = info
        # TFDS looks a plain string up by name when it decides on caching (its autocache).
        split_key = spec if isinstance(spec, str) and not isinstance(spec, LazySplit) else None
        if isinstance(spec, LazySplit):
            spec = spec.resolve(info)
        self.spec = spec if isinstance(spec, str) else str(spec)
        self.config = config if config is not None else ReadConfig()
        self.cycle_length = self.config.cycle_length_for(info.disable_shuffling)
        self.block_length = self.config.block_length
        instructions = instruction_table(info, spec, strict=strict)
        # Whether TFDS caches this dataset (its autocache): later epochs repeat epoch 0's.
        self.autocached = tfds_autocaches(info, split_key, len(instructions), self.config)
        sort_fn = self.config.experimental_interleave_sort_fn
        if sort_fn is not None:
            instructions = InstructionTable.of(list(sort_fn(list(instructions))))
        check_not_empty(instructions, info, self.spec)
        self.instructions: InstructionTable = instructions
        check_ordering_guard(info, self.config, self.cycle_length)
        check_cardinality(instructions, self.config, self.spec)
        self.selected = pipeline_files(instructions, self.config)
        # Slots beyond the files never hold one: the order is the same (specs/order.md §1).
        self.cycle_length = min(self.cycle_length, max(1, len(self.selected)))
        self.lengths = self.instructions.num_records
        self.num_examples = int(self.lengths[self.selected].sum())
        if self.config.shuffle_files:
            assert self.config.shuffle_seed is not None  # ReadConfig enforces it
            self.seed_pair: tuple[int, int] | None = seed_pair(
                self.config.shuffle_seed, global_seed=self.config.global_seed
            )
        else:
            self.seed_pair = None
        self._schedules: OrderedDict[int, tuple[IntArray, InterleaveSchedule]] = OrderedDict()
        self._example_orders: OrderedDict[int, tuple[IntArray, IntArray]] = OrderedDict()

    def __repr__(self) -> str:
        return (
            f"ReadPlan({self.info.name!r}, {self.spec!r}, files={len(self.selected)}, "
            f"num_examples={self.num_examples}, cycle_length={self.cycle_length}, "
            f"block_length={self.block_length}, shuffle_files={self.config.shuffle_files})"
        )

    @cached_property
    def split_offsets(self) -> IntArray:
        """Per instruction: records in earlier shards of its split (global id base)."""
        table = self.instructions
        offsets = np.zeros(len(table), dtype=np.int64)
        for k, name in enumerate(table.split_names):
            # A name the dataset does not know (from a sort function) has no offsets.
            split = self.info.splits.get(name)
            mine = np.flatnonzero((table.split == k) & (table.shard_index >= 0))
            if split is not None and mine.size:
                starts = np.asarray(split.shard_offsets, dtype=np.int64)
                offsets[mine] = starts[table.shard_index[mine]]
        return offsets

    @cached_property
    def _record_ids(self) -> RecordIds:
        sorted_by_user = self.config.experimental_interleave_sort_fn is not None
        return RecordIds(self.instructions, shard_names=not sorted_by_user)

    @property
    def tfds_id_prefixes(self) -> tuple[str, ...]:
        """TFDS's ``tfds_id`` prefix per instruction (``specs/order.md``, "Record ids")."""
        return self._record_ids.all

    def tfds_id_prefixes_of(self, file_index: IntArray | list[int]) -> list[str]:
        """``tfds_id_prefixes[f]`` for each ``f`` of ``file_index`` (an array or its
        ``tolist()``), named on demand."""
        return self._record_ids.of(file_index)

    def tfds_id_prefix_table(self, file_index: IntArray | None = None) -> PrefixTable:
        """``t`` with ``t[f]`` file ``f``'s prefix; for each ``f`` of ``file_index`` if given."""
        return self._record_ids.table(file_index)

    def tfds_ids(self, file_index: npt.ArrayLike, record_index: npt.ArrayLike) -> list[str]:
        """TFDS's ``tfds_id`` strings, ``{file}__{index}``, of records of this plan
        (1-D integer sequences of one length, as in an :class:`EpochOrder`)."""
        return self._record_ids.ids(file_index, record_index)

    # -- per epoch ------------------------------------------------------------------

    def file_order(self, epoch: int) -> IntArray:
        """Instruction indices in the order epoch ``epoch`` feeds them to the interleave."""
        return self.epoch_schedule(epoch).files

    def schedule(self, epoch: int) -> InterleaveSchedule:
        """The closed-form interleave schedule of epoch ``epoch``."""
        return self.epoch_schedule(epoch).interleave

    def epoch_schedule(self, epoch: int) -> EpochSchedule:
        """Epoch ``epoch``'s schedule: file order, interleave, skips, example shuffle seeds.

        Schedules of recent epochs are cached; epochs that share their file order (no
        reshuffle between epochs) share the files and interleave.
        """
        epoch = check_epoch(epoch)
        key = epoch if self._reshuffles else 0
        cached = self._schedules.get(key)
        if cached is None:
            cached = self._new_files_and_interleave(epoch)
            self._schedules[key] = cached
            self._evict_schedules()
        else:
            self._schedules.move_to_end(key)
        files, interleave = cached
        shuffle = self.config.example_shuffle
        return EpochSchedule(
            epoch=epoch,
            files=files,
            interleave=interleave,
            skips=self._skips,
            example_pair=self.example_pair(epoch),
            buffer_size=None if shuffle is None else shuffle.buffer_size,
        )

    def _evict_schedules(self) -> None:
        held = sum(
            files.nbytes + interleave.nbytes for files, interleave in self._schedules.values()
        )
        while len(self._schedules) > 1 and (
            len(self._schedules) > _SCHEDULE_CACHE_SIZE or held > _SCHEDULE_CACHE_BYTES
        ):
            files, interleave = self._schedules.popitem(last=False)[1]
            held -= files.nbytes + interleave.nbytes

    def _new_files_and_interleave(self, epoch: int) -> tuple[IntArray, InterleaveSchedule]:
        files = self.selected
        if self.seed_pair is not None:
            # A dataset TFDS caches yields epoch 0's records in every epoch (specs/order.md §8).
            pair = epoch_seed_pair(
                self.seed_pair,
                0 if self.autocached else epoch,
                reshuffle_each_iteration=self.config.reshuffle_each_iteration,
            )
            shuffled = permutation(files.size, pair)
            # Without an input_context the files are 0..n-1: the permutation is the order.
            files = shuffled if files.size == len(self.instructions) else files[shuffled]
        files.flags.writeable = False  # handed out by file_order(): cached, shared
        interleave = InterleaveSchedule(
            lengths=self.lengths[files],
            cycle_length=self.cycle_length,
            block_length=self.block_length,
        )
        return files, interleave

    @property
    def _reshuffles(self) -> bool:
        return (
            self.seed_pair is not None
            and self.config.reshuffle_each_iteration
            and not self.autocached
        )

    @property
    def file_order_frozen(self) -> bool:
        """Whether TFDS's autocache makes later epochs repeat a file order that would
        otherwise be reshuffled (several files shuffled, reshuffling each epoch)."""
        return (
            self.autocached
            and self.seed_pair is not None
            and self.config.reshuffle_each_iteration
            and len(self.selected) > 1
        )

    def example_pair(self, epoch: int) -> tuple[int, int] | None:
        """The seed pair epoch ``epoch``'s example-level shuffle buffer draws from."""
        shuffle = self.config.example_shuffle
        if shuffle is None:
            return None
        pair = seed_pair(shuffle.seed, global_seed=self.config.global_seed)
        return epoch_seed_pair(
            pair, epoch, reshuffle_each_iteration=shuffle.reshuffle_each_iteration
        )

    def _example_order(self, epoch: int) -> tuple[IntArray, IntArray] | None:
        """Interleave positions in output order after the example shuffle, and inverse.

        The buffer's draws depend only on counts, so this needs no record; it is linear
        in the epoch (the buffer is inherently sequential) and cached per epoch.
        """
        shuffle = self.config.example_shuffle
        pair = self.example_pair(epoch)
        if shuffle is None or pair is None:
            return None
        key = epoch if shuffle.reshuffle_each_iteration else 0
        cached = self._example_orders.get(key)
        if cached is None:
            check_materializable(
                self.num_examples,
                MAX_MATERIALIZED_EXAMPLES,
                call=f"the example shuffle's permutation of epoch {epoch} (which locate and "
                "position_of use)",
                instead=f"plan.iter_epoch({epoch}, ...) streams the shuffled epoch and "
                f"plan.checkpoint({epoch}, position) simulates the buffer, in memory bounded "
                "by its size",
            )
            order, _ = buffer_shuffle(self.num_examples, shuffle.buffer_size, pair)
            inverse = np.empty_like(order)
            inverse[order] = np.arange(order.size, dtype=np.int64)
            order.flags.writeable = False
            inverse.flags.writeable = False
            cached = (order, inverse)
            self._example_orders[key] = cached
            if len(self._example_orders) > 2:
                self._example_orders.popitem(last=False)
        return cached

    def epoch(self, epoch: int, *, max_examples: int = MAX_MATERIALIZED_EXAMPLES) -> EpochOrder:
        """The whole order of epoch ``epoch`` (the ``epoch+1``-th iteration in TFDS).

        An epoch of more than ``max_examples`` records (default 2^31, 32 GiB of indices) is
        refused: :meth:`iter_epoch` streams it, :meth:`locate` and :meth:`checkpoint` stay
        constant-time in the position (``specs/order.md`` §10).
        """
        limit = check_int(max_examples, "max_examples", minimum=1, what="a positive integer")
        schedule = self.epoch_schedule(epoch)
        check_materializable(
            self.num_examples,
            limit,
            call=f"plan.epoch({schedule.epoch})",
            instead=_BOUNDED_CALLS.format(epoch=schedule.epoch),
        )
        inputs, within = schedule.interleave.order()
        shuffled = self._example_order(epoch)
        if shuffled is not None:
            inputs, within = inputs[shuffled[0]], within[shuffled[0]]
        return self._epoch_order(schedule, 0, inputs, within)

    def iter_epoch(
        self, epoch: int, *, chunk_size: int = 1 << 20, start: int = 0
    ) -> Iterator[EpochOrder]:
        """Stream epoch ``epoch`` from position ``start`` in chunks of ``chunk_size``.

        Memory stays bounded by the number of files plus the chunk (and an example-level
        shuffle's buffer, whose state at ``start`` is simulated, linear in ``start``), so
        plans far too large to materialise can be walked.
        """
        check_int(chunk_size, "chunk_size", minimum=1, what="a positive integer")
        schedule = self.epoch_schedule(epoch)
        schedule.check_position(start, allow_end=True)
        if schedule.example_pair is None:
            chunks = schedule.interleave.iter_chunks(start=start, chunk_size=chunk_size)
        elif self.num_examples > _STREAM_SHUFFLED_ABOVE:
            chunks = iter_buffered(schedule, start=start, chunk_size=chunk_size)
        else:
            shuffled = self._example_order(epoch)
            assert shuffled is not None
            order = schedule.interleave.order()
            chunks = iter_permuted(order, shuffled[0], start=start, chunk_size=chunk_size)
        position = start
        for inputs, within in chunks:
            yield self._epoch_order(schedule, position, inputs, within)
            position += inputs.size

    def _epoch_order(
        self, schedule: EpochSchedule, start: int, inputs: IntArray, within: IntArray
    ) -> EpochOrder:
        file_index, record_index = schedule.records(inputs, within)
        return EpochOrder(
            plan=self,
            epoch=schedule.epoch,
            start=start,
            file_index=file_index,
            record_index=record_index,
        )

    @cached_property
    def _skips(self) -> IntArray:
        return self.instructions.skip

    def locate(self, epoch: int, position: int) -> tuple[int, int]:
        """``(file_index, record_index)`` of the record at ``position`` of ``epoch``."""
        schedule = self.epoch_schedule(epoch)
        schedule.check_position(position, allow_end=False)
        shuffled = self._example_order(epoch)
        interleaved = position if shuffled is None else int(shuffled[0][position])
        input_index, within = schedule.interleave.locate(interleaved)
        file_index = int(schedule.files[input_index])
        return file_index, within + int(self._skips[file_index])

    def position_of(self, epoch: int, file_index: int, record_index: int) -> int:
        """The position in ``epoch`` of record ``record_index`` (absolute, within its file)."""
        schedule = self.epoch_schedule(epoch)
        input_index = self._input_of_file(schedule.files, file_index)
        instruction = self.instructions[file_index]
        within = -1 if not_int(record_index) else record_index - instruction.skip
        if not 0 <= within < instruction.num_records:
            raise ConfigError(
                f"record {record_index!r} of file {file_index} ({instruction.filename}) is not "
                f"read by this plan: it reads records {instruction.skip}.."
                f"{instruction.skip + instruction.num_records - 1} of that file",
                field="record_index",
                value=record_index,
            )
        interleaved = schedule.interleave.position_of(input_index, within)
        shuffled = self._example_order(epoch)
        return interleaved if shuffled is None else int(shuffled[1][interleaved])

    # -- checkpoints (readplan.state holds the logic) -------------------------------

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The compact fingerprint every checkpoint of this plan carries
        (``specs/checkpoint.md`` §4)."""
        return self._fingerprint_with(summary)

    @cached_property
    def fingerprint(self) -> dict[str, Any]:
        """The expanded fingerprint: the summary's fields with the instruction list and the
        shard lengths themselves (``specs/checkpoint.md`` §4)."""
        return self._fingerprint_with(expanded_fingerprint)

    def _fingerprint_with(self, build: Callable[..., dict[str, Any]]) -> dict[str, Any]:
        return build(
            self.info,
            self.spec,
            self.instructions,
            self.config,
            cycle_length=self.cycle_length,
            block_length=self.block_length,
            file_order_frozen=self.file_order_frozen,
        )

    def checkpoint(self, epoch: int, position: int) -> Checkpoint:
        """The complete read state after ``position`` records of ``epoch`` were delivered.

        Constant time whatever the position and the number of files; with an example-level
        shuffle the buffer's contents are simulated, linear in ``position``.
        """
        epoch = check_epoch(epoch)
        shuffled = self.config.example_shuffle is not None
        return _state.build(
            self.summary,
            epoch,
            position,
            num_examples=self.num_examples,
            source=self,
            schedule=self.epoch_schedule(epoch) if shuffled else None,
        )

    def verify(self, checkpoint: Checkpoint) -> Checkpoint:
        """Refuse a checkpoint of another plan or dataset, or one its position does not
        imply (``specs/checkpoint.md`` §2); constant time for a compact checkpoint."""
        shuffle = self.config.example_shuffle
        _state.verify(
            self.summary,
            checkpoint,
            num_examples=self.num_examples,
            buffer_size=None if shuffle is None else shuffle.buffer_size,
        )
        stored = checkpoint.source
        if isinstance(stored, ExpandedCheckpoint):
            _state.compare(stored, self._expanded(checkpoint))
        return checkpoint

    def expand(self, checkpoint: Checkpoint) -> ExpandedCheckpoint:
        """The verified checkpoint's expanded state: slots, per-file progress, instructions
        (``specs/checkpoint.md`` §1); ``O(files)``."""
        self.verify(checkpoint)
        return self._expanded(checkpoint)

    def _expanded(self, checkpoint: Checkpoint) -> ExpandedCheckpoint:
        return _state.expand(self.fingerprint, self.epoch_schedule(checkpoint.epoch), checkpoint)

    def upgrade_checkpoint(self, document: Any) -> Checkpoint:
        """The current-format checkpoint of a format version 1 document of this plan, every
        field it carries verified against the plan first (``specs/checkpoint.md`` §5)."""
        return _state.upgrade_v1(document, self.fingerprint, self, len(self.selected))

    def resume(
        self, checkpoint: Checkpoint, *, max_examples: int = MAX_MATERIALIZED_EXAMPLES
    ) -> EpochOrder:
        """The rest of the checkpoint's epoch: exactly the uninterrupted order's suffix.

        A rest of more than ``max_examples`` records is refused, as :meth:`epoch` refuses:
        :meth:`iter_from` streams it.
        """
        limit = check_int(max_examples, "max_examples", minimum=1, what="a positive integer")
        self.verify(checkpoint)
        check_materializable(
            checkpoint.num_examples - checkpoint.position,
            limit,
            call=f"plan.resume(checkpoint) at position {checkpoint.position}",
            instead="stream the rest with plan.iter_from(checkpoint, chunk_size=...); pass a "
            "larger max_examples= where the memory is there",
        )
        return self._rest(checkpoint)

    def _rest(self, checkpoint: Checkpoint) -> EpochOrder:
        schedule = self.epoch_schedule(checkpoint.epoch)
        inputs, within = _state.rest(schedule, checkpoint)
        return self._epoch_order(schedule, checkpoint.position, inputs, within)

    def iter_from(
        self, checkpoint: Checkpoint, *, chunk_size: int = 1 << 20, stop_epoch: int | None = None
    ) -> Iterator[EpochOrder]:
        """Continue from ``checkpoint`` across later epochs (``stop_epoch`` exclusive).

        The checkpoint and the arguments are checked when this is called, not at the first
        chunk.
        """
        check_int(chunk_size, "chunk_size", minimum=1, what="a positive integer")
        check_optional_int(stop_epoch, "stop_epoch")
        self.verify(checkpoint)
        return self._continue(checkpoint, chunk_size, stop_epoch)

    def _continue(
        self, checkpoint: Checkpoint, chunk_size: int, stop_epoch: int | None
    ) -> Iterator[EpochOrder]:
        epoch, start = checkpoint.epoch, checkpoint.position
        if stop_epoch is not None and epoch >= stop_epoch:
            return
        buffer = checkpoint.example_buffer
        if buffer is not None:
            # The buffer's state continues only this epoch; later epochs start afresh.
            schedule = self.epoch_schedule(epoch)
            chunks = iter_buffered(schedule, start=start, chunk_size=chunk_size, state=buffer)
            for inputs, within in chunks:
                yield self._epoch_order(schedule, start, inputs, within)
                start += inputs.size
            epoch, start = epoch + 1, 0
        while stop_epoch is None or epoch < stop_epoch:
            yield from self.iter_epoch(epoch, chunk_size=chunk_size, start=start)
            epoch, start = epoch + 1, 0

    def remaining_instructions(self, checkpoint: Checkpoint) -> list[FileInstruction]:
        """The FileInstructions of the records not yet delivered (``specs/checkpoint.md``).

        Records waiting in an example shuffle buffer come first, one instruction each,
        then every file's unread tail in this epoch's input order (§6).
        """
        schedule = self.epoch_schedule(checkpoint.epoch)
        state = self.expand(checkpoint)
        return _state.plan_instructions(self.instructions, schedule, state, exact=False)

    def resume_instructions(self, checkpoint: Checkpoint) -> list[FileInstruction]:
        """The list tf.data's interleave reads in exactly the rest of the checkpoint's
        epoch, with this plan's file paths (``specs/checkpoint.md`` §6)."""
        schedule = self.epoch_schedule(checkpoint.epoch)
        state = self.expand(checkpoint)
        return _state.plan_instructions(self.instructions, schedule, state, exact=True)

    def epoch_instructions(self, epoch: int) -> list[FileInstruction]:
        """The instructions in epoch ``epoch``'s file order.

        Given to TFDS through ``experimental_interleave_sort_fn`` with
        ``shuffle_files=False``, they reproduce that epoch's order in any process, without
        TF's implicit per-object epoch counter.
        """
        return [self.instructions[f] for f in self.file_order(epoch).tolist()]

    def _input_of_file(self, files: IntArray, file_index: int) -> int:
        if not_int(file_index) or not 0 <= file_index < len(self.instructions):
            raise ConfigError(
                f"file_index {file_index!r} is out of range: the plan has "
                f"{len(self.instructions)} file instructions",
                field="file_index",
                value=file_index,
            )
        where = np.flatnonzero(files == file_index)
        if where.size == 0:
            raise ConfigError(
                f"file {file_index} ({self.instructions[file_index].filename}) is read by "
                "another input pipeline (input_context), not by this plan",
                field="file_index",
                value=file_index,
            )
        return int(where[0])


@dataclass(frozen=True, eq=False)
class EpochOrder:
    """A stretch of one epoch's order: positions ``start .. start + len - 1``.

    ``file_index`` indexes ``plan.instructions``; ``record_index`` is the record's
    absolute index within its file (``skip`` included), as in TFDS's ``tfds_id``.
    """

    plan: ReadPlan
    epoch: int
    start: int
    file_index: IntArray
    record_index: IntArray

    def __post_init__(self) -> None:
        if self.file_index.shape != self.record_index.shape or self.file_index.ndim != 1:
            raise ConfigError(
                "file_index and record_index must be 1-D arrays of the same length, got "
                f"shapes {self.file_index.shape} and {self.record_index.shape}",
                field="record_index",
                value=self.record_index.shape,
            )
        self.file_index.flags.writeable = False
        self.record_index.flags.writeable = False

    def __len__(self) -> int:
        return int(self.file_index.size)

    def __repr__(self) -> str:
        return f"EpochOrder(epoch={self.epoch}, start={self.start}, len={len(self)})"

    def global_ids(self) -> IntArray:
        """Per record: records in earlier shards of its split + index in its shard."""
        return self.plan.split_offsets[self.file_index] + self.record_index

    def tfds_ids(self) -> list[str]:
        """TFDS's ``tfds_id`` strings, ``{file}__{index}``."""
        return self.plan.tfds_ids(self.file_index, self.record_index)
