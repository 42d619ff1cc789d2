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
from readplan.example import (
    BytesSpans,
    FixedLen,
    VarLen,
    decode,
    decode_batch,
    encode,
    parse_many,
)
from readplan.records import native
from readplan.records.example import _kernel, _spans
from readplan.records.example._columns import Column, decode_columns_pure, one_by_one
from readplan.records.tfrecord import PackedRecords
from tests.assertions import assert_same_value
from tests.native_wire import wire_batches
from tests.strategies import (
    any_batches,
    canonical_batches,
    fitting_schema_batches,
    schema_batches,
)

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
        assert [bytes(spans[k]) for k in range(len(spans))] == wanted


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
    assert spans[::-2].to_list() == [bytes(v) for v in spans[::-2]] == [b"second", b"first"]
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
    with pytest.raises(ValueError, match="span 0"):
        spans.views()
    assert BytesSpans((b"ab",), np.array([9, 1]), np.array([0, 1])).views() == [b"", b"b"]


@pytest.mark.parametrize(
    ("records", "starts", "lengths", "field"),
    [
        ([b"a"], np.array([0]), np.array([1]), "records"),
        ((b"a", "b"), np.array([0]), np.array([1]), "records"),
        ((b"a",), np.array([0], dtype=np.int32), np.array([1]), "starts"),
        ((b"a",), np.array([0]), np.array([[1]]), "lengths"),
        ((b"ab",), np.arange(4)[::2], np.array([1, 1]), "starts"),
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


def _unviewed(value: Any, spec: FixedLen | VarLen) -> Any:
    """A parsed bytes value with each memoryview (which it must hold) as the bytes it shows."""
    if str(spec.dtype) != "bytes":
        return value
    if isinstance(spec, FixedLen) and spec.shape == ():
        assert isinstance(value, memoryview)
        assert value.readonly
        return bytes(value)
    assert isinstance(value, np.ndarray)
    assert value.dtype == object
    out = np.empty(value.shape, dtype=object)
    for index, item in np.ndenumerate(value):
        assert isinstance(item, memoryview)
        out[index] = bytes(item)
    return out


def _parsed(records: list[bytes], schema: Any, bytes_as: str) -> Any:
    try:
        return parse_many(records, schema, bytes_as=bytes_as)  # type: ignore[arg-type]
    except ExampleError as err:
        return ("error", str(err), err.key, err.index)


@given(st.one_of(fitting_schema_batches(), schema_batches()))
def test_parsed_spans_are_views_of_the_values_parse_gives(
    drawn: tuple[dict[str, Any], list[bytes]],
) -> None:
    schema, records = drawn
    want, got = _parsed(records, schema, "bytes"), _parsed(records, schema, "spans")
    if isinstance(want, tuple):
        assert got == want
        return
    assert len(got) == len(want)
    for k, (mine, theirs) in enumerate(zip(got, want)):
        assert list(mine) == list(theirs)
        for key in theirs:
            assert_same_value(_unviewed(mine[key], schema[key]), theirs[key], (k, key))


def test_parsed_bytes_in_spans_are_views_into_the_records_and_defaults() -> None:
    schema = {
        "s": FixedLen((2,), "bytes", default=[b"d1", b"d2"]),
        "t": FixedLen((), "bytes", default=b"zz"),
        "v": VarLen("bytes"),
    }
    records = [encode({"s": [b"a", b"b"], "t": b"x", "v": [b"p"]}), encode({})]
    first, second = parse_many(records, schema, bytes_as="spans")
    assert isinstance(first["t"], memoryview)
    # Into the record itself with the compiled core; the pure path reads the records joined.
    assert first["t"].obj is (records[0] if native.NATIVE else first["s"][0].obj)
    assert [bytes(v) for v in first["s"]] == [b"a", b"b"]
    assert [bytes(v) for v in first["v"]] == [b"p"]
    assert bytes(second["t"]) == b"zz"
    assert [bytes(v) for v in second["s"]] == [b"d1", b"d2"]
    assert second["v"].shape == (0,)


def test_records_parsed_one_at_a_time_give_views_too() -> None:
    # A name outside the schema with two kinds: no columns, so each record is parsed alone.
    records = [encode({"a": [b"v"], "x": [1]}), encode({"a": [b"w"], "x": [b"s"]})]
    schema = {"a": FixedLen((), "bytes"), "b": VarLen("bytes")}
    parsed = parse_many(records, schema, bytes_as="spans")
    assert [bytes(p["a"]) for p in parsed] == [b"v", b"w"]
    assert all(isinstance(p["a"], memoryview) for p in parsed)
    assert all(p["b"].dtype == object and p["b"].shape == (0,) for p in parsed)
