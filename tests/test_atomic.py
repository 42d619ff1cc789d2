"""The one atomic, durable write used for checkpoints and index sidecars."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan import Checkpoint, DatasetInfo, Reader, ReadPlan, build_index, tfrecord
from readplan._internal.atomic import atomic_output, atomic_write
from readplan.cli import main
from readplan.errors import StorageError
from tests.tfds_toy import TOY_DIR


def _dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("umask_022")
def test_files_get_the_permissions_of_a_normal_file(tmp_path: Path) -> None:
    """0o666 less the umask, as open() would give, not mkstemp's private 0o600."""
    target = tmp_path / "state.json"
    atomic_write(target, b"{}")
    assert _mode(target) == 0o644
    data = tmp_path / "d.tfrecord"
    tfrecord.write(data, [b"x"])
    assert _mode(Path(build_index(data))) == 0o644
    plan = ReadPlan(DatasetInfo(name="d", splits={"train": [3, 4]}), "train")
    plan.checkpoint(0, 2).save(tmp_path / "ck.json")
    assert _mode(tmp_path / "ck.json") == 0o644


def test_replaces_the_whole_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f"
    atomic_write(target, b"old contents that are longer")
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_temporaries_of_killed_writers_on_this_host_are_removed(tmp_path: Path) -> None:
    host = socket.gethostname()
    dead = tmp_path / f".ck.json.{host}.{_dead_pid()}.deadbeef.tmp"
    alive = tmp_path / f".ck.json.{host}.{os.getppid()}.cafebabe.tmp"
    other_host = tmp_path / f".ck.json.elsewhere.{_dead_pid()}.feedface.tmp"
    other_target = tmp_path / f".other.json.{host}.{_dead_pid()}.0badf00d.tmp"
    for leftover in (dead, alive, other_host, other_target):
        leftover.write_bytes(b"partial")
    atomic_write(tmp_path / "ck.json", b"{}")
    assert not dead.exists()
    assert alive.exists()
    assert other_host.exists()
    assert other_target.exists()


