"""Read plans: the exact order in which TFDS reads a split, epoch by epoch.

``specs/order.md`` is the normative description.  A :class:`ReadPlan` follows TFDS's
reader step for step: file instructions of the split, the optional sort function,
``input_context`` sharding by file, the seeded per-epoch file shuffle, then the
interleave.  Every epoch is computed on its own (the file shuffle's seeds come from a
counter-based generator), so epoch 1000 costs the same as epoch 0.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from readplan._checks import is_int
from readplan.dataset_info import DatasetInfo
from readplan.errors import ConfigError, EmptySplitError, SplitError
from readplan.instructions import FileInstruction, LazySplit, file_instructions
from readplan.interleave import InterleaveSchedule
from readplan.shuffle import buffer_shuffle, epoch_seed_pair, permutation, seed_pair
from readplan.splits import SplitArg

if TYPE_CHECKING:
    from readplan.checkpoint import Checkpoint

__all__ = ["EpochOrder", "ExampleShuffle", "InputContext", "ReadConfig", "ReadPlan"]

IntArray = npt.NDArray[np.int64]
SortFn = Callable[[list[FileInstruction]], Sequence[FileInstruction]]

# TFDS's ReadConfig default; datasets written with disable_shuffling default to 1.
TFDS_DEFAULT_CYCLE_LENGTH = 16
_SCHEDULE_CACHE_SIZE = 8


@dataclass(frozen=True)
class InputContext:
    """``tf.distribute.InputContext``'s fields that TFDS uses: files are dealt out by index."""

    input_pipeline_id: int = 0
    num_input_pipelines: int = 1

    def __post_init__(self) -> None:
        if _not_int(self.num_input_pipelines) or self.num_input_pipelines < 1:
            raise ConfigError(
                f"num_input_pipelines must be a positive integer, got {self.num_input_pipelines!r}",
                field="input_context.num_input_pipelines",
                value=self.num_input_pipelines,
            )
        if _not_int(self.input_pipeline_id) or not (
            0 <= self.input_pipeline_id < self.num_input_pipelines
        ):
            raise ConfigError(
                f"input_pipeline_id must be in 0..{self.num_input_pipelines - 1} for "
                f"{self.num_input_pipelines} pipelines, got {self.input_pipeline_id!r}",
                field="input_context.input_pipeline_id",
                value=self.input_pipeline_id,
            )


@dataclass(frozen=True)
class ExampleShuffle:
    """An example-level ``ds.shuffle(buffer_size, seed)`` applied after TFDS's interleave.

    Modelled exactly on tf.data's buffer (``specs/shuffle.md``); epoch ``e`` uses the
    ``e``-th iterator's seeds, as iterating the same dataset object again does.
    """

    buffer_size: int
    seed: int
    reshuffle_each_iteration: bool = True

    def __post_init__(self) -> None:
        if _not_int(self.buffer_size) or self.buffer_size < 1:
            raise ConfigError(
                f"example shuffle buffer_size must be a positive integer, got {self.buffer_size!r}",
                field="example_shuffle.buffer_size",
                value=self.buffer_size,
            )
        if _not_int(self.seed):
            raise ConfigError(
                f"example shuffle seed must be an integer (an unseeded shuffle cannot be "
                f"reproduced), got {self.seed!r}",
                field="example_shuffle.seed",
                value=self.seed,
            )


