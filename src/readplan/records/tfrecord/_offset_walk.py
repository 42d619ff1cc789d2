"""Record offsets of a TFRecord file found by walking it (normative: specs/tfrecord.md §7,
§8): what an index sidecar holds, and what a read without one pays."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.records._cap import record_cap
from readplan.records.tfrecord._expected import ExpectedFrames
from readplan.records.tfrecord._parser import FrameParser
from readplan.records.tfrecord._stream import ByteStream, InflateStream, PlainStream
from readplan.storage import Handle, size_of

__all__ = ["walk_offsets"]


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
) -> tuple[IntArray, int]:
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


def _verified_frames(parser: FrameParser) -> Iterator[IntArray]:
    """Frame offsets from a pass that reads every record and checks its data CRC."""
    position = 0
    for batch in parser.records():
        sizes = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch)) + 16
        ends = np.cumsum(sizes) + position
        yield ends - sizes
        position = int(ends[-1])
