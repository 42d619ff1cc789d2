"""GZIP/ZLIB stream compression of TFRecord files (normative: specs/tfrecord.md, "Compression").

The writer reproduces TensorFlow's bytes: one deflate stream per file, level 6, memLevel 9,
default strategy, ``Z_PARTIAL_FLUSH`` on flush and ``Z_FINISH`` on close.  GZIP output is
built from a raw deflate stream framed by readplan itself, so the 10-byte header is exactly
``1f 8b 08 00 00000000 00 03`` whatever zlib build is installed.

The reader inflates in bounded steps (``max_length``), so neither a damaged stream nor a
decompression bomb can make it allocate more than it is asked for.
"""

from __future__ import annotations

import re
import struct
import zlib
from typing import NamedTuple

from readplan.errors import ConfigError
from readplan.records._crc import crc32c, mask
from readplan.records._damage import (
    KIND_INFLATE,
    KIND_TRAILING_GARBAGE,
    KIND_TRUNCATED_STREAM,
    StreamDamageError,
)
from readplan.storage import Handle, read_span, size_of

__all__ = [
    "AUTO",
    "GZIP",
    "ZLIB",
    "Deflater",
    "InflateState",
    "Inflater",
    "check_compression",
    "detect_compression",
    "pread",
]

GZIP = "GZIP"
ZLIB = "ZLIB"
AUTO = "auto"

_LEVEL = 6
_MEM_LEVEL = 9
_GZIP_HEADER = bytes.fromhex("1f8b0800000000000003")
_GZIP_MAGIC = b"\x1f\x8b"
# Compressed input is fed to zlib in pieces of this size; with max_length on the output side
# this bounds both buffers of one inflate step.
_INPUT_PIECE = 1 << 18
# Output piece of the verifying pass (discarded at once).
_VERIFY_PIECE = 1 << 18


def check_compression(value: object, *, allow_auto: bool) -> str | None:
    """Canonical name: ``None`` (also for TensorFlow's ``""``), "GZIP", "ZLIB" or "auto"."""
    if value is None or value == "":
        return None
    if value in (GZIP, ZLIB) or (allow_auto and value == AUTO):
        return str(value)
    accepted = 'None, "", "GZIP", "ZLIB"' + (', "auto"' if allow_auto else "")
    hint = ""
    if isinstance(value, str) and value.upper() in (GZIP, ZLIB):
        hint = f" (names are case-sensitive: use {value.upper()!r})"
    raise ConfigError(
        f"unknown compression {value!r}{hint}; accepted values are {accepted}. TensorFlow "
        "silently reads unknown names as uncompressed; readplan refuses them instead.",
        field="compression",
        value=value,
    )


def detect_compression(head: bytes) -> str | None:
    """Compression of a file from its first bytes (at least 12 when the file has them).

    A valid TFRecord header wins over magic numbers, because the length field of an
    uncompressed file may happen to start with bytes that look like a zlib header.
    """
    if len(head) >= 12 and mask(crc32c(head[:8])) == int.from_bytes(head[8:12], "little"):
        return None
    if head[:2] == _GZIP_MAGIC:
        return GZIP
    if (
        len(head) >= 2
        and head[0] & 0x0F == 8
        and head[0] >> 4 <= 7
        and int.from_bytes(head[:2], "big") % 31 == 0
    ):
        return ZLIB
    return None


