"""Datasets, sidecars and checkpoints in object stores, against real local emulators.

The GCS and S3 emulators run as separate processes on loopback ports (session fixtures in
``conftest.py``); ``wrapped://`` (``tests/remote_stores.py``) counts requests, adds
failures, and forwards to an in-process memory store or to an emulator.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from readplan import storage, tfrecord
from readplan.errors import IndexFileError, ObjectChangedError, ObjectNotFoundError
from readplan.index import build_index
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadConfig, ReadPlan
from readplan.reading.reader import Reader
from readplan.state.checkpoint import Checkpoint
from tests.big_dataset import big_record, write_big
from tests.tfds_toy import TOY, TOY_DIR, TOY_INFO

pytest.importorskip("fsspec")
from tests.remote_stores import put, wrapped_copy

SHUFFLED = [case for case in TOY["cases"] if case["shuffle_files"]]
CASE_IDS = [
    f"{c['spec']}-" + "-".join(f"{k}={v}" for k, v in sorted(c["read_config"].items()))
    for c in SHUFFLED
]


def _plan(info: DatasetInfo, case: dict[str, Any]) -> ReadPlan:
    return ReadPlan(info, case["spec"], ReadConfig(**case["read_config"], shuffle_files=True))


def _ids(reader: Reader) -> list[int]:
    return [int(item.record["id"][0]) for item in reader]  # type: ignore[index]


def _expected_ids(case: dict[str, Any]) -> list[int]:
    return [entry[3] for epoch in case["epochs"] for entry in epoch]


@pytest.fixture(scope="module")
def toy_urls(gcs_store: Any, s3_store: Any) -> dict[str, tuple[str, Any]]:
    """The TFDS toy dataset uploaded to both emulators: ``{protocol: (url, store)}``."""
    from tests.remote_stores import upload_tree

    urls = {}
    for store in (gcs_store, s3_store):
        bucket = f"readplan-toy-{uuid.uuid4().hex[:8]}"
        urls[store.protocol] = (upload_tree(store, TOY_DIR, bucket, "readplan_toy/1.0.0"), store)
    return urls


@pytest.fixture(params=["gs", "s3"])
def toy(request: pytest.FixtureRequest, toy_urls: dict[str, tuple[str, Any]]) -> tuple[str, Any]:
    return toy_urls[request.param]


# -- reading TFDS datasets in plan order ------------------------------------------------


def test_dataset_info_loads_from_a_bucket(toy: tuple[str, Any]) -> None:
    url, store = toy
    remote = DatasetInfo.load(url, storage_options=store.storage_options, verify_files=True)
    local = TOY_INFO
    assert remote.data_dir == url
    assert remote.splits == local.splits
    assert remote.name == local.name
    assert (
        remote.shard_paths("train")[0] == f"{url}/{os.path.basename(local.shard_paths('train')[0])}"
    )


@pytest.mark.parametrize("case", SHUFFLED, ids=CASE_IDS)
def test_reader_over_a_bucket_delivers_tfds_order(
    toy: tuple[str, Any], case: dict[str, Any]
) -> None:
    url, store = toy
    options = store.storage_options
    info = DatasetInfo.load(url, storage_options=options)
    epochs = len(case["epochs"])
    remote = _ids(Reader(_plan(info, case), epochs=epochs, decode=True, storage_options=options))
    local = _ids(Reader(_plan(TOY_INFO, case), epochs=epochs, decode=True))
    assert remote == _expected_ids(case)
    assert remote == local


def test_restore_from_a_checkpoint_saved_in_the_bucket(toy: tuple[str, Any]) -> None:
    url, store = toy
    options = store.storage_options
    case = SHUFFLED[0]
    info = DatasetInfo.load(url, storage_options=options)
    expected = _expected_ids(case)
    epochs = len(case["epochs"])
    first = Reader(_plan(info, case), epochs=epochs, decode=True, storage_options=options)
    items = iter(first)
    head = [int(next(items).record["id"][0]) for _ in range(30)]  # type: ignore[index]
    run = storage.join(storage.parent(storage.parent(url)), "runs", uuid.uuid4().hex)
    state_url = storage.join(run, "state.json")
    first.save(state_url)
    first.close()
    # A new process would have nothing but the URL: read the state back from the store.
    resumed = Reader(
        _plan(info, case), epochs=epochs, decode=True, start=state_url, storage_options=options
    )
    assert head + _ids(resumed) == expected
    checkpoint_url = storage.join(run, "step_30.json")
    checkpoint = _plan(info, case).checkpoint(0, 30)
    checkpoint.save(checkpoint_url, storage_options=options)
    assert Checkpoint.load(checkpoint_url, storage_options=options) == checkpoint
    from_checkpoint = Reader(
        _plan(info, case), epochs=epochs, decode=True, start=checkpoint, storage_options=options
    )
    assert _ids(from_checkpoint) == expected[30:]


def test_cli_plans_and_orders_a_gs_dataset(toy_urls: dict[str, tuple[str, Any]]) -> None:
    url, store = toy_urls["gs"]
    # fsspec's own configuration: environment variables FSSPEC_<PROTOCOL>_<OPTION>.
    env = {
        **os.environ,
        "FSSPEC_GS_TOKEN": "anon",
        "FSSPEC_GS_PROJECT": "test",
        "FSSPEC_GS_ENDPOINT_URL": store.endpoint,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    outputs = []
    for dataset in (url, str(TOY_DIR)):
        for command in (
            ["plan", dataset, "train", "--json"],
            ["order", dataset, "train", "--shuffle-files", "--seed", "32"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "readplan", *command],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout.replace(dataset, "DATASET"))
    assert "DATASET/readplan_toy-train.tfrecord-00000-of-00008" in outputs[0]
    assert outputs[:2] == outputs[2:]


# -- requests: ranged reads, prefetch, retries ------------------------------------------


@pytest.fixture
def large_dataset(tmp_path: Path) -> tuple[Path, list[int]]:
    """Four shards of 5000 1-KiB records (about 5 MiB each, more than one read-ahead block)."""
    lengths = [5000, 4000, 5000, 3000]
    return write_big(tmp_path / "big" / "1.0.0", lengths), lengths


def _wrapped_copy(
    folder: Path, target: Any = None, **options: Any
) -> tuple[str, dict[str, Any], Any]:
    return wrapped_copy(folder, "big/1.0.0", target, **options)


def _data_gets(fs: Any) -> list[tuple[str, int | None, int | None]]:
    return [r for r in fs.ranges if ".tfrecord-" in r[0] and not r[0].endswith(".index")]


def test_sequential_reading_fetches_each_byte_once_in_large_ranges(
    large_dataset: tuple[Path, list[int]],
) -> None:
    folder, lengths = large_dataset
    url, options, fs = _wrapped_copy(folder)
    info = DatasetInfo.load(url, storage_options=options)
    config = ReadConfig(shuffle_files=True, shuffle_seed=3, interleave_cycle_length=2)
    plan = ReadPlan(info, "train", config)
    remote = [item.record for item in Reader(plan, storage_options=options)]
    local = [item.record for item in Reader(ReadPlan(DatasetInfo.load(folder), "train", config))]
    assert remote == local
    gets = _data_gets(fs)
    sizes = {
        f"{url}/{p.name}".removeprefix("wrapped://"): p.stat().st_size for p in folder.iterdir()
    }
    fetched = sum(end - start for _, start, end in gets)  # type: ignore[operator]
    assert fetched == sum(size for name, size in sizes.items() if ".tfrecord-" in name)
    # Far fewer requests than the plan has runs of records (runs of 16 records here).
    runs = sum(-(-n // 16) for n in lengths)
    assert len(gets) <= runs // 10
    for name, size in sizes.items():
        spans = sorted((s, e) for p, s, e in gets if p.endswith(name.rsplit("/", 1)[-1]))
        if ".tfrecord-" in name:
            # The ranges of a file tile it: nothing read twice, nothing skipped.
            assert spans[0][0] == 0
            assert spans[-1][1] == size
            assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))


def test_a_restore_with_an_index_reads_the_exact_span(
    large_dataset: tuple[Path, list[int]], tmp_path: Path
) -> None:
    folder, _ = large_dataset
    url, options, fs = _wrapped_copy(folder)
    index_dir = tmp_path / "sidecars"
    index_dir.mkdir()
    info = DatasetInfo.load(url, storage_options=options)
    for shard in info.shard_paths("train"):
        build_index(shard, index_dir=index_dir, storage_options=options)
    assert sorted(p.name for p in index_dir.iterdir()) == sorted(
        f"{os.path.basename(s)}.index" for s in info.shard_paths("train")
    )
    plan = ReadPlan(info, "train", ReadConfig(interleave_cycle_length=1))
    fs.ranges.clear()
    position = 1234
    reader = Reader(
        plan, start=plan.checkpoint(0, position), index_dir=index_dir, storage_options=options
    )
    first = next(iter(reader))
    local = tfrecord.RecordFile(folder / os.path.basename(info.shard_paths("train")[0]))
    assert first.record == local[position]
    offset = int(local.offsets[position])
    gets = [(start, end) for path, start, end in _data_gets(fs) if path.endswith("00000-of-00004")]
    # The restored file is read from the record's own offset, found in the sidecar; before
    # it only the sidecar's binding check reads the file's first 64 KiB.
    assert any(start == offset for start, _ in gets)
    before = sum(min(end, offset) - start for start, end in gets if start < offset)
    assert before == 64 << 10
    reader.close()


# -- opening a shard: one metadata lookup, the sidecar in one request ----------------------

# Record counts of two shards of 1 KiB records: more than 128 KiB (the binding's first and
# last 64 KiB are two reads) and less (one read).
OPENED = {"big-train.tfrecord-00000-of-00002": 300, "big-train.tfrecord-00001-of-00002": 50}
_FIRST_READ = 4 << 20


@pytest.fixture(scope="module")
def two_shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_big(tmp_path_factory.mktemp("opened") / "big" / "1.0.0", list(OPENED.values()))


def _reads(fs: Any, name: str) -> list[tuple[int | None, int | None]]:
    return [(start, end) for path, start, end in fs.ranges if path.rsplit("/", 1)[-1] == name]


def test_building_and_opening_a_sidecar_cost_the_requests_they_need(
    two_shards: Path, target: Any
) -> None:
    url, options, fs = _wrapped_copy(two_shards, target)
    for name in OPENED:
        size = (two_shards / name).stat().st_size
        fs.requests.clear()
        fs.ranges.clear()
        build_index(f"{url}/{name}", storage_options=options)
        # One lookup, the file in one read-ahead block (the walk's, and the binding's first
        # and last 64 KiB), one upload.
        assert dict(fs.requests) == {"info": 1, "get": 1, "put": 1}
        assert _reads(fs, name) == [(0, size)]
        fs.requests.clear()
        fs.ranges.clear()
        with tfrecord.RecordFile(f"{url}/{name}", storage_options=options) as rf:
            assert len(rf) == OPENED[name]
        assert _reads(fs, f"{name}.index") == [(0, _FIRST_READ)]
        if target is not None:
            # The sidecar names this very object version: nothing of the data is read.
            assert dict(fs.requests) == {"info": 1, "get": 1}
            assert _reads(fs, name) == []
        elif size > 2 * 65536:
            assert dict(fs.requests) == {"info": 1, "get": 3}
            assert _reads(fs, name) == [(0, 65536), (size - 65536, size)]
        else:
            assert dict(fs.requests) == {"info": 1, "get": 2}
            assert _reads(fs, name) == [(0, size)]


@pytest.mark.parametrize("change", ["first bytes", "size"])
def test_a_sidecar_of_a_replaced_object_is_refused(
    two_shards: Path, target: Any, change: str
) -> None:
    url, options, fs = _wrapped_copy(two_shards, target)
    name = next(iter(OPENED))
    build_index(f"{url}/{name}", storage_options=options)
    data = bytearray((two_shards / name).read_bytes())
    if change == "size":
        del data[-100:]
    else:
        data[20] ^= 0xFF
    _replace(fs, target, f"{url}/{name}", bytes(data))
    fs.requests.clear()
    fs.ranges.clear()
    with pytest.raises(IndexFileError) as caught:
        tfrecord.RecordFile(f"{url}/{name}", storage_options=options)
    assert caught.value.path == f"{url}/{name}.index"
    assert caught.value.field == ("data_size" if change == "size" else "binding_crc")
    # A new version: the sidecar's source no longer vouches for it, the checksums decide.
    expected = [] if change == "size" else [(0, 65536), (len(data) - 65536, len(data))]
    assert _reads(fs, name) == expected


def _replace(fs: Any, target: Any, url: str, data: bytes) -> None:
    put("memory" if target is None else target.protocol, fs.target, url.split("://", 1)[1], data)
    fs.invalidate_cache()


def test_a_sidecar_moved_with_its_data_binds_by_the_checksums(
    two_shards: Path, target: Any, tmp_path: Path
) -> None:
    first, options, fs = _wrapped_copy(two_shards, target)
    second, _, _ = wrapped_copy(two_shards, "moved/1.0.0", target, tag=options["tag"])
    name = next(iter(OPENED))
    size = (two_shards / name).stat().st_size
    build_index(f"{first}/{name}", index_dir=tmp_path, storage_options=options)
    fs.requests.clear()
    fs.ranges.clear()
    moved = f"{second}/{name}"
    with tfrecord.RecordFile(
        moved, index_dir=tmp_path, storage_options=options, read_ahead=False
    ) as rf:
        assert rf.indexed
        assert rf[0] == big_record(0, 0)
    assert dict(fs.requests) == {"info": 1, "get": 3}
    assert _reads(fs, name) == [(0, 65536), (size - 65536, size), (0, 1040)]


def _indexed_in_gcs(gcs_store: Any, folder: Path) -> tuple[str, dict[str, Any], Any, ReadPlan]:
    """The dataset in the GCS emulator with sidecars built there, and its one-file plan."""
    url, options, fs = _wrapped_copy(folder, gcs_store)
    info = DatasetInfo.load(url, storage_options=options)
    for shard in info.shard_paths("train"):
        build_index(shard, storage_options=options)
    plan = ReadPlan(info, "train", ReadConfig(interleave_cycle_length=1))
    return url, options, fs, plan


def test_a_restore_over_a_store_with_versions_reads_only_the_span(
    gcs_store: Any, two_shards: Path
) -> None:
    _, options, fs, plan = _indexed_in_gcs(gcs_store, two_shards)
    fs.ranges.clear()
    reader = Reader(plan, start=plan.checkpoint(0, 123), storage_options=options)
    first = next(iter(reader))
    local = tfrecord.RecordFile(two_shards / next(iter(OPENED)))
    assert first.record == local[123]
    reads = _reads(fs, next(iter(OPENED)))
    offset = int(local.offsets[123])
    assert reads
    assert reads[0][0] == offset
    assert all(start >= offset for start, _ in reads)  # type: ignore[operator]
    reader.close()


def test_ranks_open_each_shard_with_one_lookup(gcs_store: Any, two_shards: Path) -> None:
    url, options, fs, plan = _indexed_in_gcs(gcs_store, two_shards)
    fs.requests.clear()
    fs.ranges.clear()
    ids = [item.record for item in Reader(plan, rank=1, world_size=2, storage_options=options)]
    assert len(ids) == sum(OPENED.values()) // 2
    # Each shard: its lookup, its sidecar; the span reads share the opened version.
    assert fs.requests["info"] == len(OPENED)
    assert sorted(r for r in fs.ranges if r[0].endswith(".index")) == sorted(
        (f"{url.removeprefix('wrapped://')}/{name}.index", 0, _FIRST_READ) for name in OPENED
    )


def test_stale_sidecar_in_index_dir_is_refused(
    large_dataset: tuple[Path, list[int]], tmp_path: Path
) -> None:
    folder, _ = large_dataset
    url, options, fs = _wrapped_copy(folder)
    shard = f"{url}/big-train.tfrecord-00000-of-00004"
    build_index(shard, index_dir=tmp_path, storage_options=options)
    smaller = b"".join(
        tfrecord_bytes
        for tfrecord_bytes in [(folder / "big-train.tfrecord-00003-of-00004").read_bytes()]
    )
    fs.target.pipe_file(shard.removeprefix("wrapped://"), smaller)
    with pytest.raises(IndexFileError):
        tfrecord.RecordFile(shard, index_dir=tmp_path, storage_options=options)


def test_prefetch_keeps_order_and_its_memory_bound(large_dataset: tuple[Path, list[int]]) -> None:
    folder, _ = large_dataset
    config = ReadConfig(shuffle_files=True, shuffle_seed=11, interleave_cycle_length=4)
    results = {}
    states = {}
    for bound in (0, 6 << 20, storage.DEFAULT_PREFETCH_BYTES):
        url, options, _fs = _wrapped_copy(folder, latency=0.002)
        prefetcher = storage.set_prefetch(max_bytes=bound)
        try:
            plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train", config)
            reader = Reader(plan, storage_options=options)
            items = iter(reader)
            delivered = [next(items) for _ in range(5000)]
            # Fetching ahead never moves the state past what was delivered.
            state = reader.state_dict()
            delivered.extend(items)
            results[bound] = [(item.position, item.record) for item in delivered]
        finally:
            storage.set_prefetch()
        assert prefetcher.peak <= bound
        assert (prefetcher.requests > 0) == (bound > 0)
        states[bound] = state
        assert (state["epoch"], state["position"]) == (0, 5000)
    assert results[0] == results[6 << 20] == results[storage.DEFAULT_PREFETCH_BYTES]
    assert states[0] == states[6 << 20] == states[storage.DEFAULT_PREFETCH_BYTES]


def test_transient_failures_are_retried_by_the_reader(toy_urls: dict[str, tuple[str, Any]]) -> None:
    _url, store = toy_urls["gs"]
    case = SHUFFLED[0]
    wrapped, options, fs = _wrapped_copy(TOY_DIR, store)
    fs.failures_left = 3
    info = DatasetInfo.load(wrapped, storage_options=options)
    epochs = len(case["epochs"])
    ids = _ids(Reader(_plan(info, case), epochs=epochs, decode=True, storage_options=options))
    assert ids == _expected_ids(case)
    assert fs.failures_left == 0


def test_missing_shard_names_its_url(toy: tuple[str, Any]) -> None:
    _, store = toy
    options = store.storage_options
    fs = store.filesystem()
    copy = f"readplan-missing-{uuid.uuid4().hex[:8]}"
    fs.mkdir(copy)
    for path in sorted(TOY_DIR.iterdir()):
        if "train.tfrecord-00003" not in path.name:
            put(store.protocol, fs, f"{copy}/toy/{path.name}", path.read_bytes())
    fs.invalidate_cache()
    copy_url = store.url(copy, "toy")
    info = DatasetInfo.load(copy_url, storage_options=options)
    missing = f"{copy_url}/readplan_toy-train.tfrecord-00003-of-00008"
    with pytest.raises(ObjectNotFoundError) as caught:
        list(Reader(ReadPlan(info, "train"), storage_options=options))
    assert caught.value.url == missing
    assert missing in str(caught.value)


def test_a_shard_replaced_while_read_is_reported(
    gcs_store: Any, large_dataset: tuple[Path, list[int]]
) -> None:
    folder, _ = large_dataset
    bucket = f"readplan-changed-{uuid.uuid4().hex[:8]}"
    from tests.remote_stores import upload_tree

    url = upload_tree(gcs_store, folder, bucket, "big/1.0.0")
    options = gcs_store.storage_options
    plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train")
    storage.set_prefetch(max_bytes=0)  # the next block is fetched only when needed
    try:
        items = iter(Reader(plan, storage_options=options))
        next(items)
        shard = f"{bucket}/big/1.0.0/big-train.tfrecord-00000-of-00004"
        put(
            "gs",
            gcs_store.filesystem(),
            shard,
            (folder / "big-train.tfrecord-00003-of-00004").read_bytes(),
        )
        with pytest.raises(ObjectChangedError) as caught:
            for _ in items:
                pass
    finally:
        storage.set_prefetch()
    assert caught.value.url == f"gs://{shard}"
