"""Subcommands of the framing layer (registered by :mod:`readplan.cli`).

``inspect`` summarises TFRecord files: record count and sizes, compression, the features of
the first examples, and every damaged region (read in skip mode, so nothing stops it).
``index`` writes index sidecars (specs/tfrecord.md, "Index sidecar").

Exit status: 0 when every file is sound, 1 when damage was found, 2 when a file could not
be read at all (missing, or not a TFRecord file).  Messages from the library name its
keyword arguments; here they are rewritten to the flags a shell user passes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from readplan import storage
from readplan._internal.progress import Progress
from readplan.cli.examples import describe_examples, format_examples
from readplan.cli.numbers import NON_NEGATIVE
from readplan.cli.tbl import format_tbl_summary, inspect_tbl, is_tbl
from readplan.errors import CorruptRecordError, ReadplanError
from readplan.records import index as _index
from readplan.records import tfrecord

_COMPRESSION_CHOICES = {"auto": "auto", "none": None, "GZIP": "GZIP", "ZLIB": "ZLIB"}
_STATUS_DAMAGED = 1
_STATUS_UNREADABLE = 2
# ``index --json`` says what became of each file; the exit status is the worst of them.
_EXIT_STATUS = {"indexed": 0, "damaged": _STATUS_DAMAGED, "unreadable": _STATUS_UNREADABLE}
# Damage at offset 0 of a file that yields no record at all: not a TFRecord file.
_FOREIGN_KINDS = frozenset(
    {tfrecord.KIND_HEADER_CRC, tfrecord.KIND_TRAILING_GARBAGE, tfrecord.KIND_TRUNCATED_HEADER}
)
_KEYWORDS_AS_FLAGS = (
    (re.compile(r"compression='(\w+)'"), r"--compression \1"),
    (re.compile(r"max_record_bytes=(\d+)"), r"--max-record-bytes \1"),
    (re.compile(r"\bmax_record_bytes\b"), "--max-record-bytes"),
    (
        re.compile(
            r" \(on_corruption='skip' reads every undamaged record and reports the damage "
            r"instead of raising\)"
        ),
        "; `readplan inspect FILE` lists every damaged region",
    ),
    (re.compile(r" or readplan\.index\.build_index\(DATA_FILE\)"), ""),
)


def as_flags(message: str) -> str:
    """``message`` with the library's keyword arguments written as command-line flags."""
    for pattern, replacement in _KEYWORDS_AS_FLAGS:
        message = pattern.sub(replacement, message)
    return message


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add this layer's subcommands to ``subparsers``."""
    inspect = subparsers.add_parser(
        "inspect",
        help="summarise TFRecord and TBL v2 files: records, sizes, features, damage",
        description="Read each file completely (damaged regions are skipped and listed) and "
        "print its record count, compression, record sizes and the features of its first "
        "examples; for TBL v2 files (recognised by their magic) also formats, dimensions "
        "and the compression ratio. Exit status 1 if any file is damaged, 2 if one cannot "
        "be read.",
    )
    inspect.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="TFRecord (plain, GZIP or ZLIB) or TBL v2 files: local paths or URLs "
        "(gs://, s3://, any fsspec protocol)",
    )
    _add_json(inspect)
    inspect.add_argument(
        "--examples",
        type=NON_NEGATIVE,
        default=0,
        metavar="N",
        help="print the first N records decoded: values, dtypes and shapes, images as their "
        "format and size (as TFDS yields them when features.json is beside the file, else "
        "as tf.train.Example entries); default 0",
    )
    inspect.add_argument(
        "--summary-records",
        type=NON_NEGATIVE,
        default=100,
        metavar="N",
        help="decode the first N records as tf.train.Example for the feature summary "
        "(default 100, 0 to skip)",
    )
    _add_compression(inspect)
    _add_max_record_bytes(inspect)
    inspect.set_defaults(handler=run_inspect)

    build = subparsers.add_parser(
        "index",
        help="check files and write index sidecars (FILE.index) for O(1) seeking",
        description="Read each file, checking every record, and write FILE.index beside it "
        "(readplan's binary sidecar, always written). Damaged files get no index (exit "
        "status 1).",
    )
    build.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="TFRecord files to index: local paths or URLs (gs://, s3://, any fsspec protocol)",
    )
    build.add_argument(
        "--index-dir",
        default=None,
        metavar="DIR",
        help="write the sidecars into DIR (a local path or a URL) instead of beside the files, "
        "for datasets that may not be written to; read them with Reader(index_dir=DIR)",
    )
    build.add_argument(
        "--text",
        action="store_true",
        help="also write FILE.idx in the DALI / vahidk text form ('<offset> <size>' lines), "
        "for tools that read that form; FILE.index is written either way",
    )
    _add_json(build)
    _add_compression(build)
    _add_max_record_bytes(build)
    build.set_defaults(handler=run_index)


