"""``readplan plan``: the file instructions of a split, as a table or JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from readplan.cli import main
from readplan.cli.planning import load_dataset
from readplan.errors import DatasetInfoError
from readplan.metadata.dataset_info import DatasetInfo
from tests.tfds_toy import TOY_DIR, TOY_INFO


def test_plan_table_for_the_published_imagenet_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "imagenet2012", "train[44%:45%]"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.split()[0].isdigit()]
    assert rows[0] == ["0", "imagenet2012-train.tfrecord-00450-of-01024", "700", "551", "1251"]
    assert [row[1][-14:-9] for row in rows] == [f"{k:05d}" for k in range(450, 461)]
    assert all(row[2:] == ["0", row[4], row[4]] for row in rows[1:-1])
    assert rows[-1] == ["10", "imagenet2012-train.tfrecord-00460-of-01024", "0", "1001", "1251"]
    assert lines[1].split() == ["index", "file", "skip", "take", "examples_in_shard"]
    assert "total: 11 files, 12812 records" in lines


def test_plan_json_for_a_dataset_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(TOY_DIR), "test[1:5]+train[-5:-10]", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["dataset"], out["spec"], out["strict"]) == (
        "readplan_toy",
        "test[1:5]+train[-5:-10]",
        False,
    )
    assert out["data_dir"] == str(TOY_DIR)
    assert [
        (i["split"], i["shard_index"], i["skip"], i["take"], i["num_records"])
        for i in out["instructions"]
    ] == [
        ("test", 0, 1, 3, 3),
        ("test", 1, 0, 1, 1),
        ("train", 6, 7, -5, 3),
    ]
    assert out["instructions"][0]["filename"] == os.path.join(
        str(TOY_DIR), "readplan_toy-test.tfrecord-00000-of-00003"
    )
    assert (out["num_files"], out["num_records"]) == (3, 7)


def test_plan_table_notes_negative_takes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(TOY_DIR), "train[-5:-10]"]) == 0
    out = capsys.readouterr().out
    assert "negative take" in out
    assert f"directory: {TOY_DIR}" in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["plan", "imagenet2012", "train[:50%]+train[:10]", "--strict"], "overlaps"),
        (["plan", "imagenet2012", "train[5:5]"], "Instruction [] corresponds to no data!"),
        (["plan", "imagenet2012", "train[:]"], "Unrecognized split format: 'train[:]'"),
        (["plan", "imagenet2012", "validation"], "Unknown split 'validation'"),
        (["plan", "no_such_dataset", "train"], "neither an existing dataset directory"),
    ],
)
def test_plan_errors_exit_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("readplan plan: error: ")
    assert fragment in captured.err


def test_load_dataset_directory_catalog_and_errors(tmp_path: Path) -> None:
    assert load_dataset(str(TOY_DIR)) == TOY_INFO
    assert load_dataset("imagenet2012") == DatasetInfo.from_catalog("imagenet2012")
    with pytest.raises(DatasetInfoError, match="does not exist"):
        load_dataset(str(tmp_path))
