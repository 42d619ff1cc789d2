"""``decode_batch(..., bytes_as="spans")``: bytes values left in the records as BytesSpans
(``specs/example.md`` §5, ``specs/native.md`` §5).

Every path (the pure walk, the compiled kernel, the runtime one record at a time) must give,
with spans, the columns it gives with bytes objects, and the spans must name the values' bytes
in the records back to back (checked against ``b"".join(records)``, not against the code under
test); the pure and the compiled path name the same spans.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import ConfigError, ExampleError
from readplan.example import BytesSpans, decode, decode_batch, encode
from readplan.records.example import _kernel, _spans
from readplan.records.example._columns import Column, decode_columns_pure, one_by_one
from readplan.records.tfrecord import PackedRecords
from tests.native_wire import wire_batches
from tests.strategies import any_batches, canonical_batches

core = importlib.import_module("readplan.records._core")
Path = Callable[..., dict[str, Column]]
PATHS: list[Path] = [decode_columns_pure, _kernel.decode_columns_native, one_by_one]


@pytest.fixture(autouse=True)
def _compiled_kernel_reachable() -> Iterator[None]:
    """The kernel's path runs on the compiled core even where the seam chose the pure path."""
    chosen = _kernel.CORE
    _kernel.CORE = core
    yield
    _kernel.CORE = chosen


def _plain(columns: dict[str, Column]) -> dict[str, Any]:
    return {
        name: (
            column.kind,
            _bytes_of(column.values) if column.kind == "bytes" else column.values.tobytes(),
            column.row_splits.tolist(),
            column.present.tolist(),
        )
        for name, column in columns.items()
    } | {"": list(columns)}


def _bytes_of(values: Any) -> list[bytes]:
    if isinstance(values, BytesSpans):
        viewed = [bytes(view) for view in values]
        assert values.to_list() == viewed
        return viewed
    assert isinstance(values, list)
    return values


def _outcome(path: Path, records: Sequence[Any], spans: bool) -> Any:
    try:
        return _plain(path(records, decode, spans))
    except ExampleError as err:
        return ("error", type(err), str(err), err.key, err.index)


@given(st.one_of(any_batches(), wire_batches()))
def test_spans_hold_the_values_bytes_objects_hold(records: list[bytes]) -> None:
    expected = _outcome(one_by_one, records, False)
    for path in PATHS:
        assert _outcome(path, records, True) == expected, path.__name__


@given(canonical_batches())
def test_spans_name_the_values_in_the_records_back_to_back(records: list[bytes]) -> None:
    joined = b"".join(records)
    pure = decode_columns_pure(records, decode, True)
    native = _kernel.decode_columns_native(records, decode, True)
    assert list(pure) == list(native)
    for name, column in native.items():
        if column.kind != "bytes":
            continue
        spans, twin = column.values, pure[name].values
        assert isinstance(spans, BytesSpans)
        assert isinstance(twin, BytesSpans)
        assert spans.starts.tolist() == twin.starts.tolist()
        assert spans.lengths.tolist() == twin.lengths.tolist()
        assert spans.records == tuple(records)  # the records themselves, not copies
        wanted = [joined[s : s + n] for s, n in zip(spans.starts.tolist(), spans.lengths.tolist())]
        assert [bytes(view) for view in spans] == wanted


def test_views_are_read_only_slices_of_the_records() -> None:
    records = [encode({"a": [b"first", b""], "n": np.array([1])}), encode({"a": [b"second"]})]
    spans = _kernel.decode_columns_native(records, decode, True)["a"].values
    assert isinstance(spans, BytesSpans)
    assert (len(spans), repr(spans)) == (3, "BytesSpans(3 values in 2 records)")
    assert [bytes(v) for v in spans] == [b"first", b"", b"second"]
    assert bytes(spans[-1]) == b"second"
    view = spans[0]
    assert view.readonly
    assert view.obj is records[0]
    with pytest.raises(TypeError):
        view[0] = 0
    assert spans[1:].to_list() == [b"", b"second"]
    assert spans[5:].to_list() == []
    with pytest.raises(IndexError):
        spans[3]


