"""readplan.reader: real records in plan order, resumable, across ranks; damage located.

The conformance tests compare against TFDS itself (tests/data/tfds: a TFDS-written dataset
and the order TFDS read it in, with each record's own ``id``).  The property tests write
shards whose records name their own file and index, so the expected record at a position
is known without the reader.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan import (
    Batch,
    ExampleShuffle,
    Item,
    ReadConfig,
    Reader,
    ReadPlan,
    merge_states,
    tfrecord,
)
from readplan.errors import (
    CheckpointError,
    ConfigError,
    CorruptRecordError,
    DatasetInfoError,
    ExampleError,
)
from readplan.example import FixedLen
from readplan.index import build_index
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading import reader as reader_module
from readplan.testing import assert_resumes_exactly, plans
from tests.named_shards import NamedShards, plan_records
from tests.reference_models import tfrecord_frames
from tests.tfds_toy import CASE_IDS, TOY, TOY_DIR, TOY_INFO, toy_plan


def _id(item: Item) -> int:
    assert isinstance(item.record, dict)
    return int(item.record["id"][0])


def _key(item: Item) -> tuple[int, int, int]:
    return item.epoch, item.position, _id(item)


def _toy_copy(directory: Path) -> Path:
    target = directory / "readplan_toy"
    shutil.copytree(TOY_DIR, target)
    return target


def _damage_record(path: Path, record: int) -> None:
    """Flip one data byte of ``record`` (its data CRC then fails)."""
    data = bytearray(path.read_bytes())
    start, length = tfrecord_frames(bytes(data))[record]
    assert length > 0
    data[start + 12] ^= 0x01
    path.write_bytes(bytes(data))


def _drain(iterable: Iterable[Any], sink: list[Any]) -> None:
    sink.extend(iterable)


def _open_files_under(directory: Path) -> int:
    """Distinct files under ``directory`` this process holds open (Linux's /proc)."""
    prefix = str(directory.resolve())
    files = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(prefix):
            files.add(target)
    return len(files)


# -- conformance with TFDS ------------------------------------------------------------


@pytest.mark.parametrize("case", TOY["cases"], ids=CASE_IDS)
def test_reads_tfds_order_of_real_records(case: dict[str, Any]) -> None:
    plan = toy_plan(case)
    items = list(Reader(plan, epochs=len(case["epochs"]), decode=True))
    expected = [entry for epoch in case["epochs"] for entry in epoch]
    assert [_id(item) for item in items] == [entry[3] for entry in expected]
    got = [
        [
            plan.instructions[i.file_index].split,
            plan.instructions[i.file_index].shard_index,
            i.record_index,
        ]
        for i in items
    ]
    assert got == [entry[:3] for entry in expected]
    per_epoch = len(case["epochs"][0])
    assert [(i.epoch, i.position) for i in items] == [
        (e, p) for e in range(len(case["epochs"])) for p in range(per_epoch)
    ]
    assert all(
        i.tfds_id == f"{os.path.basename(plan.instructions[i.file_index].filename)}__"
        f"{i.record_index}"
        for i in items
    )


@pytest.mark.parametrize("case", TOY["cases"], ids=CASE_IDS)
def test_restore_at_every_position_continues_exactly(case: dict[str, Any]) -> None:
    plan = toy_plan(case)
    epochs = len(case["epochs"])

    def factory(state: dict[str, Any] | None) -> Reader:
        reader = Reader(plan, epochs=epochs, decode=True)
        if state is not None:
            reader.load_state_dict(state)
        return reader

    def saved(reader: Reader) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(json.dumps(reader.state_dict()))
        return state

    assert_resumes_exactly(factory, saved, key=_key)


@pytest.mark.parametrize("case", TOY["cases"], ids=CASE_IDS)
def test_ranks_partition_the_tfds_order_and_resume_elastically(case: dict[str, Any]) -> None:
    plan = toy_plan(case)
    epochs = len(case["epochs"])
    everything = [_key(item) for item in Reader(plan, epochs=epochs, decode=True)]
    for world_size in (2, 3):
        ranks = [
            [
                _key(i)
                for i in Reader(plan, epochs=epochs, decode=True, rank=r, world_size=world_size)
            ]
            for r in range(world_size)
        ]
        assert sorted(k for rank in ranks for k in rank) == everything
        for rank, keys in enumerate(ranks):
            assert all(position % world_size == rank for _, position, _ in keys)
        # Within the first epoch every rank has at least num_examples // world_size
        # positions, so after that many steps each the ranks are still in lockstep.
        for steps in (0, 1, plan.num_examples // world_size):
            for new_size in (1, 2, 3):
                before, after = _elastic_run(plan, epochs, world_size, steps, new_size)
                assert sorted(before + after) == everything


def _elastic_run(
    plan: ReadPlan, epochs: int, world_size: int, steps: int, new_size: int
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """Every rank delivers ``steps`` records, saves; ``new_size`` ranks finish the run."""
    before, states = [], []
    for rank in range(world_size):
        reader = Reader(plan, epochs=epochs, decode=True, rank=rank, world_size=world_size)
        stream = iter(reader)
        for _ in range(steps):
            item = next(stream, None)
            if item is not None:
                before.append(_key(item))
        states.append(json.loads(json.dumps(reader.state_dict())))
    merged = merge_states(states)
    after: list[tuple[int, int, int]] = []
    for rank in range(new_size):
        reader = Reader(plan, epochs=epochs, decode=True, rank=rank, world_size=new_size)
        reader.load_state_dict(merged)
        after.extend(_key(item) for item in reader)
    return before, after


# -- properties over random layouts ---------------------------------------------------


def _read_counting_files(reader: Reader, directory: Path) -> tuple[list[Item], int]:
    """Everything ``reader`` delivers, and the most shard files it held open at once."""
    items, most_open = [], 0
    for item in reader:
        items.append(item)
        most_open = max(most_open, _open_files_under(directory))
    return items, most_open


@settings(max_examples=60)
@given(plans(), st.integers(1, 3))
def test_delivers_the_plans_records_with_few_files_open(plan: ReadPlan, epochs: int) -> None:
    with NamedShards(plan.info) as shards:
        reader = Reader(plan, data_dir=shards.directory, epochs=epochs)
        got, most_open = _read_counting_files(reader, shards.directory)
        assert [i.record for i in got] == [r for e in range(epochs) for r in plan_records(plan, e)]
        if plan.config.example_shuffle is None:
            assert most_open <= plan.cycle_length
        assert _open_files_under(shards.directory) == 0
        batches = list(Reader(plan, data_dir=shards.directory, epochs=epochs).batches())
        assert all(0 < len(b) <= 256 for b in batches)
        assert [i.record for b in batches for i in b.items()] == [i.record for i in got]
        assert [tid for b in batches for tid in b.tfds_ids()] == [
            tid for e in range(epochs) for tid in plan.epoch(e).tfds_ids()
        ]


@settings(max_examples=40)
@given(plans(), st.integers(1, 4), st.data())
def test_ranks_partition_each_epoch(plan: ReadPlan, world_size: int, data: st.DataObject) -> None:
    with NamedShards(plan.info) as shards:
        ranks = []
        for rank in range(world_size):
            reader = Reader(
                plan, data_dir=shards.directory, epochs=2, rank=rank, world_size=world_size
            )
            items, most_open = _read_counting_files(reader, shards.directory)
            ranks.append(items)
            if plan.config.example_shuffle is None:
                assert most_open <= plan.cycle_length
        for rank, items in enumerate(ranks):
            assert all(i.position % world_size == rank for i in items)
            assert [(i.epoch, i.position) for i in items] == sorted(
                (i.epoch, i.position) for i in items
            )
        merged = sorted(((i.epoch, i.position), i.record) for items in ranks for i in items)
        expected = [
            ((e, p), record) for e in range(2) for p, record in enumerate(plan_records(plan, e))
        ]
        assert merged == expected
        rank = data.draw(st.integers(0, world_size - 1))
        assert_resumes_exactly(
            lambda state: _restored(plan, shards.directory, state, rank, world_size),
            Reader.state_dict,
            key=lambda item: (item.epoch, item.position, item.record),
        )


def _restored(
    plan: ReadPlan, directory: Path, state: dict[str, Any] | None, rank: int, world_size: int
) -> Reader:
    reader = Reader(plan, data_dir=directory, epochs=2, rank=rank, world_size=world_size)
    if state is not None:
        reader.load_state_dict(state)
    return reader


@settings(max_examples=40)
@given(plans(), st.integers(1, 4), st.integers(1, 4), st.integers(0, 40))
@example(
    plan=ReadPlan(DatasetInfo("layout", {"train": [3, 2]}), "train"),
    world_size=2,
    new_size=3,
    steps=3,
)
def test_lockstep_states_resume_with_any_number_of_ranks(
    plan: ReadPlan, world_size: int, new_size: int, steps: int
) -> None:
    with NamedShards(plan.info) as shards:
        everything = [
            ((i.epoch, i.position), i.record)
            for i in Reader(plan, data_dir=shards.directory, epochs=2)
        ]
        before, states = [], []
        for rank in range(world_size):
            reader = Reader(
                plan, data_dir=shards.directory, epochs=2, rank=rank, world_size=world_size
            )
            for item in _first(reader, steps):
                before.append(((item.epoch, item.position), item.record))
            states.append(reader.state_dict())
        try:
            merged = merge_states(states)
        except CheckpointError:
            # Only possible across an epoch end, where ranks' counts differ by one.
            assert steps * world_size > plan.num_examples - world_size
            return
        after: list[tuple[tuple[int, int], Any]] = []
        for rank in range(new_size):
            reader = Reader(
                plan, data_dir=shards.directory, epochs=2, rank=rank, world_size=new_size
            )
            reader.load_state_dict(merged)
            after.extend(((i.epoch, i.position), i.record) for i in reader)
        assert sorted(before + after) == everything


def _first(reader: Reader, count: int) -> Iterator[Item]:
    if count == 0:
        return
    for delivered, item in enumerate(reader, start=1):
        yield item
        if delivered == count:
            return


@settings(max_examples=40)
@given(plans(), st.integers(1, 3), st.integers(1, 6), st.integers(1, 9), st.integers(1, 5))
def test_chunk_and_batch_sizes_change_nothing_delivered(
    plan: ReadPlan, world_size: int, first_chunk: int, chunk: int, batch: int
) -> None:
    with pytest.MonkeyPatch.context() as patch, NamedShards(plan.info) as shards:
        patch.setattr(reader_module, "_FIRST_CHUNK", first_chunk)
        patch.setattr(reader_module, "_CHUNK", chunk)
        patch.setattr(reader_module, "_BATCH", batch)
        patch.setattr(reader_module, "_ITEM_BATCH", batch)
        expected = [
            ((e, p), record) for e in range(2) for p, record in enumerate(plan_records(plan, e))
        ]
        for rank in range(world_size):
            reader = Reader(
                plan, data_dir=shards.directory, epochs=2, rank=rank, world_size=world_size
            )
            batches = list(reader.batches())
            assert all(len(b) <= batch for b in batches)
            got = [
                ((b.epoch, p), r) for b in batches for p, r in zip(b.positions.tolist(), b.records)
            ]
            assert got == [entry for entry in expected if entry[0][1] % world_size == rank]
        assert_resumes_exactly(
            lambda state: _restored(plan, shards.directory, state, 0, 1),
            Reader.state_dict,
            key=lambda item: (item.epoch, item.position, item.record),
        )


def test_example_shuffle_plans_are_read_in_their_order(tmp_path: Path) -> None:
    info = DatasetInfo("layout", {"train": [9, 0, 14, 5, 11]})
    config = ReadConfig(
        interleave_cycle_length=2,
        interleave_block_length=3,
        shuffle_files=True,
        shuffle_seed=4,
        example_shuffle=ExampleShuffle(buffer_size=7, seed=11),
    )
    plan = ReadPlan(info, "train[3:]", config)
    with NamedShards(info) as shards:
        items = list(Reader(plan, data_dir=shards.directory, epochs=2))
        assert [i.record for i in items] == plan_records(plan, 0) + plan_records(plan, 1)
        assert _open_files_under(shards.directory) == 0
        assert_resumes_exactly(
            lambda state: _restored(plan, shards.directory, state, 0, 1),
            Reader.state_dict,
            key=lambda item: (item.epoch, item.position, item.record),
        )


# -- damage and other failures ----------------------------------------------------------


def _damaged_toy(tmp_path: Path, *, with_index: bool) -> tuple[ReadPlan, Path]:
    """The toy dataset with record 4 of train shard 2 damaged; plan 'train', c=3, b=2."""
    directory = _toy_copy(tmp_path)
    shard = directory / "readplan_toy-train.tfrecord-00002-of-00008"
    _damage_record(shard, 4)
    if with_index:
        build_index(shard, verify=False)  # a header walk: the damaged payload is not read
    info = DatasetInfo.load(directory)
    plan = ReadPlan(info, "train", ReadConfig(interleave_cycle_length=3, interleave_block_length=2))
    return plan, shard


@pytest.mark.parametrize("with_index", [False, True])
def test_damage_names_file_and_position_after_every_earlier_record(
    tmp_path: Path, with_index: bool
) -> None:
    plan, shard = _damaged_toy(tmp_path, with_index=with_index)
    damaged_at = plan.position_of(0, 2, 4)
    reader = Reader(plan)
    delivered: list[Item] = []
    with pytest.raises(CorruptRecordError) as raised:
        _drain(reader, delivered)
    assert [i.position for i in delivered] == list(range(damaged_at))
    err = raised.value
    assert err.path == str(shard)
    assert err.record_index == 4
    assert err.kind == tfrecord.KIND_DATA_CRC
    assert isinstance(err.__cause__, CorruptRecordError)
    assert f"position {damaged_at} of epoch 0" in str(err)
    assert "on_corruption='skip'" in str(err)
    assert reader.state_dict()["position"] == damaged_at
    with pytest.raises(CorruptRecordError):
        next(iter(reader))
    rest = [i.position for i in Reader(plan, start=plan.checkpoint(0, damaged_at + 1))]
    assert rest == list(range(damaged_at + 1, plan.num_examples))


@pytest.mark.parametrize("with_index", [False, True])
def test_undelivered_damaged_payloads_are_never_read(tmp_path: Path, with_index: bool) -> None:
    plan, _ = _damaged_toy(tmp_path, with_index=with_index)
    damaged_at = plan.position_of(0, 2, 4)
    after = list(Reader(plan, start=plan.checkpoint(0, damaged_at + 1)))
    assert len(after) == plan.num_examples - damaged_at - 1
    other_rank = 1 - damaged_at % 2
    items = list(Reader(plan, rank=other_rank, world_size=2))
    assert len(items) == len(range(other_rank, plan.num_examples, 2))
    # Shard 2 holds records 8..19 of the split; its record 4 is record 12.
    for spec in ("train[:9]+train[20:]", "train[:12]"):
        shorter = ReadPlan(plan.info, spec, plan.config)
        assert len(list(Reader(shorter))) == shorter.num_examples


def test_batches_stop_before_the_damaged_record(tmp_path: Path) -> None:
    plan, _ = _damaged_toy(tmp_path, with_index=False)
    damaged_at = plan.position_of(0, 2, 4)
    reader = Reader(plan)
    got: list[Batch] = []
    with pytest.raises(CorruptRecordError):
        _drain(reader.batches(), got)
    assert [p for b in got for p in b.positions.tolist()] == list(range(damaged_at))
    assert reader.state_dict()["position"] == damaged_at


@pytest.mark.parametrize(
    "config",
    [
        ReadConfig(interleave_cycle_length=1),
        # Runs of two records, interleaved: the file's stream ends in a run before its last.
        ReadConfig(interleave_cycle_length=2, interleave_block_length=2),
    ],
    ids=["whole-files", "interleaved-runs"],
)
def test_a_file_shorter_than_its_metadata_is_reported(tmp_path: Path, config: ReadConfig) -> None:
    directory = _toy_copy(tmp_path)
    shard = directory / "readplan_toy-train.tfrecord-00004-of-00008"
    records = list(tfrecord.read(shard))
    tfrecord.write(shard, records[:6])
    plan = ReadPlan(DatasetInfo.load(directory), "train", config)
    delivered: list[Item] = []
    with pytest.raises(DatasetInfoError) as raised:
        _drain(Reader(plan), delivered)
    assert raised.value.path == str(shard)
    assert raised.value.field == "shardLengths"
    assert "holds only 6 records" in str(raised.value)
    assert [i.position for i in delivered] == list(range(plan.position_of(0, 4, 6)))
    late = plan.checkpoint(0, plan.position_of(0, 4, 7))
    with pytest.raises(DatasetInfoError, match="holds only 6 records"):
        next(iter(Reader(plan, start=late)))


def test_a_missing_file_fails_at_its_turn(tmp_path: Path) -> None:
    directory = _toy_copy(tmp_path)
    (directory / "readplan_toy-train.tfrecord-00003-of-00008").unlink()
    plan = ReadPlan(DatasetInfo.load(directory), "train", ReadConfig(interleave_cycle_length=1))
    delivered: list[Item] = []
    with pytest.raises(FileNotFoundError):
        _drain(Reader(plan), delivered)
    assert [i.position for i in delivered] == list(range(plan.position_of(0, 3, 0)))


def test_a_record_that_is_no_example_fails_to_decode_with_its_position(tmp_path: Path) -> None:
    directory = _toy_copy(tmp_path)
    shard = directory / "readplan_toy-train.tfrecord-00001-of-00008"
    tfrecord.write(shard, [b"\x0a\x05ab"])  # a field that claims 5 bytes, holds 2
    plan = ReadPlan(DatasetInfo.load(directory), "train", ReadConfig(interleave_cycle_length=1))
    position = plan.position_of(0, 1, 0)
    with pytest.raises(ExampleError, match=f"position {position} of epoch 0"):
        list(Reader(plan, decode=True))
    assert len(list(Reader(plan))) == plan.num_examples


# -- arguments and values ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"epochs": 0}, "epochs"),
        ({"epochs": True}, "epochs"),
        ({"epochs": 1.5}, "epochs"),
        ({"world_size": 0}, "world_size"),
        ({"rank": 2, "world_size": 2}, "rank"),
        ({"rank": -1}, "rank"),
        ({"decode": "yes"}, "decode"),
        ({"start": 3}, "start"),
    ],
)
def test_invalid_arguments_are_refused(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Reader(ReadPlan(TOY_INFO, "train"), **kwargs)
    assert raised.value.field == field


def test_the_plan_must_be_a_plan() -> None:
    with pytest.raises(ConfigError, match="ReadPlan"):
        Reader("train")  # type: ignore[arg-type]


def test_records_can_be_parsed_against_a_schema() -> None:
    plan = ReadPlan(TOY_INFO, "test")
    parsed = [_feature(i, "id") for i in Reader(plan, decode={"id": FixedLen((), "int64")})]
    decoded = [_feature(i, "id") for i in Reader(plan, decode=True)]
    assert parsed == [values[0] for values in decoded]
    assert all(isinstance(value, np.int64) for value in parsed)


def _feature(item: Item, name: str) -> Any:
    assert isinstance(item.record, dict)
    return item.record[name]


def test_data_dir_replaces_the_planned_directory(tmp_path: Path) -> None:
    directory = _toy_copy(tmp_path)
    bare = DatasetInfo("readplan_toy", {s: i.shard_lengths for s, i in TOY_INFO.splits.items()})
    plan = ReadPlan(bare, "test", ReadConfig(interleave_cycle_length=2))
    moved = [i.record for i in Reader(plan, data_dir=directory)]
    assert moved == [i.record for i in Reader(ReadPlan(TOY_INFO, "test", plan.config))]
    with pytest.raises(FileNotFoundError):
        list(Reader(plan, data_dir=tmp_path / "elsewhere"))


def test_items_and_batches_check_their_fields() -> None:
    with pytest.raises(ConfigError, match=r"Item\.position"):
        Item(b"", "x__0", 0, -1, 0, 0)
    with pytest.raises(ConfigError, match=r"Item\.epoch"):
        Item(b"", "x__0", True, 0, 0, 0)
    plan = ReadPlan(TOY_INFO, "train")
    one = np.zeros(1, dtype=np.int64)
    with pytest.raises(ConfigError, match=r"Batch\.file_index"):
        Batch(plan, 0, [b"a"], one, np.zeros(2, dtype=np.int64), one)
    batch = next(Reader(plan).batches())
    assert repr(batch) == f"Batch(epoch=0, first_position=0, len={len(batch)})"
    assert batch.items()[0] == Item(
        batch.records[0],
        batch.tfds_ids()[0],
        0,
        0,
        int(batch.file_index[0]),
        int(batch.record_index[0]),
    )
    assert "next_position=0" in repr(Reader(plan))
