"""A decoding reader's batches of a chosen size: collated from the decoded columns, exactly as
``collate`` collates the one-record decodes, with the records made only when read.

The reference for every batch is ``collate([one(raw) for raw in batch])`` over the raw bytes an
undecoding reader delivers, with the one-record decoders (``example.decode``, ``example.parse``,
``FeaturesDict.decoder``): the same nesting, keys, dtypes, shapes and bits (object arrays of
the same bytes), the same records, and the same batches delivered before the same error.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import CorruptRecordError, DatasetInfo, Reader, ReadPlan, ReadplanError, example
from readplan.errors import ConfigError, ExampleError, FeatureError
from readplan.example import decode, parse
from readplan.metadata._feature_batch import compile_leaf_decoder
from readplan.metadata.features import FeaturesDict, Tensor
from readplan.reading import decode_groups
from readplan.reading.collate import collate, collate_leaves
from readplan.reading.items import LazyRecords
from readplan.records.example import _leaves
from readplan.records.example._many import decode_leaves
from readplan.records.example._rows import NotRegularError
from tests.assertions import assert_same_nested, assert_same_value
from tests.decoding_cases import decodable_skips, one_at_a_time, write_dataset
from tests.reference_models import tfrecord_frames
from tests.strategies import (
    any_batches,
    canonical_batches,
    feature_batches,
    fitting_feature_batches,
    fitting_schema_batches,
    schema_batches,
)

# Padding values of every kind, some of which a leaf's dtype refuses (numpy's error, both ways).
PADS = (-1, 7, 2.5, True, b"pad", 0, -1, 7, b"", "x", None)


def _leaf_paths(value: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaf_paths(inner, f"{prefix}{key}/")
    else:
        yield prefix.rstrip("/")


def _raw_deliveries(plan: ReadPlan) -> tuple[list[Any], Exception | None]:
    """The undecoding reader's items, and the read failure that stopped it, if any."""
    items: list[Any] = []
    try:
        items.extend(Reader(plan))
    except ReadplanError as err:
        return items, err
    return items, None


def _expected(
    records: list[bytes],
    read_error: Exception | None,
    one: Callable[[bytes], Any],
    size: int,
    drop: bool,
    collating: dict[str, Any],
) -> tuple[list[tuple[list[Any], Any]], Exception | None, int]:
    """(records, collated batch) of each batch delivered, the error that ends them and the
    index of the record it names."""
    decoded, error = one_at_a_time(one, records)
    failure, stop = (error, len(decoded)) if error is not None else (read_error, len(records))
    delivered = []
    for start in range(0, len(records), size):
        if failure is not None and start + size > stop:
            return delivered, failure, stop
        if drop and start + size > len(records):
            break
        chunk = decoded[start : start + size]
        try:
            delivered.append((chunk, collate(chunk, **collating)))
        except Exception as err:  # collate's own refusal (or numpy's, for a padding value)
            return delivered, err, -1
    return delivered, failure, stop


def _assert_same_collated(got: Any, want: Any, where: tuple[Any, ...]) -> None:
    if isinstance(want, dict):
        assert type(got) is dict, where
        assert list(got) == list(want), where
        for key in want:
            _assert_same_collated(got[key], want[key], (*where, key))
    elif isinstance(want, list):
        assert type(got) is list, where
        assert len(got) == len(want), where
        for k, (mine, theirs) in enumerate(zip(got, want)):
            _assert_same_collated(mine, theirs, (*where, k))
    else:
        assert_same_value(got, want, where)


def _assert_like_collate_of_one_at_a_time(
    info: DatasetInfo,
    one: Callable[[bytes], Any],
    reading: dict[str, Any],
    size: int,
    drop: bool,
    collating: dict[str, Any],
) -> None:
    plan = ReadPlan(info, "train")
    items, read_error = _raw_deliveries(plan)
    records = [item.record for item in items]
    want, failure, at = _expected(records, read_error, one, size, drop, collating)
    got: list[Any] = []
    failed: Exception | None = None
    try:
        for batch in Reader(plan, **reading).batches(size, drop_remainder=drop, **collating):
            got.append(batch)
    except Exception as err:
        failed = err
    assert len(got) == len(want)
    for index, (batch, (chunk, features)) in enumerate(zip(got, want)):
        # The batch first, then the records, made from the columns when read.
        _assert_same_collated(batch.features, features, (index,))
        assert len(batch.records) == len(chunk)
        for k, (mine, theirs) in enumerate(zip(batch.records, chunk)):
            assert_same_nested(mine, theirs, (index, k))
    if failure is None:
        assert failed is None
        return
    assert type(failed) is type(failure)
    if at < 0 or isinstance(failure, CorruptRecordError):
        assert str(failed) == str(failure)
    else:
        assert str(failed).startswith(str(failure)), (failed, failure)
        where = f"position {items[at].position} of epoch 0 (file {items[at].file_index}:"
        assert where in str(failed)


