"""Checkpoints: exact state at every position, exact resume, a safe format."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan import (
    Checkpoint,
    ExampleShuffle,
    InputContext,
    ReadConfig,
    ReadPlan,
)
from readplan.errors import CheckpointError, CheckpointMismatchError, ConfigError
from readplan.metadata.dataset_info import DatasetInfo, shard_lengths
from readplan.state.codec import seal
from readplan.state.fingerprint import digest
from readplan.testing import assert_resumes_exactly, plans, read_configs
from tests.conftest import DATA
from tests.reference_models import ReferenceInterleave, reference_interleave

TOY_DIR = DATA / "tfds" / "readplan_toy" / "1.0.0"

plain_configs = read_configs().map(
    lambda c: ReadConfig(
        interleave_cycle_length=c.interleave_cycle_length,
        interleave_block_length=c.interleave_block_length,
        shuffle_files=c.shuffle_files,
        shuffle_seed=c.shuffle_seed,
        shuffle_reshuffle_each_iteration=c.shuffle_reshuffle_each_iteration,
        input_context=c.input_context,
    )
)


def _pairs(order: Any) -> list[tuple[int, int]]:
    return list(zip(order.file_index.tolist(), order.record_index.tolist()))


@given(plans(configs=plain_configs), st.integers(0, 4))
def test_state_equals_stepped_reference_model_at_every_position(plan: ReadPlan, epoch: int) -> None:
    files = plan.file_order(epoch).tolist()
    lengths = [plan.instructions[f].num_records for f in files]
    skips = [plan.instructions[f].skip for f in files]
    model = ReferenceInterleave(lengths, plan.cycle_length, plan.block_length)
    for position in range(plan.num_examples + 1):
        checkpoint = plan.checkpoint(epoch, position).expanded()
        expected = model.snapshot()
        assert checkpoint.position == position
        assert checkpoint.cursor == expected["cursor"]
        assert checkpoint.block_counter == expected["block_counter"]
        assert checkpoint.next_input == expected["next_input"]
        assert checkpoint.inputs_done == expected["inputs_done"]
        assert list(checkpoint.slots) == [
            None if i is None else (files[i], skips[i] + offset) for i, offset in expected["slots"]
        ]
        assert list(checkpoint.files) == [
            (files[k], c, lengths[k] - c) for k, c in enumerate(expected["consumed"])
        ]
        model.next()


@given(plans(), st.integers(0, 3))
@settings(max_examples=60)
def test_resume_after_every_position_equals_the_uninterrupted_suffix(
    plan: ReadPlan, epoch: int
) -> None:
    full = _pairs(plan.epoch(epoch))
    for position in range(len(full) + 1):
        checkpoint = Checkpoint.from_json(plan.checkpoint(epoch, position).to_json())
        rest = plan.resume(checkpoint)
        assert rest.start == position
        assert _pairs(rest) == full[position:]


@given(plans(), st.integers(0, 3), st.data())
@settings(max_examples=40)
def test_iter_from_continues_across_epochs(plan: ReadPlan, epoch: int, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, plan.num_examples))
    expected = [
        (e, pair)
        for e in range(epoch, epoch + 3)
        for pair in _pairs(plan.epoch(e))[(position if e == epoch else 0) :]
    ]
    chunk = data.draw(st.integers(1, 7))
    got = [
        (c.epoch, pair)
        for c in plan.iter_from(
            plan.checkpoint(epoch, position), chunk_size=chunk, stop_epoch=epoch + 3
        )
        for pair in _pairs(c)
    ]
    assert got == expected


def test_resume_helper_accepts_plan_iteration_with_checkpoints() -> None:
    """readplan.testing's resume assertion, applied to a plan walked record by record."""
    info = DatasetInfo(name="d", splits={"train": [5, 0, 7, 3, 6]})
    plan = ReadPlan(
        info,
        "train[2:]",
        ReadConfig(
            interleave_cycle_length=3, interleave_block_length=2, shuffle_files=True, shuffle_seed=5
        ),
    )

    class Walker:
        def __init__(self, state: Checkpoint | None) -> None:
            self.checkpoint = state or plan.checkpoint(1, 0)
            self.position = self.checkpoint.position

        def __iter__(self):  # type: ignore[no-untyped-def]
            for pair in _pairs(plan.resume(self.checkpoint)):
                self.position += 1
                yield pair

        def state(self) -> Checkpoint:
            return plan.checkpoint(1, self.position)

    assert_resumes_exactly(Walker, Walker.state)


