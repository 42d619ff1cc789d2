"""`readplan order` and `readplan checkpoint` on the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from readplan import Checkpoint, ReadConfig, ReadPlan
from tests.cli_runs import TOY_ARG, run
from tests.tfds_toy import TOY, TOY_INFO


def test_order_reproduces_the_tfds_guide_seeded_example(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "order", "imagenet2012", "train", "--shuffle-files", "--seed", "32", "--count", "22"
    )
    assert status == 0
    assert [int(x) for x in out.split()] == [*range(176411, 176427), *range(710647, 710653)]


def test_order_with_cycle_and_block_lengths(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys,
        "order",
        "imagenet2012",
        "train",
        "--cycle-length",
        "3",
        "--block-length",
        "2",
        "--count",
        "8",
    )
    assert status == 0
    assert [int(x) for x in out.split()] == [0, 1, 1251, 1252, 2502, 2503, 2, 3]


def test_order_start_and_tfds_ids_on_a_tfds_directory(capsys: pytest.CaptureFixture[str]) -> None:
    cases = TOY["cases"]
    case = next(c for c in cases if c["read_config"] == {"shuffle_seed": 32})
    status, out, _ = run(
        capsys,
        "order",
        TOY_ARG,
        "train",
        "--shuffle-files",
        "--seed",
        "32",
        "--epoch",
        "2",
        "--start",
        "5",
        "--count",
        "10",
        "--format",
        "tfds_id",
    )
    assert status == 0
    expected = [
        f"readplan_toy-train.tfrecord-{shard:05d}-of-00008__{index}"
        for _, shard, index, _ in case["epochs"][2][5:15]
    ]
    assert out.split() == expected


def test_order_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "order", "imagenet2012", "train[44%:45%]", "--count", "2", "--format", "json"
    )
    assert status == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0] == {
        "position": 0,
        "file_index": 0,
        "split": "train",
        "shard_index": 450,
        "record_index": 700,
        "global_id": 563713,
        "tfds_id": "imagenet2012-train.tfrecord-00450-of-01024__700",
    }
    assert rows[1]["position"] == 1


def test_order_without_count_runs_to_the_end_of_the_epoch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "order", TOY_ARG, "test", "--start", "10")
    assert status == 0
    assert len(out.split()) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("order", "imagenet2012", "train", "--start", "2000000"), "out of range"),
        (("order", "imagenet2012", "train", "--shuffle-files"), "Pass --seed <int>"),
        (("order", "imagenet2012", "train", "--input-context", "x"), "ID/N"),
        (("order", "nosuch", "train"), "neither an existing dataset directory"),
        (("order", "imagenet2012", "train[200%:]"), "percent slice boundaries"),
        (("order", "imagenet2012", "train", "--input-context", "0/2000"), "Cannot shard"),
    ],
)
def test_order_errors_exit_2_with_a_message(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert message in err


CHECKPOINT_ARGS = (
    "checkpoint", TOY_ARG, "train", "--shuffle-files", "--seed", "7", "--cycle-length", "2",
    "--block-length", "3", "--epoch", "1", "--position", "17",
)  # fmt: skip


def test_checkpoint_saves_a_loadable_checkpoint(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    path = f"{tmp_path}/state.json"
    status, _, _ = run(capsys, *CHECKPOINT_ARGS, "-o", path)
    assert status == 0
    config = ReadConfig(
        shuffle_files=True, shuffle_seed=7, interleave_cycle_length=2, interleave_block_length=3
    )
    plan = ReadPlan(TOY_INFO, "train", config)
    checkpoint = Checkpoint.load(path)
    assert checkpoint == plan.checkpoint(1, 17)
    status, out, _ = run(capsys, *CHECKPOINT_ARGS)
    assert status == 0
    assert Checkpoint.from_json(out) == checkpoint


def test_checkpoint_prints_resume_instructions(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys,
        "checkpoint",
        "imagenet2012",
        "train",
        "--cycle-length",
        "3",
        "--block-length",
        "2",
        "--position",
        "100",
        "--instructions",
        "resume",
    )
    assert status == 0
    lines = out.splitlines()
    assert lines[2].split()[1:4] == ["imagenet2012-train.tfrecord-00002-of-01024", "32", "1219"]


def test_output_into_a_closed_pipe_is_not_an_error() -> None:
    process = subprocess.run(
        f"{sys.executable} -m readplan order imagenet2012 train | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        check=True,
    )
    assert process.stdout == "0\n"
    assert process.stderr == ""


@pytest.mark.parametrize("value", ["²/4", "1/x", "1/-2", "0/"])
def test_input_context_accepts_ascii_digits_only(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    status, _, err = run(capsys, "order", "imagenet2012", "train", "--input-context", value)
    assert status == 2
    assert "ID/N" in err
