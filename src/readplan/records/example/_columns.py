"""Many serialized ``tf.train.Example`` records decoded at once, feature by feature.

:func:`readplan.example.decode_batch` gives one :class:`Column` per feature name; record
``i`` of a column equals what :func:`readplan.example.decode` gives for record ``i`` alone.
Canonically encoded batches (what TensorFlow, TFDS and :func:`~readplan.example.encode`
write) are read by the vectorised wire walk of :mod:`readplan.records.example._wire`; any
other batch is decoded one record at a time by the protobuf runtime, with the same result.
This is the pure path (:func:`decode_columns_pure`); the compiled kernel's twin, which
gives the same columns and errors, is :mod:`readplan.records.example._kernel`. See
``specs/example.md`` §5 and ``specs/native.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray, U8Array
from readplan.errors import ConfigError, ExampleError
from readplan.records.example import _wire
from readplan.records.example._kinds import NUMPY_DTYPE, Kind
from readplan.records.example._spans import BytesSpans
from readplan.records.example._wire import NotCanonicalError

if TYPE_CHECKING:
    from readplan.records.example._codec import FeatureValue

__all__ = ["Column", "decode_columns_pure", "mixed_kinds", "one_by_one"]


# Feature.kind field numbers: bytes_list = 1, float_list = 2, int64_list = 3.
_KIND_OF_TAG: dict[int, Kind] = {0x0A: "bytes", 0x12: "float32", 0x1A: "int64"}
_FIELD_1 = 0x0A  # field 1, length-delimited: Example.features, Features.feature, key, value
_FIELD_2 = 0x12  # field 2, length-delimited: the map entry's value
# Gathering equal-length values through one index per byte pays for short ones only; longer
# ones (images) are sliced from the joined buffer.
_GATHERED_BYTES = 256


@dataclass(frozen=True)
class Column:
    """One feature across a batch of ``n`` records, as ragged rows.

    Record ``i``'s values are ``values[row_splits[i]:row_splits[i + 1]]``; ``present[i]``
    says whether record ``i`` holds the feature at all (an empty list is present, a missing
    feature or one without a list is not). ``values`` is an int64 or float32 array (floats
    bit-exact), or a list of bytes, or (``decode_batch(..., bytes_as="spans")``) a
    :class:`BytesSpans` of them. See ``specs/example.md`` §5.
    """

    kind: Kind
    values: FeatureValue | BytesSpans
    row_splits: IntArray
    present: npt.NDArray[np.bool_]

    def __post_init__(self) -> None:
        splits, present = self.row_splits, self.present
        if self.kind not in _KIND_OF_TAG.values():
            raise _bad_column("kind", self.kind, "'int64', 'float32' or 'bytes'")
        if not (isinstance(splits, np.ndarray) and splits.dtype == np.int64 and splits.ndim == 1):
            raise _bad_column("row_splits", splits, "a 1-D int64 array")
        if not (splits.size and splits[0] == 0 and splits[-1] == len(self.values)):
            raise _bad_column("row_splits", splits, "offsets from 0 to len(values)")
        if not (
            isinstance(present, np.ndarray)
            and present.dtype == np.bool_
            and present.shape == (splits.size - 1,)
        ):
            raise _bad_column("present", present, "a bool array of one flag per record")
        expected = NUMPY_DTYPE.get(self.kind)
        if expected is None and not isinstance(self.values, list | BytesSpans):
            raise _bad_column(
                "values", self.values, "a list of bytes or a BytesSpans for a bytes column"
            )
        if expected is not None and not (
            isinstance(self.values, np.ndarray) and self.values.dtype == expected
        ):
            raise _bad_column("values", self.values, f"a {expected} array for this kind")

    def __len__(self) -> int:
        return self.present.size

    def row(self, index: int) -> FeatureValue | BytesSpans | None:
        """Record ``index``'s values, or None when the record does not hold the feature."""
        if not self.present[index]:
            return None
        return self.values[self.row_splits[index] : self.row_splits[index + 1]]


