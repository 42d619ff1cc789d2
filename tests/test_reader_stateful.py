"""The Reader as a state machine against a plain list model of the run.

Rules: a rank takes its next item, a rank saves its state and a new reader continues from
it, the group merges its states and a group of another size continues.  The model is the
list of ``(epoch, position, record)`` of every epoch, written out from ``plan.epoch(e)``;
each record names its own shard and index, so the expected record is known without the
reader.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from readplan import (
    CheckpointError,
    DatasetInfo,
    ExampleShuffle,
    Item,
    ReadConfig,
    Reader,
    ReadPlan,
    merge_states,
    tfrecord,
)

LENGTHS = [5, 9, 1, 7, 4]
SPECS = ["train", "train[2:-3]", "train[:40%]+train[60%:]"]
_DATA = tempfile.TemporaryDirectory()
_INFO: DatasetInfo | None = None


def _record(shard: int, index: int) -> bytes:
    return f"shard {shard} record {index}".encode()


def _info() -> DatasetInfo:
    """The dataset, written on first use into a folder removed after this module."""
    global _INFO
    if _INFO is None:
        info = DatasetInfo("stateful", {"train": LENGTHS}, data_dir=_DATA.name)
        for shard, path in enumerate(info.shard_paths("train")):
            tfrecord.write(path, [_record(shard, k) for k in range(LENGTHS[shard])])
        _INFO = info
    return _INFO


@pytest.fixture(scope="module", autouse=True)
def _remove_data() -> Iterator[None]:
    yield
    _DATA.cleanup()


Key = tuple[int, int, bytes]


class ReaderMachine(RuleBasedStateMachine):
    """Ranks of one group; ``expected[r][cursor[r]:]`` is what rank ``r`` delivers next."""

    def __init__(self) -> None:
        super().__init__()
        self.plan: ReadPlan
        self.epochs = 1
        self.everything: list[Key] = []
        self.readers: list[Reader] = []
        self.streams: list[Iterator[Item]] = []
        self.expected: list[list[Key]] = []
        self.cursor: list[int] = []
        self.before: set[tuple[int, int]] = set()

    @initialize(
        spec=st.sampled_from(SPECS),
        cycle=st.integers(1, 4),
        block=st.integers(1, 3),
        seed=st.none() | st.integers(0, 2**32),
        buffer=st.none() | st.integers(1, 8),
        epochs=st.integers(1, 3),
        world_size=st.integers(1, 4),
    )
    def start(
        self,
        spec: str,
        cycle: int,
        block: int,
        seed: int | None,
        buffer: int | None,
        epochs: int,
        world_size: int,
    ) -> None:
        config = ReadConfig(
            interleave_cycle_length=cycle,
            interleave_block_length=block,
            shuffle_files=seed is not None,
            shuffle_seed=seed,
            example_shuffle=None if buffer is None else ExampleShuffle(buffer, 7),
        )
        self.plan = ReadPlan(_info(), spec, config)
        self.epochs = epochs
        shards = [fi.shard_index for fi in self.plan.instructions]
        for epoch in range(epochs):
            order = self.plan.epoch(epoch)
            for position, (f, r) in enumerate(
                zip(order.file_index.tolist(), order.record_index.tolist())
            ):
                self.everything.append((epoch, position, _record(shards[f], r)))
        self._new_group(world_size, None)

    def _new_group(self, world_size: int, state: dict[str, Any] | None) -> None:
        self.close()
        self.readers = []
        for rank in range(world_size):
            reader = Reader(self.plan, epochs=self.epochs, rank=rank, world_size=world_size)
            if state is not None:
                reader.load_state_dict(state)
            self.readers.append(reader)
        self.streams = [iter(reader) for reader in self.readers]
        self.expected = [
            [key for key in self._remaining() if key[1] % world_size == rank]
            for rank in range(world_size)
        ]
        self.cursor = [0] * world_size

    def _remaining(self) -> list[Key]:
        return [key for key in self.everything if key[:2] not in self.before]

    @rule(data=st.data())
    def next_item(self, data: st.DataObject) -> None:
        rank = data.draw(st.integers(0, len(self.readers) - 1), label="rank")
        item = next(self.streams[rank], None)
        expected = self.expected[rank]
        if self.cursor[rank] == len(expected):
            assert item is None
            return
        assert item is not None
        assert (item.epoch, item.position, item.record) == expected[self.cursor[rank]]
        self.cursor[rank] += 1

    @rule(data=st.data())
    def save_and_restore(self, data: st.DataObject) -> None:
        rank = data.draw(st.integers(0, len(self.readers) - 1), label="rank")
        old = self.readers[rank]
        state = json.loads(json.dumps(old.state_dict()))
        old.close()
        new = Reader(self.plan, epochs=self.epochs, rank=rank, world_size=len(self.readers))
        new.load_state_dict(state)
        assert new.state_dict() == state
        self.readers[rank] = new
        self.streams[rank] = iter(new)

    @rule(new_size=st.integers(1, 4))
    def merge(self, new_size: int) -> None:
        states = [json.loads(json.dumps(reader.state_dict())) for reader in self.readers]
        delivered = set(self.before)
        for rank, keys in enumerate(self.expected):
            delivered.update(key[:2] for key in keys[: self.cursor[rank]])
        prefix = 0
        while prefix < len(self.everything) and self.everything[prefix][:2] in delivered:
            prefix += 1
        if len(delivered) > prefix:
            # Some rank delivered beyond the first undelivered position: not lockstep.
            with pytest.raises(CheckpointError):
                merge_states(states)
            return
        merged = merge_states(states)
        self.before = {key[:2] for key in self.everything[:prefix]}
        self._new_group(new_size, merged)

    @precondition(lambda self: len(self.readers) == 1)
    @invariant()
    def one_rank_state_counts_deliveries(self) -> None:
        state = self.readers[0].state_dict()
        delivered = len(self.before) + self.cursor[0]
        if delivered < len(self.everything):
            epoch, position, _ = self.everything[delivered]
            size = self.plan.num_examples
            assert (state["epoch"], state["position"]) in {(epoch, position), (epoch - 1, size)}

    def close(self) -> None:
        for reader in self.readers:
            reader.close()

    def teardown(self) -> None:
        self.close()


ReaderMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestReaderMachine = ReaderMachine.TestCase
