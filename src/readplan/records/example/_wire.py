"""Protobuf wire format read for many messages at once, in numpy.

The batched ``tf.train.Example`` decoder (``specs/example.md`` §5) walks the fields of every
record of a batch side by side: each step reads one field of every message still open, so the
Python work is per step and per feature, never per record or per value. Only the canonical
encoding that protobuf writers produce is read here (one-byte tags, length-delimited fields in
the order the schema gives, packed numeric lists); anything else raises
:class:`NotCanonicalError` and the caller decodes the batch with the protobuf runtime instead,
which defines the semantics.
"""

from __future__ import annotations

import numpy as np

from readplan._internal.arrays import IntArray, U8Array, U64Array
from readplan._internal.sorting import stable_order

__all__ = [
    "PADDING",
    "NotCanonicalError",
    "gather",
    "key_words",
    "length_delimited",
    "packed_varints",
    "repeated",
    "same_spans",
    "varints",
]


PADDING = bytes(16)
"""Zero bytes the caller appends to the buffer, so that reading ahead never runs off its end."""

_LENGTH_BYTES = 5  # enough for the largest length the runtime accepts
_MAX_LENGTH = 2**31 - 1  # the runtime refuses longer length-delimited fields
_MAX_VARINT_BYTES = 10
_WIRE_TYPE_LEN = 2
_SHIFTS = 7 * np.arange(_MAX_VARINT_BYTES, dtype=np.uint64)  # of a varint's 7-bit digits


class NotCanonicalError(Exception):
    """The bytes leave the canonical form read here (malformed ones included)."""


def varints(buf: U8Array, at: IntArray) -> tuple[IntArray, IntArray | int]:
    """The length varint starting at each position: ``(value, bytes it takes)``.

    The sizes are the int 1 when every varint takes one byte, the common case.
    """
    first = buf[at]
    if first.max(initial=0) < 0x80:
        return first.astype(np.int64), 1
    value = first.astype(np.int64) & 0x7F
    size = np.ones(at.size, dtype=np.int64)
    longer = np.flatnonzero(first >= 0x80)
    # Lengths rarely take more than two bytes: follow only the varints still going.
    for byte in range(1, _LENGTH_BYTES):
        if not longer.size:
            return value, size
        digit = buf[at[longer] + byte].astype(np.int64)
        value[longer] += (digit & 0x7F) << (7 * byte)
        size[longer] += 1
        longer = longer[digit >= 0x80]
    if longer.size or (value > _MAX_LENGTH).any():
        raise NotCanonicalError  # beyond any length the runtime accepts
    return value, size


def length_delimited(buf: U8Array, start: IntArray, end: IntArray) -> tuple[IntArray, IntArray]:
    """Spans that each hold exactly one length-delimited field: ``(tag byte, payload start)``.

    Every span must be non-empty; its payload runs to the span's end.
    """
    tag = buf[start].astype(np.int64)
    if ((tag & 7) != _WIRE_TYPE_LEN).any() or (tag >= 0x80).any():
        raise NotCanonicalError
    length, size = varints(buf, start + 1)
    payload = start + 1 + size
    if ((payload + length) != end).any():
        raise NotCanonicalError
    return tag, payload