@pytest.fixture(scope="module")
def imagenet_plan() -> ReadPlan:
    info = DatasetInfo(name="imagenet2012", splits={"train": shard_lengths(1281167, 1024)})
    return ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))


def test_imagenet_resume_at_random_positions(imagenet_plan: ReadPlan) -> None:
    full = imagenet_plan.epoch(2)
    rng = np.random.default_rng(11)
    for position in [0, 1, 255, 256, 1281166, 1281167, *rng.integers(0, 1281167, 8).tolist()]:
        checkpoint = imagenet_plan.checkpoint(2, position)
        rest = imagenet_plan.resume(Checkpoint.from_json(checkpoint.to_json()))
        assert np.array_equal(rest.file_index, full.file_index[position:])
        assert np.array_equal(rest.record_index, full.record_index[position:])


def test_imagenet_checkpoint_is_small(imagenet_plan: ReadPlan) -> None:
    checkpoint = imagenet_plan.checkpoint(0, 640_000)
    assert len(checkpoint.to_json()) < 4096
    document = json.loads(checkpoint.expanded().to_json())
    assert len(document["state"]["interleave"]["slots"]) == 16
    assert len(document["state"]["files"]) == 1024
    assert Checkpoint.from_dict(document) == checkpoint


# -- example-level shuffle buffer ---------------------------------------------------------


@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=6).filter(sum),
    st.integers(1, 12),
    st.integers(0, 2**32),
    st.integers(1, 4),
    st.integers(0, 3),
)
@example([5, 7, 3], 4, 9, 2, 1)
def test_example_shuffle_resume_at_every_position(
    lengths: list[int], buffer: int, seed: int, cycle: int, epoch: int
) -> None:
    info = DatasetInfo(name="d", splits={"train": lengths})
    plan = ReadPlan(
        info,
        "train",
        ReadConfig(interleave_cycle_length=cycle, example_shuffle=ExampleShuffle(buffer, seed)),
    )
    full = _pairs(plan.epoch(epoch))
    for position in range(len(full) + 1):
        checkpoint = Checkpoint.from_json(plan.checkpoint(epoch, position).to_json())
        assert checkpoint.example_buffer is not None
        assert checkpoint.example_buffer.draws == position
        assert _pairs(plan.resume(checkpoint)) == full[position:]
        unread = plan.remaining_instructions(checkpoint)
        covered = sorted((fi.shard_index, fi.skip + k) for fi in unread for k in range(fi.take))
        assert covered == sorted((plan.instructions[f].shard_index, r) for f, r in full[position:])


# -- bridges back to TFDS -------------------------------------------------------------------


def _tfdata_read(instructions: list[Any], cycle: int, block: int) -> list[tuple[str, int]]:
    """What tf.data's interleave yields for a list of instructions (reference model)."""
    order = reference_interleave([fi.take for fi in instructions], cycle, block)
    return [(instructions[i].filename, instructions[i].skip + j) for i, j in order]


@given(plans(configs=plain_configs), st.integers(0, 3), st.data())
@example(
    ReadPlan(
        DatasetInfo(name="d", splits={"train": [1, 4, 1, 5, 1]}),
        "train",
        ReadConfig(interleave_cycle_length=2, interleave_block_length=2),
    ),
    0,
    None,
)
def test_resume_instructions_reproduce_the_rest_through_tfdata(
    plan: ReadPlan, epoch: int, data: st.DataObject | None
) -> None:
    full = [(plan.instructions[f].filename, r) for f, r in _pairs(plan.epoch(epoch))]
    positions = (
        range(len(full) + 1)
        if data is None
        else [data.draw(st.integers(0, len(full))) for _ in range(5)]
    )
    for position in positions:
        checkpoint = plan.checkpoint(epoch, position).expanded()
        bridge = checkpoint.resume_instructions()
        assert _tfdata_read(bridge, plan.cycle_length, plan.block_length) == full[position:]
        if plan.cycle_length == 1:
            plain = checkpoint.remaining_instructions()
            assert _tfdata_read(plain, 1, plan.block_length) == full[position:]


