"""Subcommands of the planning layer (registered by :mod:`readplan.cli`).

``plan`` prints the file instructions of a split (``specs/splits.md``); ``order`` prints
the read order of an epoch (``specs/order.md``) and ``checkpoint`` the read state at a
position (``specs/checkpoint.md``).
:func:`load_dataset` turns the DATASET argument shared by the planning subcommands into a
:class:`~readplan.metadata.dataset_info.DatasetInfo`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from readplan import storage
from readplan.cli.numbers import NON_NEGATIVE, POSITION, POSITIVE, SEED
from readplan.cli.steps import Step, add_step_arguments, config_from_state, steps_of
from readplan.errors import ConfigError, DatasetInfoError, EmptySplitError
from readplan.metadata.dataset_info import DatasetInfo, catalog_names
from readplan.plan import EpochOrder, ReadPlan
from readplan.planning.config import InputContext, ReadConfig
from readplan.planning.instructions import FileInstruction, file_instructions
from readplan.reading.options import read_state
from readplan.reading.ranks import STATE_KEY
from readplan.state.checkpoint import Checkpoint, ExpandedCheckpoint
from readplan.state.codec import parse_json
from readplan.state.limits import read_state_file
from readplan.storage import is_remote

_EMPTY_MESSAGE = "Instruction [] corresponds to no data!"


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add this layer's subcommands to ``subparsers``."""
    register_plan(subparsers)
    register_order(subparsers)
    register_checkpoint(subparsers)


def add_dataset_argument(parser: argparse.ArgumentParser) -> None:
    """The DATASET positional argument understood by :func:`load_dataset`."""
    parser.add_argument(
        "dataset",
        metavar="DATASET",
        help="a TFDS dataset directory (the folder holding dataset_info.json and the shard "
        "files; a local path or a URL such as gs://bucket/tensorflow_datasets/mnist/3.0.1) "
        f"or a catalog name ({', '.join(catalog_names())})",
    )
    parser.add_argument(
        "--file-format",
        metavar="FORMAT",
        default=None,
        help="name the shard files of this format, one of those the dataset is stored in "
        "(dataset_info.json's fileFormat, the default, and alternativeFileFormats, e.g. "
        "array_record after tfds convert_format)",
    )


def load_dataset(arg: str, file_format: str | None = None) -> DatasetInfo:
    """DATASET as given on the command line: a URL or an existing path, else a catalog name;
    in ``file_format`` when given."""
    if is_remote(arg) or os.path.exists(arg):
        return DatasetInfo.load(arg, file_format=file_format)
    if arg in catalog_names():
        info = DatasetInfo.from_catalog(arg)
        return info if file_format is None else info.with_file_format(file_format)
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
        # argparse %-formats help texts but prints descriptions as they are.
        description="Resolve a TFDS split string (e.g. 'train[10%:]+test') against a "
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
    info = load_dataset(args.dataset, args.file_format)
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


# ---------------------------------------------------------------------------------------------
# order and checkpoint


def _add_read_config_arguments(
    parser: argparse.ArgumentParser, *, from_state: bool = False
) -> None:
    add_dataset_argument(parser)
    if from_state:
        parser.add_argument(
            "spec",
            metavar="SPEC",
            nargs="?",
            default=None,
            help="a TFDS split string, e.g. 'train[:10%%]' (with --from: the state's, by default)",
        )
    else:
        parser.add_argument("spec", metavar="SPEC", help="a TFDS split string, e.g. 'train[:10%%]'")
    group = parser.add_argument_group("read configuration (TFDS's ReadConfig)")
    group.add_argument(
        "--cycle-length",
        type=POSITIVE,
        default=None,
        help="interleave_cycle_length (default: TFDS's, 16, or 1 for ordered datasets)",
    )
    group.add_argument(
        "--block-length",
        type=POSITIVE,
        default=None,
        help="interleave_block_length (default 16)",
    )
    group.add_argument("--shuffle-files", action="store_true", help="shuffle_files=True")
    group.add_argument(
        "--seed", type=SEED, default=None, help="shuffle_seed of the file shuffle (an integer)"
    )
    group.add_argument(
        "--no-reshuffle",
        action="store_true",
        help="shuffle_reshuffle_each_iteration=False: every epoch uses the same file order",
    )
    group.add_argument(
        "--input-context",
        metavar="ID/N",
        default=None,
        help="input_context: read the files of pipeline ID out of N (e.g. 0/4)",
    )
    parser.add_argument(
        "--epoch", type=NON_NEGATIVE, default=None, help="epoch, counted from 0 (default 0)"
    )


