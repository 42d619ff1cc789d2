"""readplan.data_source over object stores, against real local emulators.

The GCS and S3 emulators run as separate processes on loopback ports (session fixtures in
``conftest.py``); ``wrapped://`` (``tests/remote_stores.py``) counts requests and ranges,
refuses writes, and forwards to an in-process memory store or to an emulator.  Records
name their own shard and index, so the expected record of a key comes from the split's
bounds, not from readplan; the local source over the same files is read alongside.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import tbl, tfrecord
from readplan.convert import convert
from readplan.errors import (
    ConfigError,
    CorruptRecordError,
    CorruptTblError,
    IndexFileError,
    ObjectChangedError,
    ObjectNotFoundError,
)
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadConfig, ReadPlan
from readplan.reading.data_source import RecordSource, data_source
from readplan.reading.reader import Reader
from tests.conftest import DATA

pytest.importorskip("fsspec")
from tests.remote_stores import Store, put, upload_tree, wrapped_copy

# Bytes per record of each train shard: small records, records far apart (a key 17
# records further is more than 1 MiB away), and in between.
TRAIN = {"sizes": [50, 60_000, 300, 9_000], "lengths": [120, 40, 200, 90]}
TEST = {"sizes": [700, 120], "lengths": [30, 25]}
LENGTHS = {"train": TRAIN["lengths"], "test": TEST["lengths"]}
SIZES = {"train": TRAIN["sizes"], "test": TEST["sizes"]}


def _record(split: str, shard: int, index: int) -> bytes:
    size = SIZES[split][shard]
    return (f"{split}/{shard}/{index}/".encode() * size)[:size]


def _shard_name(split: str, shard: int) -> str:
    return f"remote_ds-{split}.tfrecord-{shard:05d}-of-{len(LENGTHS[split]):05d}"


def _write_dataset(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for split, lengths in LENGTHS.items():
        for shard, count in enumerate(lengths):
            records = (_record(split, shard, i) for i in range(count))
            tfrecord.write(folder / _shard_name(split, shard), records)
    splits = [{"name": name, "shardLengths": [str(n) for n in n_]} for name, n_ in LENGTHS.items()]
    info = {"name": "remote_ds", "version": "1.0.0", "splits": splits}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    return folder


def _expected(parts: list[tuple[str, int, int]]) -> list[bytes]:
    """Records ``a .. b-1`` of each split, in order."""
    out = []
    for split, a, b in parts:
        where = [(k, i) for k, count in enumerate(LENGTHS[split]) for i in range(count)]
        out.extend(_record(split, k, i) for k, i in where[a:b])
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset on local disk, without sidecars (sources over it use an index_dir)."""
    return _write_dataset(tmp_path_factory.mktemp("remote_source") / "remote_ds" / "1.0.0")


@pytest.fixture(scope="module")
def local_indexes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("local_indexes")


def _upload(store: Store, folder: Path, name: str = "ds") -> str:
    return upload_tree(store, folder, f"readplan-{name}-{uuid.uuid4().hex[:8]}", "remote_ds/1.0.0")


@pytest.fixture(scope="module")
def uploaded(gcs_store: Store, s3_store: Store, dataset: Path) -> dict[str, tuple[str, Store]]:
    """The dataset in both emulators: ``{protocol: (url, store)}``."""
    return {store.protocol: (_upload(store, dataset), store) for store in (gcs_store, s3_store)}


@pytest.fixture(scope="module", params=["gs", "s3"])
def remote(
    request: pytest.FixtureRequest, uploaded: dict[str, tuple[str, Store]]
) -> tuple[str, Store]:
    return uploaded[request.param]


