"""Readers by random access over a store fetch their next spans in the background
(``specs/storage.md`` §5): a rank of several and an example shuffle deliver exactly the
local reader's records and states at any prefetch bound, fetch each span once, and still
report an object changed under them.

``wrapped://`` (``tests/remote_stores.py``) counts requests and forwards to an in-process
memory store or to the GCS and S3 emulators of the session fixtures.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readplan import ExampleShuffle, storage
from readplan.errors import ObjectChangedError
from readplan.index import build_index
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadConfig, ReadPlan
from readplan.reading.reader import Reader
from tests.big_dataset import big_name, write_big

pytest.importorskip("fsspec")
from tests.remote_stores import put, upload_tree, wrapped_copy

LENGTHS = [70, 45, 90, 33, 61, 80, 52, 17, 75, 40, 66, 58]
RECORD = 200
# Fits a few spans of frames, never a shard's opening (one block of the budget).
TINY = 3000
BOUNDS = (0, TINY, storage.DEFAULT_PREFETCH_BYTES)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_big(tmp_path_factory.mktemp("spans") / "big" / "1.0.0", LENGTHS, RECORD)


@pytest.fixture(scope="module")
def memory_copies(folder: Path) -> dict[bool, tuple[str, dict[str, Any], Any]]:
    """The dataset in an in-process store, without and with index sidecars."""
    return {sidecars: _copy(folder, None, sidecars) for sidecars in (False, True)}


@pytest.fixture
def bound_restored() -> Iterator[None]:
    yield
    storage.set_prefetch()


def _copy(folder: Path, target: Any, sidecars: bool) -> tuple[str, dict[str, Any], Any]:
    url, options, fs = wrapped_copy(folder, "big/1.0.0", target)
    if sidecars:
        for shard in DatasetInfo.load(url, storage_options=options).shard_paths("train"):
            build_index(shard, storage_options=options)
    fs.requests.clear()
    fs.ranges.clear()
    return url, options, fs


def _config(shuffle: int | None, seed: int) -> ReadConfig:
    example_shuffle = None if shuffle is None else ExampleShuffle(shuffle, seed)
    return ReadConfig(
        interleave_cycle_length=4,
        interleave_block_length=3,
        shuffle_files=True,
        shuffle_seed=seed,
        example_shuffle=example_shuffle,
    )


def _read(
    data: str | Path,
    options: dict[str, Any] | None,
    config: ReadConfig,
    rank: int,
    ranks: int,
    every: int,
) -> tuple[list[tuple[int, int, bytes]], list[dict[str, Any]]]:
    """Every delivery ``(epoch, position, record)`` of two epochs, and the state after every
    ``every``-th one."""
    plan = ReadPlan(DatasetInfo.load(data, storage_options=options), "train", config)
    reader = Reader(plan, epochs=2, rank=rank, world_size=ranks, storage_options=options)
    delivered, states = [], []
    for k, item in enumerate(reader, 1):
        delivered.append((item.epoch, item.position, item.record))
        if k % every == 0:
            states.append(reader.state_dict())
    states.append(reader.state_dict())
    return delivered, states


def _assert_as_local(
    folder: Path, copy: tuple[str, dict[str, Any], Any], config: ReadConfig, rank: int, ranks: int
) -> None:
    url, options, _ = copy
    local = _read(folder, None, config, rank, ranks, every=37)
    for bound in BOUNDS:
        storage.set_prefetch(max_bytes=bound)
        assert _read(url, options, config, rank, ranks, every=37) == local, bound


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ranks=st.integers(1, 5),
    data=st.data(),
    shuffle=st.one_of(st.none(), st.integers(1, 300)),
    seed=st.integers(0, 2**31),
    sidecars=st.booleans(),
)
def test_readers_by_random_access_over_a_store_deliver_the_local_records_and_states(
    folder: Path,
    memory_copies: dict[bool, tuple[str, dict[str, Any], Any]],
    bound_restored: None,
    ranks: int,
    data: st.DataObject,
    shuffle: int | None,
    seed: int,
    sidecars: bool,
) -> None:
    rank = data.draw(st.integers(0, ranks - 1), label="rank")
    if ranks == 1 and shuffle is None:
        shuffle = 64  # one rank without an example shuffle streams its files instead
    _assert_as_local(folder, memory_copies[sidecars], _config(shuffle, seed), rank, ranks)


@pytest.mark.parametrize("sidecars", [False, True], ids=["walk", "sidecars"])
@pytest.mark.parametrize("reader", ["rank", "shuffle"])
def test_rank_and_shuffle_readers_over_the_emulators_read_as_locally(
    folder: Path, target: Any, bound_restored: None, sidecars: bool, reader: str
) -> None:
    copy = _copy(folder, target, sidecars)
    rank, ranks, shuffle = (1, 3, None) if reader == "rank" else (0, 1, 100)
    _assert_as_local(folder, copy, _config(shuffle, 5), rank, ranks)


def _data_gets(fs: Any) -> Counter[tuple[str, int, int]]:
    return Counter(r for r in fs.ranges if ".tfrecord-" in r[0] and not r[0].endswith(".index"))


@pytest.mark.parametrize("sidecars", [False, True], ids=["walk", "sidecars"])
@pytest.mark.parametrize("reader", ["rank", "shuffle"])
def test_spans_are_fetched_ahead_once_each(
    memory_copies: dict[bool, tuple[str, dict[str, Any], Any]],
    bound_restored: None,
    reader: str,
    sidecars: bool,
) -> None:
    url, options, fs = memory_copies[sidecars]
    rank, ranks, shuffle = (2, 4, None) if reader == "rank" else (0, 1, 50)
    config = _config(shuffle, 9)
    gets, ahead, lookups = {}, {}, {}
    for bound in (0, storage.DEFAULT_PREFETCH_BYTES):
        prefetcher = storage.set_prefetch(max_bytes=bound)
        plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train", config)
        fs.requests.clear()
        fs.ranges.clear()
        list(Reader(plan, epochs=2, rank=rank, world_size=ranks, storage_options=options))
        gets[bound], ahead[bound] = _data_gets(fs), prefetcher.requests
        lookups[bound] = fs.requests["info"]
    # The same lookups (one per shard opened), and the same spans, each fetched once,
    # whether the reader or the pool fetched them.
    assert lookups[0] == lookups[storage.DEFAULT_PREFETCH_BYTES] <= 2 * len(LENGTHS)
    assert gets[0] == gets[storage.DEFAULT_PREFETCH_BYTES]
    assert ahead[0] == 0
    # Everything fetched ahead: one background job per shard opened, which also makes one
    # data GET (with a sidecar, the shard's ends for its binding: small shards, a store
    # without content versions; without, the size of its first record), and one per span
    # or header walk's read (one each here: small shards).
    assert ahead[storage.DEFAULT_PREFETCH_BYTES] == sum(gets[0].values())


@pytest.mark.parametrize("bound", [TINY, storage.DEFAULT_PREFETCH_BYTES])
def test_an_object_changed_during_prefetch_is_reported(
    tmp_path: Path, target: Any, bound_restored: None, bound: int
) -> None:
    # One shard read with an example shuffle: windows of one batch, each read's spans
    # fetched while the previous window is read.
    folder = write_big(tmp_path / "big" / "1.0.0", [1000], 1024)
    url, options, fs = _copy(folder, target, sidecars=True)
    config = _config(200, 1)
    local, _ = _read(folder, None, config, 0, 1, every=1000)
    storage.set_prefetch(max_bytes=bound)
    plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train", config)
    batches = Reader(plan, storage_options=options).batches()
    delivered = list(next(batches).records)
    shard = f"{url}/{big_name(0, 1)}"
    protocol = "memory" if target is None else target.protocol
    size = (folder / big_name(0, 1)).stat().st_size
    put(protocol, fs.target, shard.removeprefix("wrapped://"), b"\0" * (size + 1))
    with pytest.raises(ObjectChangedError) as caught:
        delivered.extend(record for batch in batches for record in batch.records)
    assert caught.value.url == shard
    assert shard in str(caught.value)
    # What was delivered is the object as opened.
    assert delivered == [record for _, _, record in local[: len(delivered)]]


def test_a_span_fetched_ahead_from_a_replaced_gcs_object_is_an_object_change(
    gcs_store: Any, folder: Path, bound_restored: None
) -> None:
    url = upload_tree(gcs_store, folder, f"readplan-spans-{uuid.uuid4().hex[:8]}", "big/1.0.0")
    shard = f"{url}/{big_name(2, len(LENGTHS))}"
    handle = storage.open_read(shard, storage_options=gcs_store.storage_options)
    # A shorter shard (3,672 bytes) in its place.
    replacement = (folder / big_name(7, len(LENGTHS))).read_bytes()
    put("gs", gcs_store.filesystem(), shard.removeprefix("gs://"), replacement)
    # The fetch ahead (of the generation opened, where the store honours it) fails in the
    # background; the read that wanted its bytes makes its own request and reports the
    # change itself.
    assert storage.fetch_ahead(handle, 4000, 1000)
    with pytest.raises(ObjectChangedError) as caught:
        storage.read_span(handle, 4000, 1000)
    assert caught.value.url == shard
    assert shard in str(caught.value)


def test_local_readers_fetch_nothing_ahead(folder: Path, bound_restored: None) -> None:
    prefetcher = storage.set_prefetch()
    for rank, ranks, shuffle in ((1, 3, None), (0, 1, 30)):
        plan = ReadPlan(DatasetInfo.load(folder), "train", _config(shuffle, 4))
        assert len(list(Reader(plan, rank=rank, world_size=ranks))) > 0
    assert prefetcher.requests == 0
