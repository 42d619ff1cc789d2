"""Elastic ranks read their records in spans (``specs/reader.md`` §2): what a rank delivers,
how it resumes and what damage it reports.

Shards hold records that name their own file and index, so the record expected at each
position follows from the plan's order alone (``plan.epoch``), not from any reader.  The
sizes that shape the reads (window, batch, chunk, read-ahead) are drawn small, so that
every boundary between them is crossed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from readplan import Item, Reader, ReadPlan, tfrecord
from readplan.errors import CorruptRecordError
from readplan.index import build_index, write_index
from readplan.reading import reader as reader_module
from readplan.reading import spans as spans_module
from readplan.records._binding import binding_of
from readplan.records.index import RecordIndex
from readplan.testing import assert_resumes_exactly, plans
from tests.reference_models import tfrecord_frames

Expected = tuple[int, int, bytes, int, int]  # epoch, position, record, file, record index


def _record(name: str, index: int, uniform: bool) -> bytes:
    """Record ``index`` of file ``name``: all of one length, or of lengths that differ."""
    text = f"{name}#{index}".encode()
    return text.ljust(80, b".") if uniform else text


@contextmanager
def _shards(plan: ReadPlan, uniform: bool) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        info = plan.info
        for split, layout in info.splits.items():
            for shard, count in enumerate(layout.shard_lengths):
                name = info.shard_filename(split, shard)
                tfrecord.write(directory / name, (_record(name, k, uniform) for k in range(count)))
        yield directory


def _build_sidecars(directory: Path) -> None:
    for path in directory.iterdir():
        build_index(path, verify=False)  # headers only: a damaged payload does not stop it


def _expected(plan: ReadPlan, epochs: int, uniform: bool) -> list[Expected]:
    expected = []
    for epoch in range(epochs):
        order = plan.epoch(epoch)
        for position, (f, r) in enumerate(
            zip(order.file_index.tolist(), order.record_index.tolist())
        ):
            name = os.path.basename(plan.instructions[f].filename)
            expected.append((epoch, position, _record(name, r, uniform), f, r))
    return expected


def _key(item: Item) -> Expected:
    return item.epoch, item.position, item.record, item.file_index, item.record_index


@contextmanager
def _small_reads(
    window: int, batch: int, chunk: int, read_ahead: int, large: int, skip: int, scan: int
) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reader_module, "_WINDOW_BYTES", window)
        patch.setattr(reader_module, "_BATCH", batch)
        patch.setattr(reader_module, "_ITEM_BATCH", batch)
        patch.setattr(reader_module, "_CHUNK", chunk)
        patch.setattr(reader_module, "_FIRST_CHUNK", chunk)
        patch.setattr(spans_module, "_MIN_READ", read_ahead)
        patch.setattr(spans_module, "_LARGE", large)
        patch.setattr(spans_module, "_MAX_SKIP", skip)
        patch.setattr(spans_module, "_SCAN_FRAMES", scan)
        yield


@dataclass(frozen=True)
class _Case:
    plan: ReadPlan
    world_size: int
    sidecars: bool
    uniform: bool
    # window bytes, batch, chunk, walk read-ahead, record size walked without payloads,
    # bytes of other records a span reads over (0: one read per record where offsets are
    # known; 100: spans split where ranks of three or more skip records of 80 bytes),
    # frames a header walk finds per scan
    read_sizes: tuple[int, int, int, int, int, int, int]


cases = st.builds(
    _Case,
    plans(),
    st.integers(2, 5),
    st.booleans(),
    st.booleans(),
    st.tuples(
        st.sampled_from([1, 200, 2_000, 1 << 23]),
        st.sampled_from([1, 2, 5, 256]),
        st.sampled_from([1, 3, 7, 1 << 16]),
        st.sampled_from([1, 40, 300, 1 << 18]),
        st.sampled_from([1, 1 << 16]),
        st.sampled_from([0, 100, 1 << 14]),
        st.sampled_from([1, 3, 4096]),
    ),
)


@settings(max_examples=60, deadline=None)
@given(cases, st.data())
def test_a_rank_delivers_every_wth_position_of_the_one_rank_order(
    case: _Case, data: st.DataObject
) -> None:
    plan, world_size = case.plan, case.world_size
    expected = _expected(plan, 2, case.uniform)
    with _shards(plan, case.uniform) as directory, _small_reads(*case.read_sizes):
        if case.sidecars:
            _build_sidecars(directory)
        one = [_key(i) for i in Reader(plan, data_dir=directory, epochs=2)]
        assert one == expected

        def reader(rank: int) -> Reader:
            return Reader(plan, data_dir=directory, epochs=2, rank=rank, world_size=world_size)

        for rank in range(world_size):
            mine = [e for e in expected if e[1] % world_size == rank]
            items = list(reader(rank))
            assert [_key(i) for i in items] == mine
            assert [i.tfds_id for i in items] == [
                f"{os.path.basename(plan.instructions[e[3]].filename)}__{e[4]}" for e in mine
            ]
            batches = list(reader(rank).batches())
            assert all(0 < len(b) <= case.read_sizes[1] for b in batches)
            assert [_key(i) for b in batches for i in b.items()] == mine
        rank = data.draw(st.integers(0, world_size - 1))

        def restored(state: dict[str, Any] | None) -> Reader:
            restoring = reader(rank)
            if state is not None:
                restoring.load_state_dict(state)
            return restoring

        assert_resumes_exactly(restored, Reader.state_dict, key=_key)


def _damage(directory: Path, plan: ReadPlan, position: int, at: int) -> tuple[Path, int, int]:
    """Flip byte ``at`` of the frame read at ``position`` of epoch 0 (0-11: its header, 12
    on: its payload); returns the file, the frame's offset and the record index."""
    order = plan.epoch(0)
    file_index = int(order.file_index[position])
    record_index = int(order.record_index[position])
    path = directory / os.path.basename(plan.instructions[file_index].filename)
    data = bytearray(path.read_bytes())
    start, length = tfrecord_frames(bytes(data))[record_index]
    data[start + min(at, 11 + length)] ^= 0x20
    path.write_bytes(bytes(data))
    return path, start, record_index


