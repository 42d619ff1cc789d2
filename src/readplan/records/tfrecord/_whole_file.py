"""Reading a TFRecord file from its start (normative: specs/tfrecord.md): every record
(:func:`read`, or packed: :func:`read_packed`), where the first records start
(:func:`frame_offsets`), how many there are (:func:`count`).  Public through
:mod:`readplan.tfrecord`; :class:`RecordFile` reads through the same streams and parser.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TypeVar

from readplan._internal.arrays import IntArray
from readplan._internal.validate import is_int
from readplan.errors import ConfigError
from readplan.records._cap import record_cap
from readplan.records._damage import CorruptionReport, OnCorruption, check_damage_options
from readplan.records.index import _sidecar as _index
from readplan.records.tfrecord._headerwalk import HeaderWalk
from readplan.records.tfrecord._offset_walk import walk_offsets
from readplan.records.tfrecord._packed import PackedRecords, Packer
from readplan.records.tfrecord._parser import FrameParser
from readplan.records.tfrecord._stream import ByteStream, InflateStream, PlainStream, open_handle
from readplan.storage import Handle, PathLike, StorageOptions, size_of, to_str
from readplan.storage import close as close_handle

__all__ = [
    "check_batch_size",
    "check_read_options",
    "count",
    "frame_offsets",
    "parsed_batches",
    "read",
    "read_packed",
    "stream_for",
]

_T = TypeVar("_T")


def check_read_options(
    on_corruption: object, max_record_bytes: object, report: object = None
) -> None:
    """Refuse a damage mode, report or record cap no reader accepts."""
    check_damage_options(on_corruption, report)
    record_cap(max_record_bytes, None)


def stream_for(
    fd: Handle,
    compression: str | None,
    *,
    start: int,
    end: int,
    owns_fd: bool,
    reuse: bool = False,
) -> ByteStream:
    """A stream from ``start``; a compressed one starts at 0 and the parser skips ahead.
    ``reuse``: a plain stream reads into one kept buffer (for parsers that copy out what they
    deliver before the next read)."""
    if compression is None:
        return PlainStream(fd, start=start, end=end, owns_fd=owns_fd, reuse=reuse)
    return InflateStream(fd, compression, owns_fd=owns_fd)


def parsed_batches(
    parser: FrameParser, stream: ByteStream, limit: int | None
) -> Iterator[list[bytes]]:
    """The parser's batches of records, ``limit`` records at most; the stream closes after."""
    return _closing(parser.records(limit), stream)


def read(
    path: PathLike,
    *,
    compression: object = None,
    verify: bool = True,
    on_corruption: OnCorruption = "raise",
    report: CorruptionReport | None = None,
    max_record_bytes: int | None = None,
    storage_options: StorageOptions = None,
) -> Iterator[bytes]:
    """Every record of ``path`` (a local path or a URL, ``specs/storage.md``), in order.

    ``compression``: ``None``, ``"GZIP"``, ``"ZLIB"`` or ``"auto"`` (detected from the first
    bytes).  ``verify`` checks data CRCs (header CRCs are always checked: the framing depends
    on them).  ``on_corruption``: ``"raise"`` raises :class:`CorruptRecordError` at the first
    damage, after every record before it; ``"skip"`` yields every undamaged record it can
    find, and only records that were written: a compressed stream stops at its first
    damage, an uncompressed file resumes only where the frames chain to its end.  Either
    way each damaged region is added to ``report``.  No record longer than
    ``max_record_bytes`` is accepted, and no buffer grows beyond it; ``None`` means
    :data:`DEFAULT_MAX_RECORD_BYTES` for uncompressed files and
    :data:`DEFAULT_MAX_COMPRESSED_RECORD_BYTES` (256 MiB) for GZIP/ZLIB files, whose
    lengths cannot be checked against the file size.

    The file is opened (and arguments checked) at once; it is closed when the iterator is
    exhausted or garbage-collected.
    """
    parser, stream = _whole_file_parser(
        path, compression, verify, on_corruption, report, max_record_bytes, storage_options, True
    )
    return itertools.chain.from_iterable(_closing(parser.record_runs(), stream))


def _whole_file_parser(
    path: PathLike,
    compression: object,
    verify: bool,
    on_corruption: OnCorruption,
    report: CorruptionReport | None,
    max_record_bytes: int | None,
    storage_options: StorageOptions,
    reuse: bool,
) -> tuple[FrameParser, ByteStream]:
    """A parser over the whole of ``path``, opened now (arguments checked first); ``reuse``:
    see :func:`stream_for`."""
    check_read_options(on_corruption, max_record_bytes, report)
    name = to_str(path)
    fd = open_handle(name, storage_options)
    try:
        resolved = _index.resolve_compression(fd, compression)
        stream = stream_for(fd, resolved, start=0, end=size_of(fd), owns_fd=True, reuse=reuse)
    except BaseException:
        close_handle(fd)
        raise
    parser = FrameParser(
        stream,
        path=name,
        verify=verify,
        skip_damage=on_corruption == "skip",
        report=report,
        max_record_bytes=record_cap(max_record_bytes, resolved),
    )
    return parser, stream


