"""Index sidecars: record offsets of a TFRecord file, bound to it (normative: specs/tfrecord.md).

A sidecar ``<data file>.index`` lets :class:`readplan.tfrecord.RecordFile` seek to any
record without walking the file.  It is refused with
:class:`~readplan.errors.IndexFileError` (naming the file and the field) when it is
malformed, truncated, of another version, or does not belong to the data file as it is now;
a refused index is never used.  Its binding (size, first and last 64 KiB) cannot see a
same-size rewrite of the middle, so every read that uses its offsets checks the frames
against them (:func:`check_offsets`, and the reads of ``RecordFile``).

The text form used by NVIDIA DALI and ``vahidk/tfrecord`` (one ``"<offset> <size>"`` line per
record, ``size`` being the framed size ``length + 16``) can be exported and imported.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from readplan import storage
from readplan.errors import ConfigError, CorruptRecordError, IndexFileError
from readplan.records._cap import record_cap
from readplan.records._compression import (
    AUTO,
    GZIP,
    ZLIB,
    check_compression,
    detect_compression,
    pread,
)
from readplan.records._crc import crc32c, length_crcs, mask, mask_array
from readplan.records._damage import KIND_HEADER_CRC
from readplan.records._expected import ExpectedFrames
from readplan.records._framing import FrameParser
from readplan.records._stream import ByteStream, InflateStream, PlainStream, open_handle
from readplan.storage import Handle, PathLike, StorageOptions, read_span, size_of, to_str

__all__ = [
    "HEADER_SIZE",
    "INDEX_SUFFIX",
    "MAGIC",
    "VERSION",
    "RecordIndex",
    "build_index",
    "check_offsets",
    "export_text",
    "import_text",
    "index_path_for",
    "load_index",
    "load_index_for",
    "resolve_compression",
    "walk_offsets",
    "write_index",
]

INDEX_SUFFIX = ".index"
MAGIC = b"RPTFRIDX"
VERSION = 1
# magic, version, compression, record count, data size, stream size,
# binding CRC, offsets CRC, header CRC, reserved
_HEADER = struct.Struct("<8sIIQQQIIII")
HEADER_SIZE = _HEADER.size
_BINDING_SPAN = 1 << 16
_COMPRESSION_CODES: dict[str | None, int] = {None: 0, ZLIB: 1, GZIP: 2}
_CODE_NAMES = {code: name for name, code in _COMPRESSION_CODES.items()}
_SPOT_CHECKS = 64
# check_offsets reads headers in windows of this size, or one by one where frames average
# more than _SPARSE_FRAME bytes (reading their payloads would cost more than the reads).
_GATHER_WINDOW = 1 << 20
_SPARSE_FRAME = 4096
_SPARSE_BATCH = 4096
_ARANGE12 = np.arange(12, dtype=np.int64)

Int64Array = npt.NDArray[np.int64]


def index_path_for(data_path: PathLike, index_dir: PathLike | None = None) -> str:
    """The sidecar of ``data_path``: its name plus ``.index``, beside it or in ``index_dir``."""
    name = to_str(data_path) + INDEX_SUFFIX
    return name if index_dir is None else storage.join(index_dir, storage.basename(name))


def resolve_compression(fd: Handle, compression: object) -> str | None:
    """The compression of the open file ``fd``: as given, or detected for ``"auto"``."""
    checked = check_compression(compression, allow_auto=True)
    if checked == AUTO:
        return detect_compression(pread(fd, 12, 0))
    return checked


@dataclass(frozen=True, eq=False)
class RecordIndex:
    """Record start offsets of one data file, in its (decompressed) record stream.

    ``offsets`` is a read-only int64 array; record ``i`` spans
    ``[offsets[i], offsets[i + 1])`` (the last one ends at ``stream_size``), so its data
    length is that span minus the 16 framing bytes.
    """

    data_path: str
    compression: str | None
    offsets: Int64Array
    stream_size: int
    data_size: int
    binding_crc: int

    def __post_init__(self) -> None:
        offsets = np.asarray(self.offsets, dtype=np.int64)
        offsets.flags.writeable = False
        object.__setattr__(self, "offsets", offsets)
        if self.compression not in _COMPRESSION_CODES:
            raise IndexFileError(
                f"unknown compression {self.compression!r}; use None, 'GZIP' or 'ZLIB'",
                path=self.data_path,
                field="compression",
            )
        problem = _offsets_problem(offsets, self.stream_size)
        if problem is not None:
            raise IndexFileError(
                f"these offsets cannot frame {self.data_path}: {problem}",
                path=self.data_path,
                field="offsets",
            )
        if self.compression is None and self.stream_size != self.data_size:
            raise IndexFileError(
                f"an uncompressed file's stream size ({self.stream_size}) must equal its size "
                f"({self.data_size})",
                path=self.data_path,
                field="stream_size",
            )

    def __len__(self) -> int:
        return len(self.offsets)

    def frame_sizes(self) -> Int64Array:
        """Framed size (data length + 16) of every record."""
        sizes: Int64Array = np.diff(self.offsets, append=np.int64(self.stream_size))
        return sizes


def _offsets_problem(offsets: Int64Array, stream_size: int) -> str | None:
    if len(offsets) == 0:
        return None if stream_size == 0 else f"no records but a stream of {stream_size} bytes"
    if offsets[0] != 0:
        return f"the first record starts at {int(offsets[0])}, not 0"
    steps = np.diff(offsets, append=np.int64(stream_size))
    if (steps < 16).any():
        bad = int(np.argmax(steps < 16))
        return (
            f"record {bad} at offset {int(offsets[bad])} spans {int(steps[bad])} bytes, less "
            "than the 16 framing bytes (offsets must increase and stay within the stream of "
            f"{stream_size} bytes)"
        )
    return None


def _binding(fd: Handle) -> tuple[int, int]:
    """Size of the data file and the CRC32C of its first and last 64 KiB."""
    size = size_of(fd)
    head = read_span(fd, min(size, _BINDING_SPAN), 0)
    tail = read_span(fd, min(size, _BINDING_SPAN), max(0, size - _BINDING_SPAN))
    return size, crc32c(tail, crc32c(head))


def _open_stream(fd: Handle, compression: str | None) -> ByteStream:
    if compression is None:
        return PlainStream(fd, start=0, end=size_of(fd), owns_fd=False)
    return InflateStream(fd, compression, owns_fd=False)


def walk_offsets(
    fd: Handle,
    path: str,
    compression: str | None,
    *,
    max_record_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
    verify: bool = False,
    expected: ExpectedFrames | None = None,
) -> tuple[Int64Array, int]:
    """Record offsets and stream size by a header walk (payloads are skipped, not read).

    With ``verify`` the payloads are read too and their data CRCs checked.  With
    ``expected`` every frame is checked against an index's offsets.  Damage raises.
    """
    stream = _open_stream(fd, compression)
    parser = FrameParser(
        stream,
        path=path,
        verify=verify,
        skip_damage=False,
        report=None,
        max_record_bytes=record_cap(max_record_bytes, compression),
        expected=expected,
    )
    batches = []
    reported = 0
    for batch in _verified_frames(parser) if verify else parser.frames():
        batches.append(batch)
        if progress is not None:
            done = stream.pos if compression is None else (stream.compressed_offset or 0)
            progress(done - reported)
            reported = done
    if progress is not None:
        progress(size_of(fd) - reported)
    offsets = np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
    return offsets, stream.pos


def _verified_frames(parser: FrameParser) -> Iterator[Int64Array]:
    """Frame offsets from a pass that reads every record and checks its data CRC."""
    position = 0
    for batch in parser.records():
        sizes = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch)) + 16
        ends = np.cumsum(sizes) + position
        yield ends - sizes
        position = int(ends[-1])


def build_index(
    path: str | os.PathLike[str],
    *,
    compression: object = None,
    index_path: str | os.PathLike[str] | None = None,
    max_record_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
    verify: bool = True,
    index_dir: str | os.PathLike[str] | None = None,
    storage_options: StorageOptions = None,
) -> str:
    """Read ``path`` (a path or URL), write its sidecar (to ``index_path``, else into
    ``index_dir``, else beside it); return the sidecar's path.  Damage raises
    :class:`~readplan.errors.CorruptRecordError`, writing nothing: ``verify`` checks every
    data CRC, ``False`` only the headers.  ``progress`` gets the bytes done since its last call.
    """
    data_path = to_str(path)
    fd = open_handle(data_path, storage_options)
    try:
        resolved = resolve_compression(fd, compression)
        offsets, stream_size = walk_offsets(
            fd,
            data_path,
            resolved,
            max_record_bytes=max_record_bytes,
            progress=progress,
            verify=verify,
        )
        size, binding = _binding(fd)
    finally:
        storage.close(fd)
    index = RecordIndex(data_path, resolved, offsets, stream_size, size, binding)
    target = index_path_for(data_path, index_dir) if index_path is None else index_path
    return write_index(index, target, storage_options=storage_options)


def write_index(
    index: RecordIndex, index_path: PathLike | None = None, storage_options: StorageOptions = None
) -> str:
    """Write ``index`` whole or not at all (``specs/storage.md``); returns the path."""
    target = to_str(index_path) if index_path is not None else index_path_for(index.data_path)
    body = np.ascontiguousarray(index.offsets, dtype="<u8").tobytes()
    fields = (
        MAGIC,
        VERSION,
        _COMPRESSION_CODES[index.compression],
        len(index.offsets),
        index.data_size,
        index.stream_size,
        index.binding_crc,
        crc32c(body),
    )
    partial = _HEADER.pack(*fields, 0, 0)
    header = _HEADER.pack(*fields, crc32c(partial[: _HEADER.size - 8]), 0)
    storage.write_bytes(target, header + body, storage_options=storage_options)
    return target


class _Header(NamedTuple):
    compression: str | None
    record_count: int
    data_size: int
    stream_size: int
    binding_crc: int
    offsets_crc: int


def _refuse(index_path: str, field: str, why: str) -> IndexFileError:
    return IndexFileError(
        f"{index_path}: refusing this index ({field}): {why}. Rebuild it with "
        "`readplan index DATA_FILE` or readplan.index.build_index(DATA_FILE).",
        path=index_path,
        field=field,
    )


def _read_header(index_fd: Handle, index_path: str) -> _Header:
    raw = pread(index_fd, HEADER_SIZE, 0)
    if len(raw) < HEADER_SIZE:
        raise _refuse(
            index_path, "header", f"the file has {len(raw)} bytes, a header has {HEADER_SIZE}"
        )
    magic, version, code, count, data_size, stream_size, binding, body_crc, header_crc, _ = (
        _HEADER.unpack(raw)
    )
    if magic != MAGIC:
        raise _refuse(index_path, "magic", f"it starts with {magic!r}, not {MAGIC!r}")
    if version != VERSION:
        raise _refuse(index_path, "version", f"version {version} is not supported (only 1)")
    if crc32c(raw[: HEADER_SIZE - 8]) != header_crc:
        raise _refuse(index_path, "header_crc", "the header's CRC does not match its contents")
    if code not in _CODE_NAMES:
        raise _refuse(index_path, "compression", f"unknown compression code {code}")
    expected_size = HEADER_SIZE + 8 * count
    actual_size = size_of(index_fd)
    if actual_size != expected_size:
        raise _refuse(
            index_path,
            "record_count",
            f"{count} records need a {expected_size}-byte index but the file has "
            f"{actual_size} bytes (truncated or overwritten)",
        )
    return _Header(_CODE_NAMES[code], count, data_size, stream_size, binding, body_crc)


def _check_binding(
    header: _Header, index_path: str, data_fd: Handle, data_path: str, compression: str | None
) -> None:
    if header.compression != compression:
        raise _refuse(
            index_path,
            "compression",
            f"it describes a {header.compression or 'uncompressed'} stream but {data_path} is "
            f"read as {compression or 'uncompressed'}",
        )
    size, binding = _binding(data_fd)
    if size != header.data_size:
        raise _refuse(
            index_path,
            "data_size",
            f"it was built for a data file of {header.data_size} bytes but {data_path} has "
            f"{size} bytes (stale index)",
        )
    if binding != header.binding_crc:
        raise _refuse(
            index_path,
            "binding_crc",
            f"the first and last 64 KiB of {data_path} changed since it was built (stale or "
            "foreign index)",
        )


def check_offsets(fd: Handle, index: RecordIndex, *, max_record_bytes: int | None = None) -> None:
    """Check that the open data file ``fd`` holds exactly the frames ``index`` describes.

    Uncompressed: the 12-byte header at every indexed offset must verify and declare the
    indexed length (read in 1 MiB windows, or one by one where frames are large; payloads
    are never read).  Compressed: the stream is inflated and walked against the offsets.
    A length that differs raises :class:`~readplan.errors.IndexFileError`; a header whose
    CRC fails raises :class:`~readplan.errors.CorruptRecordError`.
    """
    target = index_path_for(index.data_path)
    if index.compression is not None:
        expected = ExpectedFrames(
            index.offsets,
            index.stream_size,
            data_path=index.data_path,
            index_path=target,
            first_index=0,
        )
        walk_offsets(
            fd,
            index.data_path,
            index.compression,
            max_record_bytes=max_record_bytes,
            expected=expected,
        )
        return
    offsets = index.offsets
    lengths = index.frame_sizes() - 16
    begin = 0
    while begin < len(offsets):
        first = int(offsets[begin])
        end = max(begin + 1, int(np.searchsorted(offsets, first + _GATHER_WINDOW - 12, "right")))
        span = int(offsets[end - 1]) + 12 - first
        if span > (end - begin) * _SPARSE_FRAME:
            # Large frames: their headers are read one by one, in batches of many frames.
            end = min(len(offsets), begin + _SPARSE_BATCH)
            picked = offsets[begin:end].tolist()
            raw = b"".join(pread(fd, 12, offset) for offset in picked)
            at = np.arange(end - begin, dtype=np.int64) * 12
        else:
            raw = pread(fd, span, first)
            at = offsets[begin:end] - first
        if len(raw) < int(at[-1]) + 12:
            raise _refuse(target, "offsets", f"{index.data_path} ends before record {end - 1}")
        _check_headers(raw, at, lengths[begin:end], begin, index, target)
        begin = end


def _check_headers(
    raw: bytes, at: Int64Array, lengths: Int64Array, first: int, index: RecordIndex, target: str
) -> None:
    cells = np.frombuffer(raw, dtype=np.uint8)[at[:, None] + _ARANGE12]
    found = np.ascontiguousarray(cells[:, :8]).view("<u8").ravel()
    stored = np.ascontiguousarray(cells[:, 8:]).view("<u4").ravel()
    computed = mask_array(length_crcs([cells[:, j] for j in range(8)]))
    bad_crc = computed != stored
    bad = np.flatnonzero(bad_crc | (found != lengths.astype(np.uint64)))
    if not bad.size:
        return
    k = int(bad[0])
    record, offset = first + k, int(index.offsets[first + k])
    if bad_crc[k]:
        raise CorruptRecordError(
            f"{index.data_path}: corrupted record header at offset {offset} (record {record}): "
            f"the CRC of the length field does not match (stored 0x{int(stored[k]):08x}, "
            f"computed 0x{int(computed[k]):08x})",
            path=index.data_path,
            offset=offset,
            record_index=record,
            kind=KIND_HEADER_CRC,
            stored_crc=int(stored[k]),
            computed_crc=int(computed[k]),
        )
    raise _refuse(
        target,
        "offsets",
        f"record {record} of {index.data_path} at offset {offset} holds {int(found[k])} data "
        f"bytes but the index says {int(lengths[k])}: the data file was rewritten since the "
        "index was built (its size and first and last 64 KiB are unchanged)",
    )


def load_index(
    data_path: str | os.PathLike[str],
    *,
    compression: object = None,
    index_path: str | os.PathLike[str] | None = None,
) -> RecordIndex:
    """Read and fully validate the sidecar of ``data_path`` (FileNotFoundError if absent)."""
    path = os.fspath(data_path)
    target = os.fspath(index_path) if index_path is not None else index_path_for(path)
    data_fd = open_handle(path)
    try:
        resolved = resolve_compression(data_fd, compression)
        return _load(open_handle(target), target, data_fd, path, resolved)
    finally:
        storage.close(data_fd)


def load_index_for(
    data_fd: Handle,
    data_path: str,
    compression: str | None,
    *,
    index_path: str | os.PathLike[str] | None = None,
    storage_options: StorageOptions = None,
) -> RecordIndex | None:
    """:func:`load_index` for an open data file; ``None`` when there is no sidecar."""
    target = to_str(index_path) if index_path is not None else index_path_for(data_path)
    try:
        index_fd = open_handle(target, storage_options)
    except FileNotFoundError:
        return None
    return _load(index_fd, target, data_fd, data_path, compression)


def _load(
    index_fd: Handle, target: str, data_fd: Handle, data_path: str, compression: str | None
) -> RecordIndex:
    """Validate and read the open index ``index_fd`` (closed on return)."""
    try:
        header = _read_header(index_fd, target)
        body = pread(index_fd, 8 * header.record_count, HEADER_SIZE)
    finally:
        storage.close(index_fd)
    _check_binding(header, target, data_fd, data_path, compression)
    if crc32c(body) != header.offsets_crc:
        raise _refuse(target, "offsets_crc", "the CRC of the offsets does not match them")
    offsets = np.frombuffer(body, dtype="<u8").astype(np.int64)
    if (offsets < 0).any():
        raise _refuse(target, "offsets", "an offset is beyond 2**63")
    problem = _offsets_problem(offsets, header.stream_size)
    if problem is not None:
        raise _refuse(target, "offsets", problem)
    if compression is None and header.stream_size != header.data_size:
        raise _refuse(
            target,
            "stream_size",
            f"records end at {header.stream_size} but the file has {header.data_size} bytes",
        )
    return RecordIndex(
        data_path, compression, offsets, header.stream_size, header.data_size, header.binding_crc
    )


def export_text(index: RecordIndex, path: str | os.PathLike[str]) -> str:
    """Write ``index`` in the DALI / ``vahidk/tfrecord`` text form; returns ``path``.

    One line per record: its start offset and its framed size (data length + 16), separated
    by one space.  For a compressed file the offsets are in the decompressed stream, which
    those tools cannot use.
    """
    target = os.fspath(path)
    sizes = index.frame_sizes()
    lines = [f"{offset} {size}\n" for offset, size in zip(index.offsets.tolist(), sizes.tolist())]
    with open(target, "w", encoding="ascii", newline="\n") as out:
        out.writelines(lines)
    return target


def import_text(
    text_path: str | os.PathLike[str],
    data_path: str | os.PathLike[str],
    *,
    index_path: str | os.PathLike[str] | None = None,
) -> str:
    """Turn a DALI / ``vahidk/tfrecord`` text index of an uncompressed file into a sidecar.

    The lines must tile the data file exactly (each record starts where the previous one
    ends, the first at 0, the last ending at the file size), and the headers of the first,
    the last and up to 62 evenly spaced records must verify with the sizes given.  Returns
    the sidecar's path.
    """
    source = os.fspath(text_path)
    target = os.fspath(data_path)
    offsets, sizes = _parse_text(source)
    fd = open_handle(target)
    try:
        if detect_compression(pread(fd, 12, 0)) is not None:
            raise ConfigError(
                f"{target} is compressed; text indexes describe uncompressed files only",
                field="compression",
                value=target,
            )
        size, binding = _binding(fd)
        end = int(offsets[-1] + sizes[-1]) if len(offsets) else 0
        if end != size:
            raise _refuse(
                source, "offsets", f"its records end at {end} but {target} has {size} bytes"
            )
        problem = _offsets_problem(offsets, size)
        if problem is not None:
            raise _refuse(source, "offsets", problem)
        _spot_check(fd, source, offsets, sizes)
    finally:
        storage.close(fd)
    return write_index(RecordIndex(target, None, offsets, size, size, binding), index_path)


_TEXT_NUMBER = re.compile(rb"[0-9]{1,18}")


def _parse_text(source: str) -> tuple[Int64Array, Int64Array]:
    offsets: list[int] = []
    sizes: list[int] = []
    with open(source, "rb") as lines:
        for number, raw in enumerate(lines, start=1):
            fields = raw.split()
            if not fields:
                continue
            # ASCII digits only, and small enough for a u64 file offset.
            if len(fields) != 2 or not all(_TEXT_NUMBER.fullmatch(field) for field in fields):
                shown = raw.strip().decode("ascii", errors="backslashreplace")
                raise _refuse(source, "line", f"line {number} is {shown!r}, not '<offset> <size>'")
            offsets.append(int(fields[0]))
            sizes.append(int(fields[1]))
    starts = np.array(offsets, dtype=np.int64)
    lengths = np.array(sizes, dtype=np.int64)
    if len(starts) > 1 and (starts[1:] != starts[:-1] + lengths[:-1]).any():
        bad = int(np.argmax(starts[1:] != starts[:-1] + lengths[:-1])) + 1
        raise _refuse(
            source,
            "offsets",
            f"line {bad + 1} starts at {int(starts[bad])} but the previous record ends at "
            f"{int(starts[bad - 1] + lengths[bad - 1])} (sizes must be framed sizes, length + 16)",
        )
    return starts, lengths


def _spot_check(fd: Handle, source: str, offsets: Int64Array, sizes: Int64Array) -> None:
    picks = np.unique(np.linspace(0, len(offsets) - 1, num=min(len(offsets), _SPOT_CHECKS)))
    for pick in picks.astype(np.int64).tolist():
        offset = int(offsets[pick])
        header = pread(fd, 12, offset)
        length, stored = struct.unpack("<QI", header)
        if mask(crc32c(header[:8])) != stored or length + 16 != int(sizes[pick]):
            raise _refuse(
                source,
                "offsets",
                f"record {pick} at offset {offset} is not a valid header of a "
                f"{int(sizes[pick])}-byte frame",
            )
