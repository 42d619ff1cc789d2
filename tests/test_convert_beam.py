"""Conversions run as Apache Beam pipelines on the DirectRunner (specs/tbl.md §9).

Every pipeline here really runs: in this process, or with two worker processes
(``--direct_running_mode=multi_processing``).  The files a pipeline writes are compared
byte for byte with the local runner's, and a round trip back to TFRecord with the
TFDS-written files themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from readplan import DatasetInfo, storage, tbl
from readplan.cli import main
from readplan.convert import _Output, _tasks, _verify, convert
from readplan.convert_publish import publish_bytes
from readplan.errors import ConfigError, ConfigTypeError, ConversionError, DatasetInfoError
from readplan.reading.containers import readable
from tests.tfds_toy import TOY_DIR

pytest.importorskip("fastcrc")
pytest.importorskip("apache_beam")

RAW_SOURCE = Path(__file__).parent / "data" / "tfds_raw" / "readplan_raw" / "1.0.0"
IN_PROCESS = "--runner=DirectRunner"
TWO_PROCESSES = (
    "--runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing"
)
INFO = "dataset_info.json"


def assert_same_files(got: Path, expected: Path) -> None:
    names = sorted(p.name for p in expected.iterdir())
    assert sorted(p.name for p in got.iterdir()) == names
    for name in names:
        assert (got / name).read_bytes() == (expected / name).read_bytes(), name


@pytest.fixture(scope="module")
def local_tbl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The local runner's conversion of the TFDS toy dataset, for comparison."""
    target = tmp_path_factory.mktemp("local") / "tbl"
    convert(TOY_DIR, target, format="tbl")
    return target


def broken_copy(tmp_path: Path, damage: str) -> tuple[Path, Path]:
    """A copy of the toy dataset whose train shard 2 is damaged; returns (copy, shard)."""
    source = tmp_path / "src"
    shutil.copytree(TOY_DIR, source)
    shard = source / "readplan_toy-train.tfrecord-00002-of-00008"
    data = bytearray(shard.read_bytes())
    if damage == "bytes":
        data[-5] ^= 0xFF  # the last record's data CRC no longer matches
        shard.write_bytes(bytes(data))
    else:
        fields = json.loads((source / INFO).read_text())
        fields["splits"][0]["shardLengths"][2] = str(
            int(fields["splits"][0]["shardLengths"][2]) + 1
        )
        (source / INFO).write_text(json.dumps(fields))
    return source, shard


@pytest.mark.parametrize("options", [IN_PROCESS, None])
def test_tfrecord_to_tbl_is_the_local_runners_conversion(
    tmp_path: Path, local_tbl: Path, options: str | None
) -> None:
    done: list[tuple[str, int]] = []
    added: list[int] = []
    shards = convert(
        TOY_DIR,
        tmp_path / "beam",
        format="tbl",
        runner="beam",
        beam_options=options,
        progress=lambda shard: done.append((shard.split, shard.shard_index)),
        records_progress=added.append,
    )
    assert done == [(s.split, s.shard_index) for s in shards]
    assert added == [s.records for s in shards]
    assert len(shards) == 11
    assert sum(s.records for s in shards) == 62
    assert_same_files(tmp_path / "beam", local_tbl)


def test_tbl_back_to_tfrecord_gives_the_tfds_files(tmp_path: Path, local_tbl: Path) -> None:
    back = tmp_path / "back"
    convert(local_tbl, back, format="tfrecord", runner="beam", beam_options=[IN_PROCESS])
    assert_same_files(back, TOY_DIR)


