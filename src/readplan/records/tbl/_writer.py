"""TBL v2 writer with bounded memory (normative: specs/tbl.md, "Writing").

Payloads and metadata blocks go to two spool files beside the target as they are added;
only the 24-byte index entries stay in memory.  ``close`` writes the header and the index
to a new file beside the target, appends both spools with kernel-side copies and renames
the result over ``path`` (an atomic, durable replacement): the target is the complete file
or is left untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from types import TracebackType
from typing import IO, NamedTuple

import numpy as np

from readplan._internal.atomic import atomic_output
from readplan._internal.closing import Closing
from readplan._internal.validate import check_bool, is_int
from readplan.errors import ClosedError, ConfigError
from readplan.records.tbl._layout import (
    ENTRY,
    ENTRY_DTYPE,
    ENTRY_SIZE,
    FILE_CHECKSUMS,
    FILE_COMPRESSED,
    FILE_METADATA,
    HEADER_SIZE,
    MAGIC,
    MAX_SAMPLES,
    METADATA_BLOCK,
    SAMPLE_COMPRESSED,
    SAMPLE_METADATA,
    VERSION,
    Format,
    Header,
    MetadataType,
    crc16,
    format_code,
    header_crc,
    lz4_block,
    metadata_type_code,
)
from readplan.storage import PathLike

__all__ = ["Sample", "TblWriter", "write"]

Bytes = bytes | bytearray | memoryview
_U16 = 0xFFFF
_U32 = 0xFFFFFFFF
_COPY_PIECE = 1 << 24


class Sample(NamedTuple):
    """One sample for :func:`write`: the payload and what :meth:`TblWriter.add` takes."""

    data: Bytes
    format: Format = "unknown"
    width: int = 0
    height: int = 0
    metadata: str | bytes | None = None
    metadata_type: MetadataType = "json"


class TblWriter(Closing):
    """Writes a TBL v2 file to ``path``, byte-identical to TurboLoader 2.39's writer.

    ``compression=True`` stores each sample as an LZ4 block when that makes it smaller.
    Use as a context manager: leaving the block normally finishes the file; leaving it with
    an exception discards everything (the target is not touched).
    """

    def __init__(self, path: PathLike, *, compression: bool = False) -> None:
        check_bool(compression, "compression")
        self.path = os.fspath(path)
        self.compression = compression
        self._entries = bytearray()
        self._payload_bytes = 0
        self._metadata_bytes = 0
        self._closed = False
        if compression:
            lz4_block()  # a missing extra fails here, not at the first sample
        directory = os.path.dirname(os.path.abspath(self.path))
        prefix = f".{os.path.basename(self.path)}."
        self._payloads = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in close()/abort()
            dir=directory, prefix=prefix, suffix=".payloads"
        )
        self._metadata = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in close()/abort()
            dir=directory, prefix=prefix, suffix=".metadata"
        )

    def __len__(self) -> int:
        return len(self._entries) // ENTRY_SIZE

    def add(
        self,
        data: Bytes,
        *,
        format: Format = "unknown",
        width: int = 0,
        height: int = 0,
        metadata: str | bytes | None = None,
        metadata_type: MetadataType = "json",
    ) -> int:
        """Append one sample; returns its index.

        ``width``/``height`` are u16 fields (0..65535).  A ``"raw_u8"`` sample must hold
        ``width * height * 3`` bytes.  ``metadata`` (a str is stored as UTF-8) becomes the
        sample's metadata block of type ``metadata_type``.
        """
        if self._closed:
            raise ClosedError(f"{self.path}: the TBL writer is closed", path=self.path)
        payload = bytes(data) if not isinstance(data, bytes) else data
        code = format_code(format)
        index = len(self)
        _check_sample(len(payload), code, width, height, index)
        block = _metadata_block(index, metadata, metadata_type)
        stored, flags = payload, 0
        if self.compression:
            packed = lz4_block().compress(payload, store_size=False)
            if len(packed) < len(payload):
                stored, flags = packed, SAMPLE_COMPRESSED
        if block:
            flags |= SAMPLE_METADATA
            self._metadata.write(block)
            self._metadata_bytes += len(block)
        offset = self._payload_bytes  # relative to the first payload until close()
        self._payloads.write(stored)
        self._payload_bytes += len(stored)
        self._entries += ENTRY.pack(
            offset, len(stored), len(payload), width, height, code, flags, crc16(payload)
        )
        return index

    def close(self) -> None:
        """Write the header and index, append payloads and metadata, publish; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._finish()
        finally:
            self._payloads.close()
            self._metadata.close()

    def abort(self) -> None:
        """Discard everything added; the target file is left as it was.  Idempotent."""
        self._closed = True
        self._payloads.close()
        self._metadata.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _finish(self) -> None:
        count = len(self)
        index_end = HEADER_SIZE + ENTRY_SIZE * count
        entries = _absolute_offsets(self._entries, index_end)
        metadata_offset = index_end + self._payload_bytes if self._metadata_bytes else 0
        flags = FILE_CHECKSUMS
        flags |= FILE_COMPRESSED if self.compression else 0
        flags |= FILE_METADATA if self._metadata_bytes else 0
        header = Header(
            MAGIC,
            VERSION,
            count,
            index_end,
            0,
            metadata_offset,
            self._metadata_bytes,
            flags,
            0,
            bytes(16),
        )
        raw = header.pack()
        raw = raw[:44] + header_crc(raw).to_bytes(4, "little") + raw[48:]
        with atomic_output(self.path) as out:
            out.write(raw)
            out.write(entries)
            out.flush()
            _append(out, self._payloads)
            _append(out, self._metadata)


