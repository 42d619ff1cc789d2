"""readplan.torch as training loops use it: ``for epoch in range(3): for batch in loader``.

Each pass over a loader reads the next epoch, with 0 workers, fresh workers and persistent
ones; a pass of several epochs is in plan order whatever an epoch's length; a loader state
saved at any step (across epoch ends too) merges and resumes exactly; ``len(loader)`` is
what the loader yields.  Expected orders come from the reader (tested against TFDS in
tests/test_reader.py), never from the dataset under test.
"""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")
pytest.importorskip("torchdata")

from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader  # type: ignore[import-untyped]

from readplan import Item, ReadConfig, Reader, ReadPlan
from readplan.errors import CheckpointError, ConfigError
from readplan.torch import ReadplanIterableDataset, merge_loader_states
from tests.tfds_toy import TOY_DIR, TOY_INFO

# 49 records per epoch: an odd length, so two workers end each epoch one record apart.
PLAN = ReadPlan(
    TOY_INFO,
    "train",
    ReadConfig(
        interleave_cycle_length=2, interleave_block_length=3, shuffle_files=True, shuffle_seed=7
    ),
)
STATEFUL = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
MANY_WORKERS = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")
Key = tuple[int, int, int]


def key(item: Item) -> Key:
    assert isinstance(item.record, dict)
    return item.epoch, item.position, int(item.record["id"][0])


def dataset(plan: ReadPlan = PLAN, **options: Any) -> ReadplanIterableDataset:
    return ReadplanIterableDataset(plan, decode=True, transform=key, **options)


def epochs_of(first: int, stop: int, plan: ReadPlan = PLAN) -> list[Key]:
    """Epochs ``first .. stop - 1`` in plan order, as a Reader delivers them."""
    items = Reader(plan, decode=True, epochs=stop)
    return [key(item) for item in items if item.epoch >= first]


def keys(batch: Any) -> list[Key]:
    epochs, positions, ids = batch
    return list(zip(epochs.tolist(), positions.tolist(), ids.tolist()))


def loader_kinds() -> list[Any]:
    return [
        pytest.param(DataLoader, {"num_workers": 0}, id="0-workers"),
        pytest.param(DataLoader, {"num_workers": 2}, id="fresh-workers"),
        pytest.param(
            DataLoader, {"num_workers": 2, "persistent_workers": True}, id="persistent-workers"
        ),
        pytest.param(StatefulDataLoader, {"num_workers": 0}, id="stateful-0-workers"),
        pytest.param(StatefulDataLoader, {"num_workers": 2}, id="stateful-fresh-workers"),
        pytest.param(
            StatefulDataLoader,
            {"num_workers": 2, "persistent_workers": True},
            id="stateful-persistent-workers",
        ),
    ]


@STATEFUL
@pytest.mark.parametrize(("kind", "options"), loader_kinds())
def test_each_pass_over_a_loader_reads_the_next_epoch(kind: Any, options: dict[str, Any]) -> None:
    data = dataset()
    loader = kind(data, batch_size=None, **options)
    passes = [[tuple(x) for x in loader] for _ in range(3)]
    assert passes == [epochs_of(e, e + 1) for e in range(3)]
    # set_epoch (DistributedSampler's convention) chooses the next pass; the count follows on.
    data.set_epoch(5)
    assert [tuple(x) for x in loader] == epochs_of(5, 6)
    assert [tuple(x) for x in loader] == epochs_of(6, 7)
    data.set_epoch(1)
    assert [tuple(x) for x in loader] == epochs_of(1, 2)


def test_a_pass_of_several_epochs_counts_in_passes() -> None:
    data = dataset(epochs=2)
    assert [tuple(x) for x in DataLoader(data, batch_size=None)] == epochs_of(0, 2)
    loader = DataLoader(data, batch_size=None, num_workers=2)
    assert [tuple(x) for x in loader] == epochs_of(2, 4)
    data.set_epoch(3)
    assert [tuple(x) for x in loader] == epochs_of(6, 8)
    with pytest.raises(ConfigError, match="pass number"):
        data.set_epoch(-1)