def test_raw_conversion_on_two_worker_processes(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    local = tmp_path / "local"
    convert(RAW_SOURCE, local, raw=True, image_size=12)
    convert(
        RAW_SOURCE,
        tmp_path / "beam",
        raw=True,
        image_size=12,
        runner="beam",
        beam_options=TWO_PROCESSES,
    )
    assert_same_files(tmp_path / "beam", local)


@pytest.mark.parametrize(
    ("damage", "options", "cause"),
    [
        ("shard_lengths", IN_PROCESS, "DatasetInfoError"),
        ("bytes", TWO_PROCESSES, "CorruptRecordError"),
    ],
)
def test_a_failing_shard_is_named_and_leaves_no_dataset(
    tmp_path: Path, damage: str, options: str, cause: str
) -> None:
    source, shard = broken_copy(tmp_path, damage)
    target = tmp_path / "dst"
    with pytest.raises(ConversionError) as caught:
        convert(source, target, format="tbl", runner="beam", beam_options=options)
    assert caught.value.shard == "train[2]"
    assert caught.value.path == str(shard)
    assert caught.value.cause == cause
    message = str(caught.value)
    assert f"converting shard train[2] ({shard}) failed: {cause}" in message
    assert "no dataset_info.json was written" in message
    assert not (target / INFO).exists()
    assert not (target / "readplan_toy-train.tbl-00002-of-00008").exists()
    with pytest.raises(Exception, match=INFO):
        DatasetInfo.load(target)


def test_a_rerun_after_an_interruption_completes_the_same_dataset(
    tmp_path: Path, local_tbl: Path
) -> None:
    source, shard = broken_copy(tmp_path, "bytes")
    target = tmp_path / "dst"
    with pytest.raises(ConversionError, match=r"train\[2\]"):
        convert(source, target, format="tbl", runner="beam", beam_options=IN_PROCESS)
    assert not (target / INFO).exists()
    # What a unit killed mid-write leaves: its private folder with a partial file.
    killed = target / ".readplan-unit-killed"
    killed.mkdir()
    (killed / "readplan_toy-train.tbl-00004-of-00008").write_bytes(b"TBL\x02partial")
    # A shard published by the first run is kept; the repaired source completes the rest.
    shutil.copy(TOY_DIR / shard.name, shard)
    convert(source, target, format="tbl", runner="beam", beam_options=IN_PROCESS)
    assert_same_files(target, local_tbl)


def test_a_users_file_is_never_replaced(tmp_path: Path, local_tbl: Path) -> None:
    target = tmp_path / "dst"
    target.mkdir()
    mine = target / "readplan_toy-train.tbl-00003-of-00008"
    mine.write_bytes(b"my own file")
    with pytest.raises(ConversionError, match="not replaced") as caught:
        convert(TOY_DIR, target, format="tbl", runner="beam", beam_options=IN_PROCESS)
    assert caught.value.shard == "train[3]"
    assert caught.value.cause == "ConfigError"
    assert mine.read_bytes() == b"my own file"
    assert not (target / INFO).exists()
    # The local runner keeps it too.
    with pytest.raises(ConfigError, match=f"{mine} already exists"):
        convert(TOY_DIR, target, format="tbl")
    assert mine.read_bytes() == b"my own file"
    # Once it is the file the conversion writes, it is kept and the dataset completed.
    mine.write_bytes((local_tbl / mine.name).read_bytes())
    convert(TOY_DIR, target, format="tbl", runner="beam", beam_options=IN_PROCESS)
    assert_same_files(target, local_tbl)


def test_a_published_shard_is_verified_against_its_shard_length(tmp_path: Path) -> None:
    """What the driver checks once the pipeline is done: a shard file whose record count is
    not its shardLengths entry (a runner that lost or never ran a unit) stops the
    conversion before dataset_info.json."""
    info = readable(DatasetInfo.load(TOY_DIR))
    output = _Output("tbl", False, None, 1)
    task = _tasks(info, str(tmp_path), output)[3]
    with pytest.raises(FileNotFoundError):
        _verify(task)
    tbl.write(task.shard.target, [b"one record"])
    with pytest.raises(DatasetInfoError, match=r"holds 1 records after the conversion, not the"):
        _verify(task)


def test_a_unit_run_twice_publishes_one_file(tmp_path: Path) -> None:
    target = str(tmp_path / "file")
    publish_bytes(b"the converted bytes", target)
    publish_bytes(b"the converted bytes", target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    with pytest.raises(ConfigError, match="not replaced"):
        publish_bytes(b"other bytes", target)
    assert (tmp_path / "file").read_bytes() == b"the converted bytes"


def test_a_store_target_gets_the_local_runners_files(tmp_path: Path, local_tbl: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    url = "memory://readplan-convert-beam/toy/1.0.0"
    convert(TOY_DIR, url, format="tbl", runner="beam", beam_options=IN_PROCESS)
    fs = fsspec.filesystem("memory")
    stored = sorted(storage.basename(path) for path in fs.ls(url, detail=False))
    assert stored == sorted(p.name for p in local_tbl.iterdir())
    for name in stored:
        assert storage.read_bytes(f"{url}/{name}") == (local_tbl / name).read_bytes(), name
    with pytest.raises(ConfigError, match="already holds a dataset"):
        convert(TOY_DIR, url, format="tbl", runner="beam", beam_options=IN_PROCESS)
    back = "memory://readplan-convert-beam/back/1.0.0"
    convert(url, back, format="tfrecord", runner="beam", beam_options=IN_PROCESS)
    for path in sorted(TOY_DIR.glob("*.tfrecord-*")):
        assert storage.read_bytes(f"{back}/{path.name}") == path.read_bytes()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ("--direct_num_worker=2", "'--direct_num_worker=2' is not an option"),
        ("--direct_num_workers=two", "invalid int value: 'two'"),
        ("--runner='DirectRunner", "No closing quotation"),
        ("--runner=NoSuchRunner", "NoSuchRunner"),
    ],
)
def test_options_beam_would_drop_or_refuse_are_errors(
    tmp_path: Path, options: str, match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        convert(TOY_DIR, tmp_path / "x", format="tbl", runner="beam", beam_options=options)
    assert not (tmp_path / "x").exists()


def test_a_conversion_leaves_no_pipeline_folder_in_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every Beam pipeline makes a folder when built, which only running it removes; the
    # options are checked by building one (Beam's job server and caches are its own).
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    convert(TOY_DIR, tmp_path / "x", format="tbl", runner="beam", beam_options=IN_PROCESS)
    with pytest.raises(ConfigError, match="not an option"):
        convert(TOY_DIR, tmp_path / "y", format="tbl", runner="beam", beam_options="--nope=1")
    assert [name for name in os.listdir(temporary) if name.startswith("beam-pipeline")] == []


def test_runner_refusals(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="runner='beam'"):
        convert(TOY_DIR, tmp_path / "x", beam_options=IN_PROCESS)
    with pytest.raises(ConfigError, match="direct_num_workers"):
        convert(TOY_DIR, tmp_path / "x", runner="beam", workers=2)
    with pytest.raises(ConfigError, match="'spark' is not a runner"):
        convert(TOY_DIR, tmp_path / "x", runner="spark")  # type: ignore[arg-type]
    with pytest.raises(ConfigTypeError, match="beam_options"):
        convert(TOY_DIR, tmp_path / "x", runner="beam", beam_options=3)


def test_cli_runs_on_beam(
    tmp_path: Path, local_tbl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "cli"
    argv = ["convert", str(TOY_DIR), str(target), "--format", "tbl", "--runner", "beam"]
    assert main([*argv, "--beam-options", f"{IN_PROCESS} --direct_num_workers=1"]) == 0
    assert "11 tbl shards, 62 records" in capsys.readouterr().out
    assert_same_files(target, local_tbl)
    assert main([*argv, "--beam-options=--no_such_option"]) == 2
    assert "--no_such_option" in capsys.readouterr().err
    assert main([*argv[:-2], f"--beam-options={IN_PROCESS}"]) == 2
    assert "beam_options applies to runner='beam'" in capsys.readouterr().err


def test_worker_processes_write_into_an_object_store(
    gcs_store: Any, tmp_path: Path, local_tbl: Path
) -> None:
    """Two DirectRunner worker processes upload the shards to a GCS emulator themselves,
    reaching it by fsspec's environment configuration, as a cluster's workers would."""
    from tests.remote_stores import pin_clients_to_loopback

    pin_clients_to_loopback()
    fs = gcs_store.filesystem()
    fs.mkdir("beam-target")
    url = gcs_store.url("beam-target", "toy/1.0.0")
    env = {
        **os.environ,
        "FSSPEC_GS_TOKEN": "anon",
        "FSSPEC_GS_PROJECT": "test",
        "FSSPEC_GS_ENDPOINT_URL": gcs_store.endpoint,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    command = ["convert", str(TOY_DIR), url, "--format", "tbl", "--runner", "beam"]
    done = subprocess.run(
        [sys.executable, "-m", "readplan", *command, "--beam-options", TWO_PROCESSES],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "11 tbl shards, 62 records" in done.stdout
    fs.invalidate_cache()
    names = sorted(p.name for p in local_tbl.iterdir())
    assert sorted(path.rsplit("/", 1)[-1] for path in fs.ls("beam-target/toy/1.0.0")) == names
    for name in names:
        assert fs.cat_file(f"beam-target/toy/1.0.0/{name}") == (local_tbl / name).read_bytes()