_CONFIG_FLAGS = (
    ("cycle_length", "--cycle-length"),
    ("block_length", "--block-length"),
    ("shuffle_files", "--shuffle-files"),
    ("seed", "--seed"),
    ("no_reshuffle", "--no-reshuffle"),
    ("input_context", "--input-context"),
)


def _plan_from_args(args: argparse.Namespace) -> ReadPlan:
    if args.seed is not None and not args.shuffle_files:
        print(
            f"readplan {args.command}: warning: --seed {args.seed} has no effect without "
            "--shuffle-files (the files are read in their planned order)",
            file=sys.stderr,
        )
    info = load_dataset(args.dataset, args.file_format)
    typed = [flag for name, flag in _CONFIG_FLAGS if getattr(args, name) not in (None, False)]
    if getattr(args, "state", None) is not None and not typed:
        # The state was saved with a read configuration: take it, and its split by default.
        spec, config = config_from_state(read_state(args.state), args.state)
        return ReadPlan(info, args.spec or spec, config)
    if args.spec is None:
        raise ConfigError(
            "SPEC is missing: give the split string (it is optional only with --from STATE)",
            field="spec",
            value=None,
        )
    cycle = {} if args.cycle_length is None else {"interleave_cycle_length": args.cycle_length}
    try:
        config = ReadConfig(
            **cycle,
            interleave_block_length=16 if args.block_length is None else args.block_length,
            shuffle_files=args.shuffle_files,
            shuffle_seed=args.seed,
            shuffle_reshuffle_each_iteration=False if args.no_reshuffle else None,
            input_context=_input_context(args.input_context),
        )
    except ConfigError as err:
        raise _as_flag_error(err) from None
    return ReadPlan(info, args.spec, config)


_FLAG_OF_FIELD = {
    "shuffle_seed": "--seed",
    "interleave_cycle_length": "--cycle-length",
    "interleave_block_length": "--block-length",
}


def _as_flag_error(err: ConfigError) -> ConfigError:
    """``err`` with ReadConfig's keyword arguments written as this command's flags."""
    message = str(err)
    message = message.replace("Pass shuffle_seed=<int>", "Pass --seed <int>")
    message = message.replace("shuffle_files=True", "--shuffle-files")
    for keyword, flag in _FLAG_OF_FIELD.items():
        message = re.sub(rf"\b{keyword}\b", flag, message)
    return type(err)(message, field=err.field, value=err.value)


def _input_context(text: str | None) -> InputContext | None:
    if text is None:
        return None
    pipeline, _, count = text.partition("/")
    if not (re.fullmatch("[0-9]{1,9}", pipeline) and re.fullmatch("[0-9]{1,9}", count)):
        raise ConfigError(
            f"--input-context must look like ID/N (e.g. 0/4), got {text!r}",
            field="input_context",
            value=text,
        )
    return InputContext(int(pipeline), int(count))


