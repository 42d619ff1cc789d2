"""Subcommands of the reader layer (registered by :mod:`readplan.cli`): ``demo``."""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

from readplan.cli.numbers import INT64, NON_NEGATIVE, POSITIVE
from readplan.demo import DemoConfig, main


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add this layer's subcommands to ``subparsers``."""
    parser = subparsers.add_parser(
        "demo",
        help="write a small dataset, read it, preempt, resume, and prove the order is exact",
        description=(
            "Write a small dataset in TFDS's layout (uneven shards), read it with shuffled "
            "files and a seed, stop part-way as a preempted job would, save the checkpoint, "
            "resume in a new reader from the saved file, and check that the stitched run "
            "equals an uninterrupted one. Exits 1 if it does not."
        ),
    )
    parser.add_argument(
        "--dir",
        help="write the dataset and checkpoint here (an empty or new directory) and keep "
        "them; by default a temporary directory is used and removed",
    )
    parser.add_argument("--seed", type=INT64, default=32, help="file shuffle seed (default 32)")
    parser.add_argument(
        "--stop-at",
        type=NON_NEGATIVE,
        default=None,
        help="records delivered before the preemption (default: 3/5 of the run)",
    )
    parser.add_argument("--epochs", type=POSITIVE, default=2, help="epochs to read (default 2)")
    parser.add_argument("--cycle-length", type=POSITIVE, default=4, help="interleave cycle length")
    parser.add_argument("--block-length", type=POSITIVE, default=8, help="interleave block length")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    config = DemoConfig(
        cycle_length=args.cycle_length,
        block_length=args.block_length,
        seed=args.seed,
        epochs=args.epochs,
        stop_at=args.stop_at,
    )
    if args.dir is not None:
        return main(args.dir, config)
    with tempfile.TemporaryDirectory(prefix="readplan-demo-") as directory:
        return main(directory, config)
