"""readplan.torch: DataLoader workers, torch.distributed ranks, StatefulDataLoader resume.

Expected orders come from the reader in elastic mode (tested against TFDS in
tests/test_reader.py) and from the toy dataset's own ``id`` features.
"""

from __future__ import annotations

import importlib
import json
import pickle
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

# The PyTorch integration is an optional extra: without it, this file is skipped.
pytest.importorskip("torch")
pytest.importorskip("torchdata")

import torch
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader  # type: ignore[import-untyped]

from readplan import Item, ReadConfig, Reader, ReadPlan
from readplan.errors import (
    CheckpointError,
    CheckpointMismatchError,
    ConfigError,
    CorruptRecordError,
)
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading.data_source import data_source
from readplan.reading.ranks import STATE_KEY
from readplan.torch import OrderSampler, ReadplanIterableDataset, consumer, merge_loader_states
from tests.tfds_toy import TOY, TOY_DIR, TOY_INFO
from tests.workers import run_workers

PLAN = ReadPlan(
    TOY_INFO,
    "train",
    ReadConfig(
        interleave_cycle_length=2, interleave_block_length=3, shuffle_files=True, shuffle_seed=7
    ),
)
# torchdata 0.11 calls an API that torch 2.13 deprecates, on every loader it builds.
STATEFUL = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
# More workers than this machine's CPUs is the point of some tests: torch warns about it.
MANY_WORKERS = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")


def key(item: Item) -> tuple[int, int, int]:
    assert isinstance(item.record, dict)
    return item.epoch, item.position, int(item.record["id"][0])


def dataset(epochs: int = 1) -> ReadplanIterableDataset:
    return ReadplanIterableDataset(PLAN, decode=True, epochs=epochs, transform=key)


def everything(epochs: int = 1) -> list[tuple[int, int, int]]:
    return [key(item) for item in Reader(PLAN, decode=True, epochs=epochs)]


def flat(batches: list[Any]) -> list[tuple[int, int, int]]:
    """Default-collated batches of (epoch, position, id) back into tuples."""
    out: list[tuple[int, int, int]] = []
    for epochs, positions, ids in batches:
        out.extend(zip(epochs.tolist(), positions.tolist(), ids.tolist()))
    return out


def test_one_process_yields_the_plans_order() -> None:
    assert list(dataset(epochs=2)) == everything(epochs=2)
    plain = ReadplanIterableDataset(PLAN)
    assert list(plain) == [item.record for item in Reader(PLAN)]
    assert consumer() == (0, 1)


def test_two_workers_cover_the_epoch_once_in_a_fixed_order() -> None:
    unbatched = [tuple(x) for x in DataLoader(dataset(), batch_size=None, num_workers=2)]
    # Workers take turns, one record each: the plan's order.
    assert unbatched == everything()
    loader = DataLoader(dataset(epochs=2), batch_size=4, num_workers=2)
    first, second = flat(list(loader)), flat(list(loader))
    # Each pass reads the next two epochs; each worker batches every other item of them.
    passes = everything(epochs=4)
    for got, pass_items in ((first, passes[:98]), (second, passes[98:])):
        shares = [pass_items[w::2] for w in range(2)]
        expected: list[tuple[int, int, int]] = []
        for start in range(0, max(map(len, shares)), 4):
            for share in shares:
                expected.extend(share[start : start + 4])
        assert got == expected


@STATEFUL
@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_loader_resumes_exactly_with_the_same_layout(workers: int) -> None:
    uninterrupted = flat(list(StatefulDataLoader(dataset(2), batch_size=3, num_workers=workers)))
    loader = StatefulDataLoader(dataset(2), batch_size=3, num_workers=workers)
    stream = iter(loader)
    before = flat([next(stream) for _ in range(7)])
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    del stream, loader
    resumed = StatefulDataLoader(dataset(2), batch_size=3, num_workers=workers)
    resumed.load_state_dict(state)
    assert before + flat(list(resumed)) == uninterrupted