def decode_columns_pure(
    records: Sequence[bytes],
    decode: Callable[[bytes], dict[str, FeatureValue]],
    spans: bool = False,
) -> dict[str, Column]:
    """Decode records to columns; ``decode`` is the one-record decoder that defines the result.

    The batch is read by the vectorised walk when it is canonically encoded, and record by
    record with ``decode`` otherwise (``specs/example.md`` §5). With ``spans``, bytes values
    are :class:`BytesSpans` (of the joined records, which this path reads).
    """
    try:
        return _vectorised(records, spans)
    except NotCanonicalError:
        return one_by_one(records, decode, spans)


def _bad_column(field: str, value: object, wanted: str) -> ConfigError:
    return ConfigError(
        f"Column {field} {value!r:.80} is not valid; it must be {wanted}", field=field, value=value
    )


# --- the vectorised walk over canonical batches ---------------------------------------------


@dataclass(frozen=True)
class _Entries:
    """Every map entry of the batch: its record, key span, list tag and list span."""

    record: IntArray
    key_start: IntArray
    key_end: IntArray
    tag: IntArray  # the Feature's list tag, 0 when it holds none
    list_start: IntArray
    list_end: IntArray


def _vectorised(records: Sequence[bytes], spans: bool) -> dict[str, Column]:
    raw = b"".join([*records, _wire.PADDING])
    buf = np.frombuffer(raw, dtype=np.uint8)
    n = len(records)
    entries = _entries(buf, np.fromiter(map(len, records), dtype=np.int64, count=n))
    names, slot = _slots(raw, buf, entries, n)
    return _columns(raw, buf, entries, names, slot, n, spans)


def _entries(buf: U8Array, lengths: IntArray) -> _Entries:
    ends = np.cumsum(lengths)
    holding = np.flatnonzero(lengths)
    tag, body = _wire.length_delimited(buf, ends[holding] - lengths[holding], ends[holding])
    if (tag != _FIELD_1).any():
        raise NotCanonicalError
    owner, start, end = _wire.repeated(buf, body, ends[holding], _FIELD_1)
    if (buf[start] != _FIELD_1).any():
        raise NotCanonicalError
    key_length, size = _wire.varints(buf, start + 1)
    key_start = start + 1 + size
    key_end = key_start + key_length
    if (key_end >= end).any() or (buf[key_end] != _FIELD_2).any():
        raise NotCanonicalError  # an entry without its value, or its fields in another order
    value_length, size = _wire.varints(buf, key_end + 1)
    value_start = key_end + 1 + size
    if ((value_start + value_length) != end).any():
        raise NotCanonicalError
    tag = np.zeros(owner.size, dtype=np.int64)
    list_start = value_start.copy()
    with_list = np.flatnonzero(value_length)
    found, list_start[with_list] = _wire.length_delimited(
        buf, value_start[with_list], end[with_list]
    )
    if ((found != 0x0A) & (found != 0x12) & (found != 0x1A)).any():
        raise NotCanonicalError
    tag[with_list] = found
    return _Entries(holding[owner], key_start, key_end, tag, list_start, end)


