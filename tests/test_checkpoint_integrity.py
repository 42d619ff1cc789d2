"""Checkpoint integrity and compactness: edited, damaged, stale or foreign states are refused.

``specs/checkpoint.md`` §2 (integrity), §4 (fingerprint and data binding) and §5 (format).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import (
    Checkpoint,
    DatasetInfo,
    ExampleShuffle,
    ReadConfig,
    Reader,
    ReadPlan,
)
from readplan.errors import CheckpointError, CheckpointMismatchError
from readplan.reading.ranks import STATE_KEY
from tests.conftest import DATA
from tests.tfds_toy import TOY_DIR, TOY_INFO

UNSHUFFLED = ReadConfig(interleave_cycle_length=2, interleave_block_length=2)
SHUFFLED = ReadConfig(
    interleave_cycle_length=3,
    interleave_block_length=2,
    shuffle_files=True,
    shuffle_seed=5,
    example_shuffle=ExampleShuffle(6, 11),
)


def _toy(config: ReadConfig = UNSHUFFLED, info: DatasetInfo = TOY_INFO) -> ReadPlan:
    return ReadPlan(info, "train", config)


def _synthetic(num_files: int, config: ReadConfig = UNSHUFFLED) -> ReadPlan:
    info = DatasetInfo("synthetic", {"train": [3 + k % 5 for k in range(num_files)]})
    return ReadPlan(info, "train", config)


# -- item 1: the whole document is protected -------------------------------------------------


def test_an_edited_epoch_is_refused_even_when_epochs_share_their_state() -> None:
    plan = _toy()  # no file shuffle: every epoch has the same state at a position
    document = plan.checkpoint(1, 7).to_dict()
    document["epoch"] = 7
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_dict(document)
    assert raised.value.field == "epoch"


def test_an_edited_example_buffer_entry_is_refused() -> None:
    plan = _toy(SHUFFLED)
    document = plan.checkpoint(0, 5).to_dict()
    buffer = document["example_buffer"]["buffer"]
    replacement = next(v for v in range(plan.num_examples) if v not in buffer)
    buffer[0] = replacement
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_dict(document)
    assert raised.value.field == "example_buffer"


def test_an_added_or_removed_section_is_refused() -> None:
    document = _toy().checkpoint(0, 3).to_dict()
    added = copy.deepcopy(document) | {"note": "hand-written"}
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_dict(added)
    assert raised.value.field == "note"
    removed = copy.deepcopy(document)
    del removed["integrity"]["position"]
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_dict(removed)
    assert raised.value.field == "position"


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in _leaves(value, (*path, key))]
    if isinstance(node, list):
        return [p for k, value in enumerate(node) for p in _leaves(value, (*path, k))]
    return [path]


def _mutated(value: Any, choice: int) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + (choice % 5) - 2 or value + 1
    if isinstance(value, str):
        return value[:-1] + ("0" if value[-1:] != "0" else "1")
    return choice  # null -> a number


@settings(max_examples=200)
@given(
    config=st.sampled_from([UNSHUFFLED, SHUFFLED]),
    epoch=st.integers(0, 3),
    fraction=st.floats(0, 1),
    pick=st.integers(0, 10**6),
    choice=st.integers(0, 4),
    expanded=st.booleans(),
)
def test_any_mutated_leaf_is_refused_or_resumes_exactly(
    config: ReadConfig, epoch: int, fraction: float, pick: int, choice: int, expanded: bool
) -> None:
    """A mutated checkpoint is refused, or (when the edit changes nothing) resumes exactly."""
    plan = _toy(config)
    position = int(fraction * plan.num_examples)
    checkpoint = plan.checkpoint(epoch, position)
    document = checkpoint.expanded().to_dict() if expanded else checkpoint.to_dict()
    leaves = _leaves(document)
    path = leaves[pick % len(leaves)]
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = _mutated(target[path[-1]], choice)
    try:
        loaded = Checkpoint.from_dict(document)
        rest = plan.resume(loaded)
    except CheckpointError:
        return
    expected = plan.resume(checkpoint)
    assert (loaded.epoch, loaded.position) == (epoch, position)
    assert rest.file_index.tolist() == expected.file_index.tolist()
    assert rest.record_index.tolist() == expected.record_index.tolist()


# -- item 2: bound to the data -----------------------------------------------------------------


def _copy_toy(tmp_path: Path) -> Path:
    target = tmp_path / "readplan_toy"
    shutil.copytree(TOY_DIR, target)
    return target


def _rewrite_every_shard(directory: Path) -> None:
    """New contents, same record counts: every record's payload is replaced."""
    from readplan.tfrecord import TFRecordWriter, read

    for path in sorted(directory.glob("readplan_toy-*.tfrecord-*")):
        records = [bytes(reversed(r)) + b"!" for r in read(str(path))]
        with TFRecordWriter(str(path)) as writer:
            for record in records:
                writer.write(record)