@STATEFUL
@MANY_WORKERS
@pytest.mark.parametrize(("steps", "new_workers"), [(4, 3), (6, 1), (0, 2)])
def test_merged_loader_state_resumes_with_other_worker_counts(steps: int, new_workers: int) -> None:
    loader = StatefulDataLoader(dataset(2), batch_size=3, num_workers=2)
    stream = iter(loader)
    before = flat([next(stream) for _ in range(steps)])
    merged = merge_loader_states([loader.state_dict()])
    del stream, loader
    assert (merged[STATE_KEY]["rank"], merged[STATE_KEY]["world_size"]) == (0, 1)
    assert merged["position"] == len(before)
    restored = dataset(2)
    restored.load_state_dict(merged)
    after = flat(list(DataLoader(restored, batch_size=3, num_workers=new_workers)))
    assert sorted(before + after) == everything(epochs=2)


@STATEFUL
def test_merging_refuses_workers_out_of_step() -> None:
    loader = StatefulDataLoader(dataset(), batch_size=3, num_workers=2)
    stream = iter(loader)
    for _ in range(3):  # worker 0 has delivered positions 0..10, worker 1 only 1, 3, 5
        next(stream)
    with pytest.raises(CheckpointError, match=r"below 7 of epoch 0.*consumer 0: 2.*multiple of"):
        merge_loader_states([loader.state_dict()])
    del stream


def test_state_protocol_on_the_dataset() -> None:
    data = dataset()
    assert data.state_dict()["position"] == 0
    stream = iter(data)
    taken = [next(stream) for _ in range(10)]
    state = data.state_dict()
    assert state["position"] == 10
    copy = pickle.loads(pickle.dumps(data))
    again = dataset()
    again.load_state_dict(state)
    assert taken + list(again) == everything()
    # The next iteration reads the next pass: epoch 1.
    assert list(again) == everything(epochs=2)[49:]
    # A copy pickled by hand continues the count on its own: pass 1, where data stands.
    assert list(copy) == everything(epochs=2)[49:]
    with pytest.raises(CheckpointError, match="rank 1 of 2"):
        dataset().load_state_dict(
            PLAN.checkpoint(0, 11).to_dict(extra={STATE_KEY: {"rank": 1, "world_size": 2}})
        )
    with pytest.raises(ConfigError):
        ReadplanIterableDataset(PLAN, epochs=0)


@MANY_WORKERS
def test_more_workers_than_records_leave_some_idle() -> None:
    tiny = ReadPlan(PLAN.info, "train[:3]", PLAN.config)
    finite = ReadplanIterableDataset(tiny, decode=True, transform=key)
    got = [tuple(x) for x in DataLoader(finite, batch_size=None, num_workers=4)]
    assert got == [key(i) for i in Reader(tiny, decode=True)]


def test_damage_in_a_worker_names_the_position(tmp_path: Path) -> None:
    directory = tmp_path / "toy"
    shutil.copytree(TOY_DIR, directory)
    shard = directory / "readplan_toy-train.tfrecord-00002-of-00008"
    data = bytearray(shard.read_bytes())
    data[12] ^= 0x01  # the first record's first data byte: its data CRC fails
    shard.write_bytes(bytes(data))
    plan = ReadPlan(DatasetInfo.load(directory), "train", ReadConfig(interleave_cycle_length=1))
    position = plan.position_of(0, 2, 0)
    loader = DataLoader(ReadplanIterableDataset(plan), batch_size=None, num_workers=2)
    error = _first_error(loader)
    # Every readplan error can be rebuilt from its message, so torch re-raises it with its
    # own class in the main process.
    assert isinstance(error, CorruptRecordError)
    assert f"position {position} of epoch 0" in str(error)


def _first_error(loader: DataLoader[Any]) -> BaseException | None:
    """Iterate ``loader`` until it fails; the iterator (and its workers) end with the call.

    Keeping the traceback would keep the loader's iterator alive until garbage collection,
    whose worker shutdown then stalls whichever test happens to trigger it.
    """
    try:
        for _ in loader:
            pass
    except Exception as err:  # the test inspects whatever torch re-raised
        err.__traceback__ = None
        return err
    return None


