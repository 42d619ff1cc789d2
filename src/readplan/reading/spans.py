"""Records of one file read in byte spans (``specs/reader.md`` §2, "Reading in spans").

A rank of several, or an example shuffle, delivers records of a file that are near but
not consecutive (every ``w``-th record of a block).  :class:`FrameSpans` reads such records
of an uncompressed TFRecord file with one positioned read per span (the bytes from the
first to the last of records no more than ``MAX_GAP`` apart, and in a local file whose
offsets are known, with at most ``_MAX_SKIP`` bytes between) and checks the delivered
frames all at once with numpy: length field against the file's offsets, length CRC, data
CRC.  The payloads between are read but never checked: their records are other ranks'.

Offsets come from the index sidecar when there is one.  Otherwise the frame headers are
walked forward from the file's start over the very bytes read for the records (no
separate pass over the file), and every walked header's length CRC is checked before its
length is trusted to find the next frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.records._cap import DEFAULT_MAX_RECORD_BYTES
from readplan.records._crc import crc32c, mask, mask_array, masked_length_crcs
from readplan.records.native import CORE
from readplan.records.tfrecord._layout import HEADER
from readplan.records.tfrecord._scan import INCOMPLETE, STOP_LIMIT, scan_frames
from readplan.records.tfrecord._walk import gather_u32
from readplan.storage import Handle, fetch_ahead, read_span, size_of

__all__ = [
    "MAX_GAP",
    "FrameSpans",
    "cut_frames_into",
    "cut_frames_into_pure",
    "cut_frames_pure",
    "span_bounds",
    "span_bounds_pure",
    "walks_over_payloads",
]


MAX_GAP = 16
"""Largest step between two record indices read in one span: the records between are read
from disk (not parsed) to save a positioned read per record."""

# Most bytes of other records read between two delivered records of one span of a local
# file whose offsets are known before reading (a sidecar, or headers walked on their own):
# copying more costs more than a positioned read of its own (measured: a rank of four on
# 10 KB records reads faster record by record, on 3 KB records in spans; 100 KiB records
# are read one by one).
_MAX_SKIP = 1 << 14

# A header walk reads ahead at least this much (one system call per many small frames) and,
# unless one frame is longer, at most this much per read.
_MIN_READ = 1 << 18
_MAX_READ = 1 << 24
# From this size on, frames are found by reading their 12-byte headers alone (the header
# walk of ``RecordFile``): reading other ranks' payloads to walk over them costs more.
_LARGE = 1 << 16
# Frames the header walk finds per scan: its output arrays stay small and are reused.
_SCAN_FRAMES = 4096
# Records up to this size are cut from a view (the Python step per record costs more than
# copying them twice).
_SMALL = 1 << 12


def walks_over_payloads(fd: Handle) -> bool:
    """Whether frames of the file ``fd`` are best found by a walk over the bytes read for
    the records: its first frame is small (datasets hold records of similar sizes)."""
    head = read_span(fd, 8, 0)
    return len(head) < 8 or int.from_bytes(head, "little") < _LARGE


class FrameSpans:
    """Records of the open, uncompressed TFRecord file ``fd`` (not closed here), by index.

    ``offsets`` are the frame offsets from an index sidecar bound to the file, or ``None``:
    then frames are found by walking their headers as the reads go forward.  Every failed
    check (damage, a file shorter than asked, bytes after the last frame of a file read to
    its end) makes :meth:`read` return ``None``: the caller then reads the records one by
    one, which names the exact damage.
    """

    def __init__(self, fd: Handle, offsets: IntArray | None) -> None:
        self._fd = fd
        self._size = size_of(fd)
        # bounds[i] is where frame i starts for i < known, bounds[known] where the frames
        # known end (the walk's frontier).
        self._indexed = offsets is not None
        # Spans are split where they would read far over other records only in local files:
        # a request to a store costs far more than the bytes between.
        self._split = self._indexed and isinstance(fd, int)
        if offsets is None:
            self._bounds = np.empty(_SCAN_FRAMES + 1, dtype=np.int64)
            self._bounds[0] = 0
            self._known = 0
        else:
            self._bounds = np.empty(len(offsets) + 1, dtype=np.int64)
            self._bounds[:-1] = offsets
            self._bounds[-1] = self._size
            self._known = len(offsets)
        # Bytes the walk read and no read has consumed yet, from file offset ``_base``.
        self._data = b""
        self._base = 0
        # Whether prefetch() fetched for a read not made yet, of a file without a sidecar.
        self._read_ahead = False
        # The header walk's frame lengths, found _SCAN_FRAMES at a time (their starts go
        # straight into the bounds).
        self._scratch = np.empty(_SCAN_FRAMES, np.int64)

    def read(self, indices: IntArray, to_end: bool) -> list[bytes] | None:
        """The payloads of records ``indices`` (increasing), or ``None`` when one fails a check.

        ``to_end``: the last of them is the last record of the file, so nothing may follow it.
        """
        out: list[bytes] = [b""] * len(indices)
        return out if self.read_into(out, np.arange(len(indices)), indices, to_end) else None

    def read_into(self, out: list[Any], places: IntArray, indices: IntArray, to_end: bool) -> bool:
        """:meth:`read`, the payload of record ``indices[i]`` put at ``out[places[i]]``;
        ``False`` when one fails a check (``out`` then holds any of them, or none)."""
        first, last = int(indices[0]), int(indices[-1])
        self._read_ahead = False
        if last >= self._known and not self._walk(last + 1, first):
            return False
        if to_end and not (self._known == last + 1 and self._bounds[last + 1] == self._size):
            return False
        # Where each frame begins and ends, found once for the splits and the cuts.
        begins, ends, gaps = self._spans_of(indices)
        if not gaps.size:
            read = self._span(out, places, begins, ends)
        elif gaps.size == len(indices) - 1:
            read = self._one_by_one(out, places, begins, ends)
        else:
            parts = zip(np.split(places, gaps), np.split(begins, gaps), np.split(ends, gaps))
            read = all(self._span(out, *part) for part in parts)
        # Keep only what the walk read ahead (reads go forward), once at least half of it
        # was read: copying the rest after every read would copy the buffer many times.
        cut = min(max(int(ends[-1]) - self._base, 0), len(self._data))
        if 2 * cut >= len(self._data):
            self._data, self._base = self._data[cut:], self._base + cut
        return read

    def prefetch(self, indices: IntArray) -> bool:
        """Start fetching in the background what :meth:`read` of ``indices`` will read from
        a store (``specs/storage.md`` §5): its spans, or where frames are not known yet the
        header walk's first read; ``False`` when that does not fit the prefetch budget.  The
        reads take those bytes as they come to them; nothing else changes."""
        if self._read_ahead:
            # Without a sidecar, what a read fetches depends on the reads before it (how
            # far the walk got, which bytes it holds): only the next read's is known.
            return True
        fetched = self._prefetch(indices)
        self._read_ahead = fetched and not self._indexed
        return fetched

    def _prefetch(self, indices: IntArray) -> bool:
        first, last = int(indices[0]), int(indices[-1])
        if last >= self._known:
            walk = self._walk_read(last + 1, first)
            return walk is None or fetch_ahead(self._fd, walk[1] - walk[0], walk[0])
        gaps = self._spans_of(indices)[2]
        parts = [indices[k : k + 1] for k in range(len(indices))]
        if gaps.size != len(indices) - 1:
            parts = np.split(indices, gaps)
        bounds, held = self._bounds, self._base + len(self._data)
        for part in parts:
            start, stop = int(bounds[part[0]]), int(bounds[part[-1] + 1])
            inside = self._base <= start and stop <= held
            if not inside and not fetch_ahead(self._fd, stop - start, start):
                return False
        return True

    def _spans_of(self, indices: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """Where the known frames ``indices`` begin and end, and where they are split into
        spans read on their own (:func:`span_bounds`)."""
        # Offsets known before reading: no span reads far over other ranks' records.  (A
        # walk has read every byte from the first record on already.)
        max_skip = _MAX_SKIP if self._split else -1
        return span_bounds(self._bounds[: self._known + 1], indices, MAX_GAP, max_skip)

    def _span(self, out: list[Any], places: IntArray, begins: IntArray, ends: IntArray) -> bool:
        """One positioned read from the first to the last of the frames from ``begins`` to
        ``ends``, all frames checked, their payloads put at ``places`` of ``out``."""
        start, stop = int(begins[0]), int(ends[-1])
        data, origin = self._data, self._base
        if not origin <= start <= stop <= origin + len(data):
            data, origin = read_span(self._fd, stop - start, start), start
            if len(data) != stop - start:
                return False
        # Headers the walk verified in these very bytes need no second look.
        headers = data is not self._data or self._indexed
        return cut_frames_into(
            out, places, data, begins - origin, ends - origin, headers, DEFAULT_MAX_RECORD_BYTES
        )

    def _one_by_one(
        self, out: list[Any], places: IntArray, begins: IntArray, ends: IntArray
    ) -> bool:
        """One positioned read per record (large records, far apart), each frame checked."""
        for place, start, stop in zip(places.tolist(), begins.tolist(), ends.tolist()):
            length = stop - start - 16
            if not 0 <= length <= DEFAULT_MAX_RECORD_BYTES:
                return False
            frame = read_span(self._fd, stop - start, start)
            if len(frame) != stop - start:
                return False
            stored_length, length_crc = HEADER.unpack_from(frame)
            if stored_length != length or mask(crc32c(frame[:8])) != length_crc:
                return False
            payload = frame[12:-4]
            if mask(crc32c(payload)) != int.from_bytes(frame[-4:], "little"):
                return False
            out[place] = payload
        return True

    # -- the header walk (no sidecar) -----------------------------------------------------

    def _walk(self, count: int, first: int) -> bool:
        """Walk until ``count`` frames are known, keeping the bytes from frame ``first`` on;
        ``False`` when the file holds fewer sound frames."""
        while self._known < count:
            walk = self._walk_read(count, first)
            if walk is None:
                return False
            keep, stop = walk
            data = read_span(self._fd, stop - keep, keep)
            if len(data) != stop - keep:
                return False
            self._data, self._base = data, keep
            if not self._walk_buffer():
                # Damage: the frames before it are known, none after.
                return self._known >= count
        return True

    def _walk_read(self, count: int, first: int) -> tuple[int, int] | None:
        """The bytes ``[start, stop)`` the walk reads next to reach ``count`` frames, keeping
        those from frame ``first`` on; ``None`` when there is nothing more to read."""
        end = self._base + len(self._data)
        want = self._read_size(count, end)
        if want is None:
            return None
        # Bytes still needed are read again with the new ones (cheaper than joining).
        frontier = int(self._bounds[self._known])
        keep = min(frontier, int(self._bounds[first])) if first < self._known else frontier
        return keep, end + want

    def _read_size(self, count: int, end: int) -> int | None:
        """Bytes to read at ``end`` to reach ``count`` frames; ``None`` at the end of the file
        or at a damaged header."""
        left = self._size - end
        if left <= 0:
            return None
        frontier = int(self._bounds[self._known])
        average = frontier // self._known if self._known else 1024
        want = min(max(_MIN_READ, (count - self._known) * average), _MAX_READ)
        head = frontier - self._base
        if len(self._data) - head >= 12:
            # The frame at the frontier did not fit: read at least all of it.
            length, stored = HEADER.unpack_from(self._data, head)
            if mask(crc32c(self._data[head : head + 8])) != stored:
                return None
            if length > DEFAULT_MAX_RECORD_BYTES:
                return None
            want = max(want, frontier + length + 16 - end)
        return min(want, left)

    def _walk_buffer(self) -> bool:
        """Add the frames that lie complete in the buffer up to any damaged header (so that
        what a walk finds does not depend on how far it read); ``False`` at one.

        The frame scan checks each header's length CRC and the record cap (payloads are
        other ranks' and are not checked): a header that fails either is damage, whether
        or not its frame lies complete in the buffer (``_read_size`` refuses it as well).
        """
        data, base = self._data, self._base
        frontier = int(self._bounds[self._known])
        off = frontier - base
        lengths = self._scratch
        while True:
            # The scan writes the frames' starts straight after the known ones: no array
            # of its own to copy from.
            self._reserve(self._known + _SCAN_FRAMES + 1)
            known = self._known
            starts = self._bounds[known : known + _SCAN_FRAMES]
            found, off, stop = scan_frames(
                data, off, -1, DEFAULT_MAX_RECORD_BYTES, False, starts, lengths
            )
            if found:
                starts[:found] += base
                self._known = known + found
            self._bounds[self._known] = frontier = off + base if found else frontier
            if stop != STOP_LIMIT:  # not just the scratch arrays full
                return stop == INCOMPLETE

    def _reserve(self, size: int) -> None:
        """Room for ``size`` bounds, the known ones kept."""
        if size > len(self._bounds):
            grown = np.empty(max(2 * len(self._bounds), size), dtype=np.int64)
            grown[: self._known + 1] = self._bounds[: self._known + 1]
            self._bounds = grown


def cut_frames_pure(
    data: bytes, begins: IntArray, ends: IntArray, headers: bool, max_length: int
) -> list[bytes] | None:
    """The payloads of the frames ``data[begins[i]:ends[i]]``, or ``None`` when one is
    damaged: it spans fewer than 16 bytes or a payload over ``max_length`` (>= 0), its data
    CRC fails, or, with ``headers``, its length field is not its span's or its length CRC
    fails.  A span outside ``data`` is a ``ValueError``.  The reference the compiled
    ``cut_frames_into`` places the payloads of (``specs/native.md``)."""
    if len(begins) != len(ends):
        raise ValueError(f"cut_frames: {len(begins)} begins but {len(ends)} ends")
    outside = (begins < 0) | (ends < begins) | (ends > len(data))
    if outside.any():
        i = int(outside.argmax())
        raise ValueError(
            f"cut_frames: frame {i} spans bytes [{begins[i]}, {ends[i]}) outside a buffer of "
            f"{len(data)} bytes"
        )
    if not len(begins):
        return []
    lengths = ends - begins - 16
    if int(lengths.min()) < 0 or int(lengths.max()) > max_length:
        return None
    if headers and not _sound_headers(data, begins, ends):
        return None
    payloads = _payloads(data, begins + 12, ends - 4)
    crcs = np.fromiter(map(crc32c, payloads), dtype=np.uint32, count=len(payloads))
    if not np.array_equal(mask_array(crcs), gather_u32(data, ends - 4)):
        return None
    return payloads


def span_bounds_pure(
    bounds: IntArray, indices: IntArray, max_gap: int, max_skip: int
) -> tuple[IntArray, IntArray, IntArray]:
    """``(begins, ends, gaps)`` of the frames ``indices`` of a file whose frame ``j`` spans
    ``bounds[j] .. bounds[j + 1]``: ``begins[i] = bounds[indices[i]]``, ``ends[i] =
    bounds[indices[i] + 1]``, and ``gaps`` (increasing) each ``i >= 1`` where a new span
    starts: ``indices[i] - indices[i - 1] > max_gap``, or with ``max_skip >= 0``
    ``begins[i] - ends[i - 1] > max_skip`` (int64 arithmetic).  An index that is not one of
    the ``len(bounds) - 1`` known frames is a ``ValueError`` naming the first.  The twin of
    the compiled ``span_bounds`` (``specs/native.md``)."""
    known = max(len(bounds) - 1, 0)
    outside = (indices < 0) | (indices >= known)
    if outside.any():
        i = int(outside.argmax())
        raise ValueError(
            f"span_bounds: indices[{i}] = {int(indices[i])} is not one of the {known} frames known"
        )
    begins, ends = bounds[indices], bounds[indices + 1]
    apart = np.diff(indices) > max_gap
    if max_skip >= 0:
        apart |= begins[1:] - ends[:-1] > max_skip
    return begins, ends, np.flatnonzero(apart) + 1


def span_bounds(
    bounds: IntArray, indices: IntArray, max_gap: int, max_skip: int
) -> tuple[IntArray, IntArray, IntArray]:
    """:func:`span_bounds_pure`, by the compiled core when there is one: one call in place of
    the nine numpy steps of a read (two gathers, a difference, comparisons, a search)."""
    if CORE is None:
        return span_bounds_pure(bounds, indices, max_gap, max_skip)
    # The kernel reads contiguous int64 columns; the reader's indices may be a strided view.
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    size = len(indices)
    begins, ends, gaps = (
        np.empty(size, np.int64),
        np.empty(size, np.int64),
        np.empty(size, np.int64),
    )
    found = CORE.span_bounds(bounds, indices, max_gap, max_skip, begins, ends, gaps)
    return begins, ends, gaps[:found]


def cut_frames_into_pure(
    out: list[Any],
    places: IntArray,
    data: bytes,
    begins: IntArray,
    ends: IntArray,
    headers: bool,
    max_length: int,
) -> bool:
    """:func:`cut_frames_pure`, its payloads put at ``out[places[i]]`` (in order) when every
    frame is sound: ``True``; ``False``, ``out`` unchanged, when one is damaged.  Columns of
    different lengths, or a place outside ``out``, are a ``ValueError`` before any frame is
    looked at.  The twin of the compiled ``cut_frames_into`` (``specs/native.md``)."""
    if max_length < 0:
        raise ValueError(f"cut_frames_into: max_length must be >= 0, got {max_length}")
    if len(begins) != len(ends):
        raise ValueError(f"cut_frames: {len(begins)} begins but {len(ends)} ends")
    if len(places) != len(begins):
        raise ValueError(f"cut_frames_into: {len(begins)} frames but {len(places)} places")
    outside = (places < 0) | (places >= len(out))
    if outside.any():
        i = int(outside.argmax())
        raise ValueError(
            f"cut_frames_into: places[{i}] = {int(places[i])} is outside a list of "
            f"{len(out)} entries"
        )
    payloads = cut_frames_pure(data, begins, ends, headers, max_length)
    if payloads is None:
        return False
    for place, payload in zip(places.tolist(), payloads):
        out[place] = payload
    return True


def cut_frames_into(out: list[Any], places: IntArray, data: bytes, *frames: Any) -> bool:
    """:func:`cut_frames_into_pure` (``frames``: its ``begins, ends, headers, max_length``),
    by the compiled core when there is one: each payload is put in its place as it is made,
    with no second pass over the records."""
    if CORE is None:
        return cut_frames_into_pure(out, places, data, *frames)
    placed: bool = CORE.cut_frames_into(out, places, data, *frames)
    return placed


def _sound_headers(data: bytes, begins: IntArray, ends: IntArray) -> bool:
    """Whether the frames ``[begins, ends)`` of ``data`` (not adjacent) store the lengths
    their offsets imply, within the record cap, each with its length CRC."""
    lengths = ends - begins - 16
    if int(lengths.min()) < 0 or int(lengths.max()) > DEFAULT_MAX_RECORD_BYTES:
        return False
    # The stored length field, two little-endian halves.
    low = gather_u32(data, begins).astype(np.int64)
    high = gather_u32(data, begins + 4).astype(np.int64)
    if not np.array_equal(low | (high << 32), lengths):
        return False
    return bool(np.array_equal(gather_u32(data, begins + 8), masked_length_crcs(lengths)))


def _payloads(data: bytes, begins: IntArray, ends: IntArray) -> list[bytes]:
    """``data[b:e]`` for each ``b, e``; small records of one length are cut without a
    Python step each, as the elements of a byte-string view of ``data`` (large ones are
    sliced: one copy each, where the view makes two)."""
    length = int(ends[0] - begins[0])
    if 0 < length <= _SMALL and not (ends - begins != length).any():
        view = np.ndarray((len(data) - length + 1,), dtype=f"V{length}", buffer=data, strides=(1,))
        cut: list[bytes] = view[begins].tolist()
        return cut
    return [data[b:e] for b, e in zip(begins.tolist(), ends.tolist())]
