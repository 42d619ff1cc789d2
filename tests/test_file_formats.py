"""Datasets stored in several file formats: ``alternativeFileFormats`` of dataset_info.json.

The conformance test uses TFDS's own in-place conversion of a TFRecord dataset to
ArrayRecord (tests/data/tfds_data_source/readplan_ds_with_array_record.tar.gz): for 41
split strings, the file instructions TFDS gave for each format.  The property test derives
the instructions of another format from the TFRecord ones by renaming the files, not from
readplan.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import readplan
from readplan import DatasetInfo, Reader, ReadPlan, file_instructions
from readplan.convert import convert
from readplan.errors import DatasetInfoError
from tests.conftest import DATA
from tests.strategies import dataset_infos, read_instructions

FIXTURE = DATA / "tfds_data_source"
CASES = json.loads((FIXTURE / "data_source_cases.json").read_text(encoding="utf-8"))
TARBALL = FIXTURE / "readplan_ds_with_array_record.tar.gz"
SPECS = [case["spec"] for case in CASES["cases"]]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset directory after TFDS's ``convert_format`` to ArrayRecord, in place."""
    root = tmp_path_factory.mktemp("converted")
    with tarfile.open(TARBALL) as tar:
        tar.extractall(root, filter="data")
    return root / "readplan_ds" / "1.0.0"


def _rows(instructions: list[readplan.FileInstruction]) -> list[list[Any]]:
    return [
        [Path(fi.filename).name, fi.skip, fi.num_records, fi.examples_in_shard]
        for fi in instructions
    ]


@pytest.mark.parametrize("case", CASES["cases"], ids=SPECS)
def test_instructions_in_each_format_match_tfds(converted: Path, case: dict[str, Any]) -> None:
    default = DatasetInfo.load(converted)
    array_record = DatasetInfo.load(converted, file_format="array_record", verify_files=True)
    assert _rows(file_instructions(default, case["spec"])) == case["file_instructions"]
    assert (
        _rows(file_instructions(array_record, case["spec"]))
        == (case["array_record_file_instructions"])
    )


def test_available_formats_are_read_from_dataset_info(converted: Path) -> None:
    info = DatasetInfo.load(converted)
    assert info.file_format == "tfrecord"
    assert info.alternative_file_formats == ("array_record",)
    assert info.available_file_formats == ("tfrecord", "array_record")
    switched = info.with_file_format("array_record")
    assert switched.file_format == "array_record"
    assert switched.available_file_formats == ("array_record", "tfrecord")
    assert switched.shard_filename("test", 2) == "readplan_ds-test.array_record-00002-of-00003"
    assert info.with_file_format("tfrecord") is info


@pytest.mark.parametrize("wanted", ["parquet", "riegeli", "tbl", "ArrayRecord"])
def test_a_format_the_dataset_is_not_stored_in_is_refused(converted: Path, wanted: str) -> None:
    # TFDS's builder_from_directory(dir, file_format=...) raises for these too.
    with pytest.raises(DatasetInfoError, match=r"\['array_record', 'tfrecord'\]") as raised:
        DatasetInfo.load(converted, file_format=wanted)
    assert raised.value.path == str(converted / "dataset_info.json")
    assert f"{wanted!r}" in str(raised.value)
    with pytest.raises(DatasetInfoError, match="pass one of those"):
        DatasetInfo.load(converted).with_file_format(wanted)


def test_a_dataset_without_alternatives_has_its_own_format_only() -> None:
    info = DatasetInfo.load(FIXTURE / CASES["tfrecord_dir"])
    assert info.alternative_file_formats == ()
    assert info.available_file_formats == ("tfrecord",)
    with pytest.raises(DatasetInfoError, match=r"lists \['tfrecord'\]"):
        info.with_file_format("array_record")


@pytest.mark.parametrize(
    "value", ["array_record", [1], [None], {"array_record": True}, ["array record"]]
)
def test_malformed_alternatives_are_refused(tmp_path: Path, value: object) -> None:
    document = json.loads((FIXTURE / CASES["tfrecord_dir"] / "dataset_info.json").read_text())
    document["alternativeFileFormats"] = value
    (tmp_path / "dataset_info.json").write_text(json.dumps(document))
    with pytest.raises(DatasetInfoError, match="alternativeFileFormats") as raised:
        DatasetInfo.load(tmp_path)
    assert raised.value.path == str(tmp_path / "dataset_info.json")