def read_packed(
    path: PathLike,
    *,
    batch_size: int = 1024,
    compression: object = None,
    verify: bool = True,
    on_corruption: OnCorruption = "raise",
    report: CorruptionReport | None = None,
    max_record_bytes: int | None = None,
    storage_options: StorageOptions = None,
) -> Iterator[PackedRecords]:
    """The records of :func:`read`, with the same checks, damage handling and options, as
    :class:`PackedRecords` of ``batch_size`` records each (the last may be shorter): one
    buffer and one offsets array per batch instead of a ``bytes`` object per record."""
    check_batch_size(batch_size)
    parser, stream = _whole_file_parser(
        path, compression, verify, on_corruption, report, max_record_bytes, storage_options, True
    )
    packer = Packer(batch_size)
    return packer.batches(_closing(parser.payloads(packer), stream))


def check_batch_size(batch_size: object) -> None:
    if not is_int(batch_size) or batch_size < 1:
        raise ConfigError(
            f"batch_size must be a positive integer, got {batch_size!r}",
            field="batch_size",
            value=batch_size,
        )


def _closing(pieces: Iterator[_T], stream: ByteStream) -> Iterator[_T]:
    try:
        yield from pieces
    finally:
        stream.close()


def frame_offsets(
    path: PathLike,
    *,
    stop: int | None = None,
    compression: object = None,
    max_record_bytes: int | None = None,
    storage_options: StorageOptions = None,
) -> tuple[IntArray, int]:
    """Where the first ``stop`` records of ``path`` start, by a header walk that stops there.

    Returns ``(offsets, end)``: the start offsets (in the decompressed stream) of records
    ``0 .. min(stop, n) - 1``, and where the last of them ends, which is where record
    ``stop`` starts when the file has one (``stop=None`` walks the whole file; ``end`` is
    then the stream size).  Only the 12-byte headers are read and verified, payloads
    skipped: frames that lie complete in a 512 KiB buffer are walked in one tight loop over
    their length fields (runs of equal lengths confirmed by one numpy comparison) and their
    length CRCs checked together with numpy; frames of 32 KiB or more cost one 12-byte
    read each.  A GZIP/ZLIB file is inflated up to ``end``.  Damage before ``end`` raises
    :class:`CorruptRecordError`.  This is what random access without an index sidecar costs
    (``RecordFile`` walks the same way, only as far as each read needs).
    """
    check_read_options("raise", max_record_bytes)
    if stop is not None and (not isinstance(stop, int) or isinstance(stop, bool) or stop < 0):
        raise ConfigError(
            f"stop={stop!r} must be a non-negative int or None", field="stop", value=stop
        )
    name = to_str(path)
    fd = open_handle(name, storage_options)
    try:
        resolved = _index.resolve_compression(fd, compression)
        walk = HeaderWalk(fd, name, resolved, record_cap(max_record_bytes, resolved))
        return walk.through(stop)
    finally:
        close_handle(fd)


def count(
    path: PathLike,
    *,
    compression: object = None,
    use_index: bool = True,
    max_record_bytes: int | None = None,
    index_dir: PathLike | None = None,
    storage_options: StorageOptions = None,
) -> int:
    """Number of records in ``path`` (a local path or a URL).

    With a sidecar (``path + ".index"``, or in ``index_dir``) the count is the sidecar's
    once every indexed offset is checked to hold a header of the indexed length (12-byte
    reads, no payloads; a compressed file is inflated); a sidecar that is stale or malformed raises
    :class:`~readplan.errors.IndexFileError`.  Otherwise the 12-byte headers are walked
    and verified, payloads skipped; damage raises :class:`CorruptRecordError`.
    """
    check_read_options("raise", max_record_bytes)
    name = to_str(path)
    fd = open_handle(name, storage_options)
    try:
        resolved = _index.resolve_compression(fd, compression)
        cap = record_cap(max_record_bytes, resolved)
        if use_index:
            sidecar = _index.index_path_for(name, index_dir)
            loaded = _index.load_index_for(
                fd, name, resolved, index_path=sidecar, storage_options=storage_options
            )
            if loaded is not None:
                _index.check_offsets(fd, loaded, max_record_bytes=cap, index_path=sidecar)
                return len(loaded)
        offsets, _ = walk_offsets(fd, name, resolved, max_record_bytes=cap)
        return len(offsets)
    finally:
        close_handle(fd)


# ---------------------------------------------------------------------- random access
