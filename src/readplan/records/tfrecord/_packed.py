"""Records packed into one buffer: Arrow's binary layout (normative: ``specs/tfrecord.md`` §11).

A :class:`PackedRecords` holds ``n`` records as one uint8 ``values`` array and int64
``offsets`` of length ``n + 1``: record ``i`` is ``values[offsets[i]:offsets[i + 1]]``.  Making
one ``bytes`` object per record costs more than reading and checking a small record; a packed
batch makes none, and holds each record's bytes once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import SupportsIndex

import numpy as np

from readplan._internal.arrays import IntArray, U8Array
from readplan.errors import ConfigError, ReadplanIndexError
from readplan.records.tfrecord._scan import cut, pack

__all__ = ["PackedRecords", "Spans", "packed_batches"]


@dataclass(frozen=True)
class Spans:
    """Payloads lying in one buffer: ``data[starts[i]:starts[i] + lengths[i]]``; ``len()`` is
    how many."""

    data: bytes
    starts: IntArray
    lengths: IntArray

    def __len__(self) -> int:
        return len(self.starts)


class PackedRecords(Sequence[memoryview]):
    """``len(p)`` records in one buffer: ``p[i]`` is a memoryview of record ``i`` (no copy),
    ``p.to_list()`` the records as ``bytes``, ``p.values`` / ``p.offsets`` the arrays."""

    __slots__ = ("offsets", "values")

    def __init__(self, values: U8Array, offsets: IntArray) -> None:
        values = np.asarray(values)
        offsets = np.asarray(offsets)
        if values.dtype != np.uint8 or values.ndim != 1:
            raise ConfigError(
                f"PackedRecords.values must be a 1-d uint8 array, got {values.dtype} with shape "
                f"{values.shape}",
                field="values",
            )
        if offsets.dtype != np.int64 or offsets.ndim != 1 or not len(offsets):
            raise ConfigError(
                "PackedRecords.offsets must be a non-empty 1-d int64 array (n + 1 entries), got "
                f"{offsets.dtype} with shape {offsets.shape}",
                field="offsets",
            )
        if offsets[0] != 0 or offsets[-1] != len(values) or (np.diff(offsets) < 0).any():
            raise ConfigError(
                "PackedRecords.offsets must rise from 0 to len(values) "
                f"({len(values)}), got {offsets[:3].tolist()} ... {offsets[-3:].tolist()}",
                field="offsets",
            )
        self.values = values
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: SupportsIndex) -> memoryview:  # type: ignore[override]
        i = index.__index__()
        n = len(self)
        if not -n <= i < n:
            raise ReadplanIndexError(
                f"record {i} out of range for {n} packed records (valid: {-n} .. {n - 1})",
                key=i,
                length=n,
            )
        i %= n
        return self.values[self.offsets[i] : self.offsets[i + 1]].data

    def __iter__(self) -> Iterator[memoryview]:
        view = self.values.data
        bounds = self.offsets.tolist()
        return (view[b:e] for b, e in itertools.pairwise(bounds))

    def to_list(self) -> list[bytes]:
        """The records as ``bytes`` objects (one copy each)."""
        return cut(self.values.data, self.offsets[:-1], np.diff(self.offsets))

    @property
    def lengths(self) -> IntArray:
        """Each record's length in bytes."""
        lengths: IntArray = np.diff(self.offsets)
        return lengths

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PackedRecords):
            return NotImplemented
        return np.array_equal(self.offsets, other.offsets) and np.array_equal(
            self.values, other.values
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedRecords({len(self)} records, {len(self.values)} bytes)"


def packed_batches(
    pieces: Iterable[Spans | list[bytes]], batch_size: int
) -> Iterator[PackedRecords]:
    """``pieces`` (payload spans in read buffers, or records) as batches of ``batch_size``
    records (the last may be shorter), each packed once into a buffer of its exact size."""
    held: list[Spans] = []
    count = 0
    for piece in pieces:
        spans = piece if isinstance(piece, Spans) else _as_spans(piece)
        while len(spans.starts):
            take = min(batch_size - count, len(spans.starts))
            held.append(Spans(spans.data, spans.starts[:take], spans.lengths[:take]))
            count += take
            spans = Spans(spans.data, spans.starts[take:], spans.lengths[take:])
            if count == batch_size:
                yield _packed(held)
                held, count = [], 0
    if count:
        yield _packed(held)


def _as_spans(records: list[bytes]) -> Spans:
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    starts = np.zeros(len(records), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return Spans(b"".join(records), starts, lengths)


def _packed(held: list[Spans]) -> PackedRecords:
    lengths = np.concatenate([spans.lengths for spans in held])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=np.uint8)
    at = 0
    for spans in held:
        at = pack(spans.data, spans.starts, spans.lengths, values.data, at)
    return PackedRecords(values, offsets)
