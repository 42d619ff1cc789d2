"""TFDS datasets converted to TBL v2: same plans, order, ids and checkpoints; and back.

The expected orders are the TFDS-computed vectors of the TFRecord fixture
(tests/data/tfds/readplan_toy_orders.json); the converted directory must reproduce them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import CorruptionReport, DatasetInfo, ReadConfig, Reader, ReadPlan, tbl
from readplan.cli import main
from readplan.convert import convert
from readplan.errors import ConfigError, CorruptTblError, DatasetInfoError, MissingExtraError
from readplan.state.checkpoint import Checkpoint
from tests.tfds_toy import TOY, TOY_DIR, TOY_INFO

pytest.importorskip("fastcrc")

CASES = TOY["cases"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("toy") / "tbl"
    convert(TOY_DIR, target, format="tbl")
    return target


def plan_for(directory: Path, case: dict[str, Any]) -> ReadPlan:
    info = DatasetInfo.load(directory)
    config = ReadConfig(**case["read_config"], shuffle_files=case["shuffle_files"])
    return ReadPlan(info, case["spec"], config)


def read_ids(plan: ReadPlan, epochs: int) -> list[list[Any]]:
    out = []
    for item in Reader(plan, epochs=epochs, decode=True):
        fi = plan.instructions[item.file_index]
        assert isinstance(item.record, dict)
        out.append([fi.split, fi.shard_index, item.record_index, int(item.record["id"][0])])
    return out


def test_layout_and_dataset_info(converted: Path) -> None:
    info = DatasetInfo.load(converted, verify_files=True)
    original = TOY_INFO
    assert info.file_format == "tbl"
    assert {s: i.shard_lengths for s, i in info.splits.items()} == {
        s: i.shard_lengths for s, i in original.splits.items()
    }
    fields = json.loads((converted / "dataset_info.json").read_text())
    source = json.loads((TOY_DIR / "dataset_info.json").read_text())
    assert fields == {**source, "fileFormat": "tbl"}
    assert (converted / "features.json").read_bytes() == (TOY_DIR / "features.json").read_bytes()
    for split in info.splits:
        for k, path in enumerate(info.shard_paths(split)):
            assert os.path.basename(path) == f"readplan_toy-{split}.tbl-{k:05d}-of-" + (
                f"{info.splits[split].num_shards:05d}"
            )
            with tbl.TblFile(path) as tf:
                assert len(tf) == info.splits[split].shard_lengths[k]
                assert {tf.info(i).format for i in range(len(tf))} <= {"unknown"}


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_converted_dataset_reads_in_tfds_order(converted: Path, case: dict[str, Any]) -> None:
    plan = plan_for(converted, case)
    expected = [entry for epoch in case["epochs"] for entry in epoch]
    assert read_ids(plan, len(case["epochs"])) == expected


@pytest.mark.parametrize("case", CASES[:6], ids=[str(i) for i in range(6)])
def test_checkpoints_cross_between_containers(converted: Path, case: dict[str, Any]) -> None:
    """A checkpoint taken on the TFRecord original resumes on the TBL copy, and back."""
    tfrecord_plan = plan_for(TOY_DIR, case)
    tbl_plan = plan_for(converted, case)
    assert tbl_plan.summary == tfrecord_plan.summary
    assert tbl_plan.fingerprint == tfrecord_plan.fingerprint
    epochs = len(case["epochs"])
    expected = [entry[3] for epoch in case["epochs"] for entry in epoch]
    per_epoch = len(case["epochs"][0])
    for position in range(0, per_epoch, 3):
        for source, target in ((tfrecord_plan, tbl_plan), (tbl_plan, tfrecord_plan)):
            saved = Checkpoint.from_json(source.checkpoint(0, position).to_json())
            reader = Reader(target, epochs=epochs, decode=True, start=saved)
            got = [int(item.record["id"][0]) for item in reader]  # type: ignore[index]
            assert got == expected[position:]


def test_round_trip_gives_the_tfrecord_bytes_back(converted: Path, tmp_path: Path) -> None:
    back = tmp_path / "back"
    shards = convert(converted, back, format="tfrecord")
    assert len(shards) == 11
    for name in sorted(os.listdir(TOY_DIR)):
        assert (back / name).read_bytes() == (TOY_DIR / name).read_bytes(), name
    assert sorted(os.listdir(back)) == sorted(os.listdir(TOY_DIR))


@settings(max_examples=10)
@given(compression=st.booleans())
def test_compressed_conversion_reads_the_same(
    tmp_path_factory: pytest.TempPathFactory, compression: bool
) -> None:
    target = tmp_path_factory.mktemp("c") / "tbl"
    convert(TOY_DIR, target, format="tbl", compression=compression)
    case = CASES[-1]
    assert read_ids(plan_for(target, case), len(case["epochs"])) == [
        e for epoch in case["epochs"] for e in epoch
    ]


def test_cli_convert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "cli"
    assert main(["convert", str(TOY_DIR), str(target), "--format", "tbl"]) == 0
    assert "11 tbl shards, 62 records" in capsys.readouterr().out
    assert main(["convert", str(TOY_DIR), str(target), "--format", "tbl"]) == 2
    assert "already holds a dataset" in capsys.readouterr().err


def test_convert_refusals(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="format"):
        convert(TOY_DIR, tmp_path / "x", format="array_record")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="TBL output only"):
        convert(TOY_DIR, tmp_path / "x", format="tfrecord", compression=True)
    with pytest.raises(ConfigError, match="source directory"):
        convert(TOY_DIR, TOY_DIR, format="tbl")
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in os.listdir(TOY_DIR):
        (broken / name).write_bytes((TOY_DIR / name).read_bytes())
    shard = broken / "readplan_toy-train.tfrecord-00002-of-00008"
    shard.write_bytes(b"")
    with pytest.raises(DatasetInfoError, match="holds 0 records") as err:
        convert(broken, tmp_path / "y", format="tbl")
    assert err.value.path == str(shard)


def test_reader_refuses_formats_it_cannot_read(tmp_path: Path) -> None:
    fields = json.loads((TOY_DIR / "dataset_info.json").read_text())
    (tmp_path / "dataset_info.json").write_text(json.dumps({**fields, "fileFormat": "riegeli"}))
    plan = ReadPlan(DatasetInfo.load(tmp_path), "train")
    with pytest.raises(DatasetInfoError, match="'riegeli' has no reader") as err:
        Reader(plan)
    assert err.value.field == "fileFormat"


def test_reader_skip_mode_loses_exactly_the_damaged_samples(
    converted: Path, tmp_path: Path
) -> None:
    target = tmp_path / "damaged"
    shutil.copytree(converted, target)
    info = DatasetInfo.load(target)
    shard0, shard2 = (Path(info.shard_path("train", k)) for k in (0, 2))
    raw = bytearray(shard2.read_bytes())
    offset = int.from_bytes(raw[64 + 24 * 5 : 64 + 24 * 5 + 8], "little")
    raw[offset] ^= 0x40  # sample 5's payload: its CRC-16 fails
    shard2.write_bytes(bytes(raw))
    raw = bytearray(shard0.read_bytes())
    raw[64 + 24 * 1 + 20] = 9  # sample 1's format code: not a format
    shard0.write_bytes(bytes(raw))
    case = CASES[0]
    assert (case["spec"], case["shuffle_files"], case["read_config"]) == ("train", False, {})
    plan = plan_for(target, case)
    with pytest.raises(CorruptTblError) as err:
        list(Reader(plan, decode=True))
    assert (err.value.kind, err.value.record_index) == ("index_field", 1)
    report = CorruptionReport()
    items = list(Reader(plan, decode=True, on_corruption="skip", report=report))
    damaged = {("train", 0, 1): "index_field", ("train", 2, 5): "data_crc"}
    expected = [e for e in case["epochs"][0] if tuple(e[:3]) not in damaged]
    got = []
    for item in items:
        fi = plan.instructions[item.file_index]
        got.append([fi.split, fi.shard_index, item.record_index, int(item.record["id"][0])])  # type: ignore[index]
    assert got == expected
    lost = {
        (plan.instructions[e.file_index].split, plan.instructions[e.file_index].shard_index,
         e.record_index): e.kind
        for e in report.lost
    }  # fmt: skip
    assert lost == damaged
    assert report.kinds() == {"index_field": 1, "data_crc": 1}


@pytest.mark.parametrize("case", CASES[:4], ids=[str(i) for i in range(4)])
def test_ranks_read_the_same_from_both_containers(converted: Path, case: dict[str, Any]) -> None:
    """Several ranks gather nearby records of a file: TBL shards give what TFRecord gives."""
    for rank in range(3):
        got = [
            [
                [item.epoch, item.position, item.record_index, item.record]
                for item in Reader(plan_for(directory, case), rank=rank, world_size=3)
            ]
            for directory in (TOY_DIR, converted)
        ]
        assert got[0] == got[1]
        assert len(got[0]) > 0


def test_runner_beam_without_beam_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where apache_beam cannot be imported, runner='beam' says how to install it."""
    for name in [m for m in sys.modules if m.split(".")[0] == "apache_beam"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # makes its import fail
    with pytest.raises(MissingExtraError, match=r"pip install 'readplan\[beam\]'") as caught:
        convert(TOY_DIR, tmp_path / "x", runner="beam")
    assert caught.value.extra == "beam"
    assert not (tmp_path / "x").exists()
    assert (
        main(["convert", str(TOY_DIR), str(tmp_path / "x"), "--format", "tbl", "--runner", "beam"])
        == 2
    )