def test_two_ranks_split_an_epoch_and_one_rank_resumes_their_checkpoint(tmp_path: Path) -> None:
    rendezvous, steps = tmp_path / "rendezvous", 9
    outputs = [tmp_path / f"rank{rank}.json" for rank in range(2)]
    argvs = [(rank, 2, rendezvous, TOY_DIR, steps, outputs[rank]) for rank in range(2)]
    reports = run_workers("torch_dist_worker.py", argvs, outputs, timeout=90)
    assert [r["consumer"] for r in reports] == [[0, 2], [1, 2]]
    seen = [[tuple(k) for k in r["before"] + r["rest"]] for r in reports]
    assert sorted(seen[0] + seen[1]) == everything()
    for rank, keys in enumerate(seen):
        assert all(position % 2 == rank for _, position, _ in keys)
    merged = merge_loader_states(reports[0]["gathered"])
    assert merged["position"] == 2 * steps
    single = dataset()
    single.load_state_dict(json.loads(json.dumps(merged)))
    before = [tuple(k) for r in reports for k in r["before"]]
    after = list(single)
    assert sorted(before + after) == everything()
    assert after == everything()[2 * steps :]
    # Each pass reads the next two epochs, dealt across the epoch end: rank r's loader (two
    # workers) yields every other item of the pass's plan order, from item r.
    for rank, report in enumerate(reports):
        passes = [[tuple(k) for k in p] for p in report["passes"]]
        whole = everything(epochs=4)
        assert passes == [whole[:98][rank::2], whole[98:][rank::2]]
        assert report["len"] == len(passes[0])


def test_importing_without_torch_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("torch", "torch.distributed", "torch.utils", "torch.utils.data"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "readplan.torch")
    with pytest.raises(ImportError, match=r"pip install 'readplan\[torch\]'"):
        importlib.import_module("readplan.torch")
    monkeypatch.undo()
    assert importlib.import_module("readplan.torch").ReadplanIterableDataset is not None


@MANY_WORKERS
@pytest.mark.parametrize("workers", [0, 2, 3])
def test_len_of_the_loader_is_what_it_yields_in_plan_order(workers: int) -> None:
    data = ReadplanIterableDataset(PLAN, epochs=2)
    loader = DataLoader(data, batch_size=None, num_workers=workers)
    expected = [item.record for item in Reader(PLAN, epochs=2)]
    assert len(data) == len(loader) == len(expected)
    got = list(loader)
    assert len(got) == len(loader)
    # Workers take turns per item, so one rank's loader yields exactly the plan's order
    # while every worker has records left; across the epoch boundary they finish apart.
    assert sorted(got) == sorted(expected)
    first = len(expected) // 2 - workers
    assert got[:first] == expected[:first]


def test_dataset_batches_are_collated_and_counted() -> None:
    data = ReadplanIterableDataset(PLAN, decode=True, batch_size=4, ragged="pad")
    batches = list(data)
    assert len(batches) == len(data)
    ids = [int(i) for b in batches for i in b["id"][:, 0].tolist()]
    assert ids == [int(item.record["id"][0]) for item in Reader(PLAN, decode=True)]  # type: ignore[index]
    raw = list(ReadplanIterableDataset(PLAN, batch_size=5, drop_remainder=True))
    assert [len(b) for b in raw] == [5] * (PLAN.num_examples // 5)
    with pytest.raises(ConfigError, match="rank"):
        ReadplanIterableDataset(PLAN, rank=1)


def test_dataset_skips_damage_on_request(tmp_path: Path) -> None:
    from readplan import CorruptionReport

    directory = tmp_path / "toy"
    shutil.copytree(TOY_DIR, directory)
    shard = sorted(directory.glob("*train.tfrecord-00001-*"))[0]
    data = bytearray(shard.read_bytes())
    data[12] ^= 1  # the first record's payload: its data CRC fails
    shard.write_bytes(bytes(data))
    plan = ReadPlan(DatasetInfo.load(directory), "train", PLAN.config)
    with pytest.raises(CorruptRecordError):
        list(ReadplanIterableDataset(plan))
    report = CorruptionReport()
    got = list(ReadplanIterableDataset(plan, on_corruption="skip", report=report))
    lost = plan.position_of(0, 1, 0)
    expected = [item.record for item in Reader(PLAN) if item.position != lost]
    assert got == expected
    assert [entry.position for entry in report.lost] == [lost]


# -- the data source as a map-style dataset, with readplan's OrderSampler ---------------


def _order_case() -> tuple[ReadPlan, list[int]]:
    case = next(
        c for c in TOY["cases"] if c["spec"] == "train" and c["read_config"] == {"shuffle_seed": 32}
    )
    plan = ReadPlan(TOY_INFO, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))
    return plan, [entry[3] for epoch in case["epochs"] for entry in epoch]