def register_order(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "order",
        help="print the exact order TFDS reads an epoch in",
        description="Print which record comes at each position of an epoch, exactly as TFDS "
        "reads it (interleave, seeded per-epoch file shuffle), without reading any record.",
    )
    _add_read_config_arguments(parser, from_state=True)
    parser.add_argument(
        "--start",
        type=POSITION,
        default=None,
        help="first position, 0..N (default 0; N: nothing)",
    )
    parser.add_argument(
        "--from",
        dest="state",
        metavar="STATE",
        default=None,
        help="continue from a saved state (Reader.save, checkpoint -o): print where it stands "
        "and what comes next; sets --epoch and --start, and the read configuration and SPEC "
        "unless they are given (then they must be the state's)",
    )
    parser.add_argument(
        "--count", type=NON_NEGATIVE, default=None, help="number of positions (default: to the end)"
    )
    parser.add_argument(
        "--format",
        choices=("global", "tfds_id", "json"),
        default="global",
        help="global: TFDS guide's global ids; tfds_id: '<file>__<index>'; json: one object "
        "per line with every field",
    )
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    add_step_arguments(parser)
    parser.set_defaults(handler=run_order)


def run_order(args: argparse.Namespace) -> int:
    plan = _plan_from_args(args)
    fmt = "json" if args.json else args.format
    steps = steps_of(args, plan.num_examples)
    if steps is not None:
        for step in steps:
            _print_step(plan, step, fmt)
        return 0
    epoch, start = args.epoch or 0, 0 if args.start is None else args.start
    if args.state is not None:
        if args.start is not None:
            raise ConfigError(
                "--from sets the start position; leave out --start", field="start", value=start
            )
        epoch, start = _state_position(plan, args.state, json_lines=fmt == "json")
    _check_position("--start", start, plan.num_examples)
    stop = plan.num_examples if args.count is None else min(plan.num_examples, start + args.count)
    remaining = stop - start
    if remaining == 0:
        return 0
    chunk_size = min(remaining, 1 << 16)
    for chunk in plan.iter_epoch(epoch, chunk_size=chunk_size, start=start):
        take = min(len(chunk), remaining)
        print("\n".join(_format_chunk(plan, chunk, take, fmt)))
        remaining -= take
        if remaining == 0:
            break
    return 0


def _print_step(plan: ReadPlan, step: Step, fmt: str) -> None:
    """The examples of one training step, after a header line (a field of each JSON line)."""
    size = step.stop - step.start
    chunk = next(plan.iter_epoch(step.epoch, chunk_size=size, start=step.start))
    lines = _format_chunk(plan, chunk, size, fmt)
    if fmt == "json":
        where = {"step": step.number, "epoch": step.epoch}
        lines = [json.dumps({**where, **json.loads(line)}) for line in lines]
    else:
        print(f"# step {step.number}: epoch {step.epoch}, positions {step.start}..{step.stop - 1}")
    print("\n".join(lines))


def _check_position(flag: str, position: int, size: int) -> None:
    """One message for every out-of-range position: the valid range includes the end."""
    if not 0 <= position <= size:
        raise ConfigError(
            f"{flag} {position} is out of range: an epoch of this plan has {size} records; "
            f"pass a position in 0..{size} ({size}: the end of the epoch)",
            field=flag.lstrip("-"),
            value=position,
        )


def _state_position(plan: ReadPlan, path: str, *, json_lines: bool) -> tuple[int, int]:
    """Epoch and next position of a saved state, checked against the plan; tells where."""
    state = read_state(path)
    checkpoint = plan.verify(Checkpoint.from_dict(dict(state)))
    owner = state.get(STATE_KEY) or {"rank": 0, "world_size": 1}
    rank, world = owner.get("rank"), owner.get("world_size")
    summary = {
        "state": path,
        "epoch": checkpoint.epoch,
        "position": checkpoint.position,
        "num_examples": checkpoint.num_examples,
        "rank": rank,
        "world_size": world,
    }
    if json_lines:
        print(json.dumps(summary))
    else:
        whose = (
            "" if world == 1 else f"; rank {rank} of {world} reads the positions {rank} mod {world}"
        )
        print(
            f"# {path}: epoch {checkpoint.epoch}, next position {checkpoint.position} of "
            f"{checkpoint.num_examples}{whose}; the order from there:",
            file=sys.stderr,
        )
    return checkpoint.epoch, checkpoint.position


