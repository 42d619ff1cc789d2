"""The command line's answers: the examples of a training step, the read configuration of a
saved state, retries said on stderr, and messages that name what is wrong in CLI terms."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest

import _readplan_cli
import readplan
from readplan import storage
from readplan.cli.main import build_parser
from readplan.errors import ConfigError, SplitError, StorageError
from tests.cli_runs import TOY_ARG, run
from tests.tfds_toy import TOY_INFO
from tests.tfrecord_fixtures import FIXTURES

SHUFFLED = ("--shuffle-files", "--seed", "7", "--cycle-length", "3", "--block-length", "2")


def _batches(batch_size: int, epochs: int, drop_remainder: bool = False) -> list[list[str]]:
    """What a Reader's batches hold, by tfds_id: the independent account of each step."""
    plan = readplan.ReadPlan(
        TOY_INFO,
        "train",
        readplan.ReadConfig(
            interleave_cycle_length=3,
            interleave_block_length=2,
            shuffle_files=True,
            shuffle_seed=7,
        ),
    )
    with readplan.Reader(plan, epochs=epochs) as reader:
        batches = reader.batches(batch_size, drop_remainder=drop_remainder)
        return [[plan.epoch(b.epoch).tfds_ids()[p] for p in b.positions.tolist()] for b in batches]


