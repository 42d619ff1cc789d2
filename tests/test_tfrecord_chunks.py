"""Reads over many read buffers (specs/tfrecord.md §10): a plain file is read in chunks into one
kept buffer, so every record and packed batch delivered must be a copy that stays as written
while later chunks are read into that buffer."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from readplan import tfrecord
from readplan.errors import CorruptRecordError
from readplan.tfrecord import CorruptionReport
from tests.test_native_edges import frame

# Small, mid-size and large records (32 KiB or more take another path), so that frames
# straddle the 512 KiB and 2 MiB reads and the reads change size along the file.
SIZES = [100] * 6000 + [5000] * 300 + [40_000] * 10 + [0, 1, 7] * 50 + [100] * 3000
DAMAGED = 5000  # a record in the second chunk


def written() -> list[bytes]:
    """Records that differ from each other everywhere, so a record overwritten shows."""
    return [(i.to_bytes(4, "little") * (n // 4 + 1))[:n] for i, n in enumerate(SIZES)]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("chunks")
    frames = [frame(record) for record in written()]
    good = directory / "good.tfrecord"
    good.write_bytes(b"".join(frames))
    bad = bytearray(frames[DAMAGED])
    bad[12] ^= 1  # its data CRC no longer matches
    frames[DAMAGED] = bytes(bad)
    damaged = directory / "damaged.tfrecord"
    damaged.write_bytes(b"".join(frames))
    assert good.stat().st_size > 5 << 19  # five 512 KiB chunks or more
    return good, damaged


def test_read_delivers_every_record_as_bytes_that_stay_as_written(
    files: tuple[Path, Path],
) -> None:
    records = list(tfrecord.read(files[0]))
    assert all(type(record) is bytes for record in records)
    assert records == written()


def test_read_packed_batches_stay_as_written_and_hold_each_record_once(
    files: tuple[Path, Path],
) -> None:
    batches = list(tfrecord.read_packed(files[0], batch_size=1000))
    assert list(itertools.chain.from_iterable(b.to_list() for b in batches)) == written()
    for batch in batches:
        assert batch.values.nbytes == int(batch.lengths.sum())
        assert batch.values.flags.writeable
    assert [len(b) for b in batches] == [1000] * 9 + [len(SIZES) - 9000]


def test_damage_in_a_later_chunk_is_found_where_it_lies(files: tuple[Path, Path]) -> None:
    expected = written()
    got: list[bytes] = []
    with pytest.raises(CorruptRecordError) as raised:
        got.extend(tfrecord.read(files[1]))
    assert raised.value.record_index == DAMAGED
    assert got == expected[:DAMAGED]
    report = CorruptionReport()
    skipped = list(tfrecord.read(files[1], on_corruption="skip", report=report))
    assert skipped == expected[:DAMAGED] + expected[DAMAGED + 1 :]
    assert len(report.events) == 1
    packed_report = CorruptionReport()
    packed = tfrecord.read_packed(
        files[1], batch_size=999, on_corruption="skip", report=packed_report
    )
    assert list(itertools.chain.from_iterable(b.to_list() for b in packed)) == skipped
    assert packed_report.events == report.events