def _format_chunk(plan: ReadPlan, chunk: EpochOrder, take: int, fmt: str) -> list[str]:
    if fmt == "global":
        return [str(v) for v in chunk.global_ids()[:take].tolist()]
    ids = chunk.tfds_ids()[:take]
    if fmt == "tfds_id":
        return ids
    globals_ = chunk.global_ids()[:take].tolist()
    lines = []
    for k in range(take):
        file_index = int(chunk.file_index[k])
        instruction = plan.instructions[file_index]
        lines.append(
            json.dumps(
                {
                    "position": chunk.start + k,
                    "file_index": file_index,
                    "split": instruction.split,
                    "shard_index": instruction.shard_index,
                    "record_index": int(chunk.record_index[k]),
                    "global_id": globals_[k],
                    "tfds_id": ids[k],
                }
            )
        )
    return lines


def form_name(form: Checkpoint | ExpandedCheckpoint) -> str:
    return "an expanded" if isinstance(form, ExpandedCheckpoint) else "a compact"


def register_checkpoint(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "checkpoint",
        help="print (or save) the read state at a position of an epoch",
        description="Compute the read state after POSITION records of an epoch without "
        "reading any record, and print it as checkpoint JSON (compact, or with --expand the "
        "self-describing form: interleave slots, cursor, per-file progress, instruction "
        "list) or save it; optionally print the FileInstructions that let TFDS continue "
        "exactly. With --upgrade, convert a format version 1 checkpoint of this plan.",
    )
    _add_read_config_arguments(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--position", type=POSITION, help="records already read")
    where.add_argument(
        "--upgrade",
        metavar="OLD.json",
        default=None,
        help="a format version 1 checkpoint of this plan: verify it against the plan and "
        "write it in the current format (to -o, or print it)",
    )
    parser.add_argument(
        "--expand",
        action="store_true",
        help="print or save the expanded form (slots, per-file progress, instructions)",
    )
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help="save the checkpoint to this file, atomically (a regular file or a new one; '-': "
        "standard output)",
    )
    parser.add_argument(
        "--instructions",
        choices=("remaining", "resume"),
        default=None,
        help="print FileInstructions instead: 'remaining' (unread records per file) or "
        "'resume' (the list tf.data's interleave reads in exactly the remaining order)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print --instructions as JSON too (the checkpoint itself is always JSON)",
    )
    parser.set_defaults(handler=run_checkpoint)


def run_checkpoint(args: argparse.Namespace) -> int:
    plan = _plan_from_args(args)
    if args.upgrade is not None:
        checkpoint = plan.upgrade_checkpoint(parse_json(read_state_file(args.upgrade)))
    else:
        _check_position("--position", args.position, plan.num_examples)
        checkpoint = plan.checkpoint(args.epoch or 0, args.position)
    form: Checkpoint | ExpandedCheckpoint = checkpoint.expanded() if args.expand else checkpoint
    if args.output == "-" and args.instructions is not None:
        raise ConfigError(
            "-o - writes the checkpoint to standard output, where --instructions prints too; "
            "give -o a file, or leave out one of them",
            field="output",
            value=args.output,
        )
    if args.output == "-":
        print(form.to_json())
    elif args.output is not None:
        data = form.to_json().encode("utf-8")
        storage.write_bytes(args.output, data)  # atomic, locally and in a store
        # On stdout unless the instructions go there.
        print(
            f"wrote {args.output} ({len(data):,} bytes): {form_name(form)} checkpoint at "
            f"epoch {checkpoint.epoch}, position {checkpoint.position} of "
            f"{checkpoint.num_examples}",
            file=sys.stdout if args.instructions is None else sys.stderr,
        )
    if args.instructions is not None:
        state = checkpoint.expanded()
        instructions = (
            state.remaining_instructions()
            if args.instructions == "remaining"
            else state.resume_instructions()
        )
        where = f"{args.spec} @ epoch {checkpoint.epoch}, position {checkpoint.position}"
        if args.json:
            print(json.dumps(_plan_json(plan.info, where, False, instructions), indent=2))
        else:
            print(_plan_table(plan.info, where, instructions))
    elif args.output is None:
        print(form.to_json(indent=2))
    return 0
