"""Restoring a Reader from a saved state over a store: the requests it costs, and the data
binding it still enforces (``specs/checkpoint.md`` §4, ``specs/storage.md`` §5).

The state's check of each held shard takes the binding of the shard as the reader opened
it: its sidecar's, checked against the shard, or its ends read through the reader's own
handle. ``wrapped://`` (``tests/remote_stores.py``) counts every request; expected offsets
follow from how the shards are written (1,024-byte records, 1,040-byte frames).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from readplan import tfrecord
from readplan.convert import convert
from readplan.errors import CheckpointMismatchError
from readplan.index import build_index
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadConfig, ReadPlan
from readplan.reading.reader import Reader
from readplan.state.checkpoint import Checkpoint
from tests.big_dataset import big_record, write_big

pytest.importorskip("fsspec")
from tests.remote_stores import put, wrapped_copy

RECORD = 1024
FRAME = RECORD + 16
SPAN = 1 << 16
FIRST_READ = 4 << 20
# One shard larger than 128 KiB (its ends are two reads), one smaller (one read).
SHARDS = {"big-train.tfrecord-00000-of-00002": 300, "big-train.tfrecord-00001-of-00002": 50}
READ_BEFORE_SAVE = 60


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_big(tmp_path_factory.mktemp("restore") / "big" / "1.0.0", list(SHARDS.values()))


class Saved:
    """A dataset copied behind a counting store, read part way, its state saved."""

    def __init__(self, folder: Path, target: Any, *, sidecars: bool) -> None:
        self.url, self.options, self.fs = wrapped_copy(folder, "big/1.0.0", target)
        self.target = target
        info = DatasetInfo.load(self.url, storage_options=self.options)
        if sidecars:
            for shard in info.shard_paths("train"):
                build_index(shard, storage_options=self.options)
        self.plan = ReadPlan(info, "train", ReadConfig(interleave_cycle_length=2))
        reader = Reader(self.plan, storage_options=self.options)
        items = iter(reader)
        self.head = [next(items).record for _ in range(READ_BEFORE_SAVE)]
        self.state = reader.state_dict()
        reader.close()
        slots = Checkpoint.from_dict(self.state).expanded(self.plan).slots
        # Held shard name -> the record the restore reads next in it.
        self.held = {
            os.path.basename(self.plan.instructions.filename(slot[0])): slot[1]
            for slot in slots
            if slot is not None
        }
        self.fs.requests.clear()
        self.fs.ranges.clear()

    def restore(self) -> list[bytes]:
        reader = Reader(self.plan, start=self.state, storage_options=self.options)
        return [item.record for item in reader]

    def reads(self, name: str) -> list[tuple[int, int]]:
        return [(s, e) for p, s, e in self.fs.ranges if p.rsplit("/", 1)[-1] == name]

    def replace(self, name: str, data: bytes) -> None:
        protocol = "memory" if self.target is None else self.target.protocol
        put(protocol, self.fs.target, f"{self.url.removeprefix('wrapped://')}/{name}", data)
        self.fs.invalidate_cache()


def _ends(size: int) -> list[tuple[int, int]]:
    """The binding's reads of a file: its first and last 64 KiB, one read when they touch."""
    return [(0, size)] if size <= 2 * SPAN else [(0, SPAN), (size - SPAN, size)]


def _expected_rest(folder: Path, saved: Saved) -> list[bytes]:
    plan = ReadPlan(DatasetInfo.load(folder), "train", ReadConfig(interleave_cycle_length=2))
    local = [item.record for item in Reader(plan)]
    assert local[:READ_BEFORE_SAVE] == saved.head
    return local[READ_BEFORE_SAVE:]