def _damage(info: DatasetInfo, shard: int, record: int) -> None:
    """Flip a byte of a record's data (or, for an empty record, of its data CRC)."""
    path = Path(info.shard_path("train", shard))
    data = bytearray(path.read_bytes())
    frames = tfrecord_frames(bytes(data))
    data[frames[record % len(frames)][0] + 12] ^= 0x20
    path.write_bytes(bytes(data))


def _check(
    records: list[bytes],
    one: Callable[[bytes], Any],
    data: st.DataObject,
    features: FeaturesDict | None = None,
    **decoding: Any,
) -> None:
    """Random batch sizes, ragged modes, padding values, shard counts and now and then a
    damaged record: the reader's batches are collate's of the one-record decodes."""
    if not records:
        return  # an empty split is refused when planned
    size = data.draw(st.sampled_from((1, 2, 3, 4, 5, 8)), label="batch_size")
    drop = data.draw(st.booleans(), label="drop_remainder")
    ragged = data.draw(st.sampled_from(("list", "pad")), label="ragged")
    collating: dict[str, Any] = {"ragged": ragged}
    if ragged == "pad":
        decodable, _ = one_at_a_time(one, records)
        paths = sorted({path for value in decodable for path in _leaf_paths(value)} | {"zz"})
        pads = st.fixed_dictionaries({}, optional=dict.fromkeys(paths, st.sampled_from(PADS)))
        collating["padding_values"] = data.draw(st.none() | pads, label="padding_values")
    shards = data.draw(st.integers(1, 3), label="shards")
    with tempfile.TemporaryDirectory() as directory:
        info = write_dataset(Path(directory), records, shards, features=features)
        if data.draw(st.sampled_from((False, False, False, False, True)), label="damaged"):
            _damage(info, shards - 1, data.draw(st.integers(0, len(records)), label="record"))
        _assert_like_collate_of_one_at_a_time(info, one, decoding, size, drop, collating)


@settings(max_examples=80, deadline=None)
@given(
    st.one_of(
        canonical_batches(same_layout=True),
        fitting_schema_batches().map(lambda drawn: drawn[1]),
        any_batches(),
    ),
    st.data(),
)
def test_decoded_batches_are_collate_of_the_one_record_decodes(
    records: list[bytes], data: st.DataObject
) -> None:
    _check(records, decode, data, decode=True)


@settings(max_examples=80, deadline=None)
@given(st.one_of(fitting_schema_batches(), fitting_schema_batches(), schema_batches()), st.data())
def test_parsed_batches_are_collate_of_the_one_record_parses(
    drawn: tuple[dict[str, Any], list[bytes]], data: st.DataObject
) -> None:
    schema, records = drawn
    _check(records, lambda raw: parse(raw, schema), data, decode=schema)


@settings(max_examples=80, deadline=None)
@given(
    st.one_of(fitting_feature_batches(), fitting_feature_batches(), feature_batches()), st.data()
)
def test_tfds_batches_are_collate_of_the_one_record_decodes(
    drawn: tuple[FeaturesDict, list[bytes]], data: st.DataObject
) -> None:
    features, records = drawn
    skips = decodable_skips(features, records)
    if skips is None:
        return  # features readplan does not decode
    one = features.decoder(decoders=skips)
    _check(records, one, data, features, decode="tfds", decoders=skips)


# --- the column path and the records made when read ---------------------------------------


def _regular_plan(directory: Path, count: int = 10) -> ReadPlan:
    records = [
        example.encode({"id": [k], "name": f"n{k}", "tokens": np.arange(k % 3)})
        for k in range(count)
    ]
    return ReadPlan(write_dataset(directory, records, 2), "train")


