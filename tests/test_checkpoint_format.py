"""The checkpoint document: saved whole, shaped as the published schema, and refused with the
offending field named when it is malformed, tampered with or edited.

``specs/checkpoint.md`` §2 (integrity and invariants) and §5 (format);
``specs/checkpoint.schema.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import Checkpoint, ReadPlan
from readplan.errors import CheckpointError, ConfigError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.state.codec import seal
from readplan.state.fingerprint import digest
from readplan.testing import plans
from tests import checkpoint_plans


@pytest.fixture
def small_plan() -> ReadPlan:
    return checkpoint_plans.small_plan()


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
    (lambda p, e: p.update(shuffle_seed=True), "plan.shuffle_seed"),
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
    return checkpoint_plans.shuffled_plan()


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
