"""Writing TFRecord files: TensorFlow's exact bytes (normative: ``specs/tfrecord.md``).

:func:`write` and :class:`TFRecordWriter` produce uncompressed, ``"GZIP"`` or ``"ZLIB"``
files byte for byte as TensorFlow's writer does.  Re-exported by
:mod:`readplan.tfrecord`, the documented import path.
"""

from __future__ import annotations

from collections.abc import Iterable

from readplan._internal.closing import Closing
from readplan.errors import ClosedError
from readplan.records._crc import crc32c, mask
from readplan.records.tfrecord._compression import Deflater, check_compression
from readplan.records.tfrecord._layout import CRC, LENGTH
from readplan.storage import PathLike

__all__ = ["TFRecordWriter", "write"]


class TFRecordWriter(Closing):
    """Writes records to ``path`` (truncating it) in TensorFlow's exact byte format.

    ``compression`` is ``None`` (or ``""``), ``"GZIP"`` or ``"ZLIB"``; names are
    case-sensitive.  :meth:`flush` makes everything written so far readable (a partial
    flush for compressed files, as TensorFlow does); :meth:`close` ends the stream.
    """

    def __init__(self, path: PathLike, *, compression: object = None) -> None:
        name = check_compression(compression, allow_auto=False)
        self._deflater = Deflater(name) if name is not None else None
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close() / __exit__
        self._closed = False
        if self._deflater is not None:
            self._file.write(self._deflater.header())

    def write(self, record: bytes | bytearray | memoryview) -> None:
        """Append one record (any bytes-like object)."""
        if self._closed:
            raise ClosedError(f"{self._file.name}: the writer is closed", path=self._file.name)
        data = record if isinstance(record, bytes) else memoryview(record).tobytes()
        length = LENGTH.pack(len(data))
        header = length + CRC.pack(mask(crc32c(length)))
        footer = CRC.pack(mask(crc32c(data)))
        if self._deflater is None:
            self._file.write(header)
            self._file.write(data)
            self._file.write(footer)
            return
        deflater = self._deflater
        self._file.write(deflater.compress(header))
        self._file.write(deflater.compress(data))
        self._file.write(deflater.compress(footer))

    def flush(self) -> None:
        """Push everything written so far to the file."""
        if self._closed:
            return
        if self._deflater is not None:
            self._file.write(self._deflater.flush())
        self._file.flush()

    def close(self) -> None:
        """End the compressed stream (if any) and close the file; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._deflater is not None:
                self._file.write(self._deflater.finish())
        finally:
            self._file.close()


def write(
    path: PathLike, records: Iterable[bytes | bytearray | memoryview], *, compression: object = None
) -> int:
    """Write ``records`` to ``path`` as one TFRecord file; returns how many were written."""
    written = 0
    with TFRecordWriter(path, compression=compression) as writer:
        for record in records:
            writer.write(record)
            written += 1
    return written
