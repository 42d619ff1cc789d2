"""readplan.tfrecord.RecordFile: random access to the records of one file, and the fast paths
that must hand damage and oversize frames to the careful one.

Expected records are the ones written, or TensorFlow's fixtures (tests/data/tfrecord).
"""

from __future__ import annotations

import gc
import os
import random
import sys
from pathlib import Path

import pytest

from readplan import tfrecord
from readplan.errors import (
    ClosedError,
    ConfigError,
    CorruptRecordError,
    ReadplanError,
    ReadplanIndexError,
)
from readplan.index import build_index
from readplan.records.tfrecord import _file as records_module
from readplan.tfrecord import (
    KIND_DATA_CRC,
    KIND_HEADER_CRC,
    RecordFile,
)
from tests.tfrecord_fixtures import FILES, FIXTURES, sha


# ------------------------------------------------------------------------ record file
@pytest.mark.parametrize("name", sorted(FILES))
def test_record_file_on_fixtures(name: str) -> None:
    info = FILES[name]
    with RecordFile(FIXTURES / name, compression="auto") as rf:
        assert rf.compression == (info["compression"] or None)
        assert len(rf) == len(info["records_sha256"])
        assert sha([rf[i] for i in range(len(rf))]) == info["records_sha256"]
        assert sha(list(rf.read(0, None))) == info["records_sha256"]
        if len(rf):
            assert sha([rf[-1]]) == info["records_sha256"][-1:]


def make_mixed_file(path: Path, compression: str | None) -> list[bytes]:
    """Small, large and empty records, so every read path of RecordFile is exercised."""
    rng = random.Random(7)
    sizes = [0, 5, 40_000, 17, 100_000, 3, 3, 3, 3, 3, 3, 3, 3, 3, 70_000, 1, 200]
    records = [rng.randbytes(size) for size in sizes]
    tfrecord.write(path, records, compression=compression)
    return records


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
@pytest.mark.parametrize("indexed", [False, True])
def test_record_file_random_access(tmp_path: Path, compression: str | None, indexed: bool) -> None:
    path = tmp_path / "f"
    records = make_mixed_file(path, compression)
    if indexed:
        build_index(path, compression=compression)
    with RecordFile(path, compression=compression) as rf:
        assert rf.indexed == indexed
        assert len(rf) == len(records)
        assert [rf[i] for i in range(len(rf))] == records
        assert [rf[-i] for i in range(1, len(rf) + 1)] == records[::-1]
        for skip in range(len(records) + 1):
            for take in (0, 1, 2, 7, len(records) - skip):
                if skip + take <= len(records):
                    assert list(rf.read(skip, take)) == records[skip : skip + take]
        assert list(rf.read(3)) == records[3:]
        assert list(rf.read(3, -1)) == records[3:]
        expected_offsets = [sum(len(r) + 16 for r in records[:i]) for i in range(len(records))]
        assert rf.offsets.tolist() == expected_offsets


@pytest.mark.parametrize(("skip", "take"), [(-1, 1), (0, 18), (17, 1), (5, -2)])
def test_record_file_read_out_of_range(tmp_path: Path, skip: int, take: int) -> None:
    path = tmp_path / "f"
    make_mixed_file(path, None)
    with RecordFile(path) as rf, pytest.raises(IndexError, match="17 records"):
        rf.read(skip, take)


@pytest.mark.parametrize("i", [17, -18, 10**9])
def test_record_file_index_out_of_range(tmp_path: Path, i: int) -> None:
    path = tmp_path / "f"
    make_mixed_file(path, None)
    with RecordFile(path) as rf, pytest.raises(IndexError):
        rf[i]


def test_record_file_read_touches_only_the_requested_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import readplan.storage._ops as storage_module

    path = tmp_path / "f"
    records = make_mixed_file(path, None)
    reads: list[tuple[int, int]] = []

    def recording_pread(fd: int, size: int, offset: int) -> bytes:
        reads.append((offset, offset + size))
        return os.pread(fd, size, offset)

    monkeypatch.setattr(storage_module, "_OS_PREAD", recording_pread)
    with RecordFile(path) as rf:
        offsets = [*rf.offsets.tolist(), path.stat().st_size]
        for skip, take in [(0, 1), (2, 3), (4, 1), (5, 9), (14, 3), (1, 16)]:
            reads.clear()
            assert list(rf.read(skip, take)) == records[skip : skip + take]
            window = (offsets[skip], offsets[skip + take])
            assert all(window[0] <= a and b <= window[1] for a, b in reads), (skip, take, reads)
        reads.clear()
        assert rf[4] == records[4]
        assert all(offsets[4] <= a and b <= offsets[5] for a, b in reads)


def test_record_file_reports_damage_at_the_record(tmp_path: Path) -> None:
    with RecordFile(FIXTURES / "damaged_flip_data_bit.tfrecord") as rf:
        assert len(rf) == 40
        assert rf[4] == list(tfrecord.read(FIXTURES / "examples.tfrecord"))[4]
        with pytest.raises(CorruptRecordError) as info:
            rf[5]
        assert (info.value.kind, info.value.record_index) == (KIND_DATA_CRC, 5)
        with pytest.raises(CorruptRecordError):
            list(rf.read(3, 5))
    with RecordFile(FIXTURES / "damaged_flip_data_bit.tfrecord", verify=False) as rf:
        assert len(rf[5]) == FILES["examples.tfrecord"]["record_sizes"][5]


