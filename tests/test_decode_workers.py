"""decode_workers: readers and data sources decoding on several threads deliver exactly what
one thread delivers (specs/reader.md §6): the same records, batches, errors and states."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import Reader, ReadPlan
from readplan.errors import ConfigError
from readplan.example import decode
from readplan.metadata.features import (
    Audio,
    Feature,
    FeaturesDict,
    Image,
    Sequence,
    SkipDecoding,
    Tensor,
    Text,
)
from readplan.reading import workers
from readplan.reading.data_source import data_source
from readplan.reading.decoding import decodes_media
from readplan.reading.workers import SPLIT_RECORDS, decoded_in_parts, ordered
from tests.assertions import assert_same_nested
from tests.decoding_cases import (
    FAILURES,
    features_plan,
    leaf_calls,
    one_at_a_time,
    write_dataset,
)
from tests.strategies import any_batches


def drained(reader: Reader, batch_size: int | None) -> tuple[list[Any], Any, list[int]]:
    """Records delivered until the reader stops, its error, and the position after each
    batch (what a state saved there holds)."""
    got: list[Any] = []
    positions: list[int] = []
    try:
        for batch in reader.batches(batch_size):
            got.extend(batch.records)
            positions.append(reader.state_dict()["position"])
    except FAILURES as err:
        return got, err, positions
    return got, None, positions


@settings(max_examples=30, deadline=None)
@given(any_batches(), st.integers(1, 3), st.sampled_from([None, 1, 4]), st.integers(2, 4))
def test_a_reader_decoding_on_threads_delivers_what_one_thread_decodes(
    records: list[bytes], shards: int, batch_size: int | None, workers: int
) -> None:
    if not records:
        return
    with tempfile.TemporaryDirectory() as directory:
        plan = ReadPlan(write_dataset(Path(directory), records, shards), "train")
        one = drained(Reader(plan, decode=True), batch_size)
        many = drained(Reader(plan, decode=True, decode_workers=workers), batch_size)
    assert len(many[0]) == len(one[0])
    for index, (mine, theirs) in enumerate(zip(many[0], one[0])):
        assert_same_nested(mine, theirs, (index,))
    assert type(many[1]) is type(one[1])
    assert str(many[1]) == str(one[1])
    assert many[2] == one[2]


@settings(max_examples=20, deadline=None)
@given(any_batches(), st.data())
def test_a_data_source_decoding_in_parts_gives_one_threads_records_and_error(
    records: list[bytes], data: st.DataObject
) -> None:
    if not records:
        return
    keys = data.draw(st.lists(st.integers(0, len(records) - 1), max_size=12))
    with tempfile.TemporaryDirectory() as directory:
        info = write_dataset(Path(directory), records, 2)
        raw = data_source(info, "train", index_dir=directory)
        want, error = one_at_a_time(decode, [raw[k] for k in keys])
        source = data_source(info, "train", decode=True, index_dir=directory, decode_workers=3)
        with mock.patch.object(workers, "SPLIT_RECORDS", 1):  # parts even of a few records
            if error is not None:
                with pytest.raises(type(error)) as caught:
                    source.__getitems__(keys)
                assert str(caught.value) == str(error)
                return
            got = source.__getitems__(np.array(keys, dtype=np.int64))
    assert len(got) == len(want)
    for index, (mine, theirs) in enumerate(zip(got, want)):
        assert_same_nested(mine, theirs, (index,))


def test_ordered_keeps_the_order_whatever_finishes_first() -> None:
    def slow_for_small(k: int) -> int:
        time.sleep(0.002 * (8 - k % 8))
        return k * k

    results = [result for _, result in ordered(iter(range(40)), slow_for_small, 4)]
    assert results == [k * k for k in range(40)]


def test_ordered_raises_a_work_error_at_its_turn_and_a_source_error_last() -> None:
    def failing_at_three(k: int) -> int:
        if k == 3:
            raise ValueError("item 3")
        return k

    seen: list[int] = []
    with pytest.raises(ValueError, match="item 3"):
        collect(ordered(iter(range(10)), failing_at_three, 3), seen)
    assert seen == [0, 1, 2]

    def source() -> Iterator[int]:
        yield from range(5)
        raise OSError("read failed after item 4")

    seen = []
    with pytest.raises(OSError, match="after item 4"):
        collect(ordered(source(), lambda k: k, 3), seen)
    assert seen == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("workers", "ahead"), [(2, 1), (2, 2), (3, 1)])
def test_ordered_takes_ahead_items_per_worker_before_the_first_result(
    workers: int, ahead: int
) -> None:
    taken: list[int] = []

    def source() -> Iterator[int]:
        for k in range(20):
            taken.append(k)
            yield k

    results = ordered(source(), lambda k: k, workers, ahead)
    assert next(results) == (0, 0)
    assert len(taken) == workers * ahead
    assert [k for k, _ in results] == list(range(1, 20))


def collect(pairs: Iterator[tuple[int, int]], into: list[int]) -> None:
    for _, result in pairs:
        into.append(result)


def test_ordered_runs_the_work_on_other_threads() -> None:
    names = {name for _, name in ordered(iter(range(8)), _thread_name, 2)}
    assert names
    assert all(name.startswith("readplan-decode") for name in names)
    assert {name for _, name in ordered(iter(range(3)), _thread_name, 1)} == {
        threading.current_thread().name
    }


def _thread_name(_: int) -> str:
    time.sleep(0.001)
    return threading.current_thread().name


def test_decoded_in_parts_stops_at_the_first_failing_part() -> None:
    def decode_all(part: list[bytes]) -> tuple[list[bytes], Exception | None]:
        good = [r for r in part if r != b"bad"]
        if len(good) < len(part):
            index = part.index(b"bad")
            return part[:index], ValueError(f"bad record after {part[:index]}")
        return part, None

    records = [b"a", b"b", b"c", b"bad", b"d", b"e", b"bad", b"f"]
    decoded, error = decoded_in_parts(decode_all, records, 3, media=True)
    assert decoded == [b"a", b"b", b"c"]
    # Part one is [a, b, c]; part two [bad, d, e] fails first, with nothing before it.
    assert str(error) == "bad record after []"
    assert decoded_in_parts(decode_all, records[:3], 3, media=True) == (records[:3], None)


def test_only_media_or_many_records_are_decoded_in_parts() -> None:
    def decode_all(part: list[int]) -> tuple[list[str], Exception | None]:
        return [threading.current_thread().name] * len(part), None

    here = threading.current_thread().name
    few = list(range(SPLIT_RECORDS - 1))
    assert set(decoded_in_parts(decode_all, few, 2, media=False)[0]) == {here}
    in_parts = set(decoded_in_parts(decode_all, few, 2, media=True)[0])  # on the pool
    assert in_parts
    assert here not in in_parts
    many = list(range(SPLIT_RECORDS))
    assert here not in set(decoded_in_parts(decode_all, many, 2, media=False)[0])


@pytest.mark.parametrize(
    ("feature", "decoders", "media"),
    [
        (Image(encoding_format="png"), None, True),
        (Image(), SkipDecoding(), False),
        (Sequence(Image(shape=(4, 4, 3))), None, True),
        (Audio(file_format="wav"), None, True),
        (Audio(), None, False),
        (Text(), None, False),
        (Tensor((2,), "int64"), None, False),
        (FeaturesDict({"a": Text(), "b": Sequence({"c": Image()})}), None, True),
        (FeaturesDict({"a": Text(), "b": Image()}), {"b": SkipDecoding()}, False),
        (FeaturesDict({"a": Image(), "b": Image()}), {"b": SkipDecoding()}, True),
    ],
)
def test_decoders_of_images_or_audio_files_decode_media(
    feature: Feature, decoders: object, media: bool
) -> None:
    assert decodes_media(feature, decoders) is media


def _image_plan(directory: Path, count: int) -> ReadPlan:
    rows = ({"image": np.full((8, 8, 3), k, dtype=np.uint8), "label": k} for k in range(count))
    features = FeaturesDict({"image": Image(encoding_format="png"), "label": Tensor((), "int64")})
    return features_plan(directory, features, rows)


def test_workers_decode_image_batches_one_at_a_time(tmp_path: Path) -> None:
    # A group closes on its record count or bytes, which for images says little of the
    # decode's cost: 12 small images would make one group and leave the second worker idle.
    plan = _image_plan(tmp_path, 12)
    reader = Reader(plan, decode="tfds", decode_workers=2)
    assert reader._decode is not None
    assert reader._decode.media
    calls = leaf_calls(reader)
    labels = [batch.features["label"].tolist() for batch in reader.batches(4)]
    assert calls == [4, 4, 4]
    alone = Reader(plan, decode="tfds").batches(4)
    assert labels == [batch.features["label"].tolist() for batch in alone]


def test_workers_keep_one_batch_of_images_in_flight_each(tmp_path: Path) -> None:
    # Each batch of images more in flight is another large array of fresh memory.
    from readplan.reading import batching

    plan = _image_plan(tmp_path, 12)
    aheads: list[int] = []

    def recorded(items: Any, work: Any, workers: int, ahead: int = 2) -> Any:
        aheads.append(ahead)
        return ordered(items, work, workers, ahead)

    with mock.patch.object(batching, "ordered", recorded):
        images = list(Reader(plan, decode="tfds", decode_workers=2).batches(4))
        small = list(Reader(plan, decode=True, decode_workers=2).batches(4))
    assert aheads == [1, 2]
    assert len(images) == len(small) == 3


@pytest.mark.parametrize("workers", [1, 2])
def test_small_records_are_decoded_in_groups_of_batches(tmp_path: Path, workers: int) -> None:
    # Each leaf decode's Python costs more than the kernel's walk of a few small records:
    # one thread, too, decodes a group of batches at once.
    rows = ({"label": k, "name": f"n{k}"} for k in range(40))
    features = FeaturesDict({"label": Tensor((), "int64"), "name": Text()})
    reader = Reader(features_plan(tmp_path, features, rows), decode="tfds", decode_workers=workers)
    calls = leaf_calls(reader)
    batches = list(reader.batches(4))
    assert calls == [40]
    assert [b.features["label"].tolist() for b in batches] == [
        list(range(k, k + 4)) for k in range(0, 40, 4)
    ]
    assert batches[3].records[1]["name"] == b"n13"


@pytest.mark.parametrize("workers", [0, -1, 65, 1.5, True, "2"])
def test_decode_workers_must_be_a_small_positive_integer(tmp_path: Path, workers: object) -> None:
    plan = ReadPlan(write_dataset(tmp_path, [b""], 1), "train")
    with pytest.raises(ConfigError, match="decode_workers must be an integer from 1 to 64"):
        Reader(plan, decode=True, decode_workers=workers)  # type: ignore[arg-type]