def test_column_rows_are_spans() -> None:
    records = [encode({"a": [b"x", b"yz"]}), encode({}), encode({"a": [b"w"]})]
    column = decode_batch(records, bytes_as="spans")["a"]
    rows = [column.row(k) for k in range(3)]
    assert [None if row is None else row.to_list() for row in rows] == [[b"x", b"yz"], None, [b"w"]]


def test_spans_keep_their_records_alive() -> None:
    records = [encode({"a": [bytes([k]) * 1000]}) for k in range(4)]
    spans = decode_batch(records, bytes_as="spans")["a"].values
    view = spans[2]
    del records, spans
    gc.collect()
    assert bytes(view) == b"\x02" * 1000


def test_packed_batches_give_spans_of_their_buffer() -> None:
    raws = [encode({"a": [b"v" * k, b"w"]}) for k in range(5)]
    packed = PackedRecords(
        np.frombuffer(b"".join(raws), dtype=np.uint8),
        np.cumsum([0, *map(len, raws)]).astype(np.int64),
    )
    spans = _kernel.decode_columns_native(packed, decode, True)["a"].values
    assert isinstance(spans, BytesSpans)
    assert spans.records[0] is packed.values
    expected = [value for k in range(5) for value in (b"v" * k, b"w")]
    assert spans.to_list() == [bytes(view) for view in spans] == expected


def test_other_bytes_like_records_give_spans_of_their_join() -> None:
    raws = [encode({"a": [b"xy"], "n": np.array([k])}) for k in range(3)]
    spans = _kernel.decode_columns_native([memoryview(r) for r in raws], decode, True)["a"].values
    assert isinstance(spans, BytesSpans)
    assert spans.records == (b"".join(raws),)
    assert spans.to_list() == [b"xy"] * 3


def test_to_list_without_the_core_copies_the_same_values(monkeypatch: Any) -> None:
    records = [b"abc", b"", b"de"]
    spans = BytesSpans(tuple(records), np.array([0, 3, 4, 3]), np.array([3, 2, 1, 0]))
    native = spans.to_list()
    monkeypatch.setattr(_spans, "CORE", None)
    assert spans.to_list() == native == [b"abc", b"de", b"e", b""]


def test_spans_outside_one_record_are_refused() -> None:
    spans = BytesSpans((b"abc", b"de"), np.array([2, 5, -1]), np.array([2, 1, 1]))
    for k in range(3):
        with pytest.raises(ValueError, match=f"span {k} .* not inside one of the 2 records"):
            spans[k]
    with pytest.raises(ValueError, match="span 0"):
        spans.to_list()


@pytest.mark.parametrize(
    ("records", "starts", "lengths", "field"),
    [
        ([b"a"], np.array([0]), np.array([1]), "records"),
        ((b"a", "b"), np.array([0]), np.array([1]), "records"),
        ((b"a",), np.array([0], dtype=np.int32), np.array([1]), "starts"),
        ((b"a",), np.array([0]), np.array([[1]]), "lengths"),
        ((b"a",), np.array([0]), np.array([1, 1]), "lengths"),
    ],
)
def test_malformed_spans_are_refused(records: Any, starts: Any, lengths: Any, field: str) -> None:
    with pytest.raises(ConfigError, match=f"BytesSpans {field}") as caught:
        BytesSpans(records, starts, lengths)
    assert caught.value.field == field


@pytest.mark.parametrize("bytes_as", ["span", None, b"spans"])
def test_other_bytes_as_values_are_refused(bytes_as: Any) -> None:
    with pytest.raises(ConfigError, match=r"bytes_as must be 'bytes'.* or 'spans'") as caught:
        decode_batch([encode({"a": [b"x"]})], bytes_as=bytes_as)
    assert caught.value.value == bytes_as