def test_a_reader_state_does_not_resume_into_a_regenerated_dataset(tmp_path: Path) -> None:
    directory = _copy_toy(tmp_path)
    plan = _toy(UNSHUFFLED, DatasetInfo.load(directory))
    reader = Reader(plan, epochs=2)
    iterator = iter(reader)
    for _ in range(9):
        next(iterator)
    state = reader.state_dict()
    reader.close()
    _rewrite_every_shard(directory)
    fresh_plan = _toy(UNSHUFFLED, DatasetInfo.load(directory))
    resumed = Reader(fresh_plan, epochs=2)
    resumed.load_state_dict(state)
    with pytest.raises(CheckpointMismatchError) as raised:
        next(iter(resumed))
    assert any("size" in name or "checksum" in name for name in raised.value.differences)


def test_a_reader_state_resumes_into_the_same_files(tmp_path: Path) -> None:
    directory = _copy_toy(tmp_path)
    plan = _toy(UNSHUFFLED, DatasetInfo.load(directory))
    uninterrupted = [item.position for item in Reader(plan, epochs=2)]
    reader = Reader(plan, epochs=2)
    head = [item.position for _, item in zip(range(9), reader)]
    state = json.loads(json.dumps(reader.state_dict()))
    resumed = Reader(_toy(UNSHUFFLED, DatasetInfo.load(directory)), epochs=2)
    resumed.load_state_dict(state)
    assert head + [item.position for item in resumed] == uninterrupted


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"version": "1.0.1"}, "version"),
        ({"config_name": "other"}, "config"),
    ],
)
def test_dataset_identity_is_part_of_the_plan(change: dict[str, str], field: str) -> None:
    checkpoint = _toy().checkpoint(0, 4)
    info = DatasetInfo(
        TOY_INFO.name,
        TOY_INFO.splits,
        data_dir=TOY_INFO.data_dir,
        version=change.get("version", TOY_INFO.version),
        config_name=change.get("config_name", TOY_INFO.config_name),
    )
    with pytest.raises(CheckpointMismatchError) as raised:
        _toy(UNSHUFFLED, info).resume(checkpoint)
    assert field in raised.value.differences


# -- issue 15: compact checkpoints -----------------------------------------------------------