def _ids(records: list[Any]) -> list[int]:
    return [int(r["id"][0]) for r in records]


@STATEFUL
@pytest.mark.parametrize("workers", [0, 2])
def test_order_sampler_gives_tfds_order_and_resumes_in_a_stateful_loader(
    workers: int, tmp_path: Path
) -> None:
    plan, expected = _order_case()
    source = data_source(TOY_INFO, "train", decode=True, index_dir=tmp_path)

    def loader() -> StatefulDataLoader:
        return StatefulDataLoader(
            source,
            sampler=OrderSampler(plan, epochs=3),
            batch_size=8,
            num_workers=workers,
            collate_fn=_ids,
        )

    plain = torch.utils.data.DataLoader(
        source, sampler=OrderSampler(plan, epochs=3), collate_fn=_ids
    )
    assert [i for batch in plain for i in batch] == expected
    next_epochs = _ids([item.record for item in Reader(plan, decode=True, epochs=6)][147:])
    for stop in (1, 9, 18):
        first = loader()
        stream = iter(first)
        seen = [i for _ in range(stop) for i in next(stream)]
        state = first.state_dict()
        resumed = loader()
        resumed.load_state_dict(state)
        assert seen + [i for batch in resumed for i in batch] == expected
        # The next pass reads the next three epochs (the reader's order, checked against
        # TFDS in test_reader.py).
        assert [i for batch in resumed for i in batch] == next_epochs


def test_order_sampler_state_is_checked() -> None:
    plan, _ = _order_case()
    sampler = OrderSampler(plan, epochs=3)
    stream = iter(sampler)
    keys = [next(stream) for _ in range(60)]
    state = sampler.state_dict()
    assert state["index"] == 60
    other = OrderSampler(plan, epochs=3)
    other.load_state_dict(state)
    assert keys + list(other) == list(OrderSampler(plan, epochs=3))
    assert len(sampler) == 3 * 49
    foreign = OrderSampler(
        ReadPlan(TOY_INFO, "train", ReadConfig(shuffle_files=True, shuffle_seed=5))
    )
    with pytest.raises(CheckpointMismatchError):
        foreign.load_state_dict(state)
    for bad in (
        {"index": 3},
        dict(state, index=-1),
        dict(state, index=3 * 49 + 1),
        dict(state, index="3"),
    ):
        with pytest.raises(CheckpointError):
            other.load_state_dict(bad)


@STATEFUL
@MANY_WORKERS
@given(
    batch_size=st.integers(min_value=1, max_value=5),
    workers=st.integers(min_value=0, max_value=3),
    new_workers=st.integers(min_value=0, max_value=3),
    data=st.data(),
)
@example(batch_size=3, workers=2, new_workers=3, data=None).via("the parametrized case above")
@settings(max_examples=8, deadline=None)
def test_any_loader_layout_resumes_under_any_other(
    batch_size: int, workers: int, new_workers: int, data: Any
) -> None:
    """Stopped after any number of batches, a loader of any worker count resumes, merged,
    under any other: the epoch is delivered exactly once; under the same layout, in the
    uninterrupted loader's order."""
    uninterrupted = flat(
        list(StatefulDataLoader(dataset(2), batch_size=batch_size, num_workers=workers))
    )
    batches = -(-len(uninterrupted) // batch_size)
    steps = 4 if data is None else data.draw(st.integers(min_value=0, max_value=batches))
    loader = StatefulDataLoader(dataset(2), batch_size=batch_size, num_workers=workers)
    stream = iter(loader)
    before = flat([next(stream) for _ in range(steps)])
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    del stream, loader
    same = StatefulDataLoader(dataset(2), batch_size=batch_size, num_workers=workers)
    same.load_state_dict(state)
    assert before + flat(list(same)) == uninterrupted
    try:
        merged = merge_loader_states([state])
    except CheckpointError:
        # Workers out of step (one delivered more positions than the others): refused,
        # never resumed with records lost or repeated.
        assert workers > 1
        return
    restored = dataset(2)
    restored.load_state_dict(merged)
    after = flat(list(DataLoader(restored, batch_size=batch_size, num_workers=new_workers)))
    assert sorted(before + after) == everything(epochs=2)
