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
from readplan.records.index import RecordIndex, _binding
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
def _small_reads(window: int, batch: int, chunk: int, read_ahead: int) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reader_module, "_WINDOW_BYTES", window)
        patch.setattr(reader_module, "_BATCH", batch)
        patch.setattr(reader_module, "_CHUNK", chunk)
        patch.setattr(reader_module, "_FIRST_CHUNK", chunk)
        patch.setattr(spans_module, "_MIN_READ", read_ahead)
        yield


sizes = st.tuples(
    st.sampled_from([1, 200, 2_000, 1 << 23]),  # window bytes
    st.sampled_from([1, 2, 5, 256]),  # batch
    st.sampled_from([1, 3, 7, 1 << 16]),  # chunk
    st.sampled_from([1, 40, 300, 1 << 18]),  # read-ahead of a header walk
)


@settings(max_examples=60, deadline=None)
@given(plans(), st.integers(2, 5), st.booleans(), st.booleans(), sizes, st.data())
def test_a_rank_delivers_every_wth_position_of_the_one_rank_order(
    plan: ReadPlan,
    world_size: int,
    sidecars: bool,
    uniform: bool,
    read_sizes: tuple[int, int, int, int],
    data: st.DataObject,
) -> None:
    expected = _expected(plan, 2, uniform)
    with _shards(plan, uniform) as directory, _small_reads(*read_sizes):
        if sidecars:
            _build_sidecars(directory)
        one = [_key(i) for i in Reader(plan, data_dir=directory, epochs=2)]
        assert one == expected
        for rank in range(world_size):
            mine = [e for e in expected if e[1] % world_size == rank]
            reader = Reader(plan, data_dir=directory, epochs=2, rank=rank, world_size=world_size)
            items = list(reader)
            assert [_key(i) for i in items] == mine
            assert [i.tfds_id for i in items] == [
                f"{os.path.basename(plan.instructions[e[3]].filename)}__{e[4]}" for e in mine
            ]
            batches = list(
                Reader(
                    plan, data_dir=directory, epochs=2, rank=rank, world_size=world_size
                ).batches()
            )
            assert all(0 < len(b) <= read_sizes[1] for b in batches)
            assert [_key(i) for b in batches for i in b.items()] == mine
        rank = data.draw(st.integers(0, world_size - 1))

        def restored(state: dict[str, Any] | None) -> Reader:
            reader = Reader(plan, data_dir=directory, epochs=2, rank=rank, world_size=world_size)
            if state is not None:
                reader.load_state_dict(state)
            return reader

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


def _read(reader: Reader) -> tuple[list[Expected], CorruptRecordError | None]:
    delivered: list[Expected] = []
    try:
        for item in reader:
            delivered.append(_key(item))
    except CorruptRecordError as err:
        return delivered, err
    return delivered, None


@settings(max_examples=60, deadline=None)
@given(plans(), st.integers(2, 4), st.booleans(), st.booleans(), sizes, st.data())
def test_a_damaged_payload_stops_only_the_rank_that_delivers_it(
    plan: ReadPlan,
    world_size: int,
    sidecars: bool,
    uniform: bool,
    read_sizes: tuple[int, int, int, int],
    data: st.DataObject,
) -> None:
    assume(plan.num_examples > 0)
    expected = _expected(plan, 1, uniform)
    position = data.draw(st.integers(0, plan.num_examples - 1))
    with _shards(plan, uniform) as directory, _small_reads(*read_sizes):
        path, offset, record_index = _damage(
            directory, plan, position, data.draw(st.integers(12, 99))
        )
        if sidecars:
            _build_sidecars(directory)
        damaged = _damaged_positions(plan, directory, path, record_index)
        for rank in range(world_size):
            mine = [e for e in expected if e[1] % world_size == rank]
            reader = Reader(plan, data_dir=directory, rank=rank, world_size=world_size)
            delivered, err = _read(reader)
            stops = [p for p in damaged if p % world_size == rank]
            if not stops:
                # Another rank's record: its payload is not this rank's to check.
                assert err is None
                assert delivered == mine
                continue
            assert err is not None
            assert (err.path, err.offset, err.record_index) == (str(path), offset, record_index)
            assert err.kind == tfrecord.KIND_DATA_CRC
            assert f"position {stops[0]} of epoch 0" in str(err)
            assert delivered == [e for e in mine if e[1] < stops[0]]
            assert reader.state_dict()["position"] == stops[0]


@settings(max_examples=60, deadline=None)
@given(plans(), st.integers(2, 4), st.booleans(), st.booleans(), sizes, st.data())
def test_a_damaged_header_is_reported_by_every_rank_that_cannot_pass_it(
    plan: ReadPlan,
    world_size: int,
    sidecars: bool,
    uniform: bool,
    read_sizes: tuple[int, int, int, int],
    data: st.DataObject,
) -> None:
    assume(plan.num_examples > 0)
    expected = _expected(plan, 1, uniform)
    position = data.draw(st.integers(0, plan.num_examples - 1))
    with _shards(plan, uniform) as directory, _small_reads(*read_sizes):
        original = {p: p.read_bytes() for p in directory.iterdir()}
        path, offset, record_index = _damage(
            directory, plan, position, data.draw(st.integers(0, 11))
        )
        if sidecars:
            # A sidecar of the file as written, bound to it as it is now (the damage lies
            # outside the spans a sidecar binds, as in any file larger than 128 KiB).
            for shard, written in original.items():
                starts = [start for start, _ in tfrecord_frames(written)]
                fd = os.open(shard, os.O_RDONLY)
                try:
                    size, binding = _binding(fd)
                finally:
                    os.close(fd)
                write_index(RecordIndex(str(shard), None, starts, size, size, binding))
        damaged = _damaged_positions(plan, directory, path, record_index)
        for rank in range(world_size):
            mine = [e for e in expected if e[1] % world_size == rank]
            reader = Reader(plan, data_dir=directory, rank=rank, world_size=world_size)
            delivered, err = _read(reader)
            stops = [p for p in damaged if p % world_size == rank]
            if err is None:
                # A rank that finds its frames from a sidecar never reads another rank's
                # header; without one, only a rank whose walk stops before it.
                assert not stops
                assert delivered == mine
                continue
            assert (err.path, err.offset) == (str(path), offset)
            assert err.kind == tfrecord.KIND_HEADER_CRC
            assert delivered == mine[: len(delivered)]
            if sidecars:
                assert stops
                assert delivered == [e for e in mine if e[1] < stops[0]]