@dataclass(frozen=True)
class ReadConfig:
    """Everything that decides TFDS's read order, with TFDS's names and defaults.

    ``interleave_cycle_length=None`` means TFDS's default for the dataset (16, or 1 for a
    dataset written with ``disable_shuffling``); tf.data's AUTOTUNE is machine-dependent
    and is deliberately not modelled: pass the resolved number.
    ``interleave_block_length=None`` means 1, as in tf.data.
    ``shuffle_reshuffle_each_iteration=None`` means True, as in tf.data.
    ``global_seed`` is the value given to ``tf.random.set_seed`` before the dataset was
    built, if any (it changes the shuffles' seeds).  ``example_shuffle`` models a
    ``ds.shuffle(...)`` the pipeline applies after TFDS's interleave.
    """

    interleave_cycle_length: int | None = TFDS_DEFAULT_CYCLE_LENGTH
    interleave_block_length: int | None = 16
    shuffle_files: bool = False
    shuffle_seed: int | None = None
    shuffle_reshuffle_each_iteration: bool | None = None
    input_context: InputContext | None = None
    experimental_interleave_sort_fn: SortFn | None = field(default=None, compare=False)
    enable_ordering_guard: bool = True
    global_seed: int | None = None
    example_shuffle: ExampleShuffle | None = None

    def __post_init__(self) -> None:
        for name in ("interleave_cycle_length", "interleave_block_length"):
            value = getattr(self, name)
            if value is not None and (_not_int(value) or value < 1):
                raise ConfigError(
                    f"{name} must be a positive integer or None, got {value!r}",
                    field=name,
                    value=value,
                )
        for name in ("shuffle_seed", "global_seed"):
            value = getattr(self, name)
            if value is not None and _not_int(value):
                raise ConfigError(
                    f"{name} must be an integer or None, got {value!r}", field=name, value=value
                )
        if self.shuffle_files and self.shuffle_seed is None:
            raise ConfigError(
                "shuffle_files=True without shuffle_seed: TFDS would then shuffle the files "
                "with random seeds and interleave them non-deterministically, so no order "
                "can be reproduced. Pass shuffle_seed=<int> (TFDS gives the same seed to "
                "tf.data).",
                field="shuffle_seed",
                value=None,
            )
        if self.example_shuffle is not None and not isinstance(
            self.example_shuffle, ExampleShuffle
        ):
            raise ConfigError(
                f"example_shuffle must be a readplan.ExampleShuffle, got "
                f"{type(self.example_shuffle).__name__}",
                field="example_shuffle",
                value=self.example_shuffle,
            )
        if self.input_context is not None and not isinstance(self.input_context, InputContext):
            raise ConfigError(
                f"input_context must be a readplan.InputContext, got "
                f"{type(self.input_context).__name__}",
                field="input_context",
                value=self.input_context,
            )

    @property
    def block_length(self) -> int:
        return 1 if self.interleave_block_length is None else self.interleave_block_length

    @property
    def reshuffle_each_iteration(self) -> bool:
        return self.shuffle_reshuffle_each_iteration is not False

    def cycle_length_for(self, info: DatasetInfo) -> int:
        """The cycle length TFDS uses for ``info`` (resolving ``None`` to its default)."""
        if self.interleave_cycle_length is not None:
            return self.interleave_cycle_length
        return 1 if info.disable_shuffling else TFDS_DEFAULT_CYCLE_LENGTH