def repeated(
    buf: U8Array, start: IntArray, end: IntArray, tag: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Spans that are sequences of length-delimited fields, all with the one-byte ``tag``.

    Returns ``(owner, payload start, payload end)`` of every field, grouped by owner (the
    index of its span) and in wire order within it.
    """
    owner = np.flatnonzero(start < end)
    at, stop = start[owner], end[owner]
    steps: list[tuple[IntArray, IntArray, IntArray]] = []
    while owner.size:
        # Every position read here lies inside its span: a field running past its span's
        # end closes the span and is caught below.
        if (buf[at] != tag).any():
            raise NotCanonicalError
        length, size = varints(buf, at + 1)
        payload = at + (1 + size)
        at = payload + length
        steps.append((owner, payload, at))
        more = at < stop
        if not more.all():
            if (at[~more] != stop[~more]).any():
                raise NotCanonicalError
            owner, at, stop = owner[more], at[more], stop[more]
    if not steps:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if len(steps) > 1 and steps[-1][0].size == steps[0][0].size:
        # Every span held as many fields: the steps are the columns of a table.
        _, starts, ends = (np.stack(part, axis=1).reshape(-1) for part in zip(*steps))
        return np.repeat(steps[0][0], len(steps)), starts, ends
    owners, starts, ends = (np.concatenate(part) for part in zip(*steps))
    if len(steps) > 1:
        # Each step holds the next field of every span still open; regroup by span.
        order = stable_order(owners, start.size)
        owners, starts, ends = owners[order], starts[order], ends[order]
    return owners, starts, ends


def key_words(buf: U8Array, start: IntArray, lengths: IntArray) -> U64Array:
    """Each span's bytes as zero-padded little-endian words, one row per span (as many
    words as the longest span needs)."""
    count = max(1, -(-int(lengths.max(initial=0)) // 8))
    at = start[:, None] + np.arange(8 * count)
    if start.size and int(start.max()) + 8 * count > buf.size:
        at = np.minimum(at, buf.size - 1)  # bytes past the end are masked off anyway
    words = buf[at].view("<u8")
    inside = np.clip(lengths[:, None] - 8 * np.arange(count), 0, 8).astype(np.uint64)
    # A partly used word keeps its low bytes: the ones at the lower offsets, little-endian.
    mask = np.where(inside == 8, np.uint64(2**64 - 1), (np.uint64(1) << (inside * 8)) - 1)
    selected: U64Array = words & mask
    return selected


def same_spans(buf: U8Array, start: IntArray, lengths: list[int]) -> bool:
    """Whether every row of spans holds the same bytes as the first row.

    ``start`` has one row per group and one column per span; span ``j`` of every row is
    ``lengths[j]`` bytes long. The spans are compared as 8-byte words read at any offset (a
    span's last word may overlap its previous one; a span under 8 bytes is masked), so each
    row costs a few words per span rather than one step per byte.
    """
    columns, offsets, masks = [], [], []
    for j, length in enumerate(lengths):
        if length >= 8:
            starts = [*range(0, length - 7, 8), length - 8]
            columns += [j] * len(starts)
            offsets += starts
            masks += [2**64 - 1] * len(starts)
        elif length:
            columns.append(j)
            offsets.append(0)
            masks.append((1 << 8 * length) - 1)
    if not columns:
        return True
    # buf ends with PADDING, so a word read at any span start stays inside it.
    unaligned = np.lib.stride_tricks.as_strided(buf, (buf.size - 7, 8), (1, 1))
    words = unaligned.view("<u8")[:, 0]
    found = words[start[:, columns] + np.array(offsets)] & np.array(masks, dtype=np.uint64)
    return bool((found == found[0]).all())


def gather(buf: U8Array, start: IntArray, end: IntArray) -> U8Array:
    """The spans' bytes, concatenated."""
    lengths = end - start
    if lengths.size and lengths.min() == lengths.max():
        return buf[(start[:, None] + np.arange(lengths[0])).reshape(-1)]
    filled = lengths > 0
    start, end, lengths = start[filled], end[filled], lengths[filled]
    # One index array, summed in place: +1 within a span, a jump to the next span's start.
    index = np.ones(int(lengths.sum()), dtype=np.int64)
    if start.size:
        index[0] = start[0]
        index[(np.cumsum(lengths) - lengths)[1:]] = start[1:] - end[:-1] + 1
    return buf[np.cumsum(index, out=index)]


def packed_varints(data: U8Array, lengths: IntArray) -> tuple[IntArray, IntArray]:
    """Decode concatenated packed int64 payloads: ``(values, values per payload)``.

    Bits beyond 64 in a ten-byte varint are dropped, as the runtime drops them.
    """
    last = data < 0x80
    if last.all():
        return data.astype(np.int64), lengths
    ends = np.cumsum(lengths)
    if not last[ends[lengths > 0] - 1].all():
        raise NotCanonicalError  # a varint running past its payload
    stops = np.flatnonzero(last)
    firsts = np.empty_like(stops)
    firsts[0] = 0
    firsts[1:] = stops[:-1] + 1
    sizes = stops - firsts + 1
    if sizes.max() > _MAX_VARINT_BYTES:
        raise NotCanonicalError
    # Varints of one size form a table of digits, one row each (a batch holds few sizes):
    # its columns' shifts are constants, and disjoint bit fields sum to their union.
    values = np.empty(stops.size, dtype=np.uint64)
    count = np.bincount(sizes, minlength=_MAX_VARINT_BYTES + 1)
    for size in np.flatnonzero(count).tolist():
        rows = np.flatnonzero(sizes == size) if count[size] < stops.size else slice(None)
        digits = data[firsts[rows, None] + np.arange(size)] & 0x7F
        values[rows] = (digits.astype(np.uint64) << _SHIFTS[:size]).sum(axis=1, dtype=np.uint64)
    seen = np.concatenate(([0], np.cumsum(last)))
    return values.view(np.int64), seen[ends] - seen[ends - lengths]