def test_errors_name_the_users_path_not_the_temporary(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "ck.json"
    with pytest.raises(FileNotFoundError) as raised:
        atomic_write(missing, b"{}")
    assert raised.value.filename == os.fspath(missing)
    assert ".tmp" not in str(raised.value)


def test_a_failed_rename_keeps_the_old_file_and_names_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "ck.json"
    atomic_write(target, b"old")

    def refuse(*args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError) as raised:
        atomic_write(target, b"new")
    assert raised.value.filename == os.fspath(target)
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["ck.json"]


def test_checkpoint_load_round_trips_what_save_wrote(tmp_path: Path) -> None:
    plan = ReadPlan(DatasetInfo(name="d", splits={"train": [3, 4]}), "train")
    checkpoint = plan.checkpoint(0, 5)
    checkpoint.save(tmp_path / "ck.json")
    assert Checkpoint.load(tmp_path / "ck.json") == checkpoint


def _die_half_way(target: Path, data: bytes) -> None:
    with atomic_output(target) as handle:
        handle.write(data[: len(data) // 2])
        raise RuntimeError("the writer died half-way")


@given(
    contents=st.lists(st.binary(max_size=2_000), min_size=1, max_size=5),
    fail_at=st.none() | st.integers(min_value=0, max_value=4),
)
@example(contents=[b"", b"x"], fail_at=None).via("an empty file replaced")
@example(contents=[b"old", b"new"], fail_at=1).via("a failed write keeps the old file")
@settings(max_examples=40, deadline=None)
def test_the_file_holds_the_last_complete_write(contents: list[bytes], fail_at: int | None) -> None:
    """Whatever the sequence of writes, and one of them failing half-way, the file holds the
    last write that completed, in full, and no temporary is left."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "state.json"
        last: bytes | None = None
        for k, data in enumerate(contents):
            if k == fail_at:
                with pytest.raises(RuntimeError):
                    _die_half_way(target, data)
            else:
                atomic_write(target, data)
                last = data
        if last is None:
            assert not target.exists()
        else:
            assert target.read_bytes() == last
        assert os.listdir(folder) == (["state.json"] if last is not None else [])


# -- only regular files are replaced ----------------------------------------------------


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _link_to(target: str, tmp_path: Path) -> Path:
    link = tmp_path / "link"
    link.symlink_to(target)
    return link


SPECIAL = {
    "fifo": _fifo,
    "directory": lambda tmp: (tmp / "folder").mkdir() or tmp / "folder",
    "link to a device": lambda tmp: _link_to(os.devnull, tmp),
    "link to standard output": lambda tmp: _link_to("/dev/stdout", tmp),
    "link to a descriptor": lambda tmp: _link_to("/proc/self/fd/1", tmp),
    "dangling link": lambda tmp: _link_to(str(tmp / "nowhere" / "x"), tmp),
    "link to a fifo": lambda tmp: _link_to(str(_fifo(tmp)), tmp),
}


def _shape(path: Path) -> tuple[int, str | None]:
    """What is at ``path`` without following it: its file type, and a link's target."""
    mode = os.lstat(path).st_mode
    return stat.S_IFMT(mode), os.readlink(path) if stat.S_ISLNK(mode) else None


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_special_files_are_refused_and_left_as_they_were(tmp_path: Path, kind: str) -> None:
    target = SPECIAL[kind](tmp_path)
    before = _shape(target)
    with pytest.raises(StorageError) as caught:
        atomic_write(target, b"{}")
    assert caught.value.url == str(target)
    assert "regular file" in str(caught.value)
    assert _shape(target) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_a_link_to_a_regular_file_replaces_that_file_and_stays_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "state.json"
    real.write_bytes(b"old")
    link = _link_to(str(real), tmp_path)
    atomic_write(link, b"new")
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert real.read_bytes() == b"new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["state.json"]


def test_every_atomic_writer_refuses_a_fifo(tmp_path: Path) -> None:
    """Reader states, checkpoints and sidecars share the write: none replaces a FIFO."""
    plan = ReadPlan(DatasetInfo.load(TOY_DIR), "train")
    data = tmp_path / "d.tfrecord"
    tfrecord.write(data, [b"x"])
    os.mkfifo(tmp_path / "d.tfrecord.index")
    writers = {
        "Reader.save": lambda: Reader(plan).save(_fifo_at(tmp_path / "state")),
        "Checkpoint.save": lambda: plan.checkpoint(0, 3).save(_fifo_at(tmp_path / "ckpt")),
        "build_index": lambda: build_index(data),
    }
    for name, write in writers.items():
        with pytest.raises(StorageError, match="FIFO"):
            write()
        assert stat.S_ISFIFO(os.lstat(tmp_path / "d.tfrecord.index").st_mode), name


def _fifo_at(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_special_files_are_not_read_as_record_files(tmp_path: Path) -> None:
    """A device has no size to read to: ``/dev/zero`` read as an empty file and got a
    sidecar.  (Through a link here, so that nothing is ever written into ``/dev``.)"""
    zero = _link_to("/dev/zero", tmp_path)
    with pytest.raises(StorageError, match="not a regular file"):
        build_index(zero)
    with pytest.raises(StorageError, match="not a regular file"):
        list(tfrecord.read(zero))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


def test_the_command_line_writes_only_regular_files_or_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a file named "-" would appear
    toy = str(TOY_DIR)
    fifo = _fifo_at(tmp_path / "out")
    status = main(["checkpoint", toy, "train", "--position", "5", "-o", str(fifo)])
    captured = capsys.readouterr()
    assert status == 2
    assert f"{fifo}: refusing to write over it: it is a FIFO" in captured.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert main(["checkpoint", toy, "train", "--position", "5", "-o", "-"]) == 0
    assert Checkpoint.from_json(capsys.readouterr().out).position == 5
    assert not (tmp_path / "-").exists()
    zero = _link_to("/dev/zero", tmp_path)
    assert main(["index", str(zero)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "out"]