class ReadPlan:
    """The read order of ``spec`` over ``info`` under ``config``; see ``specs/order.md``.

    Attributes:
        instructions: the FileInstructions in TFDS order (after the sort function);
            ``file_index`` values everywhere index into this tuple.
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
        if isinstance(spec, LazySplit):
            spec = spec.resolve(info)
        self.spec = spec if isinstance(spec, str) else str(spec)
        self.config = config if config is not None else ReadConfig()
        self.cycle_length = self.config.cycle_length_for(info)
        self.block_length = self.config.block_length
        instructions = file_instructions(info, spec, strict=strict)
        sort_fn = self.config.experimental_interleave_sort_fn
        if sort_fn is not None:
            instructions = list(sort_fn(list(instructions)))
        if not instructions:
            raise EmptySplitError(
                f"Instruction [] corresponds to no data!\nThe split {self.spec!r} selects no "
                f"records of dataset {info.name!r}; TFDS raises this when reading it. Check "
                "the bounds against the split sizes "
                f"({', '.join(f'{s.name}={s.num_examples}' for s in info.splits.values())}).",
                spec=self.spec,
                tfds_message="Instruction [] corresponds to no data!",
            )
        self.instructions: tuple[FileInstruction, ...] = tuple(instructions)
        self._check_ordering_guard()
        self._check_cardinality()
        self.selected = self._select_for_pipeline()
        self.lengths = np.array([fi.num_records for fi in self.instructions], dtype=np.int64)
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

    # -- set-up ---------------------------------------------------------------------

    def _check_ordering_guard(self) -> None:
        if not self.info.disable_shuffling or not self.config.enable_ordering_guard:
            return
        reasons = []
        if self.config.shuffle_files:
            reasons.append("`shuffle_files=True`")
        if self.cycle_length != 1:
            reasons.append("`ReadConfig.interleave_cycle_length != 1`")
        if reasons:
            raise ConfigError(
                "\n".join(
                    "Dataset is an ordered dataset ('disable_shuffling=True'), but examples "
                    f"will not be read in order because {reason}."
                    for reason in reasons
                )
                + "\nUse interleave_cycle_length=None (or 1) and shuffle_files=False, or pass "
                "enable_ordering_guard=False to read it out of order on purpose.",
                field="interleave_cycle_length" if self.cycle_length != 1 else "shuffle_files",
                value=self.cycle_length,
            )

    def _check_cardinality(self) -> None:
        """TFDS asserts the dataset holds sum(take) records, unless input_context is set.

        Only TFDS's inverted-range quirk makes a take negative (other than -1, which
        means "to the end"); tf.data then reads the rest of the file, more than the sum,
        and TFDS fails mid-epoch.  readplan refuses such a plan up front.
        """
        negative = [fi for fi in self.instructions if fi.take < 0]
        if not negative or self.config.input_context is not None:
            return
        expected = sum(fi.take for fi in self.instructions)
        tfds_message = (
            f"Input dataset was expected to contain {expected} elements but contained at "
            f"least {max(expected, 0) + 1} element{'s' if max(expected, 0) + 1 != 1 else ''}."
        )
        first = negative[0]
        raise SplitError(
            f"{tfds_message}\nThe split {self.spec!r} has an inverted range inside one shard, "
            f"which TFDS turns into {os.path.basename(first.filename)} skip={first.skip} "
            f"take={first.take}; tf.data then reads the rest of that file and TFDS fails "
            f"with the error above after {max(expected, 0)} records. Give the range as "
            "[from:to] with from <= to.",
            spec=self.spec,
            tfds_message=tfds_message,
        )

    def _select_for_pipeline(self) -> IntArray:
        everything = np.arange(len(self.instructions), dtype=np.int64)
        everything.flags.writeable = False
        context = self.config.input_context
        if context is None or context.num_input_pipelines == 1:
            return everything
        if len(self.instructions) < context.num_input_pipelines:
            raise ConfigError(
                "Cannot shard the pipeline with given `input_context`.`num_shards="
                f"{len(self.instructions)}` but `num_input_pipelines="
                f"{context.num_input_pipelines}`. This means that some workers won't read "
                "any data. To shard the data, you may want to use the subsplit API instead: "
                "https://www.tensorflow.org/datasets/splits",
                field="input_context",
                value=context,
            )
        return everything[context.input_pipeline_id :: context.num_input_pipelines]

    @cached_property
    def split_offsets(self) -> IntArray:
        """Per instruction: records in earlier shards of its split (global id base)."""
        starts: dict[str, list[int]] = {}
        for name, split in self.info.splits.items():
            starts[name] = np.concatenate([[0], np.cumsum(split.shard_lengths)]).tolist()
        return np.array(
            [
                starts[fi.split][fi.shard_index]
                if fi.split is not None and fi.shard_index is not None
                else 0
                for fi in self.instructions
            ],
            dtype=np.int64,
        )

    @cached_property
    def tfds_id_prefixes(self) -> tuple[str, ...]:
        """TFDS's ``tfds_id`` prefix per instruction (``specs/order.md``, "Record ids")."""
        return tuple(_tfds_id_prefixes([fi.filename for fi in self.instructions]))

    # -- per epoch ------------------------------------------------------------------

    def file_order(self, epoch: int) -> IntArray:
        """Instruction indices in the order epoch ``epoch`` feeds them to the interleave."""
        return self._epoch(epoch)[0]

    def schedule(self, epoch: int) -> InterleaveSchedule:
        """The closed-form interleave schedule of epoch ``epoch``."""
        return self._epoch(epoch)[1]

    def _epoch(self, epoch: int) -> tuple[IntArray, InterleaveSchedule]:
        _check_epoch(epoch)
        key = epoch if self._reshuffles else 0
        cached = self._schedules.get(key)
        if cached is not None:
            self._schedules.move_to_end(key)
            return cached
        files = self.selected
        if self.seed_pair is not None:
            pair = epoch_seed_pair(
                self.seed_pair, epoch, reshuffle_each_iteration=self.config.reshuffle_each_iteration
            )
            files = files[permutation(files.size, pair)]
        files.flags.writeable = False  # handed out by file_order(): cached, shared
        schedule = InterleaveSchedule(
            lengths=self.lengths[files],
            cycle_length=self.cycle_length,
            block_length=self.block_length,
        )
        self._schedules[key] = (files, schedule)
        if len(self._schedules) > _SCHEDULE_CACHE_SIZE:
            self._schedules.popitem(last=False)
        return files, schedule

    @property
    def _reshuffles(self) -> bool:
        return self.seed_pair is not None and self.config.reshuffle_each_iteration

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

    def epoch(self, epoch: int) -> EpochOrder:
        """The whole order of epoch ``epoch`` (the ``epoch+1``-th iteration in TFDS)."""
        files, schedule = self._epoch(epoch)
        inputs, within = schedule.order()
        shuffled = self._example_order(epoch)
        if shuffled is not None:
            inputs, within = inputs[shuffled[0]], within[shuffled[0]]
        return self._epoch_order(epoch, 0, files, inputs, within)

    def iter_epoch(
        self, epoch: int, *, chunk_size: int = 1 << 20, start: int = 0
    ) -> Iterator[EpochOrder]:
        """Stream epoch ``epoch`` from position ``start`` in chunks of ``chunk_size``.

        Memory stays bounded by the number of files plus the chunk, so plans far too
        large to materialise can be walked (with an example-level shuffle the buffer's
        permutation of the epoch is held as well).
        """
        files, schedule = self._epoch(epoch)
        self._check_position(start, allow_end=True)
        shuffled = self._example_order(epoch)
        if shuffled is None:
            chunks = schedule.iter_chunks(start=start, chunk_size=chunk_size)
        else:
            chunks = _slices(schedule.order(), shuffled[0], start, chunk_size)
        position = start
        for inputs, within in chunks:
            yield self._epoch_order(epoch, position, files, inputs, within)
            position += inputs.size

    def _epoch_order(
        self, epoch: int, start: int, files: IntArray, inputs: IntArray, within: IntArray
    ) -> EpochOrder:
        file_index = files[inputs]
        # `within` is a fresh array (or a disjoint slice of one): adding in place keeps
        # the peak memory of a whole epoch at the output arrays plus one temporary.
        record_index = within
        record_index += self._skips[file_index]
        return EpochOrder(
            plan=self, epoch=epoch, start=start, file_index=file_index, record_index=record_index
        )

    @cached_property
    def _skips(self) -> IntArray:
        return np.array([fi.skip for fi in self.instructions], dtype=np.int64)

    def locate(self, epoch: int, position: int) -> tuple[int, int]:
        """``(file_index, record_index)`` of the record at ``position`` of ``epoch``."""
        files, schedule = self._epoch(epoch)
        self._check_position(position, allow_end=False)
        shuffled = self._example_order(epoch)
        interleaved = position if shuffled is None else int(shuffled[0][position])
        input_index, within = schedule.locate(interleaved)
        file_index = int(files[input_index])
        return file_index, within + int(self._skips[file_index])

    def position_of(self, epoch: int, file_index: int, record_index: int) -> int:
        """The position in ``epoch`` of record ``record_index`` (absolute, within its file)."""
        files, schedule = self._epoch(epoch)
        input_index = self._input_of_file(files, file_index)
        instruction = self.instructions[file_index]
        within = -1 if _not_int(record_index) else record_index - instruction.skip
        if not 0 <= within < instruction.num_records:
            raise ConfigError(
                f"record {record_index!r} of file {file_index} ({instruction.filename}) is not "
                f"read by this plan: it reads records {instruction.skip}.."
                f"{instruction.skip + instruction.num_records - 1} of that file",
                field="record_index",
                value=record_index,
            )
        interleaved = schedule.position_of(input_index, within)
        shuffled = self._example_order(epoch)
        return interleaved if shuffled is None else int(shuffled[1][interleaved])

    # -- checkpoints (readplan.checkpoint holds the logic; data flows plan -> checkpoint) --

    def checkpoint(self, epoch: int, position: int) -> Checkpoint:
        """The complete read state after ``position`` records of ``epoch`` were delivered.

        Costs ``O(files + cycle length)`` whatever the position; with an example-level
        shuffle the buffer's contents are simulated, linear in ``position``.
        """
        from readplan.checkpoint import make_checkpoint

        return make_checkpoint(self, epoch, position)

    def resume(self, checkpoint: Checkpoint) -> EpochOrder:
        """The rest of the checkpoint's epoch: exactly the uninterrupted order's suffix."""
        from readplan.checkpoint import resume

        return resume(self, checkpoint)

    def iter_from(
        self, checkpoint: Checkpoint, *, chunk_size: int = 1 << 20, stop_epoch: int | None = None
    ) -> Iterator[EpochOrder]:
        """Continue from ``checkpoint`` across later epochs (``stop_epoch`` exclusive)."""
        from readplan.checkpoint import iter_from

        return iter_from(self, checkpoint, chunk_size=chunk_size, stop_epoch=stop_epoch)

    def remaining_instructions(self, checkpoint: Checkpoint) -> list[FileInstruction]:
        """The FileInstructions of the records not yet delivered (``specs/checkpoint.md``)."""
        from readplan.checkpoint import remaining_instructions

        return remaining_instructions(self, checkpoint)

    def resume_instructions(self, checkpoint: Checkpoint) -> list[FileInstruction]:
        """The list tf.data's interleave reads in exactly the rest of the checkpoint's
        epoch, with this plan's file paths (``specs/checkpoint.md`` §6)."""
        from readplan.checkpoint import resume_instructions

        return resume_instructions(self, checkpoint)

    def epoch_instructions(self, epoch: int) -> list[FileInstruction]:
        """The instructions in epoch ``epoch``'s file order.

        Given to TFDS through ``experimental_interleave_sort_fn`` with
        ``shuffle_files=False``, they reproduce that epoch's order in any process, without
        TF's implicit per-object epoch counter.
        """
        return [self.instructions[f] for f in self.file_order(epoch).tolist()]

    def _input_of_file(self, files: IntArray, file_index: int) -> int:
        if _not_int(file_index) or not 0 <= file_index < len(self.instructions):
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

    def _check_position(self, position: int, *, allow_end: bool) -> None:
        limit = self.num_examples if allow_end else self.num_examples - 1
        if _not_int(position) or not 0 <= position <= limit:
            raise ConfigError(
                f"position {position!r} is out of range: an epoch of this plan has "
                f"{self.num_examples} records (valid: 0..{limit})",
                field="position",
                value=position,
            )


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
        prefixes = self.plan.tfds_id_prefixes
        return [
            f"{prefixes[f]}__{r}"
            for f, r in zip(self.file_index.tolist(), self.record_index.tolist())
        ]