def test_record_file_on_damaged_framing_raises(tmp_path: Path) -> None:
    with RecordFile(FIXTURES / "damaged_flip_length_bit.tfrecord") as rf:
        with pytest.raises(CorruptRecordError) as info:
            len(rf)
        assert info.value.kind == KIND_HEADER_CRC


def test_record_file_closed(tmp_path: Path) -> None:
    rf = RecordFile(FIXTURES / "examples.tfrecord")
    rf.close()
    with pytest.raises(ValueError, match="closed"):
        rf[0]


def test_corruption_event_validates_itself() -> None:
    with pytest.raises(ConfigError):
        tfrecord.CorruptionEvent("f", "bit_rot", 0, 0, "m")
    with pytest.raises(ConfigError):
        tfrecord.CorruptionEvent("f", KIND_DATA_CRC, 10, 0, "m", resume_offset=5)
    event = tfrecord.CorruptionEvent("f", KIND_DATA_CRC, 10, 0, "m", resume_offset=30)
    assert event.bytes_skipped == 20
    assert issubclass(CorruptRecordError, ReadplanError)


def test_read_iterator_survives_closing_its_record_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    records = make_mixed_file(path, None)
    rf = RecordFile(path)
    iterator = rf.read(2, 10)
    first = next(iterator)
    rf.close()
    other = tmp_path / "other"
    other.write_bytes(b"\x00" * 1000)
    with open(other, "rb"):  # may take the closed descriptor's number
        assert [first, *iterator] == records[2:12]


def test_raised_errors_carry_the_crc_values_and_tf_text() -> None:
    path = str(FIXTURES / "damaged_flip_data_bit.tfrecord")
    with pytest.raises(CorruptRecordError) as raised:
        list(tfrecord.read(path))
    err = raised.value
    assert err.kind == tfrecord.KIND_DATA_CRC
    assert err.stored_crc is not None
    assert err.computed_crc is not None
    assert err.stored_crc != err.computed_crc
    assert err.tf_message == "corrupted record at 1666"


# -- regressions: fast paths must hand damage and oversize frames to the careful path -----


def _flip_length_crc(tmp_path: Path, *, records: int = 100, damaged: int = 50) -> Path:
    path = tmp_path / "many.tfrecord"
    tfrecord.write(path, [bytes([k]) * 10 for k in range(records)])
    data = bytearray(path.read_bytes())
    data[damaged * 26 + 8] ^= 0x01  # one bit of record 50's length checksum
    path.write_bytes(bytes(data))
    return path


def test_a_damaged_length_checksum_in_a_batch_is_reported_not_looped_on(tmp_path: Path) -> None:
    path = _flip_length_crc(tmp_path)
    for call in (
        lambda: tfrecord.count(path),
        lambda: build_index(path),
        lambda: len(tfrecord.RecordFile(path)),
    ):
        with pytest.raises(CorruptRecordError) as raised:
            call()
        assert raised.value.record_index == 50
        assert raised.value.offset == 50 * 26


def test_max_record_bytes_holds_on_every_path(tmp_path: Path) -> None:
    path = tmp_path / "sizes.tfrecord"
    tfrecord.write(path, [b"x"] + [bytes(100)] * 100)
    with pytest.raises(CorruptRecordError) as raised:
        list(tfrecord.read(path, max_record_bytes=10))
    assert (raised.value.kind, raised.value.record_index) == (tfrecord.KIND_ABSURD_LENGTH, 1)
    with pytest.raises(CorruptRecordError):
        tfrecord.count(path, max_record_bytes=10)
    build_index(path)
    with tfrecord.RecordFile(path, max_record_bytes=10) as rf, pytest.raises(CorruptRecordError):
        rf[5]


def test_invalid_options_leave_no_half_built_record_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.tfrecord"
    tfrecord.write(path, [b"a"])
    with pytest.raises(ConfigError):
        tfrecord.RecordFile(path, max_record_bytes=-1)


def test_record_file_closes_after_module_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At interpreter exit module globals (here the one RecordFile closes its file with)
    become None before the last RecordFile goes: closing it then must neither fail nor
    print."""
    path = tmp_path / "left-open.tfrecord"
    tfrecord.write(path, [b"a", b"bc"])
    records = RecordFile(path)
    raised: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", raised.append)
    monkeypatch.setattr(records_module, "close_handle", None)
    del records
    gc.collect()
    assert raised == []


def test_record_file_keys_out_of_range_are_readplan_index_errors(tmp_path: Path) -> None:
    path = tmp_path / "three.tfrecord"
    tfrecord.write(path, [b"a", b"b", b"c"])
    with RecordFile(path) as records:
        with pytest.raises(ReadplanIndexError) as raised:
            records[3]
        assert (raised.value.key, raised.value.length) == (3, 3)
        with pytest.raises(IndexError):
            list(records.read(2, 5))
    with pytest.raises(ClosedError):
        records[0]