def _damaged_positions(plan: ReadPlan, directory: Path, path: Path, record_index: int) -> list[int]:
    """Positions of epoch 0 reading that record (a file may be read by two instructions)."""
    order = plan.epoch(0)
    return [
        p
        for p, (f, r) in enumerate(zip(order.file_index.tolist(), order.record_index.tolist()))
        if r == record_index and directory / os.path.basename(plan.instructions[f].filename) == path
    ]


@dataclass(frozen=True)
class _RankRun:
    mine: list[Expected]  # what the rank delivers from undamaged files
    delivered: list[Expected]
    error: CorruptRecordError | None
    stops: list[int]  # the rank's positions reading the damaged record
    position: int  # of the rank's state after the run


def _damaged_ranks(
    case: _Case, data: st.DataObject, header: bool
) -> tuple[Path, int, int, list[_RankRun]]:
    """Every rank's run over the shards with one record damaged (its header or payload):
    the damaged file, the frame's offset and its record index, and the runs."""
    plan, world_size = case.plan, case.world_size
    assume(plan.num_examples > 0)
    expected = _expected(plan, 1, case.uniform)
    position = data.draw(st.integers(0, plan.num_examples - 1))
    at = data.draw(st.integers(0, 11) if header else st.integers(12, 99))
    with _shards(plan, case.uniform) as directory, _small_reads(*case.read_sizes):
        written = {p: p.read_bytes() for p in directory.iterdir()}
        path, offset, record_index = _damage(directory, plan, position, at)
        if case.sidecars:
            _bound_sidecars(written)
        damaged = _damaged_positions(plan, directory, path, record_index)
        runs = []
        for rank in range(world_size):

            def reader(state: dict[str, Any] | None, rank: int = rank) -> Reader:
                made = Reader(plan, data_dir=directory, rank=rank, world_size=world_size)
                if state is not None:
                    made.load_state_dict(state)
                return made

            first = reader(None)
            delivered, states, error = _until_damage(first)
            # Resumed after any delivery, the rank continues alike and meets the same damage.
            for step, state in enumerate(states):
                again, _, met = _until_damage(reader(state))
                assert again == delivered[step:]
                assert _where(met) == _where(error)
            mine = [e for e in expected if e[1] % world_size == rank]
            stops = [p for p in damaged if p % world_size == rank]
            position = first.state_dict()["position"]
            runs.append(_RankRun(mine, delivered, error, stops, position))
    return path, offset, record_index, runs


def _until_damage(
    reader: Reader,
) -> tuple[list[Expected], list[dict[str, Any]], CorruptRecordError | None]:
    """What ``reader`` delivers, its state before each delivery, and the damage it met."""
    delivered: list[Expected] = []
    states = [reader.state_dict()]
    try:
        for item in reader:
            delivered.append(_key(item))
            states.append(reader.state_dict())
    except CorruptRecordError as err:
        return delivered, states, err
    return delivered, states, None


def _where(error: CorruptRecordError | None) -> tuple[str, int] | None:
    return None if error is None else (error.path, error.offset)


def _bound_sidecars(written: dict[Path, bytes]) -> None:
    """Sidecars of the files as written, bound to them as they are now (as where damage
    lies outside the spans a sidecar binds, in any file larger than 128 KiB)."""
    for shard, content in written.items():
        starts = [start for start, _ in tfrecord_frames(content)]
        fd = os.open(shard, os.O_RDONLY)
        try:
            size, binding = binding_of(fd)
        finally:
            os.close(fd)
        write_index(RecordIndex(str(shard), None, starts, size, size, binding))


@settings(max_examples=60, deadline=None)
@given(cases, st.data())
def test_a_damaged_payload_stops_only_the_rank_that_delivers_it(
    case: _Case, data: st.DataObject
) -> None:
    path, offset, record_index, runs = _damaged_ranks(case, data, header=False)
    for run in runs:
        if not run.stops:
            # Another rank's record: its payload is not this rank's to check.
            assert run.error is None
            assert run.delivered == run.mine
            continue
        err = run.error
        assert err is not None
        assert (err.path, err.offset, err.record_index) == (str(path), offset, record_index)
        assert err.kind == tfrecord.KIND_DATA_CRC
        assert f"position {run.stops[0]} of epoch 0" in str(err)
        assert run.delivered == [e for e in run.mine if e[1] < run.stops[0]]
        assert run.position == run.stops[0]


@settings(max_examples=60, deadline=None)
@given(cases, st.data())
def test_a_damaged_header_is_reported_by_every_rank_that_cannot_pass_it(
    case: _Case, data: st.DataObject
) -> None:
    path, offset, _, runs = _damaged_ranks(case, data, header=True)
    for run in runs:
        if run.error is None:
            # A rank that finds its frames from a sidecar never reads another rank's
            # header; without one, only a rank whose walk stops before it.
            assert not run.stops
            assert run.delivered == run.mine
            continue
        assert (run.error.path, run.error.offset) == (str(path), offset)
        assert run.error.kind == tfrecord.KIND_HEADER_CRC
        assert run.delivered == run.mine[: len(run.delivered)]
        if case.sidecars:
            assert run.stops
            assert run.delivered == [e for e in run.mine if e[1] < run.stops[0]]