@pytest.fixture(scope="module")
def tbl_dataset(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset converted to TBL v2 (same keys, same records)."""
    pytest.importorskip("fastcrc")
    target = tmp_path_factory.mktemp("remote_tbl") / "remote_ds" / "1.0.0"
    convert(dataset, target, format="tbl")
    return target


COPIES = [(protocol, fmt) for fmt in ("tfrecord", "tbl") for protocol in ("gs", "s3")]


@pytest.fixture(scope="module", params=COPIES, ids=[f"{p}-{f}" for p, f in COPIES])
def copy(
    request: pytest.FixtureRequest, uploaded: dict[str, tuple[str, Store]]
) -> tuple[str, Store, Path]:
    """``(url, store, local folder)`` of the dataset in each store and container."""
    protocol, fmt = request.param
    url, store = uploaded[protocol]
    if fmt == "tfrecord":
        return url, store, request.getfixturevalue("dataset")
    local = request.getfixturevalue("tbl_dataset")
    return _upload(store, local, "tbl"), store, local


# -- the same records as the local source --------------------------------------------------


@st.composite
def split_parts(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """A union of absolute ranges ``split[a:b]`` (overlaps and empty ranges included)."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        split = draw(st.sampled_from(sorted(LENGTHS)))
        n = sum(LENGTHS[split])
        a = draw(st.integers(0, n))
        parts.append((split, a, draw(st.integers(a, n))))
    return parts


@settings(max_examples=25)
@given(parts=split_parts(), data=st.data())
def test_remote_source_returns_the_local_records(
    copy: tuple[str, Store, Path], local_indexes: Path, parts: Any, data: Any
) -> None:
    url, store, folder = copy
    spec = "+".join(f"{split}[{a}:{b}]" for split, a, b in parts)
    expected = _expected(parts)
    source = data_source(url, spec, storage_options=store.storage_options)
    local = data_source(folder, spec, index_dir=local_indexes)
    assert len(source) == len(local) == len(expected)
    if not expected:
        assert source.__getitems__([]) == []
        return
    keys = st.integers(0, len(expected) - 1)
    batch = data.draw(st.lists(keys, max_size=80), label="batch")
    assert source.__getitems__(batch) == local.__getitems__(batch) == [expected[k] for k in batch]
    for key in data.draw(st.lists(keys, max_size=5), label="single keys"):
        assert source[key] == local[key] == expected[key]
    source.close()


def test_iteration_and_a_dataset_info_argument_read_the_split(remote: tuple[str, Store]) -> None:
    url, store = remote
    info = DatasetInfo.load(url, storage_options=store.storage_options)
    source = data_source(info, "test+train[100:150]", storage_options=store.storage_options)
    expected = _expected([("test", 0, 55), ("train", 100, 150)])
    assert list(source) == expected
    assert source.paths[0] == f"{url}/{_shard_name('test', 0)}"
    assert repr(source) == (
        "RecordSource('remote_ds:1.0.0', split='test+train[100:150]', num_records=105, "
        "files=4, decode=None)"
    )


def test_tfds_decoding_reads_the_features_with_the_storage_options(
    gcs_store: Store, tmp_path: Path
) -> None:
    cases = json.loads((DATA / "tfds_data_source" / "data_source_cases.json").read_text())
    folder = DATA / "tfds_data_source" / cases["tfrecord_dir"]
    # Through the wrapper: features.json read without the options would not be found.
    url, options, _ = _wrapped(gcs_store, folder)
    source = data_source(url, "train[:40]", decode="tfds", storage_options=options)
    local = data_source(folder, "train[:40]", decode="tfds", index_dir=tmp_path)
    assert [r["id"] for r in source] == [r["id"] for r in local]
    assert [r["id"] for r in source.__getitems__([39, 3, 3])] == [
        local[39]["id"],
        local[3]["id"],
        local[3]["id"],
    ]
    # The Reader reads them with its storage options too.
    plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train[:40]")
    reader = Reader(plan, decode="tfds", storage_options=options)
    assert [item.record["id"] for item in reader] == [r["id"] for r in local]  # type: ignore[index]


# -- requests: exact spans, few requests per batch -------------------------------------------


def _wrapped(target: Store | None, folder: Path, **options: Any) -> tuple[str, dict[str, Any], Any]:
    return wrapped_copy(folder, "ds", target, **options)


def _data_gets(fs: Any) -> list[tuple[str, int, int]]:
    return [
        (path.rsplit("/", 1)[-1], start, end)
        for path, start, end in fs.ranges
        if ".tfrecord-" in path and not path.endswith(".index")
    ]


def test_keys_are_fetched_as_exact_spans_and_batches_per_file(
    dataset: Path, local_indexes: Path
) -> None:
    url, options, fs = _wrapped(None, dataset)
    source = data_source(url, "train", storage_options=options)
    offsets = {k: tfrecord.RecordFile(dataset / _shard_name("train", k)).offsets for k in range(4)}
    frame = {k: 16 + size for k, size in enumerate(TRAIN["sizes"])}
    first = {k: sum(TRAIN["lengths"][:k]) for k in range(4)}
    source[0], source[first[1]], source[first[2]], source[first[3]]  # every file opened
    fs.ranges.clear()
    assert source[first[2] + 17] == _record("train", 2, 17)
    start = int(offsets[2][17])
    assert _data_gets(fs) == [(_shard_name("train", 2), start, start + frame[2])]
    # Nearby records of one file: one request from the first frame to the end of the last.
    fs.ranges.clear()
    keys = [first[0] + 90, first[0] + 5, first[0] + 40, first[0] + 5]
    assert source.__getitems__(keys) == [_record("train", 0, i) for i in (90, 5, 40, 5)]
    span = (int(offsets[0][5]), int(offsets[0][90]) + frame[0])
    assert _data_gets(fs) == [(_shard_name("train", 0), *span)]
    # Records of several files: one request per file.
    fs.ranges.clear()
    keys = [first[3] + 80, first[0] + 1, first[2] + 3, first[3] + 2, first[0] + 0]
    assert len(source.__getitems__(keys)) == 5
    assert sorted(name for name, _, _ in _data_gets(fs)) == sorted(
        _shard_name("train", k) for k in (0, 2, 3)
    )
    # Records more than 1 MiB apart in one file are two requests, not one of the gap.
    fs.ranges.clear()
    assert source.__getitems__([first[1] + 39, first[1]]) == [
        _record("train", 1, 39),
        _record("train", 1, 0),
    ]
    assert sorted(_data_gets(fs)) == [
        (_shard_name("train", 1), int(offsets[1][i]), int(offsets[1][i]) + frame[1])
        for i in (0, 39)
    ]


# -- sidecars ------------------------------------------------------------------------------


def _objects(fs: Any, url: str) -> list[str]:
    fs.invalidate_cache()
    return sorted(name.rsplit("/", 1)[-1] for name in fs.target.find(url.split("://", 1)[1]))


def _shard_size(dataset: Path, split: str, shard: int) -> int:
    return (dataset / _shard_name(split, shard)).stat().st_size


def _frame(split: str, shard: int, index: int) -> tuple[str, int, int]:
    """The exact read of one record: its frame, from the split's sizes alone."""
    size = SIZES[split][shard] + 16
    return _shard_name(split, shard), index * size, (index + 1) * size


def test_sidecars_are_built_once_beside_the_data(dataset: Path) -> None:
    url, options, fs = _wrapped(None, dataset)
    source = data_source(url, "test", storage_options=options)
    # dataset_info.json, one listing; per shard one lookup, the whole (small) file in one
    # read, one upload.
    assert dict(fs.requests) == {"get": 3, "ls": 1, "info": 2, "put": 2}
    assert sorted(_data_gets(fs)) == [
        (_shard_name("test", k), 0, _shard_size(dataset, "test", k)) for k in range(2)
    ]
    assert [name for name in _objects(fs, url) if name.endswith(".index")] == [
        f"{_shard_name('test', k)}.index" for k in range(2)
    ]
    assert source[54] == _record("test", 1, 24)
    fs.requests.clear()
    again = data_source(url, "test", storage_options=options)
    # dataset_info.json and one listing of the folder: nothing is read or written again.
    assert dict(fs.requests) == {"get": 1, "ls": 1}
    fs.requests.clear()
    fs.ranges.clear()
    assert again[54] == _record("test", 1, 24)
    # Opening the shard: one lookup, its sidecar in one read, the binding's first and last
    # 64 KiB (the whole file of 3.4 kB: this store has no content versions); then the frame.
    assert dict(fs.requests) == {"info": 1, "get": 3}
    assert _data_gets(fs) == [
        (_shard_name("test", 1), 0, _shard_size(dataset, "test", 1)),
        _frame("test", 1, 24),
    ]


def test_opening_a_shard_in_a_store_with_versions_reads_only_its_sidecar(
    gcs_store: Store, dataset: Path
) -> None:
    url, options, fs = _wrapped(gcs_store, dataset)
    data_source(url, "train", storage_options=options)  # the sidecars, built in the store
    source = data_source(url, "train", storage_options=options)
    fs.requests.clear()
    fs.ranges.clear()
    first = sum(TRAIN["lengths"][:2])
    assert source[first + 7] == _record("train", 2, 7)
    # The sidecar names the object version the lookup finds: no data read binds it.
    assert dict(fs.requests) == {"info": 1, "get": 2}
    assert _data_gets(fs) == [_frame("train", 2, 7)]


@pytest.mark.parametrize("where", ["local", "remote"])
def test_sidecars_go_to_index_dir(dataset: Path, tmp_path: Path, where: str) -> None:
    url, options, fs = _wrapped(None, dataset)
    index_dir = str(tmp_path / "sidecars") if where == "local" else f"{url}-sidecars/nested"
    source = data_source(url, "train[:130]", storage_options=options, index_dir=index_dir)
    names = [f"{_shard_name('train', k)}.index" for k in range(2)]
    if where == "local":
        assert sorted(os.listdir(index_dir)) == names
    else:
        assert _objects(fs, index_dir) == names
    assert not [name for name in _objects(fs, url) if name.endswith(".index")]
    assert source.__getitems__([129, 0]) == [_record("train", 1, 9), _record("train", 0, 0)]
    fs.requests.clear()
    data_source(url, "train[:130]", storage_options=options, index_dir=index_dir)
    assert fs.requests["put"] == 0


@pytest.mark.parametrize("versions", [False, True], ids=["times", "versions"])
def test_a_read_only_store_keeps_offsets_in_memory(
    dataset: Path, versions: bool, request: pytest.FixtureRequest
) -> None:
    target = request.getfixturevalue("gcs_store") if versions else None
    url, options, fs = _wrapped(target, dataset, read_only=True)
    source = data_source(url, "test", storage_options=options)
    # As where it can write: each shard read once, its upload refused.
    assert dict(fs.requests) == {"get": 3, "ls": 1, "info": 2, "put": 2}
    assert not [name for name in _objects(fs, url) if name.endswith(".index")]
    for opened in (source, pickle.loads(pickle.dumps(source))):
        fs.requests.clear()
        fs.ranges.clear()
        assert opened[54] == _record("test", 1, 24)
        # Opened with the offsets built: no walk. The binding reads the (small) file again
        # only where the store names no content version.
        binding = [] if versions else [(_shard_name("test", 1), 0, _shard_size(dataset, "test", 1))]
        assert dict(fs.requests) == {"info": 1, "get": 1 + len(binding)}
        assert _data_gets(fs) == [*binding, _frame("test", 1, 24)]
    assert list(source) == _expected([("test", 0, 55)])
    assert source.__getitems__([54, 0, 31]) == _expected(
        [("test", 54, 55), ("test", 0, 1), ("test", 31, 32)]
    )


@pytest.mark.parametrize("change", ["size", "first bytes"])
def test_offsets_kept_in_memory_are_refused_for_a_replaced_shard(
    dataset: Path, change: str
) -> None:
    url, options, fs = _wrapped(None, dataset, read_only=True)
    source = data_source(url, "test", storage_options=options)
    name = _shard_name("test", 0)
    data = bytearray((dataset / name).read_bytes())
    if change == "size":
        del data[-716:]
    else:
        data[20] ^= 0xFF
    fs.target.pipe_file(f"{url.split('://', 1)[1]}/{name}", bytes(data))
    with pytest.raises(IndexFileError) as caught:
        source[3]
    assert caught.value.path == f"{url}/{name}.index"
    assert caught.value.field == ("data_size" if change == "size" else "binding_crc")


# -- errors --------------------------------------------------------------------------------


def _copy_without(store: Store, folder: Path, skip: str) -> str:
    fs = store.filesystem()
    bucket = f"readplan-partial-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    for path in sorted(folder.iterdir()):
        if path.name != skip:
            put(store.protocol, fs, f"{bucket}/ds/{path.name}", path.read_bytes())
    fs.invalidate_cache()
    return store.url(bucket, "ds")


def test_a_missing_shard_is_an_object_not_found_error_naming_its_url(
    remote: tuple[str, Store], dataset: Path, tmp_path: Path
) -> None:
    _, store = remote
    options = store.storage_options
    missing = _shard_name("train", 2)
    url = _copy_without(store, dataset, missing)
    with pytest.raises(ObjectNotFoundError) as caught:
        data_source(url, "train", storage_options=options)  # its sidecar cannot be built
    assert caught.value.url == f"{url}/{missing}"
    assert f"{url}/{missing}" in str(caught.value)
    # With its sidecar already built, the shard is missed when one of its keys is read.
    sidecars = tmp_path / "sidecars"
    full = data_source(dataset, "train", index_dir=sidecars)
    source = data_source(url, "train", storage_options=options, index_dir=sidecars)
    assert source[0] == full[0]
    with pytest.raises(ObjectNotFoundError) as caught:
        source.__getitems__([0, 170])
    assert caught.value.url == f"{url}/{missing}"


@pytest.mark.parametrize("change", ["same size", "shorter"])
def test_a_shard_replaced_after_opening_is_an_object_changed_error(
    remote: tuple[str, Store], dataset: Path, change: str
) -> None:
    _, store = remote
    url = _upload(store, dataset, "changed")
    source = data_source(url, "train", storage_options=store.storage_options)
    first = sum(TRAIN["lengths"][:3])
    assert source[first] == _record("train", 3, 0)  # shard 3 is open: its version pinned
    name = _shard_name("train", 3)
    data = bytearray((dataset / name).read_bytes())
    if change == "same size":
        data[len(data) // 2] ^= 0xFF
    else:
        del data[len(data) // 2 :]
    put(store.protocol, store.filesystem(), f"{url.split('://', 1)[1]}/{name}", bytes(data))
    with pytest.raises(ObjectChangedError) as caught:
        source.__getitems__(list(range(first, first + 90)))
    assert caught.value.url == f"{url}/{name}"
    # Reopened, the new version is refused by its sidecar (bound to the old one's size), or
    # its changed record by its CRC (a same-size change within the file's middle).
    source.close()
    with pytest.raises(IndexFileError if change == "shorter" else CorruptRecordError):
        source.__getitems__(list(range(first, first + 90)))


def test_a_damaged_record_names_the_url_and_offset(
    remote: tuple[str, Store], dataset: Path, tmp_path: Path
) -> None:
    _, store = remote
    name = _shard_name("train", 1)  # 2.4 MB: its middle is outside the sidecar's binding
    offsets = tfrecord.RecordFile(dataset / name).offsets
    damaged = bytearray((dataset / name).read_bytes())
    start = int(offsets[20])
    damaged[start + 12 + 1000] ^= 0xFF
    sidecars = tmp_path / "sidecars"
    data_source(dataset, "train", index_dir=sidecars)  # sidecars of the sound files
    url = _upload(store, dataset, "damaged")
    put(store.protocol, store.filesystem(), f"{url.split('://', 1)[1]}/{name}", bytes(damaged))
    source = data_source(url, "train", storage_options=store.storage_options, index_dir=sidecars)
    key = TRAIN["lengths"][0] + 20
    with pytest.raises(CorruptRecordError) as caught:
        source[key]
    assert (caught.value.path, caught.value.offset) == (f"{url}/{name}", start)
    assert caught.value.record_index == 20
    assert f"{url}/{name}: record 20 at offset {start}" in str(caught.value)
    with pytest.raises(CorruptRecordError):
        source.__getitems__([key - 1, key, key + 1])
    assert source.__getitems__([key + 1, 0]) == [_record("train", 1, 21), _record("train", 0, 0)]
    # Without a sidecar, building it reads every record and finds the damage.
    with pytest.raises(CorruptRecordError) as caught:
        data_source(url, "train", storage_options=store.storage_options)
    assert (caught.value.path, caught.value.offset) == (f"{url}/{name}", start)


# -- processes and closing -----------------------------------------------------------------


def _read_in_worker(source: RecordSource, keys: list[int]) -> tuple[int, list[bytes]]:
    """In a worker process: how many files the unpickled source had open, and the records."""
    opened = sum(file is not None for file in source._files)
    return opened, source.__getitems__(keys)


def test_a_pickled_source_reopens_its_files_in_worker_processes(
    remote: tuple[str, Store],
) -> None:
    url, store = remote
    source = data_source(url, "train+test", storage_options=store.storage_options)
    keys = [[0, 449, 200, 451], [120, 159, 160, 0]]
    expected = [source.__getitems__(batch) for batch in keys]  # files now open here
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        results = list(pool.map(_read_in_worker, [source, source], keys))
    assert results == [(0, records) for records in expected]


def test_unpickling_makes_no_request_and_closing_reopens(dataset: Path) -> None:
    url, options, fs = _wrapped(None, dataset)
    source = data_source(url, "train", storage_options=options)
    assert source[130] == _record("train", 1, 10)
    fs.requests.clear()
    copy = pickle.loads(pickle.dumps(source))
    assert sum(fs.requests.values()) == 0
    assert repr(copy) == repr(source)
    assert copy[130] == _record("train", 1, 10)
    assert fs.requests["info"] > 0  # opened, in this copy, on first access
    source.close()
    source.close()
    assert all(file is None for file in source._files)
    assert source[131] == _record("train", 1, 11)


# -- TBL v2 shards -------------------------------------------------------------------------


def _tbl_name(split: str, shard: int) -> str:
    return _shard_name(split, shard).replace(".tfrecord-", ".tbl-")


def _tbl_gets(fs: Any) -> list[tuple[str, int, int]]:
    return [(path.rsplit("/", 1)[-1], start, end) for path, start, end in fs.ranges]


def test_tbl_samples_are_fetched_exactly_and_batches_per_cluster(tbl_dataset: Path) -> None:
    url, options, fs = _wrapped(None, tbl_dataset)
    source = data_source(url, "train", storage_options=options)
    entries = {k: tbl.TblFile(tbl_dataset / _tbl_name("train", k)).entries for k in range(4)}
    first = {k: sum(TRAIN["lengths"][:k]) for k in range(4)}

    def span(shard: int, *samples: int) -> tuple[str, int, int]:
        start = int(entries[shard]["offset"][samples[0]])
        last = samples[-1]
        stop = int(entries[shard]["offset"][last] + entries[shard]["size"][last])
        return _tbl_name("train", shard), start, stop

    # Opening a shard fetches its header and index: one request for each.
    fs.ranges.clear()
    assert source[first[2] + 17] == _record("train", 2, 17)
    assert _tbl_gets(fs)[-1] == span(2, 17)
    fs.ranges.clear()
    assert source[first[2] + 18] == _record("train", 2, 18)
    assert _tbl_gets(fs) == [span(2, 18)]
    source[0], source[first[1]]  # shards 0 and 1 open
    fs.ranges.clear()
    keys = [first[0] + 90, first[0] + 5, first[0] + 40, first[0] + 5]
    assert source.__getitems__(keys) == [_record("train", 0, i) for i in (90, 5, 40, 5)]
    assert _tbl_gets(fs) == [span(0, 5, 90)]
    fs.ranges.clear()
    assert source.__getitems__([first[1] + 39, first[1]]) == [
        _record("train", 1, 39),
        _record("train", 1, 0),
    ]
    assert sorted(_tbl_gets(fs)) == [span(1, 0), span(1, 39)]


def test_tbl_damage_and_changes_name_the_url(gcs_store: Store, tbl_dataset: Path) -> None:
    name = _tbl_name("train", 1)
    entries = tbl.TblFile(tbl_dataset / name).entries
    offset = int(entries["offset"][20])
    damaged = bytearray((tbl_dataset / name).read_bytes())
    damaged[offset + 100] ^= 0xFF
    url = _upload(gcs_store, tbl_dataset, "tbl-damaged")
    bucket_path = f"{url.split('://', 1)[1]}/{name}"
    put("gs", gcs_store.filesystem(), bucket_path, bytes(damaged))
    source = data_source(url, "train", storage_options=gcs_store.storage_options)
    key = TRAIN["lengths"][0] + 20
    with pytest.raises(CorruptTblError) as caught:
        source[key]
    assert (caught.value.path, caught.value.offset, caught.value.record_index) == (
        f"{url}/{name}",
        offset,
        20,
    )
    with pytest.raises(CorruptTblError):
        source.__getitems__([key + 1, key])
    assert source.__getitems__([key + 1]) == [_record("train", 1, 21)]
    # The object replaced after it was opened (its size unchanged): a change, not damage.
    put("gs", gcs_store.filesystem(), bucket_path, (tbl_dataset / name).read_bytes())
    damaged[offset + 100] ^= 0xFF
    damaged[int(entries["offset"][30]) + 7] ^= 0xFF
    put("gs", gcs_store.filesystem(), bucket_path, bytes(damaged))
    with pytest.raises(ObjectChangedError) as changed:
        source[key + 10]
    assert changed.value.url == f"{url}/{name}"


def test_a_missing_tbl_shard_is_an_object_not_found_error(
    s3_store: Store, tbl_dataset: Path
) -> None:
    missing = _tbl_name("train", 3)
    url = _copy_without(s3_store, tbl_dataset, missing)
    source = data_source(url, "train", storage_options=s3_store.storage_options)
    assert source[0] == _record("train", 0, 0)  # no sidecars: built without opening shards
    with pytest.raises(ObjectNotFoundError) as caught:
        source[len(source) - 1]
    assert caught.value.url == f"{url}/{missing}"


def test_the_reader_reads_a_tbl_dataset_in_a_bucket(
    remote: tuple[str, Store], tbl_dataset: Path
) -> None:
    _, store = remote
    url = _upload(store, tbl_dataset, "tbl-reader")
    config = ReadConfig(shuffle_files=True, shuffle_seed=5, interleave_cycle_length=3)
    options = store.storage_options
    remote_plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train", config)
    local_plan = ReadPlan(DatasetInfo.load(tbl_dataset), "train", config)
    read = [item.record for item in Reader(remote_plan, storage_options=options, epochs=2)]
    assert read == [item.record for item in Reader(local_plan, epochs=2)]
    assert sorted(set(read)) == sorted(_expected([("train", 0, 450)]))
    assert tbl.count(f"{url}/{_tbl_name('train', 1)}", storage_options=options) == 40


def test_tbl_file_reads_samples_and_metadata_from_a_store(tmp_path: Path) -> None:
    pytest.importorskip("fastcrc")
    local = tmp_path / "files" / "images.tbl"
    local.parent.mkdir()
    with tbl.TblWriter(local, compression=True) as writer:
        for k in range(6):
            writer.add(bytes([k]) * 12, format="raw_u8", width=2, height=2, metadata=f"m{k}")
    url, options, _fs = _wrapped(None, local.parent)
    remote = tbl.TblFile(f"{url}/images.tbl", storage_options=options)
    with tbl.TblFile(local) as expected:
        assert list(remote) == list(expected)
        assert [remote.metadata(k).text for k in range(6)] == [f"m{k}" for k in range(6)]
        assert remote.info(4) == expected.info(4)
        assert remote.gather([5, 0, 5]) == [bytes([5]) * 12, b"\0" * 12, bytes([5]) * 12]
    assert list(tbl.read(f"{url}/images.tbl", storage_options=options))[3] == bytes([3]) * 12
    with pytest.raises(ConfigError, match="local file"):
        remote.raw_view()
    remote.close()


def test_a_damaged_tbl_index_entry_is_never_fetched_from(tmp_path: Path) -> None:
    pytest.importorskip("fastcrc")
    local = tmp_path / "files" / "samples.tbl"
    local.parent.mkdir()
    tbl.write(local, [bytes([k]) * 1000 for k in range(8)])
    data = bytearray(local.read_bytes())
    entry = 64 + 24 * 3  # the header is 64 bytes, each index entry 24
    data[entry + 8 : entry + 12] = (1 << 30).to_bytes(4, "little")  # size: 1 GiB
    local.write_bytes(bytes(data))
    url, options, fs = _wrapped(None, local.parent)
    remote = tbl.TblFile(f"{url}/samples.tbl", storage_options=options, read_ahead=False)
    assert remote.gather([7, 2]) == [bytes([7]) * 1000, bytes([2]) * 1000]
    fs.ranges.clear()
    with pytest.raises(CorruptTblError) as caught:
        remote.gather([2, 3, 4])
    assert caught.value.record_index == 3
    # Sample 2 is read, then sample 3 raises from its entry alone (samples start at 256).
    assert [(start, end) for _, start, end in fs.ranges] == [(2256, 3256)]


def test_sidecars_in_a_bucket_of_their_own(remote: tuple[str, Store]) -> None:
    url, store = remote
    fs = store.filesystem()
    bucket = f"readplan-sidecars-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    index_dir = store.url(bucket, "remote_ds/1.0.0")
    options = store.storage_options
    source = data_source(url, "test", storage_options=options, index_dir=index_dir)
    fs.invalidate_cache()
    assert sorted(name.rsplit("/", 1)[-1] for name in fs.find(bucket)) == [
        f"{_shard_name('test', k)}.index" for k in range(2)
    ]
    assert source.__getitems__([54, 0]) == [_record("test", 1, 24), _record("test", 0, 0)]
    again = data_source(url, "test", storage_options=options, index_dir=index_dir)
    assert list(again) == _expected([("test", 0, 55)])


def test_grain_worker_processes_read_a_source_in_a_bucket(gcs_store: Store) -> None:
    grain = pytest.importorskip("grain")
    from absl import flags  # installed with grain

    from readplan.grain import OrderSampler

    flags.FLAGS.mark_as_parsed()  # Grain's workers read absl flags, parsed by absl apps only
    toy = json.loads((DATA / "tfds" / "readplan_toy_orders.json").read_text())
    case = next(c for c in toy["cases"] if c["shuffle_files"])
    bucket = f"readplan-grain-{uuid.uuid4().hex[:8]}"
    url = upload_tree(gcs_store, DATA / "tfds" / "readplan_toy" / "1.0.0", bucket, "toy/1.0.0")
    options = gcs_store.storage_options
    info = DatasetInfo.load(url, storage_options=options)
    config = ReadConfig(**case["read_config"], shuffle_files=True)
    epochs = len(case["epochs"])
    loader = grain.DataLoader(
        data_source=data_source(info, case["spec"], decode=True, storage_options=options),
        sampler=OrderSampler(ReadPlan(info, case["spec"], config), epochs=epochs),
        worker_count=2,
        shard_options=grain.sharding.NoSharding(),
    )
    ids = [int(record["id"][0]) for record in loader]
    assert ids == [entry[3] for epoch in case["epochs"] for entry in epoch]