def write(path: PathLike, samples: Iterable[Bytes | Sample], *, compression: bool = False) -> int:
    """Write ``samples`` (payloads, or :class:`Sample` tuples) as one TBL v2 file.

    Returns how many were written.  Memory stays bounded whatever the number of samples.
    """
    with TblWriter(path, compression=compression) as writer:
        for sample in samples:
            if isinstance(sample, Sample):
                writer.add(
                    sample.data,
                    format=sample.format,
                    width=sample.width,
                    height=sample.height,
                    metadata=sample.metadata,
                    metadata_type=sample.metadata_type,
                )
            else:
                writer.add(sample)
        return len(writer)


def _check_sample(size: int, code: int, width: int, height: int, index: int) -> None:
    """Refuse sample ``index`` of ``size`` bytes when the file's fixed-width fields cannot
    describe it."""
    _check_dimension("width", width)
    _check_dimension("height", height)
    if code == 8 and size != width * height * 3:
        raise ConfigError(
            f"a raw_u8 sample of {width}x{height} holds {width * height * 3} bytes "
            f"(width * height * 3, RGB), not {size}",
            field="data",
            value=size,
        )
    if size > _U32:
        raise ConfigError(
            f"a sample holds at most {_U32} bytes (a u32 size field), not {size}",
            field="data",
            value=size,
        )
    if index >= MAX_SAMPLES:
        raise ConfigError(
            f"a TBL v2 file holds at most {MAX_SAMPLES} samples (its header size is a u32)",
            field="num_samples",
            value=index + 1,
        )


def _check_dimension(name: str, value: object) -> None:
    if not is_int(value) or not 0 <= value <= _U16:
        raise ConfigError(
            f"{name}={value!r} must be an int in 0..{_U16} (a u16 field of the TBL index)",
            field=name,
            value=value,
        )


def _metadata_block(index: int, metadata: object, metadata_type: object) -> bytes:
    code = metadata_type_code(metadata_type)
    if metadata is None:
        return b""
    if isinstance(metadata, str):
        metadata = metadata.encode("utf-8")
    if not isinstance(metadata, bytes):
        raise ConfigError(
            f"metadata must be str, bytes or None, not {type(metadata).__name__}",
            field="metadata",
            value=metadata,
        )
    if len(metadata) > _U32:
        raise ConfigError(
            f"a metadata block holds at most {_U32} bytes, not {len(metadata)}",
            field="metadata",
            value=len(metadata),
        )
    return METADATA_BLOCK.pack(index, len(metadata), code, 0) + metadata


def _absolute_offsets(entries: bytearray, base: int) -> bytes:
    """The index with payload offsets moved from spool-relative to file positions."""
    table = np.frombuffer(entries, dtype=ENTRY_DTYPE).copy()
    table["offset"] += np.uint64(base)
    packed: bytes = table.tobytes()
    return packed


def _append(out: IO[bytes], spool: IO[bytes]) -> None:
    """Copy the whole spool to the end of ``out`` (in the kernel where the OS can)."""
    spool.flush()
    size = spool.tell()
    copy_range = getattr(os, "copy_file_range", None)
    copied = 0
    if copy_range is not None:
        try:
            while copied < size:
                done = copy_range(
                    spool.fileno(), out.fileno(), min(size - copied, _COPY_PIECE), copied
                )
                if done == 0:
                    break
                copied += done
        except OSError:
            pass  # a filesystem without it: copy the rest through user space
        os.lseek(out.fileno(), 0, os.SEEK_END)
    spool.seek(copied)
    shutil.copyfileobj(spool, out, _COPY_PIECE)
    out.flush()