def test_a_pass_of_three_epochs_is_in_plan_order_with_two_workers() -> None:
    loader = DataLoader(dataset(epochs=3), batch_size=None, num_workers=2)
    assert [tuple(x) for x in loader] == epochs_of(0, 3)


def test_fresh_workers_started_by_spawn_count_the_passes_too() -> None:
    loader = DataLoader(
        dataset(PLAN_SMALL), batch_size=None, num_workers=2, multiprocessing_context="spawn"
    )
    passes = [[tuple(x) for x in loader] for _ in range(2)]
    assert passes == [epochs_of(e, e + 1, PLAN_SMALL) for e in range(2)]


PLAN_SMALL = ReadPlan(TOY_INFO, "train[:9]", PLAN.config)


@MANY_WORKERS
@given(
    length=st.integers(min_value=1, max_value=49),
    workers=st.integers(min_value=0, max_value=3),
    epochs=st.integers(min_value=1, max_value=3),
)
@settings(max_examples=6, deadline=None)
def test_any_length_and_worker_count_read_each_epoch_in_plan_order(
    length: int, workers: int, epochs: int
) -> None:
    plan = ReadPlan(TOY_INFO, f"train[:{length}]", PLAN.config)
    loader = DataLoader(dataset(plan, epochs=epochs), batch_size=None, num_workers=workers)
    first = [tuple(x) for x in loader]
    second = [tuple(x) for x in loader]
    assert first + second == epochs_of(0, 2 * epochs, plan)
    assert len(loader) == len(first) == len(second)


# -- len(loader) --------------------------------------------------------------------


LAYOUTS = [
    # (workers, dataset batch_size, drop_remainder, loader batch_size, drop_last, epochs)
    (2, 7, False, None, False, 1),
    (2, 7, True, None, False, 2),
    (3, 5, False, None, False, 3),
    (0, 4, False, None, False, 2),
    (2, None, False, 7, False, 1),
    (3, None, False, 4, True, 2),
    (2, None, False, None, False, 3),
]


@MANY_WORKERS
@pytest.mark.parametrize(("workers", "size", "drop", "loader_size", "drop_last", "epochs"), LAYOUTS)
def test_len_of_the_loader_is_what_it_yields(
    workers: int,
    size: int | None,
    drop: bool,
    loader_size: int | None,
    drop_last: bool,
    epochs: int,
) -> None:
    data = ReadplanIterableDataset(
        PLAN, epochs=epochs, batch_size=size, drop_remainder=drop, transform=lambda b: 0
    )
    loader = DataLoader(data, batch_size=loader_size, drop_last=drop_last, num_workers=workers)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expected = len(loader)
        yielded = sum(1 for _ in loader)
    assert [str(w.message) for w in caught if "Length of IterableDataset" in str(w.message)] == []
    assert expected == yielded


@STATEFUL
def test_the_toy_case_of_the_issue_yields_as_many_batches_as_it_says() -> None:
    # batch_size inside the dataset, 2 workers: each worker batches its own records.
    data = ReadplanIterableDataset(PLAN, batch_size=7, epochs=2)
    loader = StatefulDataLoader(data, batch_size=None, num_workers=2)
    batches = list(loader)
    assert len(loader) == len(batches)
    assert sorted(r for b in batches for r in b) == sorted(r.record for r in Reader(PLAN, epochs=2))  # type: ignore[misc]


# -- StatefulDataLoader: restored in epoch e, finishes e, then reads e + 1 --------------


@STATEFUL
@pytest.mark.parametrize("persistent", [False, True])
def test_a_restored_loader_finishes_its_epoch_then_reads_the_next(persistent: bool) -> None:
    def loader() -> StatefulDataLoader:
        return StatefulDataLoader(
            dataset(), batch_size=None, num_workers=2, persistent_workers=persistent
        )

    first = loader()
    seen = [[tuple(x) for x in first]]
    stream = iter(first)
    seen.append([tuple(next(stream)) for _ in range(17)])
    state = pickle.loads(pickle.dumps(first.state_dict()))
    del stream, first
    resumed = loader()
    resumed.load_state_dict(state)
    rest = [tuple(x) for x in resumed]
    after = [tuple(x) for x in resumed]
    assert seen[0] == epochs_of(0, 1)
    assert seen[1] + rest == epochs_of(1, 2)
    assert after == epochs_of(2, 3)