def test_regular_batches_are_collated_from_their_columns_and_records_made_when_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    records_of = _leaves.LeafBatch.records

    def counted(batch: _leaves.LeafBatch) -> list[dict[str, Any]]:
        made.append(batch.size)
        return records_of(batch)

    monkeypatch.setattr(_leaves.LeafBatch, "records", counted)
    plan = _regular_plan(tmp_path)
    got = list(Reader(plan, decode=True).batches(4, ragged="pad", padding_values={"tokens": -1}))
    assert [len(batch) for batch in got] == [4, 4, 2]
    assert made == []  # collated without making a record
    first = got[0]
    assert isinstance(first.records, LazyRecords)
    ids = first["id"][:, 0].tolist()
    assert first["tokens"].tolist() == [list(range(k % 3)) + [-1] * (2 - k % 3) for k in ids]
    assert first["name"].tolist() == [[f"n{k}".encode()] for k in ids]
    assert first.records[0]["id"].tolist() == [ids[0]]
    assert made == [4]
    assert [record["name"] for record in first.records] == [[f"n{k}".encode()] for k in ids]
    assert made == [4]  # made once


def test_lazy_records_are_a_sequence_equal_to_their_list(tmp_path: Path) -> None:
    batch = next(iter(Reader(_regular_plan(tmp_path), decode={}).batches(3)))
    assert batch.features == {}
    records = batch.records
    assert isinstance(records, LazyRecords)
    assert len(records) == 3
    assert records == [{}, {}, {}]
    assert records[1:] == [{}, {}]
    assert list(reversed(records)) == [{}, {}, {}]
    assert pickle.loads(pickle.dumps(records)) == [{}, {}, {}]
    assert repr(records) == "[{}, {}, {}]"
    assert len(batch.items()) == 3


def test_collated_arrays_are_apart_from_the_records(tmp_path: Path) -> None:
    batch = next(iter(Reader(_regular_plan(tmp_path), decode=True).batches(4, ragged="pad")))
    assert batch.features is not None
    assert all(array.flags.writeable for array in batch.features.values())
    ids = batch["id"][:, 0].tolist()
    batch["id"][:] = -5
    assert [int(record["id"][0]) for record in batch.records] == ids != [-5] * 4


def test_undecodable_record_before_a_read_failure_is_the_error(tmp_path: Path) -> None:
    records = [example.encode({"id": [k]}) for k in range(8)]
    records[2] = b"\x0a\x05ab"  # not an Example
    info = write_dataset(tmp_path, records, 1)
    _damage(info, 0, 6)
    plan = ReadPlan(info, "train")
    with pytest.raises(ExampleError) as refused:
        decode(records[2])
    for drop in (False, True):
        reader = Reader(plan, decode=True)
        with pytest.raises(ExampleError) as caught:
            list(reader.batches(16, drop_remainder=drop))
        assert str(caught.value).startswith(str(refused.value))
        assert "position 2 of epoch 0" in str(caught.value)
        assert reader.state_dict()["position"] == 0
    # Without the undecodable record, the read failure itself, after the batches before it.
    records[2] = example.encode({"id": [2]})
    (tmp_path / "other").mkdir()
    info = write_dataset(tmp_path / "other", records, 1)
    _damage(info, 0, 6)
    got = []
    with pytest.raises(CorruptRecordError, match="position 6 of epoch 0"):
        got.extend(Reader(ReadPlan(info, "train"), decode=True).batches(4))
    assert [batch["id"][:, 0].tolist() for batch in got] == [[0, 1, 2, 3]]


def test_undecodable_record_in_a_dropped_remainder_is_the_error(tmp_path: Path) -> None:
    records = [example.encode({"id": [k]}) for k in range(7)]
    records[5] = b"\x0a\x05ab"
    plan = ReadPlan(write_dataset(tmp_path, records, 1), "train")
    reader = Reader(plan, decode=True)
    got = []
    with pytest.raises(ExampleError, match="position 5 of epoch 0"):
        got.extend(reader.batches(4, drop_remainder=True))
    assert [len(batch) for batch in got] == [4]
    assert reader.state_dict()["position"] == 4