def pread(fd: Handle, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset``; shorter only at end of file.

    A remote handle serves it from its read-ahead block (a parse walks forward)."""
    if not isinstance(fd, int):
        return fd.pread(size, offset)
    return read_span(fd, size, offset)


class Deflater:
    """Compresses one TFRecord file's byte stream exactly as TensorFlow's writer does."""

    def __init__(self, compression: str) -> None:
        self._gzip = compression == GZIP
        wbits = -zlib.MAX_WBITS if self._gzip else zlib.MAX_WBITS
        self._obj = zlib.compressobj(_LEVEL, zlib.DEFLATED, wbits, _MEM_LEVEL)
        self._crc32 = 0
        self._size = 0

    def header(self) -> bytes:
        """Bytes that precede the deflate stream (zlib writes its own 2-byte header)."""
        return _GZIP_HEADER if self._gzip else b""

    def compress(self, data: bytes) -> bytes:
        if self._gzip:
            self._crc32 = zlib.crc32(data, self._crc32)
            self._size += len(data)
        return self._obj.compress(data)

    def flush(self) -> bytes:
        return self._obj.flush(zlib.Z_PARTIAL_FLUSH)

    def finish(self) -> bytes:
        tail = self._obj.flush(zlib.Z_FINISH)
        if self._gzip:
            tail += struct.pack("<II", self._crc32, self._size & 0xFFFFFFFF)
        return tail


class InflateState(NamedTuple):
    """Everything an :class:`Inflater` needs to repeat a stretch of its output."""

    inflater: zlib._Decompress
    feed: bytes
    compressed_offset: int
    next_offset: int
    done: bool
    end_damage: StreamDamageError | None
    produced: int


class _Confirmed(NamedTuple):
    """What a verifying pass found: the decompressed bytes its checksums confirm (the
    members whose trailer checked out), and the damage after them."""

    size: int
    damage: StreamDamageError | None


class Inflater:
    """Decompressed bytes of a GZIP or ZLIB file, in bounded pieces.

    :meth:`read` returns ``b""`` only at the end of the file.  With ``confirm`` (readers),
    it returns only bytes the stream's own checksums confirm: before the first byte, a
    verifying pass inflates the whole file (bounded buffers, output discarded) to find the
    end of the last member whose trailer (gzip CRC-32 and ISIZE, zlib Adler-32) checks out;
    bytes after it are never returned, and the damage there (``inflate``,
    ``truncated_stream``; ``trailing_garbage`` after the last member) is left in
    :attr:`end_damage` when the confirmed bytes are used up.  Without ``confirm`` (the
    verifying pass itself), damage inside the stream raises :class:`StreamDamageError`
    (kind ``inflate``) where it is met, and damage at its end in :attr:`end_damage`.
    """

    def __init__(self, fd: Handle, compression: str, *, confirm: bool = True) -> None:
        self._fd = fd
        self._compression = compression
        self._wbits = 31 if compression == GZIP else zlib.MAX_WBITS
        self._obj = zlib.decompressobj(self._wbits)
        self._feed = b""  # compressed input not yet consumed by zlib
        self.compressed_offset = 0  # file offset of _feed[0]
        self._next_offset = 0  # file offset of the next compressed byte to read
        self._done = False
        self.end_damage: StreamDamageError | None = None
        self._produced = 0  # decompressed bytes returned so far
        self.member_end = 0  # decompressed size of the members whose trailer checked out
        self._confirm = confirm
        self._confirmed: _Confirmed | None = None

    def snapshot(self) -> InflateState:
        """The inflate state, for :meth:`restore` (a pass can then be repeated)."""
        return InflateState(
            self._obj.copy(),
            self._feed,
            self.compressed_offset,
            self._next_offset,
            self._done,
            self.end_damage,
            self._produced,
        )

    def restore(self, state: InflateState) -> None:
        """Go back to a :meth:`snapshot` (each snapshot is restored at most once)."""
        self._obj = state.inflater
        self._feed = state.feed
        self.compressed_offset = state.compressed_offset
        self._next_offset = state.next_offset
        self._done = state.done
        self.end_damage = state.end_damage
        self._produced = state.produced

    def read(self, max_out: int) -> bytes:
        if self._confirm:
            confirmed = self._confirmed or self._verify()
            if confirmed.damage is not None:
                left = confirmed.size - self._produced
                if left <= 0:
                    # Nothing the checksums confirm is left: the damage is where reading ends.
                    self._done = True
                    self.end_damage = confirmed.damage
                    return b""
                max_out = min(max_out, left)
        while not self._done:
            out = self._step(max_out)
            if out:
                self._produced += len(out)
                return out
        return b""

    def _verify(self) -> _Confirmed:
        """Inflate the whole file once, checking every member's trailer (specs/tfrecord.md
        §3.2: the cost of never delivering bytes no checksum has confirmed)."""
        checker = Inflater(self._fd, self._compression, confirm=False)
        try:
            while checker.read(_VERIFY_PIECE):
                pass
            damage = checker.end_damage
        except StreamDamageError as err:
            damage = err
        self._confirmed = _Confirmed(checker.member_end, damage)
        return self._confirmed

    def _step(self, max_out: int) -> bytes:
        if self._obj.eof:
            # zlib reports the end only once the member's trailer has checked out.
            self.member_end = self._produced
            self._next_member()
            return b""
        if not self._feed:
            self.compressed_offset = self._next_offset
            self._feed = pread(self._fd, _INPUT_PIECE, self._next_offset)
            self._next_offset += len(self._feed)
            if not self._feed:
                self._finish_truncated()
                return b""
        try:
            out = self._obj.decompress(self._feed, max_out)
        except zlib.error as err:
            raise StreamDamageError(
                KIND_INFLATE,
                f"the {self._compression} stream is damaged at compressed offset "
                f"{self.compressed_offset} ({err}){self._not_compressed_hint()}",
                compressed_offset=self.compressed_offset,
                tf_message=_inflate_tf_message(err),
            ) from None
        tail = self._obj.unconsumed_tail
        self.compressed_offset += len(self._feed) - len(tail)
        self._feed = tail
        return out

    def _not_compressed_hint(self) -> str:
        if self.compressed_offset != 0:
            return ""
        return f"; is the file {self._compression}-compressed at all? compression='auto' detects it"

    def _finish_truncated(self) -> None:
        self._done = True
        what = "its header" if self._next_offset == 0 else "its end marker or trailer"
        self.end_damage = StreamDamageError(
            KIND_TRUNCATED_STREAM,
            f"the {self._compression} stream ends at compressed offset "
            f"{self._next_offset} without {what}: the file was cut short",
            compressed_offset=self._next_offset,
        )

    def _next_member(self) -> None:
        rest = self._obj.unused_data
        rest_offset = self._next_offset - len(rest)
        if len(rest) < 2:
            more = pread(self._fd, _INPUT_PIECE, self._next_offset)
            self._next_offset += len(more)
            rest += more
        if not rest:
            self._done = True
            return
        if self._compression == GZIP and rest[:2] == _GZIP_MAGIC:
            # Concatenated gzip members form one stream; TensorFlow reads them all.
            self._obj = zlib.decompressobj(self._wbits)
            self._feed = rest
            self.compressed_offset = rest_offset
            return
        self._done = True
        size = size_of(self._fd)
        after = "last gzip member" if self._compression == GZIP else "ZLIB stream"
        self.end_damage = StreamDamageError(
            KIND_TRAILING_GARBAGE,
            f"{size - rest_offset} bytes after the end of the {after} "
            f"(compressed offset {rest_offset})",
            compressed_offset=rest_offset,
            # TensorFlow ignores bytes after a ZLIB stream, and fails to inflate them as
            # another gzip member.
            tf_message=(
                "inflate() failed with error -3: incorrect header check"
                if self._compression == GZIP
                else None
            ),
        )


_ZLIB_ERROR = re.compile(r"Error (-?\d+) while decompressing data: (.*)")


def _inflate_tf_message(err: zlib.error) -> str | None:
    """TensorFlow's wording of a zlib failure, from Python's wording of it."""
    found = _ZLIB_ERROR.fullmatch(str(err))
    if found is None:
        return None
    return f"inflate() failed with error {found.group(1)}: {found.group(2)}"
