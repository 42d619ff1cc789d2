"""tfrecord.read_packed and PackedRecords (specs/tfrecord.md §11): the records TensorFlow wrote,
in Arrow's binary layout, with read()'s checks and damage handling."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import ConfigError, CorruptRecordError, ReadplanIndexError
from readplan.tfrecord import CorruptionReport, PackedRecords
from tests.tfrecord_fixtures import DAMAGED, FILES, FIXTURES, sha


def unpacked(batches: list[PackedRecords]) -> list[bytes]:
    return list(itertools.chain.from_iterable(batch.to_list() for batch in batches))


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("batch_size", [1, 3, 1024])
def test_packed_batches_hold_the_records_tensorflow_wrote(name: str, batch_size: int) -> None:
    info = FILES[name]
    batches = list(tfrecord.read_packed(FIXTURES / name, batch_size=batch_size, compression="auto"))
    assert sha(unpacked(batches)) == info["records_sha256"]
    assert [len(b) for b in batches[:-1]] == [batch_size] * (len(batches) - 1)
    for batch in batches:
        # Each record's bytes are held once: the buffer is exactly their sum.
        assert batch.values.nbytes == int(batch.lengths.sum())
        assert len(batch.offsets) == len(batch) + 1


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damage_stops_a_packed_read_where_tensorflow_stops(name: str) -> None:
    info = DAMAGED[name]
    before = info["tf_records_before_error"]
    got: list[PackedRecords] = []
    report = CorruptionReport()
    with pytest.raises(CorruptRecordError) as raised:
        got.extend(tfrecord.read_packed(FIXTURES / name, batch_size=2, report=report))
    assert raised.value.record_index == before
    source = FILES[info["source"]]["records_sha256"]
    # Whole batches before the damage are delivered; a partial one is not.
    assert sha(unpacked(got)) == source[: before - before % 2]
    assert len(report.events) == 1


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_skip_mode_packs_what_read_delivers(name: str) -> None:
    expected_report, packed_report = CorruptionReport(), CorruptionReport()
    path = FIXTURES / name
    expected = list(tfrecord.read(path, on_corruption="skip", report=expected_report))
    batches = list(
        tfrecord.read_packed(path, batch_size=4, on_corruption="skip", report=packed_report)
    )
    assert unpacked(batches) == expected
    assert packed_report.events == expected_report.events


def large_records() -> st.SearchStrategy[bytes]:
    """Records over the parser's large-frame size, from a short pattern (cheap to draw)."""
    return st.builds(
        lambda pattern, size: (pattern * (size // len(pattern) + 1))[:size],
        st.binary(min_size=1, max_size=16),
        st.integers(40_000, 70_000),
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.binary(max_size=200) | large_records(), max_size=30),
    st.integers(1, 9),
    st.sampled_from([None, "GZIP"]),
)
def test_read_packed_gives_every_written_record(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[bytes],
    batch_size: int,
    compression: str | None,
) -> None:
    path = tmp_path_factory.mktemp("packed") / "data.tfrecord"
    tfrecord.write(path, records, compression=compression)
    batches = list(tfrecord.read_packed(path, batch_size=batch_size, compression=compression))
    assert unpacked(batches) == records
    assert sum(map(len, batches)) == len(records)


def test_packed_records_index_like_a_sequence_of_memoryviews() -> None:
    packed = PackedRecords(
        np.frombuffer(b"abcdef", dtype=np.uint8), np.array([0, 1, 1, 6], dtype=np.int64)
    )
    assert len(packed) == 3
    assert bytes(packed[0]) == b"a"
    assert bytes(packed[1]) == b""
    assert bytes(packed[-1]) == b"bcdef"
    assert isinstance(packed[2], memoryview)
    assert [bytes(r) for r in packed] == packed.to_list() == [b"a", b"", b"bcdef"]
    assert packed.lengths.tolist() == [1, 0, 5]
    with pytest.raises(ReadplanIndexError, match=r"record 3 out of range for 3") as raised:
        packed[3]
    assert raised.value.key == 3
    assert raised.value.length == 3
    assert packed == PackedRecords(packed.values.copy(), packed.offsets.copy())
    assert repr(packed) == "PackedRecords(3 records, 6 bytes)"


@pytest.mark.parametrize(
    ("values", "offsets", "field"),
    [
        (np.zeros(3, dtype=np.int8), np.array([0, 3]), "values"),
        (np.zeros(3, dtype=np.uint8), np.array([0, 3], dtype=np.int32), "offsets"),
        (np.zeros(3, dtype=np.uint8), np.zeros(0, dtype=np.int64), "offsets"),
        (np.zeros(3, dtype=np.uint8), np.array([0, 2], dtype=np.int64), "offsets"),
        (np.zeros(3, dtype=np.uint8), np.array([0, 2, 1, 3], dtype=np.int64), "offsets"),
        (np.zeros(3, dtype=np.uint8), np.array([1, 3], dtype=np.int64), "offsets"),
    ],
)
def test_packed_records_refuse_arrays_that_are_not_the_layout(
    values: np.ndarray, offsets: np.ndarray, field: str
) -> None:
    with pytest.raises(ConfigError, match=f"PackedRecords.{field}") as raised:
        PackedRecords(values, offsets)
    assert raised.value.field == field


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True, None])
def test_read_packed_refuses_a_batch_size_that_is_not_positive(
    tmp_path: Path, batch_size: object
) -> None:
    path = tmp_path / "data.tfrecord"
    tfrecord.write(path, [b"x"])
    with pytest.raises(ConfigError, match="batch_size must be a positive integer"):
        tfrecord.read_packed(path, batch_size=batch_size)  # type: ignore[arg-type]
    assert os.path.exists(path)
