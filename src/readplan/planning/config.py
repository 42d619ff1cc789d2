"""The read configuration: everything that decides TFDS's read order (``specs/order.md``).

``ReadConfig`` carries TFDS's names and defaults; ``InputContext`` is the part of
``tf.distribute.InputContext`` TFDS uses; ``ExampleShuffle`` models a ``ds.shuffle`` after
TFDS's interleave (``specs/shuffle.md``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from readplan._internal.frozen import init_fields, plain_bool, plain_int
from readplan._internal.validate import INT64_MAX, check_bool, check_int, check_seed
from readplan.errors import ConfigError
from readplan.planning.instructions import FileInstruction

__all__ = [
    "TFDS_DEFAULT",
    "TFDS_DEFAULT_CYCLE_LENGTH",
    "ExampleShuffle",
    "InputContext",
    "ReadConfig",
    "SortFn",
]

SortFn = Callable[[list[FileInstruction]], Sequence[FileInstruction]]

# TFDS's ReadConfig default; datasets written with disable_shuffling default to 1.
TFDS_DEFAULT_CYCLE_LENGTH = 16


class _Unset(enum.Enum):
    """TFDS's "not set" marker for ``interleave_cycle_length`` (its ``MISSING``)."""

    TFDS_DEFAULT = "TFDS_DEFAULT"

    def __repr__(self) -> str:
        return "TFDS_DEFAULT"


TFDS_DEFAULT: Literal[_Unset.TFDS_DEFAULT] = _Unset.TFDS_DEFAULT
"""``interleave_cycle_length`` not given: 16, or 1 for a ``disable_shuffling`` dataset."""

_NONE_CYCLE = (
    "interleave_cycle_length=None is refused: TFDS passes None on to tf.data's interleave, "
    "where it means AUTOTUNE (a cycle length chosen from the machine's CPU count, so the "
    "order depends on the machine), while TFDS's own default when the argument is not given "
    "is 16 (1 for a dataset written with disable_shuffling). Leave the argument out for "
    "TFDS's default, or pass the cycle length your TFDS job actually used (for AUTOTUNE: "
    "the number of CPU cores of that machine)."
)


@dataclass(frozen=True, init=False)
class InputContext:
    """``tf.distribute.InputContext``'s fields that TFDS uses: files are dealt out by index.

    numpy integers are accepted and stored as ``int``.
    """

    input_pipeline_id: int
    num_input_pipelines: int

    def __init__(self, input_pipeline_id: int = 0, num_input_pipelines: int = 1) -> None:
        init_fields(
            self,
            input_pipeline_id=plain_int(input_pipeline_id),
            num_input_pipelines=plain_int(num_input_pipelines),
        )
        self.__post_init__()

    def __post_init__(self) -> None:
        pipelines = check_int(
            self.num_input_pipelines,
            "input_context.num_input_pipelines",
            minimum=1,
            what="a positive integer",
        )
        check_int(
            self.input_pipeline_id,
            "input_context.input_pipeline_id",
            minimum=0,
            maximum=pipelines - 1,
            what=f"a pipeline index for {pipelines} pipelines",
        )


@dataclass(frozen=True, init=False)
class ExampleShuffle:
    """An example-level ``ds.shuffle(buffer_size, seed)`` applied after TFDS's interleave.

    Modelled exactly on tf.data's buffer (``specs/shuffle.md``); epoch ``e`` uses the
    ``e``-th iterator's seeds, as iterating the same dataset object again does.  numpy
    integers and bools are accepted and stored as ``int``/``bool``.
    """

    buffer_size: int
    seed: int
    reshuffle_each_iteration: bool

    def __init__(self, buffer_size: int, seed: int, reshuffle_each_iteration: bool = True) -> None:
        init_fields(
            self,
            buffer_size=plain_int(buffer_size),
            seed=_plain_seed(seed),
            reshuffle_each_iteration=plain_bool(reshuffle_each_iteration),
        )
        self.__post_init__()

    def __post_init__(self) -> None:
        check_int(
            self.buffer_size, "example_shuffle.buffer_size", minimum=1, what="a positive integer"
        )
        if self.seed is None:
            raise ConfigError(
                "example_shuffle.seed=None: an unseeded shuffle cannot be reproduced; pass an "
                "integer (of any size: TensorFlow folds it)",
                field="example_shuffle.seed",
                value=None,
            )
        check_seed(self.seed, "example_shuffle.seed")
        check_bool(self.reshuffle_each_iteration, "example_shuffle.reshuffle_each_iteration")


