"""``readplan order --batch-size B --step S``: which examples a training step read, and the
read configuration taken from a saved state (``order --from STATE``).

A step is one batch of ``Reader.batches(batch_size, drop_remainder=...)``: batches never
span epochs, so an epoch has ``ceil(N / B)`` steps (``floor`` with ``--drop-remainder``) and
step ``S`` is batch ``S mod steps_per_epoch`` of epoch ``S div steps_per_epoch``
(``specs/reader.md``, "Batches"; ``specs/order.md``).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from readplan.cli.numbers import NON_NEGATIVE, POSITIVE
from readplan.errors import CheckpointError, ConfigError
from readplan.planning.config import ExampleShuffle, InputContext, ReadConfig

__all__ = ["Step", "add_step_arguments", "config_from_state", "steps_of"]

_STEPS = re.compile(r"([0-9]{1,18}):([0-9]{1,18})")


@dataclass(frozen=True)
class Step:
    """Training step ``number``: positions ``start`` to ``stop`` (exclusive) of ``epoch``."""

    number: int
    epoch: int
    start: int
    stop: int


def add_step_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "training steps (batches of Reader.batches; a batch never spans two epochs)"
    )
    group.add_argument(
        "--batch-size", type=POSITIVE, default=None, metavar="B", help="examples per training step"
    )
    where = group.add_mutually_exclusive_group()
    where.add_argument(
        "--step",
        type=NON_NEGATIVE,
        default=None,
        metavar="S",
        help="print the examples of step S (from 0)",
    )
    where.add_argument(
        "--steps", default=None, metavar="A:B", help="print the examples of steps A to B-1"
    )
    group.add_argument(
        "--drop-remainder",
        action="store_true",
        help="the last, shorter batch of each epoch is dropped (as drop_remainder=True)",
    )


def steps_of(args: argparse.Namespace, num_examples: int) -> Iterator[Step] | None:
    """The steps ``--step``/``--steps`` ask for, or None when they ask for none."""
    if args.step is None and args.steps is None:
        if args.batch_size is not None:
            raise ConfigError(
                "--batch-size needs --step S or --steps A:B (which steps to print)",
                field="step",
                value=None,
            )
        return None
    if args.batch_size is None or args.batch_size < 1:
        raise ConfigError(
            f"--step/--steps need --batch-size B with B >= 1, got {args.batch_size}",
            field="batch_size",
            value=args.batch_size,
        )
    for flag, given in (("--start", args.start), ("--count", args.count), ("--epoch", args.epoch)):
        if given is not None:
            raise ConfigError(
                f"a step sets its epoch and positions: leave out {flag}", field=flag, value=given
            )
    first, last = _step_range(args)
    per_epoch = _steps_per_epoch(num_examples, args.batch_size, args.drop_remainder)
    return (_step(k, per_epoch, args.batch_size, num_examples) for k in range(first, last))


def _step_range(args: argparse.Namespace) -> tuple[int, int]:
    if args.step is not None:
        if args.step < 0:
            raise ConfigError(
                f"--step must be >= 0, got {args.step}", field="step", value=args.step
            )
        return args.step, args.step + 1
    match = _STEPS.fullmatch(args.steps)
    if match is None or int(match[1]) > int(match[2]):
        raise ConfigError(
            f"--steps must look like A:B with 0 <= A <= B (steps A to B-1), got {args.steps!r}",
            field="steps",
            value=args.steps,
        )
    return int(match[1]), int(match[2])


def _steps_per_epoch(num_examples: int, batch_size: int, drop_remainder: bool) -> int:
    per_epoch = num_examples // batch_size if drop_remainder else -(-num_examples // batch_size)
    if per_epoch == 0:
        raise ConfigError(
            f"an epoch of this plan has {num_examples} examples: no step of --batch-size "
            f"{batch_size}{' with --drop-remainder' if drop_remainder else ''}",
            field="batch_size",
            value=batch_size,
        )
    return per_epoch


def _step(number: int, per_epoch: int, batch_size: int, num_examples: int) -> Step:
    epoch, batch = divmod(number, per_epoch)
    start = batch * batch_size
    return Step(number, epoch, start, min(start + batch_size, num_examples))


def config_from_state(state: Mapping[str, Any], path: str) -> tuple[str, ReadConfig]:
    """The split string and read configuration a saved state was made with (its ``plan``
    summary, ``specs/checkpoint.md`` §4)."""
    plan = state.get("plan")
    if not isinstance(plan, Mapping) or not isinstance(plan.get("split"), str):
        raise CheckpointError(
            f"{path}: no plan summary with a split in this state; is it a checkpoint or a "
            "saved reader state?",
            field="plan",
        )
    context = plan.get("input_context")
    shuffle = plan.get("example_shuffle")
    try:
        config = ReadConfig(
            interleave_cycle_length=plan["cycle_length"],
            interleave_block_length=plan["block_length"],
            shuffle_files=plan["shuffle_files"],
            shuffle_seed=plan["shuffle_seed"],
            shuffle_reshuffle_each_iteration=plan["reshuffle_each_iteration"],
            global_seed=plan["global_seed"],
            input_context=None if context is None else InputContext(*context),
            example_shuffle=None
            if shuffle is None
            else ExampleShuffle(
                shuffle["buffer_size"], shuffle["seed"], shuffle["reshuffle_each_iteration"]
            ),
        )
    except (KeyError, TypeError) as err:
        raise CheckpointError(
            f"{path}: the state's plan summary lacks or garbles {err}; it cannot give the "
            "read configuration (pass the --cycle-length/--shuffle-files/--seed flags instead)",
            field="plan",
        ) from None
    return plan["split"], config
