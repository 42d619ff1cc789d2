"""The compiled Example parse kernel behind :func:`readplan.example.decode_batch`
(normative: ``specs/native.md``, "Example parse"; ``specs/example.md`` §5).

:func:`decode_columns_native` walks the whole batch in C, twice: the scan finds every feature
name with its kind and value count, the fill writes the values, row splits and presence flags
into arrays allocated here to exactly those sizes. Records the kernel does not read with
certainty (malformed bytes, encodings no writer produces) make the batch decoded one record
at a time by the protobuf runtime, as :func:`decode_columns_pure` does, so the result and every
error are the pure path's. :data:`decode_columns` is the compiled path when the core is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.records.example._columns import (
    Column,
    decode_columns_pure,
    mixed_kinds,
    one_by_one,
)
from readplan.records.example._kinds import Kind
from readplan.records.example._spans import BytesSpans
from readplan.records.native import CORE

if TYPE_CHECKING:
    from readplan.records.example._codec import FeatureValue

__all__ = ["decode_columns", "decode_columns_native"]

_OK: Final = 0  # the kernel's statuses (csrc/example.h)
_NOT_BYTES: Final = 4  # a record is not a bytes object: the batch is joined into one buffer
_KINDS: dict[int, Kind] = {1: "bytes", 2: "float32", 3: "int64"}
_Decode = Callable[[bytes], "dict[str, FeatureValue]"]


def decode_columns_native(
    records: Sequence[bytes], decode: _Decode, spans: bool = False
) -> dict[str, Column]:
    """:func:`decode_columns_pure`'s result and errors, read by the compiled kernel; with
    ``spans``, bytes values as :class:`BytesSpans` of the records, not copied."""
    assert CORE is not None, "the compiled core is not loaded"
    source, offsets = _packed(records, spans)
    status, _, found = CORE.example_scan(source, offsets)
    if status == _NOT_BYTES:
        source = b"".join(records)
        offsets = np.zeros(len(records) + 1, dtype=np.int64)
        np.cumsum([memoryview(raw).nbytes for raw in records], out=offsets[1:])
        status, _, found = CORE.example_scan(source, offsets)
    if status != _OK:
        # The runtime gives the result, or the first error.
        return one_by_one(records, decode, spans)
    keys, table = found
    try:
        names = [key.decode("utf-8") for key in keys]
    except UnicodeDecodeError:
        return one_by_one(records, decode, spans)  # the runtime refuses such a name
    rows = np.frombuffer(table, dtype=np.int64).reshape(-1, 5)
    _refuse_mixed_kinds(names, rows)
    columns = _filled(source, offsets, names, rows, len(records), spans)
    return one_by_one(records, decode, spans) if columns is None else columns


def _packed(records: Sequence[Any], spans: bool) -> tuple[Any, Any]:
    """The records as the kernel reads them: a packed batch (``tfrecord.PackedRecords``: a uint8
    ``values`` array and int64 ``offsets``) as its buffer and bounds, read in place; any other
    sequence as itself (a tuple when spans will hold it: a list could change under them)."""
    values, bounds = getattr(records, "values", None), getattr(records, "offsets", None)
    if isinstance(values, np.ndarray) and isinstance(bounds, np.ndarray):
        return values, bounds
    return (tuple(records) if spans else records), None


def _refuse_mixed_kinds(names: list[str], rows: np.ndarray[Any, Any]) -> None:
    # Every record decodes, so the error is the one-record path's for the first such name.
    mixed = np.flatnonzero(rows[:, 3] >= 0).tolist()
    if mixed:
        k = min(mixed, key=names.__getitem__)
        kind, first, other_kind, other = rows[k, :4].tolist()
        raise mixed_kinds(names[k], _KINDS[kind], first, _KINDS[other_kind], other)


def _filled(
    source: Any, offsets: Any, names: list[str], rows: np.ndarray[Any, Any], n: int, spans: bool
) -> dict[str, Column] | None:
    """The columns the fill writes; None if the bytes changed since the scan."""
    kinds, totals = rows[:, 0], rows[:, 4]
    plan = np.zeros((len(names), 3), dtype=np.int64)
    plan[:, 0], plan[:, 2] = kinds, totals
    sizes = {}
    for kind in _KINDS:
        mine = np.flatnonzero(kinds == kind)
        ends = np.cumsum(totals[mine])
        plan[mine, 1] = ends - totals[mine]
        sizes[kind] = int(ends[-1]) if ends.size else 0
    ints = np.empty(sizes[3], dtype=np.int64)
    words = np.empty(sizes[2], dtype=np.uint32)
    starts = np.empty(sizes[1], dtype=np.int64)
    lengths = np.empty(sizes[1], dtype=np.int64)
    splits = np.zeros((len(names), n + 1), dtype=np.int64)
    present = np.zeros((len(names), n), dtype=np.bool_)
    assert CORE is not None
    status, _ = CORE.example_fill(
        source, offsets, plan, ints, words, starts, lengths, splits, present
    )
    if status != _OK:
        return None
    strings = _strings(source, offsets, starts, lengths, spans)
    # The binary32 words reinterpreted: every bit kept, NaN payloads too.
    values: dict[int, Any] = {1: strings, 2: words.view(np.float32), 3: ints}
    columns = {}
    for k in sorted(np.flatnonzero(kinds).tolist(), key=names.__getitem__):
        kind, base, total = plan[k].tolist()
        part = values[kind][base : base + total]
        columns[names[k]] = Column(_KINDS[kind], part, splits[k], present[k])
    return columns


def _strings(
    source: Any, offsets: Any, starts: IntArray, lengths: IntArray, spans: bool
) -> list[bytes] | BytesSpans:
    """The bytes values: copied into ``bytes`` objects, or with ``spans`` left where they are
    (a buffer's spans are its offsets: the buffer is their one record)."""
    if spans:
        return BytesSpans(source if offsets is None else (source,), starts, lengths)
    assert CORE is not None
    strings: list[bytes] = CORE.example_bytes(source, offsets, starts, lengths)
    return strings


decode_columns = decode_columns_native if CORE is not None else decode_columns_pure