@pytest.mark.parametrize("num_files", [10, 100_000])
def test_a_checkpoint_without_example_shuffle_is_small_whatever_the_files(num_files: int) -> None:
    plan = _synthetic(num_files, ReadConfig(shuffle_files=True, shuffle_seed=3))
    text = plan.checkpoint(2, plan.num_examples // 3).to_json()
    assert len(text.encode()) < 4096


def test_compact_and_expanded_forms_both_load_and_resume_alike() -> None:
    plan = _toy(ReadConfig(interleave_cycle_length=3, shuffle_files=True, shuffle_seed=9))
    checkpoint = plan.checkpoint(1, 17)
    expanded = checkpoint.expanded()
    document = expanded.to_dict()
    assert len(document["state"]["interleave"]["slots"]) == 3
    assert len(document["state"]["files"]) == len(plan.instructions)
    assert Checkpoint.from_dict(document) == checkpoint
    assert Checkpoint.from_dict(checkpoint.to_dict()) == checkpoint
    loaded = Checkpoint.from_json(expanded.to_json())
    assert loaded.expanded(plan).to_dict() == document


def test_an_expanded_state_that_the_plan_does_not_imply_is_refused() -> None:
    plan = _toy(ReadConfig(interleave_cycle_length=3, interleave_block_length=2))
    document = plan.checkpoint(0, 5).expanded().to_dict()
    document["state"]["interleave"]["cursor"] = (document["state"]["interleave"]["cursor"] + 1) % 3
    document["integrity"]["state"] = _reseal(document)["integrity"]["state"]
    with pytest.raises(CheckpointError) as raised:
        plan.resume(Checkpoint.from_dict(document))
    assert raised.value.field == "state.interleave.cursor"


def _reseal(document: dict[str, Any]) -> dict[str, Any]:
    """The integrity digests recomputed after an edit made on purpose."""
    from readplan.state.codec import seal

    return seal({key: value for key, value in document.items() if key != "integrity"})


def test_a_compact_checkpoint_lists_the_differing_plan_fields() -> None:
    checkpoint = _toy().checkpoint(0, 3)
    other = ReadPlan(TOY_INFO, "train[1:]", UNSHUFFLED)
    with pytest.raises(CheckpointMismatchError) as raised:
        other.resume(checkpoint)
    assert "split" in raised.value.differences
    assert raised.value.differences["split"] == ("train", "train[1:]")


def test_version_1_checkpoints_are_refused_with_how_to_convert() -> None:
    document = json.loads((DATA / "checkpoints" / "v1_toy_train_e1_p7.json").read_text())
    with pytest.raises(CheckpointError) as raised:
        Checkpoint.from_dict(document)
    assert raised.value.field == "version"
    assert "--upgrade OLD.json" in str(raised.value)
    assert "plan.upgrade_checkpoint(document)" in str(raised.value)


def test_version_1_checkpoints_convert_with_their_plan() -> None:
    document = json.loads((DATA / "checkpoints" / "v1_toy_train_e1_p7.json").read_text())
    plan = ReadPlan(
        TOY_INFO,
        "train",
        ReadConfig(interleave_cycle_length=3, shuffle_files=True, shuffle_seed=4),
    )
    assert plan.upgrade_checkpoint(document) == plan.checkpoint(1, 7)
    document["interleave"]["cursor"] = (document["interleave"]["cursor"] + 1) % 3
    with pytest.raises(CheckpointError):
        plan.upgrade_checkpoint(document)


def test_state_dict_holds_numpy_integers_as_json_numbers() -> None:
    config = ReadConfig(
        interleave_cycle_length=np.int64(3),
        interleave_block_length=np.int32(2),
        shuffle_files=np.True_,
        shuffle_seed=np.int64(7),
    )
    plan = _toy(config)
    text = plan.checkpoint(np.int64(1), np.int64(4)).to_json()
    assert Checkpoint.from_json(text) == plan.checkpoint(1, 4)
    assert STATE_KEY  # the reader's section name is part of the documented format


# -- item 11: the bridge at the end of an epoch ----------------------------------------------


@pytest.mark.parametrize("config", [UNSHUFFLED, ReadConfig(shuffle_files=True, shuffle_seed=2)])
def test_the_bridge_at_the_end_of_an_epoch_is_one_empty_instruction(config: ReadConfig) -> None:
    # TFDS 4.9.10 refuses an empty list ("The `filenames` argument must contain `tf.string`
    # elements") and reads one instruction with skip = examples_in_shard, take = 0 as an
    # empty dataset, whatever the cycle length.
    plan = _toy(config)
    [only] = plan.resume_instructions(plan.checkpoint(2, plan.num_examples))
    assert only.take == 0
    assert only.skip == only.examples_in_shard
    assert only.filename == plan.instructions[int(plan.file_order(2)[0])].filename


# -- the command line: expanded form and conversion ------------------------------------------


def test_cli_expands_and_upgrades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from readplan.cli import main

    plan_args = [str(TOY_DIR), "train", "--cycle-length", "3", "--shuffle-files", "--seed", "4"]
    assert main(["checkpoint", *plan_args, "--epoch", "1", "--position", "7", "--expand"]) == 0
    expanded = json.loads(capsys.readouterr().out)
    assert expanded["form"] == "expanded"
    assert len(expanded["state"]["interleave"]["slots"]) == 3
    old = DATA / "checkpoints" / "v1_toy_train_e1_p7.json"
    target = tmp_path / "new.json"
    assert main(["checkpoint", *plan_args, "--upgrade", str(old), "-o", str(target)]) == 0
    plan = ReadPlan(
        TOY_INFO, "train", ReadConfig(interleave_cycle_length=3, shuffle_files=True, shuffle_seed=4)
    )
    assert Checkpoint.load(target) == plan.checkpoint(1, 7)
    assert Checkpoint.from_dict(expanded) == plan.checkpoint(1, 7)


@settings(max_examples=25)
@given(fraction=st.floats(0, 0.95), pick=st.integers(0, 10**6), flip=st.integers(1, 255))
def test_no_record_of_a_changed_held_file_is_delivered_after_a_restore(
    tmp_path_factory: pytest.TempPathFactory, fraction: float, pick: int, flip: int
) -> None:
    directory = _copy_toy(tmp_path_factory.mktemp("toy"))
    plan = _toy(UNSHUFFLED, DatasetInfo.load(directory))
    reader = Reader(plan)
    count = int(fraction * plan.num_examples)
    for _, _item in zip(range(count), reader):
        pass
    state = reader.state_dict()
    reader.close()
    bound = state[STATE_KEY]["files"]
    if not bound:
        return  # nothing in the middle of a file: the summary binds the dataset
    file_index = bound[pick % len(bound)][0]
    path = Path(plan.instructions[file_index].filename)
    data = bytearray(path.read_bytes())
    data[pick % len(data)] ^= flip
    path.write_bytes(bytes(data))
    resumed = Reader(_toy(UNSHUFFLED, DatasetInfo.load(directory)))
    resumed.load_state_dict(state)
    remaining = plan.resume(plan.checkpoint(state["epoch"], state["position"]))
    if file_index not in remaining.file_index.tolist():
        # The interleave holds the file until it finds its end, with nothing left to read:
        # the reader never reopens it and delivers no record of it.
        assert all(item.file_index != file_index for item in resumed)
        return
    with pytest.raises(CheckpointMismatchError) as raised:
        list(resumed)
    assert f"reader.files[{file_index}].checksum" in raised.value.differences


def test_a_file_binding_is_the_same_for_a_storage_url(tmp_path: Path) -> None:
    """The binding reads through the storage layer: a URL's binding equals the local one."""
    import uuid

    pytest.importorskip("fsspec")

    from readplan.state.binding import SPAN, bind
    from readplan.storage import write_bytes

    data = bytes(range(256)) * (3 * SPAN // 256 + 7)
    local = tmp_path / "shard"
    local.write_bytes(data)
    url = f"memory://readplan-{uuid.uuid4().hex}/shard"
    write_bytes(url, data)
    assert bind(url, 3) == bind(str(local), 3)
    assert bind(str(local), 3).size == len(data)
    local.write_bytes(data[:-1] + b"!")
    assert bind(str(local), 3).checksum != bind(url, 3).checksum
