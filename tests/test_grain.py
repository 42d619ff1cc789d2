"""readplan.grain: TFDS's order through Grain's DataLoader, Grain checkpoints, JAX processes.

The expected orders are TFDS's own (tests/data/tfds: a TFDS-written dataset and the order
TFDS read it in, with each record's ``id``).
"""

from __future__ import annotations

import dataclasses
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

grain = pytest.importorskip("grain")

from absl import flags  # noqa: E402  (installed with grain)

from readplan import ExampleShuffle, ReadConfig, ReadPlan  # noqa: E402
from readplan.errors import (  # noqa: E402
    CheckpointError,
    CheckpointMismatchError,
    ConfigError,
    RecordKeyError,
)
from readplan.grain import OrderSampler, PlanIterDataset  # noqa: E402
from readplan.reading.data_source import RecordSource, data_source  # noqa: E402
from tests.data_source_checks import record_id  # noqa: E402
from tests.tfds_toy import CASE_IDS, TOY, TOY_DIR, TOY_INFO, toy_plan  # noqa: E402
from tests.workers import run_workers  # noqa: E402

# Grain's worker processes read absl flags, which only an absl app parses.
flags.FLAGS.mark_as_parsed()


def _tfds_ids(case: dict[str, Any]) -> list[int]:
    return [entry[3] for epoch in case["epochs"] for entry in epoch]


def _source(case: dict[str, Any], index_dir: Path) -> RecordSource:
    return data_source(TOY_INFO, case["spec"], decode=True, index_dir=index_dir)


def _loader(plan: ReadPlan, source: RecordSource, epochs: int, workers: int) -> Any:
    return grain.DataLoader(
        data_source=source,
        sampler=OrderSampler(plan, epochs=epochs),
        worker_count=workers,
        shard_options=grain.sharding.NoSharding(),
    )


@pytest.mark.parametrize("case", TOY["cases"], ids=CASE_IDS)
def test_sampler_keys_give_tfds_order(case: dict[str, Any], index_dir: Path) -> None:
    plan, epochs = toy_plan(case), len(case["epochs"])
    source = _source(case, index_dir)
    sampler = OrderSampler(plan, epochs=epochs)
    assert len(sampler) == epochs * plan.num_examples
    metadata = [sampler[i] for i in range(len(sampler))]
    assert [m.index for m in metadata] == list(range(len(sampler)))
    keys = [m.record_key for m in metadata]
    assert [record_id(r) for r in source.__getitems__(keys)] == _tfds_ids(case)
    with pytest.raises(RecordKeyError):
        sampler[len(sampler)]
    with pytest.raises(IndexError):  # what Grain's DataLoader stops on
        sampler[-1]
    assert [record_id(r) for r in _loader(plan, source, epochs, 0)] == _tfds_ids(case)


CHOSEN = [TOY["cases"][k] for k in (3, 28)]
# Worker processes take seconds to start on a small machine: one case, one resume point.
WORKER_RUNS = [(0, CHOSEN[0], (1, 75, 146)), (0, CHOSEN[1], (1, 100, 185)), (2, CHOSEN[1], (93,))]


@pytest.mark.parametrize(
    ("workers", "case", "stops"),
    WORKER_RUNS,
    ids=[
        f"{w}-workers-{c['spec']}-seed-{c['read_config']['shuffle_seed']}"
        for w, c, _ in WORKER_RUNS
    ],
)
def test_dataloader_yields_tfds_order_and_resumes_from_its_state(
    workers: int, case: dict[str, Any], stops: tuple[int, ...], index_dir: Path
) -> None:
    plan, epochs, expected = toy_plan(case), len(case["epochs"]), _tfds_ids(case)
    source = _source(case, index_dir)
    for stop in stops:
        stream = iter(_loader(plan, source, epochs, workers))
        before = [record_id(next(stream)) for _ in range(stop)]
        state = stream.get_state()
        assert before + [record_id(r) for r in stream] == expected
        resumed = iter(_loader(plan, source, epochs, workers))
        resumed.set_state(state)
        assert before + [record_id(r) for r in resumed] == expected


def test_dataloader_refuses_a_state_of_another_plan(index_dir: Path) -> None:
    case = TOY["cases"][3]
    source = _source(case, index_dir)
    stream = iter(_loader(toy_plan(case), source, 1, 0))
    next(stream)
    state = stream.get_state()
    other = ReadPlan(TOY_INFO, "train", ReadConfig(shuffle_files=True, shuffle_seed=33))
    with pytest.raises(ValueError, match="Sampler in checkpoint does not match"):
        iter(_loader(other, source, 1, 0)).set_state(state)