@pytest.mark.parametrize("drop", [False, True])
def test_order_step_gives_the_examples_of_that_training_step(
    capsys: pytest.CaptureFixture[str], drop: bool
) -> None:
    batches = _batches(5, epochs=3, drop_remainder=drop)
    flags = ["--drop-remainder"] if drop else []
    for step in (0, 3, len(batches) // 3, len(batches) - 1):
        status, out, _ = run(
            capsys, "order", TOY_ARG, "train", *SHUFFLED, "--batch-size", "5", "--step", str(step),
            "--format", "tfds_id", *flags,
        )  # fmt: skip
        assert status == 0
        header, *ids = out.splitlines()
        assert header.startswith(f"# step {step}: epoch ")
        assert ids == batches[step], step


def test_order_steps_range_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    batches = _batches(4, epochs=2)
    first, last = len(batches) // 2 - 2, len(batches) // 2 + 2  # across the epoch boundary
    status, out, _ = run(
        capsys, "order", TOY_ARG, "train", *SHUFFLED, "--batch-size", "4", "--steps",
        f"{first}:{last}", "--json",
    )  # fmt: skip
    assert status == 0
    lines = [json.loads(line) for line in out.splitlines()]
    for step in range(first, last):
        assert [x["tfds_id"] for x in lines if x["step"] == step] == batches[step]
    assert {x["epoch"] for x in lines} == {0, 1}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--step", "1"), "--step/--steps need --batch-size"),
        (("--batch-size", "4"), "--batch-size needs --step"),
        (("--batch-size", "4", "--steps", "5:2"), "A <= B"),
        (("--batch-size", "4", "--step", "1", "--start", "3"), "leave out --start"),
        (("--batch-size", "99", "--step", "0", "--drop-remainder"), "no step of --batch-size"),
    ],
)
def test_order_step_errors(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    status, _, err = run(capsys, "order", TOY_ARG, "train", *extra)
    assert status == 2
    assert message in err


def test_order_from_a_state_takes_its_read_configuration(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved = tmp_path / "ck.json"
    status, out, _ = run(
        capsys, "checkpoint", TOY_ARG, "train[2:]", *SHUFFLED, "--epoch", "1", "--position",
        "6", "-o", str(saved),
    )  # fmt: skip
    assert status == 0
    size = readplan.ReadPlan(TOY_INFO, "train[2:]").num_examples
    assert out == (
        f"wrote {saved} ({saved.stat().st_size:,} bytes): a compact checkpoint at epoch 1, "
        f"position 6 of {size}\n"
    )
    _, typed, _ = run(
        capsys, "order", TOY_ARG, "train[2:]", *SHUFFLED, "--epoch", "1", "--start", "6"
    )
    status, from_state, err = run(capsys, "order", TOY_ARG, "--from", str(saved))
    assert status == 0
    assert from_state == typed
    assert f"epoch 1, next position 6 of {size}" in err
    # Typed flags must agree with the state: a mismatch is refused, not silently used.
    status, _, err = run(capsys, "order", TOY_ARG, "train[2:]", "--seed", "8", "--shuffle-files",
                         "--from", str(saved))  # fmt: skip
    assert status == 2
    assert "shuffle_seed" in err
    # With --step the state gives the configuration only.
    status, out, _ = run(
        capsys, "order", TOY_ARG, "--from", str(saved), "--batch-size", "5", "--step", "0",
        "--format", "tfds_id",
    )  # fmt: skip
    assert status == 0
    plan = readplan.ReadPlan(
        TOY_INFO,
        "train[2:]",
        readplan.ReadConfig(3, 2, shuffle_files=True, shuffle_seed=7),
    )
    assert out.splitlines()[1:] == plan.epoch(0).tfds_ids()[:5]


def test_spec_is_required_without_a_state(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "order", TOY_ARG)
    assert status == 2
    assert "SPEC is missing" in err


def test_checkpoint_output_to_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    fsspec = pytest.importorskip("fsspec")
    url = "memory://readplan-cli-answers/ck.json"
    status, out, _ = run(capsys, "checkpoint", TOY_ARG, "train", "--position", "3", "-o", url)
    assert status == 0
    assert out.startswith(f"wrote {url} (")
    saved = fsspec.filesystem("memory").cat_file("/readplan-cli-answers/ck.json")
    assert readplan.Checkpoint.from_dict(json.loads(saved)).position == 3


def test_the_seed_error_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "order", TOY_ARG, "train", "--shuffle-files")
    assert status == 2
    assert "--shuffle-files without --seed" in err
    assert "Pass --seed <int>" in err
    assert "shuffle_seed=" not in err


def test_strict_refuses_mixed_units(capsys: pytest.CaptureFixture[str]) -> None:
    for spec in ("train[10%:60]", "train[2:50%]", "train[1shard:20]"):
        status, _, err = run(capsys, "plan", "--strict", TOY_ARG, spec)
        assert status == 2, spec
        assert "mixes units" in err
        with pytest.raises(SplitError, match="mixes units"):
            readplan.file_instructions(TOY_INFO, spec, strict=True)
        assert readplan.file_instructions(TOY_INFO, spec)  # TFDS reads them: not strict
    assert run(capsys, "plan", "--strict", TOY_ARG, "train[10%:60%]")[0] == 0


def test_a_catalog_plan_in_a_reader_asks_for_data_dir() -> None:
    plan = readplan.ReadPlan(readplan.DatasetInfo.from_catalog("imagenet2012"), "train")
    with pytest.raises(ConfigError, match=r"Reader\(plan, data_dir=") as caught:
        next(iter(readplan.Reader(plan)))
    assert caught.value.field == "data_dir"


def test_type_errors_read_as_english() -> None:
    with pytest.raises(ConfigError, match=r"\(got an int\)"):
        readplan.ReadConfig(shuffle_files=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"\(it is a str\)"):
        readplan.ReadConfig(interleave_block_length="2")  # type: ignore[arg-type]


@pytest.mark.parametrize("command", ["convert", "inspect", "index"])
def test_positional_arguments_and_format_have_help(command: str) -> None:
    parser = build_parser()
    (sub,) = (a for a in parser._subparsers._group_actions)  # type: ignore[union-attr]
    text = sub.choices[command].format_help()  # type: ignore[index]
    for action in sub.choices[command]._actions:  # type: ignore[index]
        if action.dest != "help":
            assert action.help, (command, action.dest)
    assert "URL" in text or command == "convert"


def test_ctrl_c_while_loading_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_import = builtins.__import__

    def interrupted(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "readplan.cli.main":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert _readplan_cli.main() == 130
    assert "Traceback" not in capsys.readouterr().err


# --- retries said on stderr, bounded ---------------------------------------------------------


def _flaky(failures: int) -> Any:
    left = [failures]

    def call() -> str:
        if left[0]:
            left[0] -= 1
            raise ConnectionResetError("reset by peer")
        return "done"

    return call


def test_each_retry_is_reported_with_attempt_k_of_n() -> None:
    said: list[str] = []
    storage.set_retry_reporter(said.append)
    try:
        policy = storage.RetryPolicy(attempts=4, first_delay=0.0)
        assert storage.with_retries("read", "s3://b/k", _flaky(2), policy) == "done"
    finally:
        storage.set_retry_reporter(None)
    assert [m.split(" to read")[0] for m in said] == [
        "s3://b/k: attempt 1 of 4",
        "s3://b/k: attempt 2 of 4",
    ]
    assert "ConnectionResetError: reset by peer" in said[0]


def test_the_deadline_bounds_the_retries() -> None:
    policy = storage.RetryPolicy(attempts=50, first_delay=0.0, deadline=0.0)
    with pytest.raises(StorageError, match="1 attempts failed"):
        storage.with_retries("read", "s3://b/k", _flaky(10), policy)


def test_the_command_line_reports_retries_and_takes_the_bounds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("fsspec")
    from tests.remote_stores import wrapped_copy

    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "e.tfrecord").write_bytes((FIXTURES / "examples.tfrecord").read_bytes())
    url, options, _ = wrapped_copy(folder, "p", failures=2)
    import fsspec

    monkeypatch.setitem(fsspec.config.conf, "wrapped", {"tag": options["tag"]})
    status, _, err = run(capsys, "--retries", "3", "inspect", f"{url}/e.tfrecord")
    assert status == 0
    assert "attempt 1 of 3" in err
    assert "attempt 2 of 3" in err
    with_one = wrapped_copy(folder, "q", failures=5)
    monkeypatch.setitem(fsspec.config.conf, "wrapped", {"tag": with_one[1]["tag"]})
    status, out, err = run(capsys, "--retries", "2", "inspect", f"{with_one[0]}/e.tfrecord")
    assert status == 2
    assert "attempt 1 of 2" in err
    assert "2 attempts failed" in out


def test_convert_takes_urls_both_ways(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    source = "memory://readplan-convert-src/toy/1.0.0"
    for path in sorted(Path(TOY_ARG).iterdir()):
        storage.write_bytes(f"{source}/{path.name}", path.read_bytes())
    local = tmp_path / "tbl"
    status, _, err = run(capsys, "convert", source, str(local), "--format", "tbl")
    assert status == 0, err
    assert (local / "features.json").read_bytes() == (Path(TOY_ARG) / "features.json").read_bytes()
    back = "memory://readplan-convert-dst/toy/1.0.0"
    status, _, err = run(capsys, "convert", str(local), back, "--format", "tfrecord")
    assert status == 0, err
    for path in sorted(Path(TOY_ARG).glob("*.tfrecord-*")):
        assert fs.cat_file(f"/readplan-convert-dst/toy/1.0.0/{path.name}") == path.read_bytes()
    info = readplan.DatasetInfo.load(back)
    assert info.splits == TOY_INFO.splits
    status, _, err = run(capsys, "convert", str(local), back, "--format", "tfrecord")
    assert status == 2
    assert "already holds a dataset" in err


def test_client_library_retries_are_said_and_its_tracebacks_dropped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse
    import logging

    from readplan.cli.retries import retry_reporting

    args = argparse.Namespace(command="inspect", retries=3, retry_timeout=5.0)
    gcsfs = logging.getLogger("gcsfs")
    level, propagate = gcsfs.level, gcsfs.propagate
    with retry_reporting(args):
        gcsfs.debug("_request retrying after exception: Cannot connect to host 127.0.0.1:9")
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError:
            gcsfs.exception("_request out of retries on exception: refused")
    err = capsys.readouterr().err
    assert err == (
        "readplan inspect: gcsfs retries within one try: _request retrying after exception: "
        "Cannot connect to host 127.0.0.1:9\n"
    )
    assert (gcsfs.level, gcsfs.propagate) == (level, propagate)  # restored after the command