@dataclass(frozen=True, init=False)
class ReadConfig:
    """Everything that decides TFDS's read order, with TFDS's names and defaults.

    ``interleave_cycle_length`` left out (:data:`TFDS_DEFAULT`) is TFDS's default for the
    dataset: 16, or 1 for a dataset written with ``disable_shuffling``.  ``None`` is
    refused: TFDS hands it to tf.data, where it means the machine-dependent AUTOTUNE.
    ``interleave_block_length=None`` means 1, as in tf.data.
    ``shuffle_reshuffle_each_iteration=None`` means True, as in tf.data.
    ``global_seed`` is the value given to ``tf.random.set_seed`` before the dataset was
    built, if any (it changes the shuffles' seeds).  ``example_shuffle`` models a
    ``ds.shuffle(...)`` the pipeline applies after TFDS's interleave.  ``try_autocache`` is
    TFDS's: whether TFDS may cache a small dataset, which freezes the file order of epoch 0
    for every later epoch when TFDS's rule caches (``ReadPlan.autocached``).  Seeds are
    integers of any size (numpy integers and bools too), as TF takes them.  Other integers are int64
    (numpy integers are accepted and stored as ``int``), flags are ``bool`` (numpy bools
    are stored as ``bool``); anything else is a :class:`~readplan.errors.ConfigError`
    (``specs/order.md``, "Read configuration").
    """

    interleave_cycle_length: int | Literal[_Unset.TFDS_DEFAULT]
    interleave_block_length: int | None
    shuffle_files: bool
    shuffle_seed: int | None
    shuffle_reshuffle_each_iteration: bool | None
    input_context: InputContext | None
    experimental_interleave_sort_fn: SortFn | None = field(compare=False)
    enable_ordering_guard: bool
    global_seed: int | None
    example_shuffle: ExampleShuffle | None
    try_autocache: bool

    def __init__(
        self,
        interleave_cycle_length: int | Literal[_Unset.TFDS_DEFAULT] = TFDS_DEFAULT,
        interleave_block_length: int | None = 16,
        shuffle_files: bool = False,
        shuffle_seed: int | None = None,
        shuffle_reshuffle_each_iteration: bool | None = None,
        input_context: InputContext | None = None,
        experimental_interleave_sort_fn: SortFn | None = None,
        enable_ordering_guard: bool = True,
        global_seed: int | None = None,
        example_shuffle: ExampleShuffle | None = None,
        try_autocache: bool = True,
    ) -> None:
        init_fields(
            self,
            interleave_cycle_length=plain_int(interleave_cycle_length),
            interleave_block_length=plain_int(interleave_block_length),
            shuffle_files=plain_bool(shuffle_files),
            shuffle_seed=_plain_seed(shuffle_seed),
            shuffle_reshuffle_each_iteration=plain_bool(shuffle_reshuffle_each_iteration),
            input_context=input_context,
            experimental_interleave_sort_fn=experimental_interleave_sort_fn,
            enable_ordering_guard=plain_bool(enable_ordering_guard),
            global_seed=_plain_seed(global_seed),
            example_shuffle=example_shuffle,
            try_autocache=plain_bool(try_autocache),
        )
        self.__post_init__()

    def __post_init__(self) -> None:
        cycle = self.interleave_cycle_length
        if cycle is None:
            raise ConfigError(_NONE_CYCLE, field="interleave_cycle_length", value=None)
        if cycle is not TFDS_DEFAULT:
            _positive(cycle, "interleave_cycle_length")
        if self.interleave_block_length is not None:
            _positive(self.interleave_block_length, "interleave_block_length")
        for name in ("shuffle_seed", "global_seed"):
            check_seed(getattr(self, name), name)
        for name in ("shuffle_files", "enable_ordering_guard", "try_autocache"):
            check_bool(getattr(self, name), name)
        if self.shuffle_reshuffle_each_iteration is not None:
            check_bool(self.shuffle_reshuffle_each_iteration, "shuffle_reshuffle_each_iteration")
        self._check_shuffle_seed()
        self._check_parts()

    def _check_shuffle_seed(self) -> None:
        if self.shuffle_files and self.shuffle_seed is None:
            raise ConfigError(
                "shuffle_files=True without shuffle_seed: TFDS would then shuffle the files "
                "with random seeds and interleave them non-deterministically, so no order "
                "can be reproduced. Pass shuffle_seed=<int> (TFDS gives the same seed to "
                "tf.data).",
                field="shuffle_seed",
                value=None,
            )

    def _check_parts(self) -> None:
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

    def cycle_length_for(self, disable_shuffling: bool) -> int:
        """The cycle length TFDS uses for a dataset (resolving :data:`TFDS_DEFAULT`)."""
        if self.interleave_cycle_length is not TFDS_DEFAULT:
            return self.interleave_cycle_length
        return 1 if disable_shuffling else TFDS_DEFAULT_CYCLE_LENGTH


def _plain_seed(value: object) -> object:
    """A seed as the ``int`` TF reads it (numpy integers and bools too); else as given."""
    if isinstance(value, (bool, np.bool_, np.integer)):
        return int(value)
    return value


def _positive(value: object, name: str) -> int:
    return check_int(value, name, minimum=1, maximum=INT64_MAX, what="a positive integer")
