"""``readplan convert``: rewrite a TFDS dataset directory into TBL v2 shards or back
(``specs/tbl.md`` §9)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from readplan._internal.progress import Progress
from readplan.cli.numbers import integer
from readplan.convert import convert
from readplan.metadata.dataset_info import DatasetInfo

IMAGE_SIZE = integer(1, 65535, "an image side in pixels")
WORKERS = integer(1, 1024, "a number of processes")


def flag_values_joined(argv: Sequence[str]) -> list[str]:
    """``--beam-options FLAGS`` as ``--beam-options=FLAGS``: its value is itself flags
    (``--runner=DirectRunner``), which argparse would otherwise take for options of ours."""
    joined: list[str] = []
    rest = iter(argv)
    for arg in rest:
        if arg == "--":
            return [*joined, arg, *rest]
        value = next(rest, None) if arg == "--beam-options" else None
        if value is not None:
            arg = f"{arg}={value}"
        joined.append(arg)
    return joined


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``convert`` to ``subparsers``."""
    parser = subparsers.add_parser(
        "convert",
        help="rewrite a TFDS dataset directory with TBL v2 (or TFRecord) shards",
        description="Write every shard of SRC_DIR (a folder with dataset_info.json) into "
        "DST_DIR in the chosen container, same records in the same order, with a "
        "dataset_info.json naming the new fileFormat; plans, readers and checkpoints treat "
        "both alike. Converting back to tfrecord gives the original files byte for byte.",
    )
    parser.add_argument(
        "src_dir",
        metavar="SRC_DIR",
        help="the dataset to convert: the folder holding its dataset_info.json and shards (a "
        "local path or a URL)",
    )
    parser.add_argument(
        "dst_dir",
        metavar="DST_DIR",
        help="where to write the converted dataset: a new or empty folder or a URL (one holding "
        "a dataset_info.json is refused)",
    )
    parser.add_argument(
        "--format",
        choices=["tbl", "tfrecord"],
        required=True,
        help="the container of the new shards: tbl (TBL v2) or tfrecord (back from TBL, byte "
        "for byte)",
    )
    parser.add_argument(
        "--compression", action="store_true", help="LZ4 per sample (TBL output only)"
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="TBL-RAW: decode the dataset's one Image feature and store it resized to "
        "--image-size as RAW_U8 samples (the other features as each sample's metadata), "
        "served from a memory map",
    )
    parser.add_argument(
        "--image-size",
        type=IMAGE_SIZE,
        metavar="S",
        help="with --raw: the side of the stored images, each stretched to S x S (Pillow "
        "bilinear, no crop)",
    )
    parser.add_argument(
        "--workers",
        type=WORKERS,
        default=1,
        metavar="N",
        help="processes converting shards in parallel, one shard at a time each (default 1)",
    )
    parser.add_argument(
        "--runner",
        choices=["local", "beam"],
        default="local",
        help="local: this process, or --workers processes (default); beam: an Apache Beam "
        "pipeline, one shard per unit of work (the readplan[beam] extra)",
    )
    parser.add_argument(
        "--beam-options",
        metavar="FLAGS",
        help="with --runner beam: Beam's pipeline options, split as a shell splits them, "
        "e.g. --beam-options '--runner=DirectRunner --direct_num_workers=2 "
        "--direct_running_mode=multi_processing' (other runners by their options)",
    )
    parser.set_defaults(handler=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    info = DatasetInfo.load(args.src_dir)
    total = sum(split.num_examples for split in info.splits.values())
    with Progress("converting", total=total, unit=" records") as bar:
        shards = convert(
            args.src_dir,
            args.dst_dir,
            format=args.format,
            compression=args.compression,
            raw=args.raw,
            image_size=args.image_size,
            workers=args.workers,
            runner=args.runner,
            beam_options=args.beam_options,
            records_progress=bar.advance,
        )
    records = sum(shard.records for shard in shards)
    print(f"{args.dst_dir}: {len(shards)} {args.format} shards, {records} records")
    return 0