def test_sampler_repr_names_the_plan_and_survives_pickling() -> None:
    import pickle

    plan = toy_plan(TOY["cases"][3])
    sampler = OrderSampler(plan, epochs=2)
    text = repr(sampler)
    assert text.startswith("OrderSampler(dataset='readplan_toy', split='train', plan_digest='")
    assert text.endswith("', epochs=2)")
    assert repr(OrderSampler(toy_plan(TOY["cases"][3]), epochs=2)) == text
    assert repr(OrderSampler(toy_plan(TOY["cases"][4]), epochs=2)) != text
    copy = pickle.loads(pickle.dumps(sampler))
    assert repr(copy) == text
    assert [copy[i].record_key for i in range(98)] == [sampler[i].record_key for i in range(98)]
    endless = OrderSampler(plan)
    assert len(endless) == sys.maxsize
    assert (
        endless[49 * 1000 + 3].record_key
        == OrderSampler(plan, epochs=1001)[49 * 1000 + 3].record_key
    )
    with pytest.raises(ConfigError):
        OrderSampler(plan, epochs=0)
    with pytest.raises(ConfigError):
        OrderSampler("train")  # type: ignore[arg-type]


def test_a_reordered_plan_keys_into_the_same_source(index_dir: Path) -> None:
    spec = "train[10:20]+test+train[10:20]"
    source = data_source(TOY_INFO, spec, index_dir=index_dir)
    for sort_fn in (lambda f: f[::-1], lambda f: f[1:]):
        config = ReadConfig(interleave_cycle_length=1, experimental_interleave_sort_fn=sort_fn)
        plan = ReadPlan(TOY_INFO, spec, config)
        sampler = OrderSampler(plan, epochs=1)
        keys = [sampler[i].record_key for i in range(len(sampler))]
        # The repeated range may key either copy: the records are what count.
        assert source.__getitems__(keys) == _plan_records(plan)
        assert len(set(keys)) == len(keys)
    changed = ReadConfig(
        interleave_cycle_length=1,
        experimental_interleave_sort_fn=lambda f: [dataclasses.replace(f[0], skip=1, take=9)],
    )
    with pytest.raises(ConfigError, match="sort function"):
        OrderSampler(ReadPlan(TOY_INFO, spec, changed))


def _plan_records(plan: ReadPlan) -> list[bytes]:
    """Epoch 0's records, read from the files at the plan's (file, record) pairs."""
    order = plan.epoch(0)
    return [
        _read_file(plan.instructions[f].filename)[r]
        for f, r in zip(order.file_index.tolist(), order.record_index.tolist())
    ]


def _read_file(path: str) -> list[bytes]:
    from readplan import tfrecord

    return list(tfrecord.read(path))


# -- PlanIterDataset -------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        ReadConfig(shuffle_files=True, shuffle_seed=32, interleave_cycle_length=3),
        ReadConfig(
            shuffle_files=True,
            shuffle_seed=7,
            interleave_cycle_length=2,
            interleave_block_length=3,
            example_shuffle=ExampleShuffle(buffer_size=6, seed=11),
        ),
    ],
    ids=["shuffled-files", "example-shuffle"],
)
def test_plan_iter_dataset_passes_grains_checkpoint_test(config: ReadConfig) -> None:
    plan = ReadPlan(TOY_INFO, "test", config)
    grain.experimental.assert_equal_output_after_checkpoint(
        PlanIterDataset(plan, epochs=2, decode=True)
    )
    records = list(PlanIterDataset(plan, epochs=2, decode=True))
    assert len(records) == 2 * plan.num_examples
    expected = [r["id"] for e in range(2) for r in _epoch_records(plan, e)]
    assert [r["id"] for r in records] == expected


def _epoch_records(plan: ReadPlan, epoch: int) -> list[Any]:
    from readplan import example

    order = plan.epoch(epoch)
    return [
        example.decode(_read_file(plan.instructions[f].filename)[r])
        for f, r in zip(order.file_index.tolist(), order.record_index.tolist())
    ]


def test_plan_iter_dataset_yields_tfds_order_and_refuses_bad_states() -> None:
    case = TOY["cases"][4]
    plan = toy_plan(case)
    dataset = PlanIterDataset(plan, epochs=3, decode=True)
    assert [record_id(r) for r in dataset] == _tfds_ids(case)
    dataset.set_epoch(0)  # the next iteration would read the next pass: epochs 3..5
    stream = iter(dataset)
    for _ in range(60):
        next(stream)
    state = stream.get_state()
    assert sorted(state) == ["checkpoint", "epoch", "position"]
    assert (state["epoch"], state["position"]) == (1, 11)
    assert json.loads(json.dumps(state)) == state  # what Orbax and Grain's handler save
    edited = dict(state, position=12)
    with pytest.raises(CheckpointError, match="disagree"):
        iter(dataset).set_state(edited)
    with pytest.raises(CheckpointError, match="keys"):
        iter(dataset).set_state({"epoch": 1})
    with pytest.raises(CheckpointError, match="JSON"):
        iter(dataset).set_state(dict(state, checkpoint="{"))
    other = PlanIterDataset(toy_plan(TOY["cases"][5]), epochs=3)
    with pytest.raises(CheckpointMismatchError):
        iter(other).set_state(state)
    with pytest.raises(ConfigError):
        PlanIterDataset(plan, epochs=0)


