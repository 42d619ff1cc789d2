"""Index sidecars: record offsets of a TFRecord file, bound to it (normative: specs/tfrecord.md).

A sidecar ``<data file>.index`` lets :class:`readplan.tfrecord.RecordFile` seek to any
record without walking the file.  It is refused with
:class:`~readplan.errors.IndexFileError` (naming the file and the field) when it is
malformed, truncated, of another version, or does not belong to the data file as it is now;
a refused index is never used.  Its binding (size, first and last 64 KiB) cannot see a
same-size rewrite of the middle, so every read that uses its offsets checks the frames
against them (:func:`check_offsets`, and the reads of ``RecordFile``).  A sidecar built from
a stored object names the object's content version: opening that very version needs no
read of the data to bind it.

The text form used by NVIDIA DALI and ``vahidk/tfrecord`` (one ``"<offset> <size>"`` line per
record, ``size`` being the framed size ``length + 16``) can be exported and imported.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from readplan import storage
from readplan._internal.arrays import IntArray
from readplan._internal.frozen import init_fields
from readplan.errors import CorruptRecordError, IndexFileError
from readplan.records._binding import SPAN, binding_of, ends_crc
from readplan.records._crc import length_crcs, mask_array
from readplan.records._damage import KIND_HEADER_CRC
from readplan.records.index._checked import CheckedSidecars
from readplan.records.index._format import (
    COMPRESSION_CODES,
    MAX_SOURCE,
    Header,
    encode,
    offsets_problem,
    parse_body,
    parse_header,
    refuse,
    refuse_offsets,
)
from readplan.records.index._text import check_text, parse_text, text_of
from readplan.records.tfrecord._compression import (
    AUTO,
    check_compression,
    detect_compression,
    pread,
)
from readplan.records.tfrecord._expected import ExpectedFrames
from readplan.records.tfrecord._offset_walk import walk_offsets
from readplan.records.tfrecord._stream import open_handle
from readplan.storage import Handle, PathLike, StorageOptions, size_of, to_str

__all__ = [
    "INDEX_SUFFIX",
    "RecordIndex",
    "bind_index",
    "build_index",
    "check_offsets",
    "export_text",
    "import_text",
    "index_open_file",
    "index_path_for",
    "load_index",
    "load_index_for",
    "resolve_compression",
    "write_index",
]

INDEX_SUFFIX = ".index"
# A sidecar is fetched with one request of this many bytes (524,281 records), the rest of a
# larger one with a second.
_FIRST_READ = 4 << 20
# check_offsets reads headers in windows of this size, or one by one where frames average
# more than _SPARSE_FRAME bytes (reading their payloads would cost more than the reads).
_GATHER_WINDOW = 1 << 20
_SPARSE_FRAME = 4096
_SPARSE_BATCH = 4096
_ARANGE12 = np.arange(12, dtype=np.int64)
# The sidecars of local files checked so far (``specs/tfrecord.md`` §8.2).
CHECKED = CheckedSidecars()


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


@dataclass(frozen=True, eq=False, init=False)
class RecordIndex:
    """Record start offsets of one data file, in its (decompressed) record stream.

    ``offsets`` is a read-only int64 array; record ``i`` spans
    ``[offsets[i], offsets[i + 1])`` (the last one ends at ``stream_size``), so its data
    length is that span minus the 16 framing bytes.  ``source`` is the fingerprint
    (``"<url> <version>"``, :attr:`readplan.storage.ObjectInfo.fingerprint`) of the stored
    object version it was built from, ``None`` when that has no content version.
    """

    data_path: str
    compression: str | None
    offsets: IntArray
    stream_size: int
    data_size: int
    binding_crc: int
    source: str | None

    def __init__(
        self,
        data_path: str,
        compression: str | None,
        offsets: npt.ArrayLike,
        stream_size: int,
        data_size: int,
        binding_crc: int,
        source: str | None = None,
    ) -> None:
        starts = np.asarray(offsets, dtype=np.int64)
        starts.flags.writeable = False
        init_fields(
            self,
            data_path=data_path,
            compression=compression,
            offsets=starts,
            stream_size=stream_size,
            data_size=data_size,
            binding_crc=binding_crc,
            source=source,
        )
        self.__post_init__()

    def __post_init__(self) -> None:
        offsets = self.offsets
        if self.compression not in COMPRESSION_CODES:
            raise IndexFileError(
                f"unknown compression {self.compression!r}; use None, 'GZIP' or 'ZLIB'",
                path=self.data_path,
                field="compression",
            )
        if self.source is not None and not (
            isinstance(self.source, str) and len(self.source.encode("utf-8")) <= MAX_SOURCE
        ):
            raise IndexFileError(
                f"source must be None or a str of at most {MAX_SOURCE} UTF-8 bytes, got "
                f"{self.source!r:.80}",
                path=self.data_path,
                field="source",
            )
        problem = offsets_problem(offsets, self.stream_size)
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

    def __setstate__(self, state: dict[str, object]) -> None:
        # A pickled copy (a data source's, in a worker process) keeps its offsets read-only.
        self.__dict__.update(state)
        self.offsets.flags.writeable = False

    def __len__(self) -> int:
        return len(self.offsets)

    def frame_sizes(self) -> IntArray:
        """Framed size (data length + 16) of every record."""
        sizes: IntArray = np.diff(self.offsets, append=np.int64(self.stream_size))
        return sizes


def _fingerprint(fd: Handle) -> str | None:
    """The content version of an opened stored object; local files have none."""
    return None if isinstance(fd, int) else fd.info.fingerprint


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
        index = index_open_file(
            fd,
            data_path,
            compression,
            max_record_bytes=max_record_bytes,
            progress=progress,
            verify=verify,
        )
    finally:
        storage.close(fd)
    target = index_path_for(data_path, index_dir) if index_path is None else index_path
    return write_index(index, target, storage_options=storage_options)


def index_open_file(
    fd: Handle,
    data_path: str,
    compression: object = None,
    *,
    max_record_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
    verify: bool = True,
) -> RecordIndex:
    """What :func:`build_index` writes, for the open data file ``fd``, built in memory.

    Each byte is fetched once: the first 64 KiB of the binding come with the walk's first
    read-ahead block, the last with its last block (or one 64 KiB request).
    """
    resolved = resolve_compression(fd, compression)
    size = size_of(fd)
    span = min(size, SPAN)
    head = pread(fd, span, 0)
    offsets, stream_size = walk_offsets(
        fd,
        data_path,
        resolved,
        max_record_bytes=max_record_bytes,
        progress=progress,
        verify=verify,
    )
    binding = ends_crc(head, pread(fd, span, size - span))
    return RecordIndex(data_path, resolved, offsets, stream_size, size, binding, _fingerprint(fd))


def write_index(
    index: RecordIndex, index_path: PathLike | None = None, storage_options: StorageOptions = None
) -> str:
    """Write ``index`` whole or not at all (``specs/storage.md``); returns the path."""
    target = to_str(index_path) if index_path is not None else index_path_for(index.data_path)
    raw = encode(
        index.compression,
        index.offsets,
        index.data_size,
        index.stream_size,
        index.binding_crc,
        index.source,
    )
    storage.write_bytes(target, raw, storage_options=storage_options)
    return target


def _check_compression(
    compression: str | None, index_path: str | None, data_path: str, found: str | None
) -> None:
    if compression != found:
        raise refuse_offsets(
            index_path,
            data_path,
            "compression",
            f"it describes a {compression or 'uncompressed'} stream but {data_path} is "
            f"read as {found or 'uncompressed'}",
        )


def _check_size(data_size: int, index_path: str | None, data_fd: Handle, data_path: str) -> None:
    size = size_of(data_fd)
    if size != data_size:
        raise refuse_offsets(
            index_path,
            data_path,
            "data_size",
            f"it was built for a data file of {data_size} bytes but {data_path} has "
            f"{size} bytes (stale index)",
        )


def _check_binding(
    binding_crc: int, source: str | None, index_path: str | None, data_fd: Handle, data_path: str
) -> None:
    """The data must be the object version the index names, or match its binding CRC."""
    if source is not None and source == _fingerprint(data_fd):
        return  # the very bytes it was built from: reading them again would prove nothing
    if binding_of(data_fd)[1] != binding_crc:
        raise refuse_offsets(
            index_path,
            data_path,
            "binding_crc",
            f"the first and last 64 KiB of {data_path} changed since it was built (stale or "
            "foreign index)",
        )


def bind_index(
    index: RecordIndex,
    data_fd: Handle,
    index_path: str | None,
    compression: str | None,
    *,
    data_path: str | None = None,
) -> None:
    """Refuse ``index`` (:class:`~readplan.errors.IndexFileError`) unless it describes the
    open data file ``data_fd`` (at ``data_path``, default the index's), read as
    ``compression``, as a loaded sidecar must.

    ``index_path`` is the sidecar it was read from, named by the error; ``None`` for
    offsets held in memory (built where no sidecar could be written), which the error
    names as such, with no sidecar path.
    """
    path = index.data_path if data_path is None else data_path
    _check_compression(index.compression, index_path, path, compression)
    _check_size(index.data_size, index_path, data_fd, path)
    _check_binding(index.binding_crc, index.source, index_path, data_fd, path)


def check_offsets(
    fd: Handle,
    index: RecordIndex,
    *,
    max_record_bytes: int | None = None,
    index_path: PathLike | None = None,
) -> None:
    """Check that the open data file ``fd`` holds exactly the frames ``index`` describes.

    Uncompressed: the 12-byte header at every indexed offset must verify and declare the
    indexed length (read in 1 MiB windows, or one by one where frames are large; payloads
    are never read).  Compressed: the stream is inflated and walked against the offsets.
    A length that differs raises :class:`~readplan.errors.IndexFileError`; a header whose
    CRC fails raises :class:`~readplan.errors.CorruptRecordError`.  ``index_path`` is the
    sidecar ``index`` was loaded from, named by the errors (default: beside the data).
    """
    target = to_str(index_path) if index_path is not None else index_path_for(index.data_path)
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
            raise refuse(target, "offsets", f"{index.data_path} ends before record {end - 1}")
        _check_headers(raw, at, lengths[begin:end], begin, index, target)
        begin = end


def _check_headers(
    raw: bytes, at: IntArray, lengths: IntArray, first: int, index: RecordIndex, target: str
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
    raise refuse(
        target,
        "offsets",
        f"record {record} of {index.data_path} at offset {offset} holds {int(found[k])} data "
        f"bytes but the index says {int(lengths[k])}: the data file was rewritten since the "
        "index was built (its size and first and last 64 KiB are unchanged)",
    )


def load_index(
    data_path: PathLike,
    *,
    compression: object = None,
    index_path: PathLike | None = None,
    index_dir: PathLike | None = None,
    storage_options: StorageOptions = None,
) -> RecordIndex:
    """Read and fully validate the sidecar of ``data_path`` (a path or URL); the sidecar is
    ``index_path``, else in ``index_dir``, else beside the data.  A missing one raises
    FileNotFoundError (:class:`~readplan.errors.ObjectNotFoundError` in a store).  Both
    files are reached with ``storage_options`` (``specs/storage.md``): one lookup of the
    data, the sidecar in one request, and the data's ends only when the sidecar does not
    name the object version opened."""
    path = to_str(data_path)
    target = to_str(index_path) if index_path is not None else index_path_for(path, index_dir)
    data_fd = open_handle(path, storage_options)
    try:
        resolved = resolve_compression(data_fd, compression)
        return _load(*_read_sidecar(target, storage_options), target, data_fd, path, resolved)
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

    def check() -> RecordIndex | None:
        try:
            header, raw = _read_sidecar(target, storage_options)
        except FileNotFoundError:
            return None
        return _load(header, raw, target, data_fd, data_path, compression)

    if isinstance(data_fd, int) and not storage.is_remote(target):
        # Local files: a sidecar checked before is not read again while neither changed.
        return CHECKED.load((data_path, target, compression), data_fd, check)
    return check()


def _read_sidecar(target: str, storage_options: StorageOptions) -> tuple[Header, bytes]:
    """The sidecar's checked header and its bytes: one request (two for one of more than
    ``_FIRST_READ`` bytes), no metadata lookup; FileNotFoundError when there is none."""
    raw = storage.read_prefix(target, _FIRST_READ, storage_options=storage_options)
    header = parse_header(raw, target, whole=len(raw) < _FIRST_READ)
    if len(raw) == _FIRST_READ:
        # One byte more than it should have: a longer file is seen, not assumed.
        raw = storage.read_prefix(target, header.file_size + 1, storage_options=storage_options)
        header = parse_header(raw, target, whole=len(raw) <= header.file_size)
    return header, raw


def _load(
    header: Header,
    raw: bytes,
    target: str,
    data_fd: Handle,
    data_path: str,
    compression: str | None,
) -> RecordIndex:
    """Validate the sidecar ``raw`` read from ``target``, and against the open data file."""
    _check_compression(header.compression, target, data_path, compression)
    _check_size(header.data_size, target, data_fd, data_path)
    offsets, source = parse_body(raw, header, target)
    _check_binding(header.binding_crc, source, target, data_fd, data_path)
    problem = offsets_problem(offsets, header.stream_size)
    if problem is not None:
        raise refuse(target, "offsets", problem)
    if compression is None and header.stream_size != header.data_size:
        raise refuse(
            target,
            "stream_size",
            f"records end at {header.stream_size} but the file has {header.data_size} bytes",
        )
    return RecordIndex(
        data_path,
        compression,
        offsets,
        header.stream_size,
        header.data_size,
        header.binding_crc,
        source,
    )


def export_text(
    index: RecordIndex, path: PathLike, *, storage_options: StorageOptions = None
) -> str:
    """Write ``index`` in the DALI / ``vahidk/tfrecord`` text form to ``path`` (a path or
    URL, whole or not at all); returns ``path``.

    One line per record: its start offset and its framed size (data length + 16), separated
    by one space.  For a compressed file the offsets are in the decompressed stream, which
    those tools cannot use.
    """
    target = to_str(path)
    text = text_of(index.offsets, index.frame_sizes())
    storage.write_bytes(target, text, storage_options=storage_options)
    return target


def import_text(
    text_path: PathLike,
    data_path: PathLike,
    *,
    index_path: PathLike | None = None,
    storage_options: StorageOptions = None,
) -> str:
    """Turn a DALI / ``vahidk/tfrecord`` text index of an uncompressed file into a sidecar.

    The lines must tile the data file exactly (each record starts where the previous one
    ends, the first at 0, the last ending at the file size), and the headers of the first,
    the last and up to 62 evenly spaced records must verify with the sizes given.  Returns
    the sidecar's path.  The text, the data and the sidecar (``index_path``, default beside
    the data) may be URLs, reached with ``storage_options``.
    """
    source = to_str(text_path)
    target = to_str(data_path)
    offsets, sizes = parse_text(storage.read_bytes(source, storage_options=storage_options), source)
    fd = open_handle(target, storage_options)
    try:
        size, binding = check_text(fd, source, target, offsets, sizes)
        index = RecordIndex(target, None, offsets, size, size, binding, _fingerprint(fd))
    finally:
        storage.close(fd)
    return write_index(index, index_path, storage_options)
