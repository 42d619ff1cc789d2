"""Sidecars checked before (specs/tfrecord.md §8.2): taken again without a read while
neither file changed, checked again as at first once either did."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from readplan import tfrecord
from readplan.errors import IndexFileError
from readplan.index import build_index, index_path_for
from readplan.records.index import _checked, _sidecar
from readplan.tfrecord import RecordFile
from tests.tfrecord_fixtures import FIXTURES

RECORDS = [bytes([k]) * (10 + k) for k in range(20)]


@pytest.fixture(autouse=True)
def fresh() -> Any:
    _sidecar.CHECKED.clear()
    yield
    _sidecar.CHECKED.clear()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sidecars read from disk, in order."""
    seen: list[str] = []
    original = _sidecar._read_sidecar

    def counted(target: str, storage_options: Any) -> Any:
        seen.append(target)
        return original(target, storage_options)

    monkeypatch.setattr(_sidecar, "_read_sidecar", counted)
    return seen


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled as soon as they were written (instead of 2 s later)."""
    monkeypatch.setattr(_checked, "SETTLED_NS", 0)


def indexed_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.tfrecord"
    tfrecord.write(path, RECORDS)
    build_index(path)
    return path


def opened(path: Path) -> tuple[bool, list[bytes]]:
    with RecordFile(path) as rf:
        return rf.indexed, list(rf.read(0, len(rf)))


def refused_field(path: Path) -> str | None:
    with pytest.raises(IndexFileError) as caught:
        RecordFile(path)
    return caught.value.field


def later(path: Path) -> None:
    """Move the file's modification time on, as a write in a later clock tick does."""
    status = os.stat(path)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))


@pytest.mark.usefixtures("settled")
def test_a_settled_sidecar_is_not_read_again(tmp_path: Path, reads: list[str]) -> None:
    path = indexed_file(tmp_path)
    first = RecordFile(path)
    second = RecordFile(path)
    assert reads == [index_path_for(path)]
    assert first.indexed
    assert second.indexed
    expected = np.cumsum([0] + [len(r) + 16 for r in RECORDS[:-1]])
    assert second.offsets.tolist() == expected.tolist()
    assert list(second.read(0, len(RECORDS))) == RECORDS
    first.close()
    second.close()


def test_a_sidecar_just_written_is_read_at_every_open(tmp_path: Path, reads: list[str]) -> None:
    # Within SETTLED_NS of a check, a change could keep the file's times: nothing is kept.
    path = indexed_file(tmp_path)
    assert opened(path) == (True, RECORDS)
    assert opened(path) == (True, RECORDS)
    assert reads == [index_path_for(path)] * 2


def _last_byte_flipped(index: Path) -> bytearray:
    """The bytes of ``index`` with one bit of its last byte (the offsets' CRC) flipped."""
    damaged = bytearray(index.read_bytes())
    damaged[-1] ^= 1
    return damaged


@pytest.mark.usefixtures("settled")
def test_a_replaced_sidecar_is_checked_again(tmp_path: Path, reads: list[str]) -> None:
    path = indexed_file(tmp_path)
    assert opened(path) == (True, RECORDS)
    index = Path(index_path_for(path))
    damaged = _last_byte_flipped(index)
    replacement = tmp_path / "new.index"
    replacement.write_bytes(bytes(damaged))
    os.replace(replacement, index)
    assert refused_field(path) == "offsets_crc"
    assert len(reads) == 2


@pytest.mark.usefixtures("settled")
def test_a_sidecar_rewritten_in_place_is_checked_again(tmp_path: Path, reads: list[str]) -> None:
    path = indexed_file(tmp_path)
    assert opened(path) == (True, RECORDS)
    index = Path(index_path_for(path))
    damaged = _last_byte_flipped(index)
    with open(index, "r+b") as handle:  # same inode, same size
        handle.write(bytes(damaged))
    later(index)
    assert refused_field(path) == "offsets_crc"


@pytest.mark.usefixtures("settled")
def test_a_changed_data_file_is_checked_again(tmp_path: Path, reads: list[str]) -> None:
    path = indexed_file(tmp_path)
    assert opened(path) == (True, RECORDS)
    data = bytearray(path.read_bytes())
    data[20] ^= 1  # within the first 64 KiB: the binding CRC differs
    with open(path, "r+b") as handle:
        handle.write(bytes(data))
    later(path)
    assert refused_field(path) == "binding_crc"
    tfrecord.write(path, RECORDS[:3])
    assert refused_field(path) == "data_size"


@pytest.mark.usefixtures("settled")
def test_a_removed_sidecar_is_not_used(tmp_path: Path) -> None:
    path = indexed_file(tmp_path)
    assert opened(path) == (True, RECORDS)
    os.remove(index_path_for(path))
    assert opened(path) == (False, RECORDS)


@pytest.mark.usefixtures("settled")
def test_a_refused_sidecar_is_refused_at_every_open(tmp_path: Path, reads: list[str]) -> None:
    path = indexed_file(tmp_path)
    index = Path(index_path_for(path))
    index.write_bytes(index.read_bytes()[:-1])
    assert refused_field(path) == "record_count"
    assert refused_field(path) == "record_count"
    assert len(reads) == 2


@pytest.mark.usefixtures("settled")
def test_a_copy_elsewhere_is_checked_on_its_own(tmp_path: Path, reads: list[str]) -> None:
    path = indexed_file(tmp_path)
    other = tmp_path / "copy.tfrecord"
    shutil.copy(path, other)
    shutil.copy(index_path_for(path), index_path_for(other))
    assert opened(path) == (True, RECORDS)
    assert opened(other) == (True, RECORDS)
    assert reads == [index_path_for(path), index_path_for(other)]


@pytest.mark.usefixtures("settled")
def test_the_least_recently_used_are_forgotten(tmp_path: Path) -> None:
    paths = {}
    for name in "abc":
        path = tmp_path / f"{name}.tfrecord"
        shutil.copy(FIXTURES / "examples.tfrecord", path)
        build_index(path)
        paths[name] = path
    size = len(RecordFile(paths["a"], use_index=False).offsets)
    checked = _checked.CheckedSidecars(max_offsets=2 * size)
    loaded: list[str] = []

    def load(name: str) -> None:
        path = paths[name]
        with open(path, "rb") as handle:

            def check() -> Any:
                loaded.append(name)
                return _sidecar.load_index(path)

            checked.load((str(path), index_path_for(path), None), handle.fileno(), check)

    for name in "abac":  # c makes room by forgetting b, the least recently used
        load(name)
    load("a")
    load("b")
    assert loaded == ["a", "b", "c", "b"]


@pytest.mark.usefixtures("settled")
def test_a_child_forked_while_the_lock_is_held_still_opens_files(tmp_path: Path) -> None:
    path = indexed_file(tmp_path)
    assert opened(path) == (True, RECORDS)
    with _sidecar.CHECKED._lock:  # as another thread of the parent may hold it
        pid = os.fork()
        if pid == 0:  # the child: opens the file (and so takes the lock) and reports
            signal.alarm(20)  # a child left waiting for the lock ends, failing the test
            os._exit(0 if opened(path) == (True, RECORDS) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