# -- passes: for epoch in range(3): for x in loader -------------------------------------


def test_each_iteration_of_a_plan_iter_dataset_reads_the_next_epoch() -> None:
    case = TOY["cases"][4]
    expected = [[entry[3] for entry in epoch] for epoch in case["epochs"]]
    dataset = PlanIterDataset(toy_plan(case), epochs=1, decode=True)
    assert [[record_id(r) for r in dataset] for _ in range(3)] == expected
    dataset.set_epoch(1)
    assert [record_id(r) for r in dataset] == expected[1]
    # A state of pass 1: its iterator finishes epoch 1, the next iteration reads epoch 2.
    dataset.set_epoch(1)
    stream = iter(dataset)
    head = [record_id(next(stream)) for _ in range(10)]
    state = stream.get_state()
    restored = PlanIterDataset(toy_plan(case), epochs=1, decode=True)
    resumed = iter(restored)
    resumed.set_state(state)
    assert head + [record_id(r) for r in resumed] == expected[1]
    assert [record_id(r) for r in restored] == expected[2]
    two = PlanIterDataset(toy_plan(case), epochs=2, decode=True)
    two.set_epoch(1)
    assert [record_id(r) for r in two][: len(expected[2])] == expected[2]


def test_a_sampler_set_to_each_epoch_reads_it_through_a_dataloader(index_dir: Path) -> None:
    case = TOY["cases"][4]
    expected = [[entry[3] for entry in epoch] for epoch in case["epochs"]]
    plan, source = toy_plan(case), _source(case, index_dir)
    sampler = OrderSampler(plan, epochs=1)
    loader = grain.DataLoader(
        data_source=source, sampler=sampler, shard_options=grain.sharding.NoSharding()
    )
    passes = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        passes.append([record_id(r) for r in loader])
    assert passes == expected
    assert repr(sampler).endswith(", epoch=2)")
    stream = iter(loader)
    next(stream)
    state = stream.get_state()
    sampler.set_epoch(1)
    with pytest.raises(ValueError, match="Sampler in checkpoint does not match"):
        iter(loader).set_state(state)


@pytest.mark.parametrize("mode", ["plain", "app"])
def test_grain_workers_run_without_absl_flags_parsed_and_keep_an_apps_flags(
    mode: str, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    argv = [TOY_DIR, tmp_path / "indexes", out, mode, *(["--shards=5"] if mode == "app" else [])]
    (report,) = run_workers("grain_absl_worker.py", [argv], [out], timeout=120)
    case = next(
        c for c in TOY["cases"] if c["spec"] == "train" and c["read_config"] == {"shuffle_seed": 32}
    )
    assert report["ids"] == [entry[3] for entry in case["epochs"][0]]
    if mode == "app":
        assert report["shards"] == 5


# -- JAX: two real processes -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_two_jax_processes_cover_the_split_exactly_once(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    outputs = [tmp_path / f"process{k}.json" for k in range(2)]
    port = _free_port()
    argvs = [(k, 2, port, TOY_DIR, tmp_path / "indexes", outputs[k]) for k in range(2)]
    reports = run_workers("jax_process_worker.py", argvs, outputs, timeout=120)
    assert [r["process"] for r in reports] == [[0, 2], [1, 2]]
    case = TOY["cases"][4]  # train, seed 7, cycle 2, block 3: the workers' plan
    assert case["read_config"] == {
        "shuffle_seed": 7,
        "interleave_cycle_length": 2,
        "interleave_block_length": 3,
    }
    epoch = [entry[3] for entry in case["epochs"][0]]
    # Elastic mode: process p reads positions p, p + 2, ... of TFDS's order.
    for rank, report in enumerate(reports):
        assert report["elastic"] == [[p, epoch[p]] for p in range(rank, len(epoch), 2)]
    # split_for_process: TFDS's sub-splits, together the split once.
    assert [r["split"] for r in reports] == ["train[0:25]", "train[25:49]"]
    assert sorted(reports[0]["by_split"] + reports[1]["by_split"]) == sorted(epoch)
    assert reports[0]["gathered_split"] == [r["by_split"] for r in reports]
    # Grain with ShardByJaxProcess: the elastic positions, up to Grain's dropped remainder
    # (its DataLoader reads len(sampler) // process_count indices per process).
    for rank, report in enumerate(reports):
        assert report["by_grain"] == [epoch[p] for p in range(rank, 48, 2)]
    assert reports[1]["gathered_grain"] == [r["by_grain"] for r in reports]
