"""Reader.batches(batch_size), collation, len(reader), save and start=."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import (
    Checkpoint,
    CheckpointError,
    ConfigError,
    DatasetInfo,
    ExampleError,
    ReadConfig,
    Reader,
    ReadPlan,
    example,
    tfrecord,
)
from readplan.reading.collate import collate
from readplan.testing import plans


def _write(directory: Path, info: DatasetInfo) -> None:
    for split, layout in info.splits.items():
        for shard, count in enumerate(layout.shard_lengths):
            name = info.shard_filename(split, shard)
            records = [
                example.encode({"id": [shard * 1000 + k], "tokens": list(range(1 + k % 3))})
                for k in range(count)
            ]
            tfrecord.write(directory / name, records)


@pytest.fixture
def plan(tmp_path: Path) -> ReadPlan:
    info = DatasetInfo("batches", {"train": [7, 5, 9]}, data_dir=tmp_path)
    _write(tmp_path, info)
    return ReadPlan(info, "train", ReadConfig(interleave_cycle_length=2, interleave_block_length=3))


def test_batches_of_a_chosen_size_hold_the_items_in_order(plan: ReadPlan) -> None:
    items = [(i.epoch, i.position) for i in Reader(plan, epochs=2)]
    for size in (1, 4, 21, 50):
        batches = list(Reader(plan, epochs=2).batches(size))
        got = [(b.epoch, p) for b in batches for p in b.positions.tolist()]
        assert got == items
        for epoch in (0, 1):
            lengths = [len(b) for b in batches if b.epoch == epoch]
            assert all(n == size for n in lengths[:-1])
            assert 0 < lengths[-1] <= size
        dropped = list(Reader(plan, epochs=2).batches(size, drop_remainder=True))
        assert [len(b) for b in dropped] == [size] * (21 // size) * 2


def test_raw_batches_keep_bytes_and_decoded_batches_are_collated(plan: ReadPlan) -> None:
    raw = next(iter(Reader(plan).batches(4)))
    assert raw.features is None
    assert all(isinstance(r, bytes) for r in raw.records)
    decoded = next(iter(Reader(plan, decode=True).batches(4, ragged="pad")))
    ids = [int(example.decode(r)["id"][0]) for r in raw.records]
    assert decoded.features is not None
    assert decoded["id"].shape == (4, 1)
    assert decoded["id"][:, 0].tolist() == ids
    tokens = [list(range(1 + (i % 1000) % 3)) for i in ids]
    width = max(len(t) for t in tokens)
    assert decoded["tokens"].tolist() == [t + [0] * (width - len(t)) for t in tokens]
    listed = next(iter(Reader(plan, decode=True).batches(4)))
    assert [t.tolist() for t in listed["tokens"]] == tokens


def test_state_after_sized_batches_resumes_exactly(plan: ReadPlan) -> None:
    everything = [(i.epoch, i.position) for i in Reader(plan, epochs=2)]
    reader = Reader(plan, epochs=2)
    batches = reader.batches(5)
    first = [next(batches) for _ in range(5)]
    done = sum(len(b) for b in first)
    rest = [(i.epoch, i.position) for i in Reader(plan, epochs=2, start=reader.state_dict())]
    assert rest == everything[done:]


def test_collate_stacks_agreeing_leaves_and_keeps_strings_as_objects() -> None:
    batch = collate(
        [
            {"a": np.int64(1), "s": b"x", "n": {"v": np.zeros(2, np.float32)}, "l": [b"p"]},
            {"a": np.int64(2), "s": b"yy", "n": {"v": np.ones(2, np.float32)}, "l": [b"q"]},
        ]
    )
    assert (batch["a"].dtype, batch["a"].tolist()) == (np.int64, [1, 2])
    assert (batch["s"].dtype, batch["s"].tolist()) == (object, [b"x", b"yy"])
    assert (batch["n"]["v"].shape, batch["n"]["v"].dtype) == ((2, 2), np.float32)
    assert (batch["l"].dtype, batch["l"].tolist()) == (object, [[b"p"], [b"q"]])


def test_collate_pads_ragged_leaves_like_padded_batch_on_request() -> None:
    examples = [
        {"v": np.array([[1, 2]]), "s": [b"a"], "b": np.array([True])},
        {"v": np.array([[3], [4]]), "s": [b"b", b"c"], "b": np.array([True, True])},
    ]
    listed = collate(examples)
    assert isinstance(listed["v"], list)
    assert [a.tolist() for a in listed["v"]] == [[[1, 2]], [[3], [4]]]
    padded = collate(examples, ragged="pad", padding_values={"v": -1})
    assert padded["v"].tolist() == [[[1, 2], [-1, -1]], [[3, -1], [4, -1]]]
    assert padded["s"].tolist() == [[b"a", b""], [b"b", b"c"]]
    assert padded["b"].tolist() == [[True, False], [True, True]]


def test_collate_refuses_examples_of_different_structures() -> None:
    with pytest.raises(ExampleError, match="missing"):
        collate([{"a": 1, "b": 2}, {"a": 1}])
    with pytest.raises(ExampleError, match="dict"):
        collate([{"a": {"x": 1}}, {"a": 1}])
    with pytest.raises(ExampleError, match="ranks"):
        collate([{"a": np.zeros(2)}, {"a": np.zeros((2, 2))}], ragged="pad")
    with pytest.raises(ConfigError, match="ragged"):
        Reader.batches(Reader(ReadPlan(DatasetInfo("x", {"train": [1]}), "train")), 2, ragged="x")  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(plans(), st.integers(1, 3), st.integers(1, 3), st.data())
def test_len_is_the_number_of_items_an_iteration_delivers(
    plan: ReadPlan, epochs: int, world: int, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        _write(Path(scratch), plan.info)
        rank = data.draw(st.integers(0, world - 1), label="rank")
        reader = Reader(plan, data_dir=scratch, epochs=epochs, rank=rank, world_size=world)
        total = len(reader)
        stream = iter(reader)
        taken = data.draw(st.integers(0, total), label="taken")
        for _ in range(taken):
            next(stream)
        assert len(reader) == total - taken
        assert sum(1 for _ in stream) == total - taken
        assert len(reader) == 0


def test_len_of_an_endless_reader_is_a_type_error(plan: ReadPlan) -> None:
    with pytest.raises(TypeError, match="epochs=None"):
        len(Reader(plan, epochs=None))


def test_save_and_start_from_a_path_a_state_or_a_checkpoint(plan: ReadPlan, tmp_path: Path) -> None:
    everything = [i.position for i in Reader(plan)]
    reader = Reader(plan, rank=1, world_size=2)
    stream = iter(reader)
    next(stream), next(stream)
    saved = tmp_path / "state.json"
    reader.save(saved)
    assert json.loads(saved.read_text()) == reader.state_dict()
    rest = [i.position for i in stream]
    assert [i.position for i in Reader(plan, rank=1, world_size=2, start=saved)] == rest
    assert [i.position for i in Reader(plan, rank=1, world_size=2, start=str(saved))] == rest
    one = Reader(plan)
    for _ in zip(range(6), one):
        pass
    state: dict[str, Any] = one.state_dict()
    assert [i.position for i in Reader(plan, start=state)] == everything[6:]
    checkpoint = Checkpoint.from_dict(state)
    assert [i.position for i in Reader(plan, start=checkpoint)] == everything[6:]
    with pytest.raises(ConfigError, match="start"):
        Reader(plan, start=42)  # type: ignore[arg-type]
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(CheckpointError, match=str(bad)):
        Reader(plan, start=bad)


LEAF_DTYPES = ("int8", "uint16", "int64", "bool", "float16", "float32", "float64")


@st.composite
def leaf_values(draw: st.DrawFn, n: int) -> list[Any]:
    """One leaf over ``n`` decoded examples: numpy scalars, arrays, bytes or bytes lists, all of
    one kind and shape, or now and then of other ones (a ragged leaf)."""
    kind = draw(st.sampled_from(("scalar", "array", "bytes", "list")))
    dtype = np.dtype(draw(st.sampled_from(LEAF_DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    length = draw(st.integers(0, 3))

    def one() -> Any:
        if kind == "bytes":
            return draw(st.binary(max_size=4))
        if kind == "list":
            return draw(st.lists(st.binary(max_size=3), min_size=length, max_size=length))
        size = 1 if kind == "scalar" else math.prod(shape)
        raw = draw(st.binary(min_size=size * dtype.itemsize, max_size=size * dtype.itemsize))
        values = np.frombuffer(raw, dtype=np.uint8).copy().view(dtype)  # every bit pattern
        return values[0] if kind == "scalar" else values.reshape(shape)

    values = [one() for _ in range(n)]
    if n and draw(st.integers(0, 4)) == 0:
        values[draw(st.integers(0, n - 1))] = draw(
            st.sampled_from([np.zeros(2, np.int64), [b"x"] * 4, b"y", np.float32(1), [1, 2]])
        )
    return values


def _reference_leaf(values: list[Any]) -> Any:
    """Each value as an array on its own (bytes and lists of bytes as object arrays), stacked
    when the shapes agree, else listed."""
    arrays = []
    for value in values:
        if isinstance(value, bytes):
            array = np.empty((), dtype=object)
            array[()] = value
        elif isinstance(value, list) and (not value or isinstance(value[0], bytes)):
            array = np.empty(len(value), dtype=object)
            array[:] = value
        else:
            array = np.asarray(value)
        arrays.append(array)
    if len({array.shape for array in arrays}) == 1:
        return np.stack(arrays)
    return arrays


def _assert_same_leaf(got: Any, want: Any) -> None:
    if isinstance(want, list):
        assert isinstance(got, list)
        assert len(got) == len(want)
        for mine, theirs in zip(got, want):
            _assert_same_leaf(mine, theirs)
        return
    assert isinstance(got, np.ndarray)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    if want.dtype == object:
        # Item by item, by type and repr: a NaN among the objects equals itself there.
        assert [(type(v), repr(v)) for v in got.ravel()] == [
            (type(v), repr(v)) for v in want.ravel()
        ]
    else:
        assert got.tobytes() == want.tobytes()


@given(st.integers(1, 5).flatmap(lambda n: st.lists(leaf_values(n), min_size=1, max_size=4)))
def test_collate_stacks_each_leaf_as_its_values_stacked_one_by_one(leaves: list[Any]) -> None:
    n = len(leaves[0])
    examples = [{f"k{j}": {"v": leaf[i]} for j, leaf in enumerate(leaves)} for i in range(n)]
    batch = collate(examples)
    assert list(batch) == [f"k{j}" for j in range(len(leaves))]
    for j, leaf in enumerate(leaves):
        _assert_same_leaf(batch[f"k{j}"]["v"], _reference_leaf(leaf))
