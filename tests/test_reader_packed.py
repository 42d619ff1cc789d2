"""Reader.batches(packed=True): the same deliveries, the records of each batch packed once."""

from __future__ import annotations

import pytest

from readplan import PackedRecords, ReadConfig, Reader, ReadPlan, demo
from readplan.errors import ConfigError


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> ReadPlan:
    info = demo.write_dataset(tmp_path_factory.mktemp("packed") / "ds", with_index=False)
    return ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=7))


@pytest.mark.parametrize("batch_size", [None, 1, 7, 64])
@pytest.mark.parametrize(("rank", "world_size"), [(0, 1), (1, 3)])
def test_packed_batches_deliver_what_plain_batches_deliver(
    plan: ReadPlan, batch_size: int | None, rank: int, world_size: int
) -> None:
    plain_reader = Reader(plan, rank=rank, world_size=world_size, epochs=2)
    plain = list(plain_reader.batches(batch_size))
    reader = Reader(plan, rank=rank, world_size=world_size, epochs=2)
    packed = list(reader.batches(batch_size, packed=True))
    assert len(packed) == len(plain)
    for mine, theirs in zip(packed, plain):
        assert isinstance(mine.records, PackedRecords)
        assert mine.records.to_list() == list(theirs.records)
        assert mine.positions.tolist() == theirs.positions.tolist()
        assert mine.records.values.nbytes == sum(map(len, theirs.records))
    assert reader.state_dict() == plain_reader.state_dict()


def test_a_state_after_packed_batches_resumes_where_they_stopped(plan: ReadPlan) -> None:
    reader = Reader(plan)
    batches = reader.batches(5, packed=True)
    first = [next(batches) for _ in range(3)]
    rest = list(Reader(plan, start=reader.state_dict()).batches(5, packed=True))
    whole = list(Reader(plan).batches(5))
    assert [r for b in first + rest for r in b.records.to_list()] == [
        r for b in whole for r in b.records
    ]


def test_packed_refuses_a_decoding_reader_and_non_bools(plan: ReadPlan) -> None:
    with pytest.raises(ConfigError, match="packed=True packs raw records"):
        Reader(plan, decode=True).batches(4, packed=True)
    with pytest.raises(ConfigError, match="packed must be True or False"):
        Reader(plan).batches(4, packed=1)  # type: ignore[arg-type]