def _slots(raw: bytes, buf: U8Array, entries: _Entries, n: int) -> tuple[list[str], IntArray]:
    """The batch's names in sorted order, and each entry's slot: ``name's rank * n + record``."""
    per_record = np.bincount(entries.record, minlength=n)
    width = int(per_record.max(initial=0))
    if width and (per_record[per_record > 0] == width).all():
        shared = _shared_names(raw, buf, entries, width)
        if shared is not None:
            names, rank = shared
            return names, np.tile(rank * n, entries.record.size // width) + entries.record
    return _distinct_names(raw, buf, entries, n)


def _shared_names(
    raw: bytes, buf: U8Array, entries: _Entries, width: int
) -> tuple[list[str], IntArray] | None:
    # The common case: every record lists the same names in the same order.
    lengths = (entries.key_end - entries.key_start).reshape(-1, width)
    if (lengths != lengths[0]).any():
        return None
    if not _wire.same_spans(buf, entries.key_start.reshape(-1, width), lengths[0].tolist()):
        return None
    first = [_name(raw, s, e) for s, e in zip(entries.key_start[:width], entries.key_end[:width])]
    if len(set(first)) < width:
        raise NotCanonicalError  # a name twice in one record: the runtime keeps the last
    names = sorted(first)
    return names, np.array([names.index(name) for name in first], dtype=np.int64)


def _distinct_names(
    raw: bytes, buf: U8Array, entries: _Entries, n: int
) -> tuple[list[str], IntArray]:
    lengths = entries.key_end - entries.key_start
    keys = _wire.key_words(buf, entries.key_start, lengths)
    # The length joins the words so that names differing only by trailing NULs stay apart.
    rows = np.ascontiguousarray(np.concatenate((lengths[:, None].astype(np.uint64), keys), axis=1))
    _, first, inverse = np.unique(
        rows.view(f"V{rows.shape[1] * 8}").ravel(), return_index=True, return_inverse=True
    )
    found = [_name(raw, entries.key_start[i], entries.key_end[i]) for i in first]
    order = sorted(range(len(found)), key=found.__getitem__)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    slot = rank[inverse.reshape(-1)] * n + entries.record
    if np.unique(slot).size < slot.size:
        raise NotCanonicalError  # a name twice in one record: the runtime keeps the last
    return [found[i] for i in order], slot


def _name(raw: bytes, start: np.int64, end: np.int64) -> str:
    try:
        return raw[start:end].decode("utf-8")
    except UnicodeDecodeError as err:
        raise NotCanonicalError from err  # the runtime refuses it; let it say so


def _columns(
    raw: bytes,
    buf: U8Array,
    entries: _Entries,
    names: list[str],
    slot: IntArray,
    n: int,
    spans: bool,
) -> dict[str, Column]:
    # Dense tables, one row per name and one column per record, so that each kind's values
    # come out grouped by name, in record order within a name.
    tag = np.zeros(len(names) * n, dtype=np.int64)
    tag[slot] = entries.tag
    start = np.zeros_like(tag)
    start[slot] = entries.list_start
    end = np.zeros_like(tag)
    end[slot] = entries.list_end
    kinds = tag.reshape(len(names), n).max(axis=1, initial=0)
    if ((tag != 0) & (tag != np.repeat(kinds, n))).any():
        raise NotCanonicalError  # a name with two kinds: the one-by-one path says where
    counts = np.zeros_like(tag)
    values: dict[int, Any] = {}
    for list_tag in (0x12, 0x1A):
        (where,) = np.nonzero(tag == list_tag)
        values[list_tag], counts[where] = _numbers(list_tag, buf, start[where], end[where])
    (where,) = np.nonzero(tag == 0x0A)
    owner, item_start, item_end = _wire.repeated(buf, start[where], end[where], _FIELD_1)
    counts[where] = np.bincount(owner, minlength=where.size)
    values[0x0A] = (item_start, item_end)
    splits = np.zeros((len(names), n + 1), dtype=np.int64)
    np.cumsum(counts.reshape(len(names), n), axis=1, out=splits[:, 1:])
    present = tag.reshape(len(names), n) != 0
    taken = dict.fromkeys(values, 0)
    columns: dict[str, Column] = {}
    for rank, name in enumerate(names):
        list_tag = int(kinds[rank])
        if not list_tag:
            continue
        low, high = taken[list_tag], taken[list_tag] + int(splits[rank, -1])
        taken[list_tag] = high
        if list_tag == 0x0A:
            item_starts, item_ends = values[0x0A]
            mine = _strings(raw, buf, item_starts[low:high], item_ends[low:high], spans)
            columns[name] = Column("bytes", mine, splits[rank], present[rank])
        else:
            kind = _KIND_OF_TAG[list_tag]
            columns[name] = Column(kind, values[list_tag][low:high], splits[rank], present[rank])
    return columns


def _strings(
    raw: bytes, buf: U8Array, start: IntArray, end: IntArray, spans: bool
) -> list[bytes] | BytesSpans:
    """The spans' bytes as bytes objects, made in C rather than one Python step each; with
    ``spans``, the spans themselves (``raw`` is the records back to back, then padding)."""
    lengths = end - start
    if spans:
        return BytesSpans((raw,), np.ascontiguousarray(start, dtype=np.int64), lengths)
    if lengths.size and 0 < lengths.min() == lengths.max() <= _GATHERED_BYTES:
        # Equal short lengths (labels, ids): one void item per span converts straight to bytes.
        same: list[bytes] = _wire.gather(buf, start, end).view(f"V{lengths[0]}").tolist()
        return same
    return list(map(raw.__getitem__, map(slice, start.tolist(), end.tolist())))


def _numbers(list_tag: int, buf: U8Array, start: IntArray, end: IntArray) -> tuple[Any, IntArray]:
    """The numeric lists' values, concatenated, and how many each list holds."""
    filled = np.flatnonzero(start < end)
    tag, start[filled] = _wire.length_delimited(buf, start[filled], end[filled])
    if (tag != _FIELD_1).any():
        raise NotCanonicalError  # unpacked values, or another field in the list
    data = _wire.gather(buf, start, end)
    lengths = end - start
    if list_tag == 0x1A:
        return _wire.packed_varints(data, lengths)
    if (lengths % 4).any():
        raise NotCanonicalError
    # The bytes are the binary32 words: reinterpreting keeps every bit, NaN payloads too.
    return data.view("<f4").astype(np.float32, copy=False), lengths // 4


# --- any other batch: the protobuf runtime, one record at a time ----------------------------


def one_by_one(
    records: Sequence[bytes],
    decode: Callable[[bytes], dict[str, FeatureValue]],
    spans: bool = False,
) -> dict[str, Column]:
    """The columns of records decoded one at a time by ``decode``, which defines the result;
    with ``spans``, bytes values are :class:`BytesSpans` over the decoded values."""
    decoded = []
    for index, raw in enumerate(records):
        try:
            decoded.append(decode(raw))
        except ExampleError as err:
            raise ExampleError(
                f"record {index} of the batch: {err}", key=err.key, index=index
            ) from err
    names = sorted(set(chain.from_iterable(decoded)))
    return {name: _assembled(name, decoded, spans) for name in names}


def _assembled(name: str, decoded: list[dict[str, FeatureValue]], spans: bool) -> Column:
    holders = [i for i, features in enumerate(decoded) if name in features]
    parts = [decoded[i][name] for i in holders]
    kinds = [_kind_of(part) for part in parts]
    for index, kind in zip(holders, kinds):
        if kind != kinds[0]:
            raise mixed_kinds(name, kinds[0], holders[0], kind, index)
    splits = np.zeros(len(decoded) + 1, dtype=np.int64)
    splits[np.array(holders) + 1] = [len(part) for part in parts]
    present = np.zeros(len(decoded), dtype=np.bool_)
    present[holders] = True
    values: FeatureValue | BytesSpans
    if kinds[0] == "bytes":
        strings = [value for part in parts for value in part]
        values = BytesSpans.of_values(strings) if spans else strings
    else:
        values = np.concatenate([np.asarray(part) for part in parts]).astype(
            NUMPY_DTYPE[kinds[0]], copy=False
        )
    return Column(kinds[0], values, np.cumsum(splits), present)


def _kind_of(values: FeatureValue) -> Kind:
    if isinstance(values, list):
        return "bytes"
    return "int64" if values.dtype == np.int64 else "float32"


def mixed_kinds(name: str, kind: Kind, first: int, other: Kind, index: int) -> ExampleError:
    """The error for a name held as a ``kind`` list by record ``first`` (its first holder) and
    as an ``other`` list by record ``index`` (the first holder that differs)."""
    return ExampleError(
        f"feature {name!r} is a {kind} list in record {first} but a {other} "
        f"list in record {index} of the batch; a column holds one kind, so decode "
        "these records one at a time with decode()",
        key=name,
        index=index,
    )