def test_feature_errors_of_a_tfds_batch_are_the_one_record_errors(tmp_path: Path) -> None:
    features = FeaturesDict({"x": Tensor((2,), "int64")})
    records = [example.encode({"x": [k, k]}) for k in range(5)]
    records[3] = example.encode({"x": [1, 2, 3]})
    info = write_dataset(tmp_path, records, 1, features=features)
    with pytest.raises((ExampleError, FeatureError)) as refused:
        features.decode(records[3])
    with pytest.raises(type(refused.value)) as caught:
        list(Reader(ReadPlan(info, "train"), decode="tfds").batches(2))
    assert str(caught.value).startswith(str(refused.value))
    assert "position 3 of epoch 0" in str(caught.value)


# --- decode workers: batches decoded in groups --------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(fitting_feature_batches(), fitting_feature_batches(), feature_batches()),
    st.sampled_from((1, 3, 7, 16)),
    st.data(),
)
def test_batches_decoded_in_groups_on_workers_are_one_threads(
    drawn: tuple[FeaturesDict, list[bytes]], group: int, data: st.DataObject
) -> None:
    # Groups of a few records, so that a group holds several batches, a failing record, a
    # dropped remainder or the end of a read.
    features, records = drawn
    skips = decodable_skips(features, records)
    if skips is None:
        return  # features readplan does not decode
    one = features.decoder(decoders=skips)
    with mock.patch.object(decode_groups, "GROUP_RECORDS", group):
        _check(records, one, data, features, decode="tfds", decoders=skips, decode_workers=2)


@settings(max_examples=30, deadline=None)
@given(st.one_of(canonical_batches(same_layout=True), any_batches()), st.data())
def test_example_batches_decoded_in_groups_on_workers_are_one_threads(
    records: list[bytes], data: st.DataObject
) -> None:
    with mock.patch.object(decode_groups, "GROUP_RECORDS", 5):
        _check(records, decode, data, decode=True, decode_workers=3)


def test_workers_decode_each_group_of_batches_in_one_step(tmp_path: Path) -> None:
    plan = _regular_plan(tmp_path, 40)
    calls: list[int] = []
    reader = Reader(plan, decode=True, decode_workers=2)
    assert reader._decode is not None
    leaves = reader._decode.leaves
    assert leaves is not None

    def counted(records: Any) -> Any:
        calls.append(len(records))
        return leaves(records)

    object.__setattr__(reader._decode, "leaves", counted)
    with mock.patch.object(decode_groups, "GROUP_RECORDS", 12):
        batches = list(reader.batches(4))
    # Groups of three batches (12 records), the last group of one batch decoded alone.
    assert calls == [12, 12, 12, 4]
    alone = list(Reader(plan, decode=True).batches(4))
    assert [b.features["id"].tolist() for b in batches] == [
        b.features["id"].tolist() for b in alone
    ]
    assert [b.positions.tolist() for b in batches] == [b.positions.tolist() for b in alone]


@settings(max_examples=60, deadline=None)
@given(fitting_feature_batches(), st.data())
def test_a_slice_of_a_batchs_leaves_is_the_leaves_of_its_records(
    drawn: tuple[FeaturesDict, list[bytes]], data: st.DataObject
) -> None:
    features, records = drawn
    skips = decodable_skips(features, records)
    if skips is None:
        return
    leaves = compile_leaf_decoder(features, skips, "error")
    try:
        whole = leaves(records)
    except (ExampleError, FeatureError, NotRegularError):
        return  # not decoded leaf by leaf: nothing is sliced
    start = data.draw(st.integers(0, len(records) - 1), label="start")
    stop = data.draw(st.integers(start + 1, len(records)), label="stop")
    part, alone = whole.sliced(start, stop), leaves(records[start:stop])
    assert part.size == alone.size == stop - start
    for k, (mine, theirs) in enumerate(zip(part.records(), alone.records())):
        assert_same_nested(mine, theirs, (k,))
    try:
        want = collate_leaves(alone)
    except NotRegularError:
        with pytest.raises(NotRegularError):
            collate_leaves(part)
        return
    _assert_same_collated(collate_leaves(part), want, ())


@pytest.mark.parametrize(("start", "stop"), [(-1, 2), (2, 1), (0, 11)])
def test_slices_outside_a_leaf_batch_are_refused(start: int, stop: int) -> None:
    batch = decode_leaves([example.encode({"a": [1]})] * 10)
    with pytest.raises(ConfigError, match=r"LeafBatch slice .* within 0 \.\. 10"):
        batch.sliced(start, stop)
