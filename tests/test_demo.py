"""readplan demo: the dataset it writes, its report, and its verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from readplan import Checkpoint, ReadConfig, Reader, ReadPlan, demo, tfrecord
from readplan.cli import main
from readplan.errors import ConfigError
from readplan.example import decode
from readplan.metadata.dataset_info import DatasetInfo

TRAIN = demo.DEFAULT_SPLITS["train"]


def test_demo_writes_a_tfds_layout_with_uneven_shards(tmp_path: Path) -> None:
    info = demo.write_dataset(tmp_path / "data")
    document = json.loads((tmp_path / "data" / "dataset_info.json").read_text())
    train = next(s for s in document["splits"] if s["name"] == "train")
    assert train["shardLengths"] == [str(n) for n in TRAIN]
    assert info.splits["train"].shard_lengths == TRAIN
    payload = sum(
        Path(path).stat().st_size - 16 * n for path, n in zip(info.shard_paths("train"), TRAIN)
    )
    assert train["numBytes"] == str(payload)
    ids: list[int] = []
    for path in info.shard_paths("train"):
        assert Path(path + ".index").is_file()
        ids.extend(int(decode(r)["id"][0]) for r in tfrecord.read(path))
    assert ids == list(range(sum(TRAIN)))
    with pytest.raises(ConfigError, match="not empty"):
        demo.write_dataset(tmp_path / "data")


def test_cli_demo_resumes_exactly_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "demo"
    assert main(["demo", "--dir", str(target), "--seed", "5", "--stop-at", "300"]) == 0
    out = capsys.readouterr().out
    total = 2 * sum(TRAIN)
    assert "shuffle_files with seed 5" in out
    assert f"preempted  after 300 records: epoch 1, position {300 - sum(TRAIN)}" in out
    assert f"check      stitched run == uninterrupted run: OK (300 + {total - 300} records" in out
    saved = Checkpoint.load(target / "checkpoint.json")
    assert (saved.epoch, saved.position) == (1, 300 - sum(TRAIN))
    assert f"({(target / 'checkpoint.json').stat().st_size} bytes" in out
    config = ReadConfig(
        interleave_cycle_length=4, interleave_block_length=8, shuffle_files=True, shuffle_seed=5
    )
    plan = ReadPlan(DatasetInfo.load(target), "train", config)
    first = next(iter(Reader(plan, epochs=2, start=saved, decode=True)))
    assert isinstance(first.record, dict)
    assert f"first record id {int(first.record['id'][0])} (epoch 1" in out


@pytest.mark.parametrize("stop_at", [0, 2 * sum(TRAIN)])
def test_demo_stops_at_either_end(tmp_path: Path, stop_at: int) -> None:
    report = demo.run(tmp_path, demo.DemoConfig(stop_at=stop_at, cycle_length=3, block_length=2))
    assert report.ok
    assert len(report.before) == stop_at
    assert report.uninterrupted == report.before + report.after
    text = demo.format_report(report)
    assert ("nothing left to read" in text) == (stop_at == 2 * sum(TRAIN))


def test_demo_fails_when_the_resume_is_not_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class SkippingReader(Reader):
        """Resumes one record too late, as a buggy resume would."""

        def __init__(self, plan: Any, **kwargs: Any) -> None:
            start = kwargs.pop("start", None)
            if start is not None:
                kwargs["start"] = plan.checkpoint(start.epoch, start.position + 1)
            super().__init__(plan, **kwargs)

    monkeypatch.setattr(demo, "Reader", SkippingReader)
    assert main(["demo", "--dir", str(tmp_path / "demo"), "--stop-at", "100"]) == 1
    out = capsys.readouterr().out
    assert "check      stitched run == uninterrupted run: FAILED (record 100 is id" in out


def test_demo_refuses_a_stop_beyond_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--dir", str(tmp_path / "d"), "--stop-at", "100000"]) == 2
    assert "stop_at=100000 is beyond the run" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cycle_length": 0}, "cycle_length"),
        ({"epochs": True}, "epochs"),
        ({"stop_at": -1}, "stop_at"),
    ],
)
def test_demo_config_is_checked(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        demo.DemoConfig(**kwargs)
    assert raised.value.field == field


def test_python_m_readplan_demo_runs_in_a_temporary_directory() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "readplan", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "stitched run == uninterrupted run: OK" in result.stdout
    directory = next(
        line.split(" in ", 1)[1]
        for line in result.stdout.splitlines()
        if line.startswith("dataset")
    )
    assert not Path(directory).exists()