def test_a_restore_with_sidecars_costs_one_lookup_and_the_spans_per_held_shard(
    folder: Path, target: Any
) -> None:
    saved = Saved(folder, target, sidecars=True)
    assert sorted(saved.held) == sorted(SHARDS)
    assert all(0 < first < SHARDS[name] for name, first in saved.held.items())
    assert saved.restore() == _expected_rest(folder, saved)
    requests = 0
    for name, first in saved.held.items():
        size = SHARDS[name] * FRAME
        assert saved.reads(f"{name}.index") == [(0, FIRST_READ)]
        reads = saved.reads(name)
        # The sidecar's own check reads the ends only where the store names no content
        # version; the state's check then takes the sidecar's binding and reads nothing.
        binding = _ends(size) if target is None else []
        assert reads[: len(binding)] == binding
        spans = sorted(reads[len(binding) :])
        # The rest of the shard from the restored record, each byte fetched once.
        assert spans[0][0] == first * FRAME
        assert spans[-1][1] == size
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        requests += 1 + len(reads)
    # Before the state's check reused the shard's opening, it cost one more lookup and
    # two more reads of the ends per held shard: {"info": 4, "get": 10} in GCS and S3,
    # {"info": 4, "get": 13} in the memory store.
    assert dict(saved.fs.requests) == {"info": len(SHARDS), "get": requests}
    assert dict(saved.fs.requests) == (
        {"info": 2, "get": 6} if target is not None else {"info": 2, "get": 9}
    )


def test_a_state_saved_after_a_restore_binds_the_checked_shards_without_a_request(
    folder: Path, target: Any
) -> None:
    saved = Saved(folder, target, sidecars=True)
    reader = Reader(saved.plan, start=saved.state, storage_options=saved.options)
    items = iter(reader)
    for _ in range(10):
        next(items)
    saved.fs.requests.clear()
    state = reader.state_dict()
    # The shards the restore checked are still held: the new state binds them as checked
    # (before, each cost a lookup and a read of its ends again).
    assert state["reader"]["files"] == saved.state["reader"]["files"]
    assert dict(saved.fs.requests) == {}
    reader.close()


def test_a_restore_without_sidecars_reads_the_ends_through_the_shards_handle(
    folder: Path,
) -> None:
    saved = Saved(folder, None, sidecars=False)
    assert saved.restore() == _expected_rest(folder, saved)
    # One lookup per held shard (two before); its ends read once, before any record.
    assert saved.fs.requests["info"] == len(SHARDS)
    for name in saved.held:
        size = SHARDS[name] * FRAME
        assert saved.reads(name)[: len(_ends(size))] == _ends(size)
        assert saved.reads(name).count(_ends(size)[0]) == (2 if size <= 2 * SPAN else 1)


@pytest.mark.parametrize("rebuilt", [True, False], ids=["sidecar-rebuilt", "sidecar-stale"])
def test_a_held_shard_replaced_since_the_save_is_refused_naming_it(
    folder: Path, target: Any, rebuilt: bool
) -> None:
    saved = Saved(folder, target, sidecars=True)
    name = "big-train.tfrecord-00001-of-00002"
    # Same size and records, one record's payload rewritten: the ends change.
    records = [big_record(1, k) for k in range(SHARDS[name])]
    records[3] = bytes(RECORD)
    changed = folder.parent / "changed.tfrecord"
    tfrecord.write(changed, records)
    saved.replace(name, changed.read_bytes())
    if rebuilt:
        # The new version's own sidecar names it: the state's check takes its binding.
        build_index(f"{saved.url}/{name}", storage_options=saved.options)
    with pytest.raises(CheckpointMismatchError) as caught:
        saved.restore()
    assert f"{saved.url}/{name} changed since the state was saved" in str(caught.value)
    file_index = next(
        k for k in range(len(SHARDS)) if saved.plan.instructions.filename(k).endswith(name)
    )
    assert list(caught.value.differences) == [f"reader.files[{file_index}].checksum"]


def test_a_changed_tbl_shard_is_refused_after_a_restore(folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("fastcrc")
    converted = tmp_path / "tbl" / "big" / "1.0.0"
    convert(folder, converted, format="tbl")
    saved = Saved(converted, None, sidecars=False)
    name = "big-train.tbl-00000-of-00002"
    assert name in saved.held
    data = bytearray((converted / name).read_bytes())
    data[-SPAN // 2] ^= 0xFF  # a payload byte in the last 64 KiB: the file still opens
    saved.replace(name, bytes(data))
    with pytest.raises(CheckpointMismatchError) as caught:
        saved.restore()
    assert f"{saved.url}/{name} changed since the state was saved" in str(caught.value)
    # Unchanged, the TBL shards restore with one lookup each, their ends read once.
    again = Saved(converted, None, sidecars=False)
    assert len(again.restore()) == sum(SHARDS.values()) - READ_BEFORE_SAVE
    assert again.fs.requests["info"] == len(SHARDS)
