"""The checks TFDS's reader makes on a split before it reads, and the files one input
pipeline reads (``specs/splits.md`` §4, ``specs/order.md`` §1 and §7).

An empty selection, an ordered dataset read out of order and a take TFDS's inverted-range
quirk made negative are refused up front, with TFDS's message where TFDS has one.
"""

from __future__ import annotations

import os

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import ConfigError, EmptySplitError, SplitError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.config import ReadConfig
from readplan.planning.instructions import InstructionTable

__all__ = [
    "MAX_MATERIALIZED_EXAMPLES",
    "check_cardinality",
    "check_materializable",
    "check_not_empty",
    "check_ordering_guard",
    "pipeline_files",
]

MAX_MATERIALIZED_EXAMPLES = 1 << 31
"""Records an order held whole in memory may have by default (``specs/order.md`` §10).

Each takes 16 bytes (a file index and a record index, int64), so the bound is 32 GiB of
output before temporaries: far past it numpy would fail on the allocation (or the system
kill the process), so a larger request is refused first.
"""


def check_not_empty(instructions: InstructionTable, info: DatasetInfo, spec: str) -> None:
    """Refuse a split ``spec`` that selects no records, as TFDS does when reading it."""
    if not instructions:
        raise EmptySplitError(
            f"Instruction [] corresponds to no data!\nThe split {spec!r} selects no "
            f"records of dataset {info.name!r}; TFDS raises this when reading it. Check "
            "the bounds against the split sizes "
            f"({', '.join(f'{s.name}={s.num_examples}' for s in info.splits.values())}).",
            spec=spec,
            tfds_message="Instruction [] corresponds to no data!",
        )


def check_ordering_guard(info: DatasetInfo, config: ReadConfig, cycle_length: int) -> None:
    """Refuse to read a dataset written with ``disable_shuffling`` out of order, unless the
    config turns the guard off."""
    if not info.disable_shuffling or not config.enable_ordering_guard:
        return
    reasons = []
    if config.shuffle_files:
        reasons.append("`shuffle_files=True`")
    if cycle_length != 1:
        reasons.append("`ReadConfig.interleave_cycle_length != 1`")
    if reasons:
        raise ConfigError(
            "\n".join(
                "Dataset is an ordered dataset ('disable_shuffling=True'), but examples "
                f"will not be read in order because {reason}."
                for reason in reasons
            )
            + "\nLeave interleave_cycle_length unset (or pass 1) and shuffle_files=False, "
            "or pass enable_ordering_guard=False to read it out of order on purpose.",
            field="interleave_cycle_length" if cycle_length != 1 else "shuffle_files",
            value=cycle_length,
        )


def check_cardinality(instructions: InstructionTable, config: ReadConfig, spec: str) -> None:
    """TFDS asserts the dataset holds sum(take) records, unless input_context is set.

    Only TFDS's inverted-range quirk makes a take negative (other than -1, which
    means "to the end"); tf.data then reads the rest of the file, more than the sum,
    and TFDS fails mid-epoch.  readplan refuses such a plan up front.
    """
    negative = np.flatnonzero(instructions.take < 0)
    if not negative.size or config.input_context is not None:
        return
    expected = int(instructions.take.sum())
    tfds_message = (
        f"Input dataset was expected to contain {expected} elements but contained at "
        f"least {max(expected, 0) + 1} element{'s' if max(expected, 0) + 1 != 1 else ''}."
    )
    first = instructions[int(negative[0])]
    raise SplitError(
        f"{tfds_message}\nThe split {spec!r} has an inverted range inside one shard, "
        f"which TFDS turns into {os.path.basename(first.filename)} skip={first.skip} "
        f"take={first.take}; tf.data then reads the rest of that file and TFDS fails "
        f"with the error above after {max(expected, 0)} records. Give the range as "
        "[from:to] with from <= to.",
        spec=spec,
        tfds_message=tfds_message,
    )


def pipeline_files(instructions: InstructionTable, config: ReadConfig) -> IntArray:
    """The indices of the files this input pipeline reads (all of them without an
    ``input_context``), read-only."""
    everything = np.arange(len(instructions), dtype=np.int64)
    everything.flags.writeable = False
    context = config.input_context
    if context is None or context.num_input_pipelines == 1:
        return everything
    if len(instructions) < context.num_input_pipelines:
        raise ConfigError(
            "Cannot shard the pipeline with given `input_context`.`num_shards="
            f"{len(instructions)}` but `num_input_pipelines="
            f"{context.num_input_pipelines}`. This means that some workers won't read "
            "any data. To shard the data, you may want to use the subsplit API instead: "
            "https://www.tensorflow.org/datasets/splits",
            field="input_context",
            value=context,
        )
    return everything[context.input_pipeline_id :: context.num_input_pipelines]


def check_materializable(records: int, limit: int, *, call: str, instead: str) -> None:
    """Refuse to hold ``records`` records in memory past ``limit``, naming what does not.

    ``call`` is the call that would hold them and ``instead`` the calls that stay bounded.
    """
    if records <= limit:
        return
    raise ConfigError(
        f"{call} would hold {records:,} records in memory ({records * 16 / 2**30:,.1f} GiB "
        f"as int64 file and record indices), more than the bound of {limit:,} "
        f"(max_examples); {instead}",
        field="max_examples",
        value=records,
    )
