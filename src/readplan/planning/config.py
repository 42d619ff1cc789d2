"""The read configuration: everything that decides TFDS's read order (``specs/order.md``).

``ReadConfig`` carries TFDS's names and defaults; ``InputContext`` is the part of
``tf.distribute.InputContext`` TFDS uses; ``ExampleShuffle`` models a ``ds.shuffle`` after
TFDS's interleave (``specs/shuffle.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from readplan._internal.validate import not_int
from readplan.errors import ConfigError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.instructions import FileInstruction

__all__ = ["TFDS_DEFAULT_CYCLE_LENGTH", "ExampleShuffle", "InputContext", "ReadConfig", "SortFn"]

SortFn = Callable[[list[FileInstruction]], Sequence[FileInstruction]]

# TFDS's ReadConfig default; datasets written with disable_shuffling default to 1.
TFDS_DEFAULT_CYCLE_LENGTH = 16


@dataclass(frozen=True)
class InputContext:
    """``tf.distribute.InputContext``'s fields that TFDS uses: files are dealt out by index."""

    input_pipeline_id: int = 0
    num_input_pipelines: int = 1

    def __post_init__(self) -> None:
        if not_int(self.num_input_pipelines) or self.num_input_pipelines < 1:
            raise ConfigError(
                f"num_input_pipelines must be a positive integer, got {self.num_input_pipelines!r}",
                field="input_context.num_input_pipelines",
                value=self.num_input_pipelines,
            )
        if not_int(self.input_pipeline_id) or not (
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
        if not_int(self.buffer_size) or self.buffer_size < 1:
            raise ConfigError(
                f"example shuffle buffer_size must be a positive integer, got {self.buffer_size!r}",
                field="example_shuffle.buffer_size",
                value=self.buffer_size,
            )
        if not_int(self.seed):
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
            if value is not None and (not_int(value) or value < 1):
                raise ConfigError(
                    f"{name} must be a positive integer or None, got {value!r}",
                    field=name,
                    value=value,
                )
        for name in ("shuffle_seed", "global_seed"):
            value = getattr(self, name)
            if value is not None and not_int(value):
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