def test_remaining_instructions_cover_exactly_the_unread_records() -> None:
    info = DatasetInfo(name="d", splits={"train": [5, 7, 3, 4]})
    plan = ReadPlan(
        info, "train[3:]", ReadConfig(interleave_cycle_length=3, interleave_block_length=2)
    )
    full = _pairs(plan.epoch(0))
    for position in range(len(full) + 1):
        unread = plan.checkpoint(0, position).expanded().remaining_instructions()
        covered = sorted((fi.shard_index, fi.skip + k) for fi in unread for k in range(fi.take))
        assert covered == sorted((plan.instructions[f].shard_index, r) for f, r in full[position:])


def test_epoch_instructions_reproduce_an_epoch_without_a_file_shuffle() -> None:
    info = DatasetInfo(name="d", splits={"train": [5, 7, 3, 4, 2]})
    config = ReadConfig(
        interleave_cycle_length=2, interleave_block_length=3, shuffle_files=True, shuffle_seed=3
    )
    plan = ReadPlan(info, "train", config)
    for epoch in range(4):
        listed = plan.epoch_instructions(epoch)
        expected = [(plan.instructions[f].filename, r) for f, r in _pairs(plan.epoch(epoch))]
        assert _tfdata_read(listed, 2, 3) == expected


# -- format and safety -------------------------------------------------------------------


@pytest.fixture
def small_plan() -> ReadPlan:
    info = DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]})
    return ReadPlan(
        info,
        "train[1:]+test",
        ReadConfig(
            interleave_cycle_length=2,
            interleave_block_length=2,
            shuffle_files=True,
            shuffle_seed=32,
        ),
    )


def test_save_and_load_round_trip(tmp_path: Path, small_plan: ReadPlan) -> None:
    checkpoint = small_plan.checkpoint(3, 6)
    path = tmp_path / "state.json"
    checkpoint.save(path)
    assert Checkpoint.load(path) == checkpoint
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary left
    checkpoint.save(path)  # overwriting keeps a complete file
    assert Checkpoint.load(path) == checkpoint


