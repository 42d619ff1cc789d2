"""Progress of a conversion per record (specs/tbl.md §9): ``records_progress`` hears of every
record as it is converted, in one process and from worker processes, before the shard's own
``progress`` call, and ``readplan convert`` draws its bar in records."""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any

import pytest

import readplan.cli.convert as cli_convert
from readplan import convert_tasks, storage
from readplan._internal.progress import Progress
from readplan.cli import main
from readplan.convert import ConvertedShard, convert
from tests.tfds_toy import TOY_DIR, TOY_INFO

pytest.importorskip("fastcrc")
pytest.importorskip("PIL")

RAW_SOURCE = Path(__file__).parent / "data" / "tfds_raw" / "readplan_raw" / "1.0.0"
RAW_RECORDS = 52  # 40 train and 12 test records, in 3 shards each


def _events(tmp_path: Path, workers: int, **kwargs: Any) -> list[tuple[Any, ...]]:
    """The calls of both callbacks, in order: ("records", added) and ("shard", split, k, n)."""
    events: list[tuple[Any, ...]] = []

    def shard(done: ConvertedShard) -> None:
        events.append(("shard", done.split, done.shard_index, done.records))

    convert(
        RAW_SOURCE,
        tmp_path / f"out{workers}",
        raw=True,
        image_size=6,
        workers=workers,
        progress=shard,
        records_progress=lambda added: events.append(("records", added)),
        **kwargs,
    )
    return events


@pytest.mark.parametrize("workers", [1, 2])
def test_every_record_is_reported_before_its_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    # Every record reported as it is done (worker processes are told so when they start).
    monkeypatch.setattr(convert_tasks, "EVERY", 0.0)
    events = _events(tmp_path, workers)
    added = [e[1] for e in events if e[0] == "records"]
    assert added == [1] * RAW_RECORDS
    shards = [e[1:] for e in events if e[0] == "shard"]
    assert [s[:2] for s in shards] == [(split, k) for split in ("train", "test") for k in range(3)]
    # By each shard's call, at least its records and those of the shards before it were heard of.
    heard, before = 0, 0
    for event in events:
        if event[0] == "records":
            heard += event[1]
        else:
            before += event[3]
            assert heard >= before


@pytest.mark.parametrize("workers", [1, 2])
def test_reports_add_up_to_the_records_at_the_default_pace(tmp_path: Path, workers: int) -> None:
    events = _events(tmp_path, workers)
    assert sum(e[1] for e in events if e[0] == "records") == RAW_RECORDS


def test_plain_conversions_and_store_targets_report_records(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    total = sum(split.num_examples for split in TOY_INFO.splits.values())
    for target in (str(tmp_path / "tbl"), "memory://readplan-progress/toy/1.0.0"):
        added: list[int] = []
        convert(TOY_DIR, target, format="tbl", records_progress=added.append)
        assert sum(added) == total
        assert storage.exists(storage.join(target, "dataset_info.json"))


def test_the_command_line_bar_counts_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    drawn = io.StringIO()
    bar = functools.partial(Progress, delay=0.0, stream=drawn, force=True)
    monkeypatch.setattr(cli_convert, "Progress", bar)
    argv = ["convert", str(RAW_SOURCE), str(tmp_path / "raw"), "--format", "tbl", "--raw"]
    assert main([*argv, "--image-size", "6", "--workers", "2"]) == 0
    assert f"100.0% {RAW_RECORDS}/{RAW_RECORDS} records" in drawn.getvalue()
    assert "6 tbl shards, 52 records" in capsys.readouterr().out
