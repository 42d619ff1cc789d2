"""Readers and data sources decode batches of records exactly as one record at a time.

The Reader's deliveries (items and batches) and the data source's batched reads decode many
records at once through ``decode_batch``'s columns. Here their results are compared, on
random Examples, with the one-record decoders (``example.decode``, ``example.parse``,
``FeaturesDict.decoder``) applied to the raw bytes an undecoding reader delivers: the same
values, dtypes and shapes, the same records delivered before a failure, and the same error.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import DatasetInfo, Reader, ReadPlan
from readplan.errors import ExampleError
from readplan.example import decode, parse
from readplan.metadata.features import FeaturesDict
from readplan.reading.data_source import data_source
from readplan.reading.decoding import example_decoder
from tests.assertions import assert_same_nested, assert_same_value
from tests.decoding_cases import FAILURES, decodable_skips, one_at_a_time, write_dataset
from tests.strategies import any_batches, feature_batches, schema_batches


def _assert_reader_like_one_at_a_time(
    info: DatasetInfo, one: Callable[[bytes], Any], **decoding: Any
) -> None:
    plan = ReadPlan(info, "train")
    items = list(Reader(plan))
    want, error = one_at_a_time(one, [item.record for item in items])
    for batched in (False, True):
        got, failed = _drained(Reader(plan, **decoding), batched)
        if error is None:
            assert failed is None
        else:
            assert type(failed) is type(error)
            assert str(failed).startswith(str(error)), (failed, error)
            assert f"position {items[len(want)].position} of epoch 0" in str(failed)
        assert len(got) == len(want)
        for index, (mine, theirs) in enumerate(zip(got, want)):
            assert_same_nested(mine, theirs, (index,))


def _drained(reader: Reader, batched: bool) -> tuple[list[Any], Exception | None]:
    """What the reader delivers (as items or batches) until it stops, and why it stopped."""
    got: list[Any] = []
    try:
        for delivered in reader.batches() if batched else reader:
            got.extend(delivered.records if batched else [delivered.record])
    except FAILURES as err:
        return got, err
    return got, None


def _assert_getitems_like(source: Any, keys: list[int], want: list[Any], error: Any) -> None:
    if error is not None:
        with pytest.raises(type(error)) as caught:
            source.__getitems__(keys)
        assert str(caught.value) == str(error)
        return
    got = source.__getitems__(np.array(keys))
    assert len(got) == len(want)
    for index, (mine, theirs) in enumerate(zip(got, want)):
        assert_same_nested(mine, theirs, (index,))


@settings(max_examples=25)
@given(st.one_of(any_batches(), schema_batches().map(lambda drawn: drawn[1])), st.integers(1, 3))
def test_reader_decodes_examples_as_one_record_at_a_time(records: list[bytes], shards: int) -> None:
    if not records:
        return  # an empty split is refused when planned
    with tempfile.TemporaryDirectory() as directory:
        info = write_dataset(Path(directory), records, shards)
        _assert_reader_like_one_at_a_time(info, decode, decode=True)


@settings(max_examples=25)
@given(schema_batches(), st.integers(1, 3))
def test_reader_parses_a_schema_as_one_record_at_a_time(
    drawn: tuple[dict[str, Any], list[bytes]], shards: int
) -> None:
    schema, records = drawn
    if not records:
        return
    with tempfile.TemporaryDirectory() as directory:
        info = write_dataset(Path(directory), records, shards)
        _assert_reader_like_one_at_a_time(info, lambda raw: parse(raw, schema), decode=schema)


@settings(max_examples=25)
@given(feature_batches(), st.integers(1, 3))
def test_reader_decodes_tfds_features_as_one_record_at_a_time(
    drawn: tuple[FeaturesDict, list[bytes]], shards: int
) -> None:
    features, records = drawn
    skips = decodable_skips(features, records)
    if skips is None:
        return
    one = features.decoder(decoders=skips)
    with tempfile.TemporaryDirectory() as directory:
        info = write_dataset(Path(directory), records, shards, features=features)
        _assert_reader_like_one_at_a_time(info, one, decode="tfds", decoders=skips)


@settings(max_examples=25)
@given(schema_batches(), st.data())
def test_data_source_batched_reads_decode_as_one_record_at_a_time(
    drawn: tuple[dict[str, Any], list[bytes]], data: st.DataObject
) -> None:
    schema, records = drawn
    if not records:
        return
    keys = data.draw(st.lists(st.integers(0, len(records) - 1), max_size=8))
    with tempfile.TemporaryDirectory() as directory:
        info = write_dataset(Path(directory), records, 2)
        for decoding, one in ((True, decode), (schema, lambda raw: parse(raw, schema))):
            source = data_source(info, "train", decode=decoding, index_dir=directory)
            raw = data_source(info, "train", index_dir=directory)
            want, error = one_at_a_time(one, [raw[k] for k in keys])
            _assert_getitems_like(source, keys, want, error)


@settings(max_examples=25)
@given(feature_batches(), st.data())
def test_data_source_tfds_batched_reads_decode_as_one_record_at_a_time(
    drawn: tuple[FeaturesDict, list[bytes]], data: st.DataObject
) -> None:
    features, records = drawn
    skips = decodable_skips(features, records)
    if skips is None:
        return
    keys = data.draw(st.lists(st.integers(0, len(records) - 1), max_size=8))
    with tempfile.TemporaryDirectory() as directory:
        info = write_dataset(Path(directory), records, 2, features=features)
        source = data_source(info, "train", decode="tfds", decoders=skips, index_dir=directory)
        want, error = one_at_a_time(source.__getitem__, keys)  # type: ignore[arg-type]
        _assert_getitems_like(source, keys, want, error)


def test_decode_all_delivers_the_records_before_the_first_failure() -> None:
    decoder = example_decoder(True)
    assert decoder is not None
    good = b""
    decoded, error = decoder.decode_all([good, good, b"\x0a\x05ab", good])
    assert decoded == [{}, {}]
    assert isinstance(error, ExampleError)
    assert_same_value(decoder.decode_all([good])[0], [{}], "one")