def _slices(
    order: tuple[IntArray, IntArray], positions: IntArray, start: int, chunk_size: int
) -> Iterator[tuple[IntArray, IntArray]]:
    for first in range(start, positions.size, chunk_size):
        chosen = positions[first : first + chunk_size]
        yield order[0][chosen], order[1][chosen]


def _tfds_id_prefixes(filenames: Sequence[str]) -> list[str]:
    """The shortest path tail that tells files apart once their common part is removed."""
    dirs = [os.path.dirname(name) for name in filenames]
    if len(set(dirs)) <= 1:
        return [os.path.basename(name) for name in filenames]
    # A character-level suffix on purpose: TFDS compares directory strings, not paths.
    common = os.path.commonprefix([d[::-1] for d in dirs])[::-1]  # noqa: RUF071
    prefixes = []
    for directory, name in zip(dirs, filenames):
        head = directory[: len(directory) - len(common)]
        run = head.rsplit("/", 1)[-1]
        prefixes.append(f"{run}{common}/{os.path.basename(name)}" if run else name)
    return prefixes


def _check_epoch(epoch: int) -> None:
    if _not_int(epoch) or epoch < 0:
        raise ConfigError(
            f"epoch must be a non-negative integer (0 is the first iteration over the "
            f"dataset), got {epoch!r}",
            field="epoch",
            value=epoch,
        )


def _not_int(value: object) -> bool:
    # numpy integers are accepted too: positions and indices often come out of the arrays
    # of an EpochOrder.
    return not (is_int(value) or isinstance(value, np.integer))
