"""Subcommands of the planning layer (registered by :mod:`readplan.cli`).

``plan`` prints the file instructions of a split (``specs/splits.md``).
:func:`load_dataset` turns the DATASET argument shared by the planning subcommands into a
:class:`~readplan.dataset_info.DatasetInfo`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from readplan.dataset_info import DatasetInfo, catalog_names
from readplan.errors import DatasetInfoError, EmptySplitError
from readplan.instructions import FileInstruction, file_instructions

_EMPTY_MESSAGE = "Instruction [] corresponds to no data!"


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add this layer's subcommands to ``subparsers``."""
    register_plan(subparsers)


def add_dataset_argument(parser: argparse.ArgumentParser) -> None:
    """The DATASET positional argument understood by :func:`load_dataset`."""
    parser.add_argument(
        "dataset",
        metavar="DATASET",
        help="a TFDS dataset directory (the folder holding dataset_info.json and the shard "
        f"files) or a catalog name ({', '.join(catalog_names())})",
    )


def load_dataset(arg: str) -> DatasetInfo:
    """DATASET as given on the command line: an existing path, else a catalog name."""
    if os.path.exists(arg):
        return DatasetInfo.load(arg)
    if arg in catalog_names():
        return DatasetInfo.from_catalog(arg)
    raise DatasetInfoError(
        f"{arg!r} is neither an existing dataset directory nor a catalog name; pass the folder "
        "that holds dataset_info.json (<data_dir>/<dataset>/[<config>/]<version>) or one of "
        f"{catalog_names()}",
        path=arg,
    )


# ---------------------------------------------------------------------------------------------
# plan


def register_plan(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="show the files (skip/take) TFDS reads for a split string",
        description="Resolve a TFDS split string (e.g. 'train[10%%:]+test') against a "
        "dataset's shard layout and print TFDS's file instructions in read order.",
    )
    add_dataset_argument(parser)
    parser.add_argument("spec", metavar="SPEC", help="a TFDS split string, e.g. 'train[:10%%]'")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="reject TFDS quirks: overlapping parts, inverted or empty ranges, [:0shard], ...",
    )
    parser.set_defaults(handler=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    info = load_dataset(args.dataset)
    instructions = file_instructions(info, args.spec, strict=args.strict)
    if not instructions:
        sizes = ", ".join(f"{s.name}={s.num_examples}" for s in info.splits.values())
        raise EmptySplitError(
            f"{_EMPTY_MESSAGE}\nThe split {args.spec!r} selects no records of {info.name!r} "
            f"(split sizes: {sizes}); TFDS fails with this message when reading it.",
            spec=args.spec,
            tfds_message=_EMPTY_MESSAGE,
        )
    if args.json:
        print(json.dumps(_plan_json(info, args.spec, args.strict, instructions), indent=2))
    else:
        print(_plan_table(info, args.spec, instructions))
    return 0


def _plan_json(
    info: DatasetInfo, spec: str, strict: bool, instructions: Sequence[FileInstruction]
) -> dict[str, Any]:
    return {
        "dataset": info.name,
        "data_dir": info.data_dir,
        "spec": spec,
        "strict": strict,
        "instructions": [
            {
                "filename": fi.filename,
                "split": fi.split,
                "shard_index": fi.shard_index,
                "skip": fi.skip,
                "take": fi.take,
                "examples_in_shard": fi.examples_in_shard,
                "num_records": fi.num_records,
            }
            for fi in instructions
        ],
        "num_files": len(instructions),
        "num_records": sum(fi.num_records for fi in instructions),
    }


def _plan_table(info: DatasetInfo, spec: str, instructions: Sequence[FileInstruction]) -> str:
    header = ("index", "file", "skip", "take", "examples_in_shard")
    rows = [
        (
            str(i),
            os.path.basename(fi.filename),
            str(fi.skip),
            str(fi.take),
            str(fi.examples_in_shard),
        )
        for i, fi in enumerate(instructions)
    ]
    widths = [max(len(row[col]) for row in [header, *rows]) for col in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = [
            cell.ljust(width) if col == 1 else cell.rjust(width)
            for col, (cell, width) in enumerate(zip(row, widths))
        ]
        return "  ".join(cells).rstrip()

    total = sum(fi.num_records for fi in instructions)
    lines = [f"{info.name} {spec!r}", line(header), *(line(row) for row in rows)]
    lines.append(f"total: {len(instructions)} files, {total} records")
    if info.data_dir is not None:
        lines.append(f"directory: {info.data_dir}")
    if any(fi.take < 0 for fi in instructions):
        lines.append("note: a negative take reads the rest of its file (TFDS inverted-range quirk)")
    return "\n".join(lines)
