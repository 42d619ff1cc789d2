"""Bytes values left in the batch's records: ``decode_batch(..., bytes_as="spans")``.

A :class:`BytesSpans` names each bytes value of a column by its span ``(start, length)`` in
the batch's bytes (the records back to back), without copying it: indexing gives a read-only
``memoryview`` into the record that holds it, :meth:`BytesSpans.to_list` copies the values
into ``bytes`` objects when asked. ``specs/example.md`` §5 is normative.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import ConfigError
from readplan.records.native import CORE

__all__ = ["BytesSpans"]


class BytesSpans(Sequence[memoryview]):
    """``len(starts)`` bytes values held as spans of a batch's records.

    ``records`` is what the spans point into: a tuple of ``bytes`` objects, or of one uint8
    array (a packed batch's buffer). Value ``i`` is bytes ``starts[i]`` to ``starts[i] +
    lengths[i] - 1`` of the records back to back, inside one record. ``values[i]`` is a
    read-only memoryview of value ``i``, ``values[a:b]`` the spans of values ``a`` to
    ``b - 1``, :meth:`to_list` the values as ``bytes``. The records stay alive while the
    spans or a view of them do.
    """

    __slots__ = ("_bounds", "lengths", "records", "starts")

    def __init__(self, records: tuple[Any, ...], starts: IntArray, lengths: IntArray) -> None:
        if not (isinstance(records, tuple) and all(map(_is_record, records))):
            raise _bad("records", records, "a tuple of bytes objects or of 1-D uint8 arrays")
        for name, array in (("starts", starts), ("lengths", lengths)):
            if not (
                isinstance(array, np.ndarray)
                and array.dtype == np.int64
                and array.ndim == 1
                and array.flags.c_contiguous
            ):
                raise _bad(name, array, "a contiguous 1-D int64 array")
        if starts.shape != lengths.shape:
            raise _bad("lengths", lengths, f"as many lengths as starts ({starts.size})")
        self.records = records
        self.starts = starts
        self.lengths = lengths
        self._bounds: IntArray | None = None

    @classmethod
    def of_values(cls, values: Sequence[bytes]) -> BytesSpans:
        """Spans over ``values`` themselves (each its own record)."""
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        starts = np.zeros_like(lengths)
        np.cumsum(lengths[:-1], out=starts[1:])
        return cls(tuple(values), starts, lengths)

    def __len__(self) -> int:
        return int(self.starts.size)

    @overload
    def __getitem__(self, index: int) -> memoryview: ...

    @overload
    def __getitem__(self, index: slice) -> BytesSpans: ...

    def __getitem__(self, index: int | slice) -> memoryview | BytesSpans:
        if isinstance(index, slice):
            # Contiguous: the kernel reads the spans as plain int64 arrays (a step copies).
            starts = np.ascontiguousarray(self.starts[index])
            spans = BytesSpans(self.records, starts, np.ascontiguousarray(self.lengths[index]))
            spans._bounds = self._bounds
            return spans
        start, length = int(self.starts[index]), int(self.lengths[index])
        bounds = self._record_bounds()
        # The last record starting at or before the span (empty records before it skipped).
        k = int(np.searchsorted(bounds, start, side="right")) - 1
        if length == 0:
            return memoryview(b"")
        if not (0 <= k < len(self.records) and start + length <= bounds[k + 1]):
            raise ValueError(
                f"span {index} [{start}, + {length}) is not inside one of the "
                f"{len(self.records)} records ({int(bounds[-1])} bytes)"
            )
        at = start - int(bounds[k])
        return memoryview(self.records[k]).toreadonly()[at : at + length]

    def __iter__(self) -> Iterator[memoryview]:
        return iter(self.views())

    def views(self) -> list[memoryview]:
        """Every value's read-only memoryview (``list(spans)``, made for all spans at once)."""
        bounds = self._record_bounds()
        starts, lengths = self.starts, self.lengths
        record = np.searchsorted(bounds, starts, side="right") - 1
        inside = (lengths == 0) | (
            (record >= 0)
            & (record < len(self.records))
            & (starts + lengths <= bounds[np.minimum(record + 1, len(self.records))])
        )
        if not inside.all():
            self[int(np.argmin(inside))]  # raises the ValueError naming the first such span
        whole = [memoryview(r).toreadonly() for r in self.records] + [memoryview(b"")]
        # An empty value may lie outside every record: it is an empty view all the same.
        empty = lengths == 0
        record = np.where(empty, len(self.records), record)
        at = np.where(empty, 0, starts - bounds[np.minimum(record, len(self.records))])
        return [
            whole[k][a : a + n]
            for k, a, n in zip(record.tolist(), at.tolist(), lengths.tolist(), strict=True)
        ]

    def __repr__(self) -> str:
        return f"BytesSpans({len(self)} values in {len(self.records)} records)"

    def to_list(self) -> list[bytes]:
        """The values as ``bytes`` objects (one copy each), equal to ``decode_batch``'s
        default bytes values."""
        if CORE is None:
            return [bytes(view) for view in self]
        if all(isinstance(r, bytes) for r in self.records):
            source, bounds = self.records, None
        else:  # one buffer, its own bounds
            source, bounds = self.records[0], self._record_bounds()
        copied: list[bytes] = CORE.example_bytes(source, bounds, self.starts, self.lengths)
        return copied

    def _record_bounds(self) -> IntArray:
        if self._bounds is None:
            bounds = np.zeros(len(self.records) + 1, dtype=np.int64)
            np.cumsum([memoryview(r).nbytes for r in self.records], out=bounds[1:])
            self._bounds = bounds
        return self._bounds


def _is_record(record: object) -> bool:
    if isinstance(record, bytes):
        return True
    return (
        isinstance(record, np.ndarray)
        and record.dtype == np.uint8
        and record.ndim == 1
        and record.flags.c_contiguous
    )


def _bad(field: str, value: object, wanted: str) -> ConfigError:
    return ConfigError(
        f"BytesSpans {field} {value!r:.80} is not valid; it must be {wanted}",
        field=field,
        value=value,
    )


def check_bytes_as(bytes_as: Any) -> bool:
    """Whether ``bytes_as`` asks for spans; a ConfigError unless ``"bytes"`` or ``"spans"``."""
    if bytes_as not in ("bytes", "spans") or not isinstance(bytes_as, str):
        raise ConfigError(
            f"bytes_as must be 'bytes' (bytes objects) or 'spans' (BytesSpans into the "
            f"records), got {bytes_as!r:.40}",
            field="bytes_as",
            value=bytes_as,
        )
    return bytes_as == "spans"