def test_the_data_source_reads_a_format_readplan_reads(converted: Path, tmp_path: Path) -> None:
    # The same directory declared the other way round: ArrayRecord first, TFRecord as the
    # alternative.  TFDS's data source picks a random-access format; readplan's picks one
    # it reads.
    flipped = tmp_path / "flipped"
    flipped.mkdir()
    for path in converted.iterdir():
        (flipped / path.name).symlink_to(path)
    document = json.loads((converted / "dataset_info.json").read_text())
    document["fileFormat"], document["alternativeFileFormats"] = "array_record", ["tfrecord"]
    (flipped / "dataset_info.json").unlink()
    (flipped / "dataset_info.json").write_text(json.dumps(document))
    for case in [c for c in CASES["cases"] if "ids" in c][:6]:
        source = readplan.data_source(flipped, case["spec"], decode=True)
        assert source.info.file_format == "tfrecord"
        assert [int(source[k]["id"][0]) for k in range(len(source))] == case["ids"]
    plan = ReadPlan(DatasetInfo.load(flipped), "test")
    with pytest.raises(DatasetInfoError, match=r"file_format='tfrecord'"):
        Reader(plan)
    tfrecord_plan = ReadPlan(DatasetInfo.load(flipped, file_format="tfrecord"), "test")
    assert sum(1 for _ in Reader(tfrecord_plan)) == sum(CASES["splits"]["test"])


@given(info=dataset_infos(), instruction=read_instructions(), data=st.data())
@example(
    info=DatasetInfo("ds", {"train": [3, 0, 4]}),
    instruction=readplan.ReadInstruction("train", from_=1, to=-1, unit="abs"),
    data=None,
).via("an empty shard in the middle")
def test_another_format_renames_the_files_only(
    info: DatasetInfo, instruction: readplan.ReadInstruction, data: Any
) -> None:
    split = instruction.split_name
    if split not in info.splits:
        instruction = readplan.ReadInstruction(
            next(iter(info.splits)),
            from_=instruction.from_,
            to=instruction.to,
            unit=instruction.unit,
        )
    fmt = "array_record" if data is None else data.draw(st.sampled_from(["array_record", "tbl"]))
    stored = DatasetInfo(info.name, info.splits, alternative_file_formats=[fmt, "parquet"])
    try:
        expected = [
            (fi.filename.replace(".tfrecord-", f".{fmt}-"), fi.skip, fi.take)
            for fi in file_instructions(stored, instruction)
        ]
    except readplan.SplitError:
        return
    got = file_instructions(stored.with_file_format(fmt), instruction)
    assert [(fi.filename, fi.skip, fi.take) for fi in got] == expected


def test_cli_names_the_chosen_format(converted: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "readplan",
            "plan",
            str(converted),
            "test[50%:]",
            "--json",
            "--file-format",
            "array_record",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    files = json.loads(run.stdout)["instructions"]
    assert [Path(f["filename"]).name for f in files] == [
        "readplan_ds-test.array_record-00002-of-00003"
    ]
    refused = subprocess.run(
        [sys.executable, "-m", "readplan", "plan", str(converted), "test", "--file-format", "x"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2
    assert "['array_record', 'tfrecord']" in refused.stderr


def test_convert_reads_a_readable_format_and_writes_one(converted: Path, tmp_path: Path) -> None:
    target = tmp_path / "tbl"
    shards = convert(converted, target, format="tbl")
    assert {Path(s.source).name.split(".")[1].split("-")[0] for s in shards} == {"tfrecord"}
    document = json.loads((target / "dataset_info.json").read_text())
    assert document["fileFormat"] == "tbl"
    assert "alternativeFileFormats" not in document
    # Neither format's shards of the source are carried over as "other files".
    names = sorted(path.name for path in target.iterdir())
    assert not [name for name in names if ".array_record-" in name or ".tfrecord-" in name]
    assert "features.json" in names
    source = readplan.data_source(target, "train[10:20]+train[5:15]", decode=True)
    case = next(c for c in CASES["cases"] if c["spec"] == "train[10:20]+train[5:15]")
    assert [int(source[k]["id"][0]) for k in range(len(source))] == case["ids"]
