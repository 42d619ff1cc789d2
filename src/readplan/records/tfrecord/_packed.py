"""Records packed into one buffer: Arrow's binary layout (normative: ``specs/tfrecord.md`` §11).

A :class:`PackedRecords` holds ``n`` records as one uint8 ``values`` array and int64
``offsets`` of length ``n + 1``: record ``i`` is ``values[offsets[i]:offsets[i + 1]]``.  Making
one ``bytes`` object per record costs more than reading and checking a small record; a packed
batch makes none, and holds each record's bytes once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import SupportsIndex

import numpy as np

from readplan._internal.arrays import IntArray, U8Array
from readplan.errors import ConfigError, ReadplanIndexError
from readplan.records.tfrecord._scan import cut

__all__ = ["Packed", "PackedRecords", "Packer", "packed_batches"]


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

    @classmethod
    def of(cls, values: U8Array, offsets: IntArray) -> PackedRecords:
        """A batch from arrays the reader built to the layout (not checked again)."""
        packed = cls.__new__(cls)
        packed.values = values
        packed.offsets = offsets
        return packed

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


class Packed:
    """``count`` records just packed into ``values`` by the frame scan; their offsets are in
    the :class:`Packer`'s array already."""

    __slots__ = ("count", "values")

    def __init__(self, values: bytearray, count: int) -> None:
        self.values = values
        self.count = count

    def __len__(self) -> int:
        return self.count


class Packer:
    """The batch being packed: its ``offsets`` array (record ``i`` ends at ``offsets[i + 1]``),
    filled up to entry ``k``, and the pieces of its ``values``; :meth:`batches` turns pieces
    (:class:`Packed`, or lists of records) into batches of ``size`` records."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._start()

    def _start(self) -> None:
        self.offsets = np.empty(self.size + 1, dtype=np.int64)
        self.offsets[0] = 0
        self.k = 0
        self._pieces: list[bytes | bytearray] = []

    @property
    def room(self) -> int:
        """Records the batch still takes."""
        return self.size - self.k

    def batches(self, pieces: Iterable[Packed | list[bytes]]) -> Iterator[PackedRecords]:
        """Every batch of ``size`` records the pieces make, and the shorter rest at the end."""
        for piece in pieces:
            if isinstance(piece, Packed):
                self._pieces.append(piece.values)
                self.k += piece.count
                if self.k == self.size:
                    yield self._finish()
                continue
            while piece:
                taken, piece = piece[: self.room], piece[self.room :]
                self._add(taken)
                if self.k == self.size:
                    yield self._finish()
        if self.k:
            yield self._finish()

    def _add(self, records: list[bytes]) -> None:
        """Records read one at a time (large frames, frames cut by a read's end), kept as
        they are until the batch is copied together: joining them first would hold a second
        copy of them in fresh memory."""
        at = int(self.offsets[self.k])
        for i, record in enumerate(records, self.k + 1):
            at += len(record)
            self.offsets[i] = at
        self._pieces.extend(records)
        self.k += len(records)

    def _finish(self) -> PackedRecords:
        pieces = self._pieces
        # A batch scanned from one read buffer is packed already; others are copied, once,
        # into a numpy buffer (np.empty, then the copies: a bytearray join or np.concatenate
        # of a batch of 100 KiB records costs two to four times the page faults).
        if len(pieces) == 1 and isinstance(pieces[0], bytearray):
            values = np.frombuffer(pieces[0], dtype=np.uint8)
        else:
            values = np.empty(int(self.offsets[self.k]), dtype=np.uint8)
            at = 0
            for piece in pieces:
                values[at : at + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
                at += len(piece)
        offsets = self.offsets if self.k == self.size else self.offsets[: self.k + 1].copy()
        self._start()
        return PackedRecords.of(values, offsets)


def packed_batches(pieces: Iterable[list[bytes]], batch_size: int) -> Iterator[PackedRecords]:
    """Lists of records as batches of ``batch_size`` records (the last may be shorter), each
    packed once into a buffer of its exact size."""
    return Packer(batch_size).batches(pieces)
