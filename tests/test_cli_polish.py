"""The planning command line's rough edges: version, bare call, Ctrl-C, help text, ranges,
--json, seeds, saved states; and a readable repr of a large DatasetInfo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import readplan
from readplan import DatasetInfo, Reader, ReadPlan
from readplan.cli import main, planning
from readplan.records.native import CORE_NAME
from tests.cli_runs import TOY_ARG, run
from tests.tfds_toy import TOY_INFO


def test_version_and_bare_call_print_and_succeed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"readplan {readplan.__version__} ({CORE_NAME})"
    status, out, _ = run(capsys)
    assert status == 0
    assert out.startswith("usage: readplan")
    assert "order" in out


def test_ctrl_c_exits_quietly_with_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(planning, "run_order", interrupted)
    status, out, err = run(capsys, "order", TOY_ARG, "train")
    assert status == 130
    assert "Traceback" not in err
    assert out == ""


def test_plan_help_shows_percent_signs_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = capsys.readouterr().out
    assert "train[10%:]" in out
    assert "%%" not in out


@pytest.mark.parametrize("start", ["-1", "50", "1000"])
def test_out_of_range_starts_report_one_valid_range(
    capsys: pytest.CaptureFixture[str], start: str
) -> None:
    status, _, err = run(capsys, "order", TOY_ARG, "train", "--start", start)
    assert status == 2
    assert f"--start {start} is out of range" in err
    assert "0..49" in err
    status, _, err = run(capsys, "checkpoint", TOY_ARG, "train", "--position", start)
    assert status == 2
    assert "0..49" in err


def test_order_takes_json_like_plan_and_inspect(capsys: pytest.CaptureFixture[str]) -> None:
    _, flag, _ = run(capsys, "order", TOY_ARG, "train", "--count", "3", "--json")
    _, fmt, _ = run(capsys, "order", TOY_ARG, "train", "--count", "3", "--format", "json")
    assert flag == fmt
    assert [json.loads(line)["position"] for line in flag.splitlines()] == [0, 1, 2]


def test_checkpoint_takes_json_for_its_instructions(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["checkpoint", TOY_ARG, "train", "--position", "20", "--instructions", "remaining"]
    status, out, _ = run(capsys, *argv, "--json")
    assert status == 0
    listed = json.loads(out)["instructions"]
    plan = ReadPlan(TOY_INFO, "train")
    expected = plan.checkpoint(0, 20).expanded().remaining_instructions()
    assert [(i["filename"], i["skip"], i["take"]) for i in listed] == [
        (fi.filename, fi.skip, fi.take) for fi in expected
    ]
    status, out, _ = run(capsys, "checkpoint", TOY_ARG, "train", "--position", "20", "--json")
    assert json.loads(out)["position"] == 20


def test_a_seed_without_shuffled_files_warns_and_seeds_of_any_size_are_taken(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "order", TOY_ARG, "train", "--seed", "3", "--count", "1")
    assert status == 0
    assert "warning: --seed 3 has no effect without --shuffle-files" in err
    # TF folds a seed of any size (tests/data/tfds_round3 records TFDS's orders for them).
    status, _, _ = run(
        capsys, "order", TOY_ARG, "train", "--shuffle-files", "--seed", str(2**64 + 17)
    )
    assert status == 0
    with pytest.raises(SystemExit) as exited:
        main(["order", TOY_ARG, "train", "--shuffle-files", "--seed", "1.5"])
    assert exited.value.code == 2
    assert "expected a seed, an integer in -2**1024..2**1024; got '1.5'" in capsys.readouterr().err


def test_order_from_a_saved_state_continues_where_it_stands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plan = ReadPlan(TOY_INFO, "train")
    reader = Reader(plan)
    for _ in zip(range(7), reader):
        pass
    saved = tmp_path / "state.json"
    reader.save(saved)
    status, out, err = run(capsys, "order", TOY_ARG, "train", "--from", str(saved), "--count", "3")
    assert status == 0
    expected = plan.epoch(0).global_ids()[7:10].tolist()
    assert [int(x) for x in out.split()] == expected
    assert f"{saved}: epoch 0, next position 7 of 49" in err
    _, out, _ = run(capsys, "order", TOY_ARG, "train", "--from", str(saved), "--json")
    assert json.loads(out.splitlines()[0])["position"] == 7
    other = ReadPlan(TOY_INFO, "train[:10]")
    assert other.num_examples != plan.num_examples
    status, _, err = run(capsys, "order", TOY_ARG, "train[:10]", "--from", str(saved))
    assert status == 2
    assert "error" in err


def test_repr_of_a_dataset_with_many_shards_is_a_summary() -> None:
    text = repr(DatasetInfo.from_catalog("imagenet2012"))
    assert "<1024 shards: 1251, 1251, 1251, ..., 1251; 1281167 records>" in text
    assert len(text) < 400
    small = repr(DatasetInfo("small", {"train": [3, 4]}))
    assert "shard_lengths=(3, 4)" in small
