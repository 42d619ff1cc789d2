"""The Reader over damaged shards: skip mode delivers every undamaged record and reports
each lost one; a shard read to its end must end there.

Every record names its own file and index, and frame boundaries are computed here from the
format, so what a position should hold is known without the reader.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import (
    CorruptionReport,
    CorruptRecordError,
    DatasetInfo,
    DatasetInfoError,
    LostRecord,
    ReadConfig,
    Reader,
    ReadPlan,
    tfrecord,
)
from readplan.index import build_index
from readplan.testing import assert_resumes_exactly
from tests.reference_models import tfrecord_frame, tfrecord_frames


def _record(name: str, index: int) -> bytes:
    # Lengths vary, so that no two frames of a file line up by accident.
    return f"{name}#{index}".encode() + b"." * (index % 5)


def _write(directory: Path, lengths: list[int]) -> DatasetInfo:
    info = DatasetInfo("damaged", {"train": lengths}, data_dir=directory)
    for shard, count in enumerate(lengths):
        name = info.shard_filename("train", shard)
        tfrecord.write(directory / name, [_record(name, k) for k in range(count)])
    return info


def _frames(path: Path) -> list[tuple[int, int]]:
    return tfrecord_frames(path.read_bytes())


def _flip(path: Path, at: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= mask
    path.write_bytes(bytes(data))


def _expected(plan: ReadPlan, epoch: int) -> dict[int, tuple[int, int, bytes]]:
    """position -> (file index, record index, record) of the undamaged files."""
    order = plan.epoch(epoch)
    names = [os.path.basename(fi.filename) for fi in plan.instructions]
    return {
        p: (f, r, _record(names[f], r))
        for p, (f, r) in enumerate(zip(order.file_index.tolist(), order.record_index.tolist()))
    }


def _shard(plan: ReadPlan, shard: int) -> Path:
    return Path(plan.info.shard_paths("train")[shard])


def _plan(directory: Path, lengths: list[int], cycle: int = 2, block: int = 2) -> ReadPlan:
    info = _write(directory, lengths)
    config = ReadConfig(interleave_cycle_length=cycle, interleave_block_length=block)
    return ReadPlan(info, "train", config)


def _check_skip_run(
    plan: ReadPlan, report: CorruptionReport, items: list[Any], rank: int = 0, world: int = 1
) -> None:
    """Every position of the rank is delivered (with its record) or reported lost, once."""
    expected = _expected(plan, 0)
    delivered = [item.position for item in items]
    assert delivered == sorted(delivered)
    for item in items:
        assert (item.file_index, item.record_index, item.record) == expected[item.position]
    lost = {entry.position for entry in report.lost}
    assert len(lost) == len(report.lost)
    assert not lost & set(delivered)
    assert lost | set(delivered) == {p for p in expected if p % world == rank}
    for entry in report.lost:
        assert (entry.file_index, entry.record_index) == expected[entry.position][:2]
        assert entry.path == plan.instructions[entry.file_index].filename


def test_skip_mode_loses_only_a_record_whose_data_crc_fails(tmp_path: Path) -> None:
    plan = _plan(tmp_path, [6, 9, 4])
    shard = _shard(plan, 1)
    start, _ = _frames(shard)[5]
    _flip(shard, start + 12)
    report = CorruptionReport()
    items = list(Reader(plan, on_corruption="skip", report=report))
    _check_skip_run(plan, report, items)
    assert report.lost == [
        LostRecord(
            epoch=0,
            position=plan.position_of(0, 1, 5),
            file_index=1,
            record_index=5,
            path=str(shard),
            offset=start,
            kind=tfrecord.KIND_DATA_CRC,
        )
    ]
    assert report.kinds() == {tfrecord.KIND_DATA_CRC: 1}


@pytest.mark.parametrize("world", [1, 2])
def test_skip_mode_reads_past_a_damaged_length_field(tmp_path: Path, world: int) -> None:
    plan = _plan(tmp_path, [6, 9, 4])
    shard = _shard(plan, 1)
    start, _ = _frames(shard)[3]
    _flip(shard, start + 2)
    for rank in range(world):
        report = CorruptionReport()
        items = list(Reader(plan, on_corruption="skip", report=report, rank=rank, world_size=world))
        _check_skip_run(plan, report, items, rank, world)
        lost_here = report.lost
        damaged = plan.position_of(0, 1, 3)
        assert [e.position for e in lost_here] == ([damaged] if damaged % world == rank else [])
        assert all(e.kind == tfrecord.KIND_HEADER_CRC and e.offset == start for e in lost_here)


def test_skip_mode_with_a_sidecar_built_before_the_damage(tmp_path: Path) -> None:
    plan = _plan(tmp_path, [6, 9, 4])
    shard = _shard(plan, 1)
    build_index(shard)
    start, _ = _frames(shard)[3]
    _flip(shard, start + 2)
    with pytest.raises((CorruptRecordError, ValueError)):
        list(Reader(plan))
    report = CorruptionReport()
    items = list(Reader(plan, on_corruption="skip", report=report))
    _check_skip_run(plan, report, items)
    assert [e.position for e in report.lost] == [plan.position_of(0, 1, 3)]


def test_records_between_two_damaged_regions_cannot_be_placed(tmp_path: Path) -> None:
    plan = _plan(tmp_path, [10], cycle=1, block=1)
    shard = _shard(plan, 0)
    frames = _frames(shard)
    _flip(shard, frames[2][0] + 1)
    _flip(shard, frames[6][0] + 1)
    report = CorruptionReport()
    items = list(Reader(plan, on_corruption="skip", report=report))
    _check_skip_run(plan, report, items)
    # Records 3..5 lie between the two regions: how many records each region cost is
    # unknown, so they are reported lost, not guessed.
    assert [i.record_index for i in items] == [0, 1, 7, 8, 9]
    assert [e.record_index for e in report.lost] == [2, 3, 4, 5, 6]
    assert set(report.kinds()) == {tfrecord.KIND_HEADER_CRC}


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 12), min_size=1, max_size=4),
    cycle=st.integers(1, 3),
    block=st.integers(1, 3),
    world=st.integers(1, 2),
    data=st.data(),
)
def test_skip_mode_delivers_undamaged_records_in_order_and_reports_the_rest(
    lengths: list[int], cycle: int, block: int, world: int, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        plan = _plan(Path(scratch), lengths, cycle, block)
        shard = _shard(plan, data.draw(st.integers(0, len(lengths) - 1), label="shard"))
        size = shard.stat().st_size
        for at in data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=3), "at"):
            _flip(shard, at, data.draw(st.integers(1, 255), label="mask"))
        for rank in range(world):
            report = CorruptionReport()
            reader = Reader(plan, on_corruption="skip", report=report, rank=rank, world_size=world)
            items = list(reader)
            _check_skip_run(plan, report, items, rank, world)
            assert all(entry.path == str(shard) for entry in report.lost)


def test_skip_mode_resumes_exactly_around_the_gap(tmp_path: Path) -> None:
    plan = _plan(tmp_path, [6, 9, 4])
    shard = _shard(plan, 1)
    frames = _frames(shard)
    _flip(shard, frames[3][0] + 2)
    _flip(shard, frames[7][0] + 12)

    def factory(state: dict[str, Any] | None) -> Reader:
        return Reader(plan, epochs=2, on_corruption="skip", start=state)

    def saved(reader: Reader) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(json.dumps(reader.state_dict()))
        return state

    assert_resumes_exactly(factory, saved, key=lambda i: (i.epoch, i.position, i.record))


# -- a shard read to its end must end there ------------------------------------------------


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


@pytest.mark.parametrize("garbage", [b"\x00" * 5, b"not a record at all, just bytes"])
def test_bytes_after_the_last_record_of_a_shard_read_to_its_end(
    tmp_path: Path, garbage: bytes
) -> None:
    plan = _plan(tmp_path, [5, 4], cycle=1, block=1)
    shard = _shard(plan, 0)
    _append(shard, garbage)
    reader = Reader(plan)
    got: list[Any] = []
    with pytest.raises(CorruptRecordError) as raised:
        got.extend(reader)
    assert str(shard) in str(raised.value)
    assert "to its end" in str(raised.value)
    # The file's last record is not delivered: where the file ends is in doubt.
    assert [i.position for i in got] == [0, 1, 2, 3]
    assert reader.state_dict()["position"] == 4
    report = CorruptionReport()
    items = list(Reader(plan, on_corruption="skip", report=report))
    assert [i.position for i in items] == list(range(9))
    assert report.lost == []
    assert len(report.events) == 1
    assert report.events[0].offset == shard.stat().st_size - len(garbage)


def test_a_plan_that_stops_before_the_end_does_not_look_at_the_tail(tmp_path: Path) -> None:
    plan = _plan(tmp_path, [5, 4], cycle=1, block=1)
    _append(_shard(plan, 0), b"\x00" * 5)
    shorter = ReadPlan(plan.info, "train[:4]", plan.config)
    assert [i.record_index for i in Reader(shorter)] == [0, 1, 2, 3]


@pytest.mark.parametrize("world", [1, 2])
def test_a_valid_record_beyond_shard_lengths_is_refused_when_read_to_the_end(
    tmp_path: Path, world: int
) -> None:
    plan = _plan(tmp_path, [5, 4], cycle=1, block=1)
    shard = _shard(plan, 0)
    with open(shard, "ab") as handle:
        handle.write(tfrecord_frame(b"one more"))
    # Only the rank that reads the shard's last record (position 4) reads it to its end.
    with pytest.raises(DatasetInfoError) as raised:
        list(Reader(plan, rank=4 % world, world_size=world))
    assert raised.value.path == str(shard)
    assert "more than the 5 records" in str(raised.value)


def test_reader_options_are_checked() -> None:
    plan = ReadPlan(DatasetInfo("x", {"train": [1]}), "train")
    with pytest.raises(ValueError, match="on_corruption"):
        Reader(plan, on_corruption="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="CorruptionReport"):
        Reader(plan, report=[])  # type: ignore[arg-type]