def _add_compression(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--compression",
        choices=sorted(_COMPRESSION_CHOICES),
        default="auto",
        help="how the files are compressed (default: detect from the first bytes)",
    )


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _add_max_record_bytes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-record-bytes",
        type=NON_NEGATIVE,
        default=None,
        metavar="N",
        help="refuse records longer than N bytes (default: 2**31-1, and 256 MiB in GZIP/ZLIB "
        "files, where a length cannot be checked against the file size)",
    )


# ------------------------------------------------------------------------------ inspect
def run_inspect(args: argparse.Namespace) -> int:
    compression = _COMPRESSION_CHOICES[args.compression]
    summaries = []
    status = 0
    with Progress("inspecting", total=len(args.files), unit=" files") as bar:
        for path in args.files:
            summary = inspect_file(
                path,
                compression=compression,
                examples=args.summary_records,
                show=args.examples,
                max_record_bytes=args.max_record_bytes,
            )
            if "error" in summary and args.json:
                # Text output shows the error in the file's summary; JSON keeps stdout parseable.
                print(f"readplan inspect: {path}: {summary['error']}", file=sys.stderr)
            summaries.append(summary)
            if "error" in summary:
                status = max(status, _STATUS_UNREADABLE)
            elif summary["damage"]:
                status = max(status, _STATUS_DAMAGED)
            bar.advance()
    if args.json:
        print(json.dumps({"files": summaries}, indent=2))
    else:
        print("\n\n".join(_format_summary(summary) for summary in summaries))
    return status