@STATEFUL
def test_a_state_saved_at_the_end_of_a_pass_resumes_with_the_next() -> None:
    first = StatefulDataLoader(dataset(), batch_size=None, num_workers=2)
    list(first)
    state = first.state_dict()
    resumed = StatefulDataLoader(dataset(), batch_size=None, num_workers=2)
    resumed.load_state_dict(state)
    assert [tuple(x) for x in resumed] == epochs_of(1, 2)


@STATEFUL
def test_kill_9_in_epoch_1_then_resume_finishes_it_and_reads_epoch_2(tmp_path: Path) -> None:
    saved = tmp_path / "state.pickle"
    script = Path(__file__).with_name("torch_kill_worker.py")
    process = subprocess.Popen(
        [sys.executable, str(script), str(TOY_DIR), str(saved), "1", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.strip() == "ready", line + process.stdout.read().decode()
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        process.kill()
        if process.stdout is not None:
            process.stdout.close()
    assert process.returncode == -signal.SIGKILL
    record = pickle.loads(saved.read_bytes())
    seen = [tuple(k) for k in record["seen"]]
    data = dataset()
    resumed = StatefulDataLoader(data, batch_size=None, num_workers=2)
    resumed.load_state_dict(record["state"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rest = [tuple(x) for x in resumed]
        last = [tuple(x) for x in resumed]
    assert seen[:49] == epochs_of(0, 1)
    assert len(seen) == 49 + 21
    assert seen[49:] + rest == epochs_of(1, 2)
    assert last == epochs_of(2, 3)


# -- merging states saved at any step ----------------------------------------------------


@STATEFUL
@MANY_WORKERS
@pytest.mark.parametrize("new_workers", [0, 3])
def test_a_state_saved_after_an_epoch_end_merges_and_resumes_exactly(new_workers: int) -> None:
    loader = StatefulDataLoader(dataset(epochs=3), batch_size=None, num_workers=2)
    stream = iter(loader)
    before = [tuple(next(stream)) for _ in range(60)]  # 11 records into epoch 1
    merged = merge_loader_states([loader.state_dict()])
    del stream, loader
    assert (merged["epoch"], merged["position"]) == (1, 11)
    restored = dataset(epochs=3)
    restored.load_state_dict(merged)
    resumed = StatefulDataLoader(restored, batch_size=None, num_workers=new_workers)
    assert before + [tuple(x) for x in resumed] == epochs_of(0, 3)
    # The pass after the restored one is the next: epochs 3..5.
    assert [tuple(x) for x in resumed] == epochs_of(3, 6)


@pytest.fixture(scope="module")
def states_at_every_step() -> tuple[list[Key], list[Any]]:
    """Every item of a 3-epoch pass over two workers, and the loader state after each."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loader = StatefulDataLoader(dataset(epochs=3), batch_size=None, num_workers=2)
        items, states = [], [loader.state_dict()]
        for x in loader:
            items.append(tuple(x))
            states.append(loader.state_dict())
    return items, states


def test_a_state_of_any_step_merges_at_that_step(
    states_at_every_step: tuple[list[Key], list[Any]],
) -> None:
    items, states = states_at_every_step
    assert items == epochs_of(0, 3)
    for step, state in enumerate(states):
        merged = merge_loader_states([state])
        assert merged["epoch"] * 49 + merged["position"] == step


@STATEFUL
@MANY_WORKERS
@given(step=st.integers(min_value=0, max_value=147), workers=st.integers(0, 3))
@settings(max_examples=4, deadline=None)
def test_a_merged_state_of_any_step_resumes_under_any_worker_count(
    states_at_every_step: tuple[list[Key], list[Any]], step: int, workers: int
) -> None:
    items, states = states_at_every_step
    restored = dataset(epochs=3)
    restored.load_state_dict(merge_loader_states([states[step]]))
    rest = [tuple(x) for x in DataLoader(restored, batch_size=None, num_workers=workers)]
    assert items[:step] + rest == epochs_of(0, 3)


def test_states_of_two_loaders_or_of_part_of_a_loader_are_refused(
    states_at_every_step: tuple[list[Key], list[Any]],
) -> None:
    _, states = states_at_every_step
    worker_states = list(states[10]["_snapshot"]["_worker_snapshots"].values())
    with pytest.raises(CheckpointError, match=r"every consumer 0..1.*missing \[1\]"):
        merge_loader_states([worker_states[0]])
    with pytest.raises(CheckpointError, match="consumer 0 of 2"):
        dataset(epochs=3).load_state_dict(worker_states[0]["dataset_state"])


# -- batches: any length, workers and batch size -------------------------------------------


@MANY_WORKERS
@given(
    length=st.integers(min_value=1, max_value=49),
    workers=st.integers(min_value=0, max_value=3),
    size=st.integers(min_value=1, max_value=8),
    drop=st.booleans(),
    epochs=st.integers(min_value=1, max_value=2),
)
@settings(max_examples=6, deadline=None)
def test_batches_of_any_layout_cover_each_epoch_and_number_len(
    length: int, workers: int, size: int, drop: bool, epochs: int
) -> None:
    plan = ReadPlan(TOY_INFO, f"train[:{length}]", PLAN.config)
    data = ReadplanIterableDataset(
        plan,
        decode=True,
        epochs=epochs,
        batch_size=size,
        drop_remainder=drop,
        transform=lambda batch: [key(item) for item in batch.items()],
    )
    loader = DataLoader(data, batch_size=None, num_workers=workers)
    batches = [[tuple(k) for k in batch] for batch in loader]
    assert len(loader) == len(batches)
    assert all(len({k[0] for k in batch}) == 1 for batch in batches)  # one epoch each
    assert all(len(batch) == size for batch in batches) or not drop
    got = sorted(k for batch in batches for k in batch)
    expected = epochs_of(0, epochs, plan)
    if not drop:
        assert got == sorted(expected)
    if workers <= 1:
        assert [k for batch in batches for k in batch] == [
            k for k in expected if not drop or k in set(got)
        ]


# -- readplan.torch.OrderSampler: the same, in the main process ------------------------------


@STATEFUL
@pytest.mark.parametrize("workers", [0, 2])
def test_each_pass_of_an_order_sampler_reads_the_next_epoch(workers: int, tmp_path: Path) -> None:
    from readplan import data_source
    from readplan.torch import OrderSampler

    source = data_source(TOY_INFO, "train", decode=True, index_dir=tmp_path)

    def ids(records: list[Any]) -> list[int]:
        return [int(r["id"][0]) for r in records]

    expected = [[k[2] for k in epochs_of(e, e + 1)] for e in range(4)]
    sampler = OrderSampler(PLAN)
    loader = StatefulDataLoader(
        source, sampler=sampler, batch_size=7, num_workers=workers, collate_fn=ids
    )
    passes = [[i for batch in loader for i in batch] for _ in range(3)]
    assert passes == expected[:3]
    sampler.set_epoch(1)
    assert [i for batch in loader for i in batch] == expected[1]
    # Restored in epoch 2 (pass 2), the loader finishes it, then reads epoch 3.
    stream = iter(loader)
    head = [i for _ in range(3) for i in next(stream)]
    state = loader.state_dict()
    del stream
    again = StatefulDataLoader(
        source, sampler=OrderSampler(PLAN), batch_size=7, num_workers=workers, collate_fn=ids
    )
    again.load_state_dict(state)
    assert head + [i for batch in again for i in batch] == expected[2]
    assert [i for batch in again for i in batch] == expected[3]


def test_set_epoch_after_a_load_must_name_the_loaded_pass() -> None:
    first = dataset()
    stream = iter(first)
    head = [next(stream) for _ in range(5)]
    state = first.state_dict()
    restored = dataset()
    restored.load_state_dict(state)
    with pytest.raises(ConfigError, match=r"set_epoch\(3\).*pass 0.*set_epoch\(0\)"):
        restored.set_epoch(3)
    restored.set_epoch(0)  # the loop's own call for the restored epoch
    assert head + [tuple(x) for x in restored] == epochs_of(0, 1)
    assert [tuple(x) for x in restored] == epochs_of(1, 2)