def test_save_failure_leaves_the_previous_checkpoint(
    tmp_path: Path, small_plan: ReadPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    small_plan.checkpoint(0, 2).save(path)

    def crash(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        small_plan.checkpoint(0, 9).save(path)
    assert Checkpoint.load(path).position == 2
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def _document(plan: ReadPlan) -> dict[str, Any]:
    return json.loads(plan.checkpoint(1, 7).expanded().to_json())


def _resealed(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its integrity digests recomputed: an edit made on purpose."""
    return seal({key: value for key, value in document.items() if key != "integrity"})


STATE = "state"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("epoch"), "epoch"),
        (lambda d: d.update(version=3), "version"),
        (lambda d: d.update(format="other"), "format"),
        (lambda d: d.update(position=-1), "position"),
        (lambda d: d.update(position="7"), "position"),
        (lambda d: d[STATE]["interleave"].pop("cursor"), "state.interleave.cursor"),
        (lambda d: d[STATE]["interleave"].update(inputs_done=1), "state.interleave.inputs_done"),
        (lambda d: d[STATE]["interleave"]["slots"].append([1]), "state.interleave.slots[2]"),
        (lambda d: d[STATE]["files"].append([0, 1]), "state.files[4]"),
        (lambda d: d["plan"].update(shuffle_seed=33), "plan_digest"),
        (lambda d: d.update(position=10**6), "position"),
        (lambda d: d.update(position=1 << 63), "position"),
        (lambda d: d.update(state=[]), "state"),
        (lambda d: d.update(form="other"), "form"),
    ],
)
def test_malformed_checkpoints_name_the_field(
    small_plan: ReadPlan, mutate: Any, field: str
) -> None:
    document = _document(small_plan)
    mutate(document)
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_json(json.dumps(_resealed(document)))
    assert raised.value.field == field


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "null", '"x"'])
def test_not_json_objects_are_refused(text: str) -> None:
    with pytest.raises(CheckpointError):
        Checkpoint.from_json(text)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (
            lambda d: d[STATE]["interleave"].update(cursor=1 - d[STATE]["interleave"]["cursor"]),
            "state.interleave.cursor",
        ),
        (
            lambda d: d[STATE]["interleave"].update(
                block_counter=(d[STATE]["interleave"]["block_counter"] + 1) % 2
            ),
            "state.interleave.block_counter",
        ),
        (
            lambda d: d[STATE]["files"][0].__setitem__(2, d[STATE]["files"][0][2] + 1),
            "state.files",
        ),
    ],
)
def test_tampered_state_is_refused_on_resume(small_plan: ReadPlan, mutate: Any, field: str) -> None:
    document = _document(small_plan)
    mutate(document)
    checkpoint = Checkpoint.from_json(json.dumps(_resealed(document)))
    with pytest.raises(CheckpointError) as raised:
        small_plan.resume(checkpoint)
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("other", "fields"),
    [
        (
            lambda info: ReadPlan(info, "train[2:]+test", _cfg()),
            {"split", "files.digest", "files.records"},
        ),
        (lambda info: ReadPlan(info, "train[1:]+test", _cfg(shuffle_seed=7)), {"shuffle_seed"}),
        (
            lambda info: ReadPlan(info, "train[1:]+test", _cfg(interleave_cycle_length=3)),
            {"cycle_length"},
        ),
        (
            lambda info: ReadPlan(
                DatasetInfo(name="toy", splits={"train": [5, 8, 3], "test": [4]}),
                "train[1:]+test",
                _cfg(),
            ),
            {"shard_lengths.train.digest", "shard_lengths.train.examples", "files.digest"},
        ),
    ],
)
def test_checkpoint_from_another_plan_lists_every_difference(
    small_plan: ReadPlan, other: Any, fields: set[str]
) -> None:
    checkpoint = small_plan.checkpoint(0, 4)
    with pytest.raises(CheckpointMismatchError) as raised:
        other(small_plan.info).resume(checkpoint)
    assert fields <= set(raised.value.differences)
    for name in fields:
        assert name in str(raised.value)


def _cfg(**overrides: Any) -> ReadConfig:
    base: dict[str, Any] = {
        "interleave_cycle_length": 2,
        "interleave_block_length": 2,
        "shuffle_files": True,
        "shuffle_seed": 32,
    }
    base.update(overrides)
    return ReadConfig(**base)


def test_digest_is_order_independent() -> None:
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})


def test_input_context_plans_checkpoint_their_own_files() -> None:
    info = DatasetInfo(name="d", splits={"train": [3, 4, 5, 6]})
    plans_ = [
        ReadPlan(
            info, "train", ReadConfig(interleave_cycle_length=2, input_context=InputContext(i, 2))
        )
        for i in range(2)
    ]
    for plan in plans_:
        checkpoint = plan.checkpoint(0, 2).expanded()
        assert {entry[0] for entry in checkpoint.files} == set(plan.selected.tolist())
    with pytest.raises(CheckpointMismatchError, match="input_context"):
        plans_[1].resume(plans_[0].checkpoint(0, 2))


SCHEMA = json.loads((Path(__file__).parents[1] / "specs" / "checkpoint.schema.json").read_text())


@given(plans(), st.integers(0, 3), st.data())
@settings(max_examples=50)
def test_checkpoints_follow_the_published_schema(
    plan: ReadPlan, epoch: int, data: st.DataObject
) -> None:
    position = data.draw(st.integers(0, plan.num_examples))
    checkpoint = plan.checkpoint(epoch, position)
    jsonschema.validate(json.loads(checkpoint.to_json()), SCHEMA)
    jsonschema.validate(json.loads(checkpoint.expanded().to_json()), SCHEMA)


def test_schema_rejects_what_the_loader_rejects(small_plan: ReadPlan) -> None:
    document = _document(small_plan)
    document["version"] = 3
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)


# TFDS 4.9.10 / TF 2.21 reading plan.resume_instructions(checkpoint) of the fixture through
# ReadConfig(experimental_interleave_sort_fn=...) with shuffle_files=False: the order it
# yields is the rest of the checkpoint's epoch.
BRIDGE_TF = json.loads((DATA / "vectors" / "resume_bridge_tf.json").read_text())


@pytest.mark.parametrize(
    "case",
    BRIDGE_TF,
    ids=[
        f"{c['spec']}-c{c['cycle_length']}b{c['block_length']}-p{c['position']}" for c in BRIDGE_TF
    ],
)
def test_tfds_reading_the_bridge_continues_the_epoch(case: dict[str, Any]) -> None:
    config = ReadConfig(
        interleave_cycle_length=case["cycle_length"],
        interleave_block_length=case["block_length"],
        shuffle_files=case["shuffle_files"],
        shuffle_seed=case["shuffle_seed"],
    )
    plan = ReadPlan(DatasetInfo.load(TOY_DIR), case["spec"], config)
    checkpoint = plan.checkpoint(case["epoch"], case["position"])
    assert plan.resume(checkpoint).tfds_ids() == case["tf_order"]
    bridge = plan.resume_instructions(checkpoint)
    ids = [
        f"{os.path.basename(filename)}__{record}"
        for filename, record in _tfdata_read(bridge, plan.cycle_length, plan.block_length)
    ]
    assert ids == case["tf_order"]


BASE_CONFIG: dict[str, Any] = {
    "interleave_cycle_length": 2,
    "interleave_block_length": 2,
    "shuffle_files": True,
    "shuffle_seed": 32,
    "example_shuffle": ExampleShuffle(4, 1),
}


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"interleave_block_length": 3}, {"block_length"}),
        ({"interleave_cycle_length": 3}, {"cycle_length"}),
        ({"shuffle_files": False, "shuffle_seed": None}, {"shuffle_files", "shuffle_seed"}),
        ({"shuffle_seed": 33}, {"shuffle_seed"}),
        ({"shuffle_reshuffle_each_iteration": False}, {"reshuffle_each_iteration"}),
        ({"global_seed": 5}, {"global_seed"}),
        ({"input_context": InputContext(0, 1)}, {"input_context"}),
        ({"example_shuffle": ExampleShuffle(4, 2)}, {"example_shuffle.seed"}),
        ({"example_shuffle": ExampleShuffle(5, 1)}, {"example_shuffle.buffer_size"}),
        ({"example_shuffle": ExampleShuffle(4, 1, reshuffle_each_iteration=False)},
         {"example_shuffle.reshuffle_each_iteration"}),
        ({"example_shuffle": None}, {"example_shuffle"}),
    ],
)  # fmt: skip
def test_every_fingerprint_field_is_checked(change: dict[str, Any], fields: set[str]) -> None:
    info = DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]})
    saved = ReadPlan(info, "train", ReadConfig(**BASE_CONFIG)).checkpoint(0, 3)
    other = ReadPlan(info, "train", ReadConfig(**{**BASE_CONFIG, **change}))
    with pytest.raises(CheckpointMismatchError) as raised:
        other.resume(saved)
    assert set(raised.value.differences) == fields


@pytest.mark.parametrize(
    ("info", "spec", "fields"),
    [
        (DatasetInfo(name="other", splits={"train": [5, 7, 3], "test": [4]}), "train",
         {"dataset"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 4], "test": [4]}), "train",
         {"shard_lengths.train.examples", "shard_lengths.train.digest", "files.digest",
          "files.records"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]}), "train[1:]",
         {"split", "files.digest", "files.records"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]}, version="2.0.0"),
         "train", {"version"}),
        (DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]}, config_name="x"),
         "train", {"config"}),
    ],
)  # fmt: skip
def test_dataset_and_split_changes_are_listed(
    info: DatasetInfo, spec: str, fields: set[str]
) -> None:
    base = DatasetInfo(name="toy", splits={"train": [5, 7, 3], "test": [4]})
    saved = ReadPlan(base, "train", ReadConfig(**BASE_CONFIG)).checkpoint(0, 3)
    with pytest.raises(CheckpointMismatchError) as raised:
        ReadPlan(info, spec, ReadConfig(**BASE_CONFIG)).resume(saved)
    assert set(raised.value.differences) == fields


# -- regressions: edited checkpoints fail with the field named ------------------------------


def _with_plan_edit(plan: ReadPlan, edit: Any) -> str:
    document = json.loads(plan.checkpoint(0, 3).expanded().to_json())
    edit(document["plan"], document["state"]["plan"])
    document["plan_digest"] = digest(document["plan"])  # an edit made on purpose
    return json.dumps(_resealed(document))


EDITS: list[tuple[Any, str]] = [
    (lambda p, e: e["files"].__setitem__(0, e["files"][0][:3]), "state.plan.files[0]"),
    (lambda p, e: p.pop("block_length"), "plan.block_length"),
    (lambda p, e: p.pop("dataset"), "plan.dataset"),
    (lambda p, e: e["files"][0].__setitem__(0, 7), "state.plan.files[0]"),
    (lambda p, e: e["files"][0].__setitem__(1, "3"), "state.plan.files[0]"),
    (lambda p, e: e["files"][0].__setitem__(2, e["files"][0][2] + 1), "state.plan.files"),
    (lambda p, e: p.update(shuffle_seed="32"), "plan.shuffle_seed"),
    (lambda p, e: p.update(shuffle_seed=1 << 64), "plan.shuffle_seed"),
    (lambda p, e: p.update(input_context=[1]), "plan.input_context"),
    (lambda p, e: p["files"].update(digest="x"), "plan.files.digest"),
    (
        lambda p, e: p["shard_lengths"]["train"].update(shards=-1),
        "plan.shard_lengths.train.shards",
    ),
    (lambda p, e: p.update(cycle_length=0), "plan.cycle_length"),
    (lambda p, e: p.update(version=7), "plan.version"),
    (lambda p, e: p.update(split="test"), "state.plan.split"),
]


def test_an_expanded_plan_edited_consistently_is_refused_on_resume(small_plan: ReadPlan) -> None:
    text = _with_plan_edit(small_plan, lambda p, e: e["files"][0].__setitem__(1, 3))
    with pytest.raises(CheckpointError) as raised:
        small_plan.resume(Checkpoint.from_json(text))
    assert raised.value.field == "state.plan"


@pytest.mark.parametrize(
    ("edit", "field"),
    EDITS,
)
def test_edited_plan_sections_are_refused_with_the_field(
    small_plan: ReadPlan, edit: Any, field: str
) -> None:
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_json(_with_plan_edit(small_plan, edit))
    assert raised.value.field == field


@pytest.fixture
def shuffled_plan() -> ReadPlan:
    info = DatasetInfo(name="d", splits={"train": [5, 7, 13]})
    return ReadPlan(info, "train", ReadConfig(example_shuffle=ExampleShuffle(4, 9)))


def test_a_missing_example_buffer_is_refused(shuffled_plan: ReadPlan) -> None:
    document = json.loads(shuffled_plan.checkpoint(0, 0).to_json())
    document["example_buffer"] = None
    with pytest.raises(CheckpointError) as raised:
        shuffled_plan.resume(Checkpoint.from_json(json.dumps(_resealed(document))))
    assert raised.value.field == "example_buffer"


def test_buffer_draws_must_equal_the_position(shuffled_plan: ReadPlan) -> None:
    document = json.loads(shuffled_plan.checkpoint(0, 10).to_json())
    document["position"] = 3
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_json(json.dumps(_resealed(document)))
    assert raised.value.field == "example_buffer.draws"


def test_a_buffer_that_pulled_more_than_its_size_allows_is_refused(
    shuffled_plan: ReadPlan,
) -> None:
    """Spec invariant 5: a forged buffer holding one record too many is a CheckpointError on
    resume, not a ConfigError (the document's digests recomputed: an edit made on purpose)."""
    document = json.loads(shuffled_plan.checkpoint(0, 6).to_json())
    buffer = document["example_buffer"]
    buffer["buffer"].append(buffer["consumed"])
    buffer["consumed"] += 1
    with pytest.raises(CheckpointError) as raised:
        shuffled_plan.resume(Checkpoint.from_json(json.dumps(_resealed(document))))
    assert raised.value.field == "example_buffer.consumed"


def test_iter_from_checks_its_arguments_at_once(shuffled_plan: ReadPlan) -> None:
    checkpoint = shuffled_plan.checkpoint(2, 5)
    with pytest.raises(ConfigError):
        shuffled_plan.iter_from(checkpoint, chunk_size=0)
    assert list(shuffled_plan.iter_from(checkpoint, stop_epoch=1)) == []
    assert list(shuffled_plan.iter_from(checkpoint, stop_epoch=2)) == []
    rest = [len(c) for c in shuffled_plan.iter_from(checkpoint, stop_epoch=3, chunk_size=4)]
    assert sum(rest) == shuffled_plan.num_examples - 5
    assert all(size == 4 for size in rest[:-1])


@pytest.mark.parametrize("text", ["[" * 100_000, '{"epoch": ' + "9" * 5000 + "}"])
def test_pathological_json_is_a_checkpoint_error(text: str) -> None:
    with pytest.raises(CheckpointError):
        Checkpoint.from_json(text)


@pytest.mark.parametrize("text", [0, None, ["{}"], {"format": "x"}])
def test_checkpoint_text_that_is_not_a_string_is_a_checkpoint_error(text: object) -> None:
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_json(text)  # type: ignore[arg-type]
    assert raised.value.field == "$"


@pytest.mark.parametrize("indent", [2**63, -1, 1.5, True])
def test_to_json_refuses_an_absurd_indent(indent: object) -> None:
    plan = ReadPlan(DatasetInfo(name="d", splits={"train": [3, 4]}), "train")
    with pytest.raises(ConfigError):
        plan.checkpoint(0, 2).to_json(indent=indent)  # type: ignore[arg-type]