def inspect_file(
    path: str,
    *,
    compression: object = "auto",
    examples: int = 100,
    show: int = 0,
    max_record_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """``inspect``'s summary of one file (the JSON form's entry): the feature summary over
    the first ``examples`` records and (``"examples"``) the first ``show`` records decoded;
    ``progress(n)`` is called with the framed bytes of each record read (TFRecord files)."""
    report = tfrecord.CorruptionReport()
    summarised, shown = examples, show
    examples = max(summarised, shown)
    try:
        if is_tbl(path):
            tbl_summary, tbl_head = inspect_tbl(path, examples, report)
            tbl_summary.update(_feature_summary(tbl_head[:summarised]))
            if shown:
                image = tbl_summary.get("raw_image", {}).get("feature")
                tbl_summary["examples"] = describe_examples(path, tbl_head[:shown], image)
            tbl_summary["damage"] = [_event_json(event) for event in report]
            return tbl_summary
        records = tfrecord.read(
            path,
            compression=compression,
            on_corruption="skip",
            report=report,
            max_record_bytes=max_record_bytes,
        )
        if progress is not None:
            records = _counted(records, progress)
        head = list(itertools.islice(records, examples))
        tail = np.fromiter(map(len, records), dtype=np.int64)
        handle = storage.open_read(path)
        try:
            detected = _index.resolve_compression(handle, compression)
            looks_like = _index.resolve_compression(handle, "auto")
            first_bytes = storage.read_span(handle, 16, 0)
            file_bytes = storage.size_of(handle)
        finally:
            storage.close(handle)
    except OSError as err:
        return {"path": path, "error": str(err.strerror or err)}
    except ReadplanError as err:
        return {"path": path, "error": as_flags(str(err))}
    lengths = np.concatenate([np.array([len(r) for r in head], dtype=np.int64), tail])
    if len(lengths) == 0 and report.events and _foreign(report.events[0]):
        why = _not_tfrecord(path, first_bytes, file_bytes, read_as=detected, looks_like=looks_like)
        return {"path": path, "error": why}
    summary: dict[str, Any] = {
        "path": path,
        "compression": detected,
        "file_bytes": file_bytes,
        "records": len(lengths),
        "record_bytes": _size_stats(lengths),
    }
    summary.update(_feature_summary(head[:summarised]))
    if shown:
        summary["examples"] = describe_examples(path, head[:shown])
    summary["damage"] = [_event_json(event) for event in report]
    return summary


def _counted(records: Iterator[bytes], progress: Callable[[int], None]) -> Iterator[bytes]:
    for record in records:
        progress(len(record) + 16)
        yield record


def _foreign(event: tfrecord.CorruptionEvent) -> bool:
    """Whether damage at the very start means the file is not what it was read as."""
    if event.kind == tfrecord.KIND_INFLATE:
        return event.compressed_offset == 0
    return event.offset == 0 and event.kind in _FOREIGN_KINDS


def _not_tfrecord(
    path: str, first: bytes, size: int, *, read_as: str | None, looks_like: str | None
) -> str:
    """Why ``path``, read as ``read_as``, holds no record at all, and what to try."""
    if read_as is not None:
        message = (
            f"{path} is not {read_as}-compressed: its first bytes {first!r} do not start a "
            f"{read_as} stream"
        )
        if looks_like is not None:
            return f"{message}; they look like {looks_like} data: pass --compression {looks_like}"
        if _starts_with_a_record(path):
            return f"{message}; it is an uncompressed TFRecord file: pass --compression none"
        return f"{message}, nor a TFRecord record header"
    if size < 12:
        return (
            f"{path} is not a TFRecord file: its {size} bytes are fewer than one record "
            "header (12 bytes)"
        )
    message = f"{path} is not a TFRecord file: its first bytes {first!r} are not a record header"
    if read_as is None and looks_like is not None:
        message += (
            f"; it starts like a {looks_like} stream: pass --compression {looks_like} (or "
            "--compression auto, the default)"
        )
    return message


def _starts_with_a_record(path: str) -> bool:
    try:
        return len(tfrecord.frame_offsets(path, stop=1)[0]) == 1
    except ReadplanError:
        return False


def _size_stats(lengths: np.ndarray[Any, np.dtype[np.int64]]) -> dict[str, float] | None:
    if len(lengths) == 0:
        return None
    return {
        "total": int(lengths.sum()),
        "min": int(lengths.min()),
        "median": float(np.median(lengths)),
        "max": int(lengths.max()),
    }


def _feature_summary(head: list[bytes]) -> dict[str, Any]:
    """Feature keys, kinds and value counts over ``head``, or why there are none."""
    if not head:
        return {"features": None, "features_note": "no examples decoded"}
    from readplan.records.example import decode

    features: dict[str, dict[str, Any]] = {}
    for number, raw in enumerate(head):
        try:
            decoded = decode(raw)
        except ReadplanError as err:
            return {
                "features": None,
                "features_note": f"record {number} is not a tf.train.Example ({err})",
            }
        for key, value in decoded.items():
            kind = _kind(value)
            entry = features.setdefault(
                key, {"kind": kind, "examples": 0, "min_values": len(value), "max_values": 0}
            )
            if entry["kind"] != kind:
                entry["kind"] = "mixed"
            entry["examples"] += 1
            entry["min_values"] = min(entry["min_values"], len(value))
            entry["max_values"] = max(entry["max_values"], len(value))
    note = f"over the first {len(head)} examples"
    return {"features": dict(sorted(features.items())), "features_note": note}


def _kind(value: object) -> str:
    if isinstance(value, np.ndarray):
        return "int64" if value.dtype.kind == "i" else "float"
    return "bytes"


def _event_json(event: tfrecord.CorruptionEvent) -> dict[str, Any]:
    return {
        "kind": event.kind,
        "offset": event.offset,
        "record_index": event.record_index,
        "resume_offset": event.resume_offset,
        "bytes_skipped": event.bytes_skipped,
        "records_lost": event.records_lost,
        "compressed_offset": event.compressed_offset,
        "message": event.message,
    }


def _format_summary(summary: dict[str, Any]) -> str:
    if "error" in summary:
        return f"{summary['path']}\n  error: {summary['error']}"
    if summary.get("container") == "tbl":
        lines = format_tbl_summary(summary)
        lines.extend(_format_features(summary["features"], summary["features_note"]))
        lines.extend(format_examples(summary["examples"]) if "examples" in summary else [])
        lines.extend(_format_damage(summary["damage"]))
        return "\n".join(lines)
    lines = [
        summary["path"],
        f"  compression: {summary['compression'] or 'none'}",
        f"  file size:   {summary['file_bytes']:,} bytes",
        f"  records:     {summary['records']:,}",
    ]
    sizes = summary["record_bytes"]
    if sizes is not None:
        lines.append(
            f"  record size: total {sizes['total']:,} / min {sizes['min']:,} / median "
            f"{sizes['median']:,.0f} / max {sizes['max']:,} bytes"
        )
    lines.extend(_format_features(summary["features"], summary["features_note"]))
    lines.extend(format_examples(summary["examples"]) if "examples" in summary else [])
    lines.extend(_format_damage(summary["damage"]))
    return "\n".join(lines)


def _format_features(features: dict[str, Any] | None, note: str) -> list[str]:
    if features is None:
        return [f"  features:    none ({note})"]
    lines = [f"  features ({note}):"]
    width = max([len(key) for key in features] + [7])
    lines.append(f"    {'feature':<{width}}  kind   in examples  values")
    for key, entry in features.items():
        values = _value_counts(entry["min_values"], entry["max_values"])
        lines.append(f"    {key:<{width}}  {entry['kind']:<5}  {entry['examples']:>11}  {values}")
    return lines


def _value_counts(least: int, most: int) -> str:
    """``"1 value per example"``, ``"0-3 values per example"``."""
    if least == most:
        return f"{least} value{'' if least == 1 else 's'} per example"
    return f"{least}-{most} values per example"


def _format_damage(damage: list[dict[str, Any]]) -> list[str]:
    if not damage:
        return ["  damage:      none"]
    lines = [f"  damage:      {len(damage)} region(s)"]
    for event in damage:
        skipped = event["bytes_skipped"]
        extent = f", {skipped:,} bytes skipped" if skipped is not None else ""
        lines.append(
            f"    {event['kind']} at offset {event['offset']:,} (record {event['record_index']})"
            f"{extent}"
        )
    return lines


# -------------------------------------------------------------------------------- index
def run_index(args: argparse.Namespace) -> int:
    compression = _COMPRESSION_CHOICES[args.compression]
    status = 0
    results = []
    total = sum(_size_or_zero(path) for path in args.files)
    with Progress("indexing", total=total, unit="B") as bar:
        for number, path in enumerate(args.files, start=1):
            bar.label = f"indexing file {number}/{len(args.files)}"
            result = _index_file(path, compression, args, bar)
            results.append(result)
            status = max(status, _EXIT_STATUS[result["status"]])
            if "error" in result:
                print(f"readplan index: {result['error']}", file=sys.stderr)
            elif not args.json:
                print(f"{path}: {result['records']} records -> {', '.join(result['written'])}")
    if args.json:
        print(json.dumps({"files": results}, indent=2))
    return status


def _index_file(
    path: str, compression: object, args: argparse.Namespace, bar: Progress
) -> dict[str, Any]:
    local_dir = args.index_dir is not None and not storage.is_remote(args.index_dir)
    if local_dir and not os.path.isdir(args.index_dir):
        message = (
            f"--index-dir {args.index_dir}: no such directory; create it first (the "
            f"sidecar of {path} was not written)"
        )
        return {"path": path, "status": "unreadable", "error": message}
    try:
        written = _index.build_index(
            path,
            compression=compression,
            progress=bar.advance,
            max_record_bytes=args.max_record_bytes,
            index_dir=args.index_dir,
        )
    except CorruptRecordError as err:
        message = f"{as_flags(str(err))} (no index written)"
        return {"path": path, "status": "damaged", "error": message}
    except ReadplanError as err:  # before OSError: a StorageError is both
        return {"path": path, "status": "unreadable", "error": as_flags(str(err))}
    except OSError as err:
        # The file at fault may be the sidecar being written, not the data file.
        blamed = err.filename if isinstance(err.filename, str) else path
        return {"path": path, "status": "unreadable", "error": f"{blamed}: {err.strerror}"}
    built = _index.load_index(path, compression=compression, index_path=written)
    outputs = [written]
    if args.text:
        outputs.append(_index.export_text(built, path + ".idx"))
    return {"path": path, "status": "indexed", "records": len(built), "written": outputs}


def _size_or_zero(path: str) -> int:
    try:
        return storage.stat(path).size
    except OSError:
        return 0
