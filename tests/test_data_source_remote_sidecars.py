"""Data-source sidecars over object stores: built once beside the data or in an index_dir,
kept in memory where the store is read-only, and bound to the object they describe.

The wrapped store (``tests/remote_stores.py``) counts every request and range read, so the
tests pin how few requests opening a shard takes. ``specs/data_source.md`` §3 and §3.1.
"""

from __future__ import annotations

import os
import pickle
import uuid
from pathlib import Path
from typing import Any

import pytest

from readplan.errors import IndexFileError
from readplan.reading.data_source import data_source

pytest.importorskip("fsspec")
from tests import remote_source
from tests.remote_source import (
    SIZES,
    TRAIN,
    data_gets,
    expected_records,
    record,
    shard_name,
    wrapped,
)
from tests.remote_stores import Store

# The shared module-scoped fixtures, bound here: this module's own copies.
dataset = remote_source.dataset
uploaded = remote_source.uploaded
remote = remote_source.remote


# -- sidecars ------------------------------------------------------------------------------


def _objects(fs: Any, url: str) -> list[str]:
    fs.invalidate_cache()
    return sorted(name.rsplit("/", 1)[-1] for name in fs.target.find(url.split("://", 1)[1]))


def _shard_size(dataset: Path, split: str, shard: int) -> int:
    return (dataset / shard_name(split, shard)).stat().st_size


def _frame(split: str, shard: int, index: int) -> tuple[str, int, int]:
    """The exact read of one record: its frame, from the split's sizes alone."""
    size = SIZES[split][shard] + 16
    return shard_name(split, shard), index * size, (index + 1) * size


def test_sidecars_are_built_once_beside_the_data(dataset: Path) -> None:
    url, options, fs = wrapped(None, dataset)
    source = data_source(url, "test", storage_options=options)
    # dataset_info.json, one listing; per shard one lookup, the whole (small) file in one
    # read, one upload.
    assert dict(fs.requests) == {"get": 3, "ls": 1, "info": 2, "put": 2}
    assert sorted(data_gets(fs)) == [
        (shard_name("test", k), 0, _shard_size(dataset, "test", k)) for k in range(2)
    ]
    assert [name for name in _objects(fs, url) if name.endswith(".index")] == [
        f"{shard_name('test', k)}.index" for k in range(2)
    ]
    assert source[54] == record("test", 1, 24)
    fs.requests.clear()
    again = data_source(url, "test", storage_options=options)
    # dataset_info.json and one listing of the folder: nothing is read or written again.
    assert dict(fs.requests) == {"get": 1, "ls": 1}
    fs.requests.clear()
    fs.ranges.clear()
    assert again[54] == record("test", 1, 24)
    # Opening the shard: one lookup, its sidecar in one read, the binding's first and last
    # 64 KiB (the whole file of 3.4 kB: this store has no content versions); then the frame.
    assert dict(fs.requests) == {"info": 1, "get": 3}
    assert data_gets(fs) == [
        (shard_name("test", 1), 0, _shard_size(dataset, "test", 1)),
        _frame("test", 1, 24),
    ]


def test_opening_a_shard_in_a_store_with_versions_reads_only_its_sidecar(
    gcs_store: Store, dataset: Path
) -> None:
    url, options, fs = wrapped(gcs_store, dataset)
    data_source(url, "train", storage_options=options)  # the sidecars, built in the store
    source = data_source(url, "train", storage_options=options)
    fs.requests.clear()
    fs.ranges.clear()
    first = sum(TRAIN["lengths"][:2])
    assert source[first + 7] == record("train", 2, 7)
    # The sidecar names the object version the lookup finds: no data read binds it.
    assert dict(fs.requests) == {"info": 1, "get": 2}
    assert data_gets(fs) == [_frame("train", 2, 7)]


@pytest.mark.parametrize("where", ["local", "remote"])
def test_sidecars_go_to_index_dir(dataset: Path, tmp_path: Path, where: str) -> None:
    url, options, fs = wrapped(None, dataset)
    index_dir = str(tmp_path / "sidecars") if where == "local" else f"{url}-sidecars/nested"
    source = data_source(url, "train[:130]", storage_options=options, index_dir=index_dir)
    names = [f"{shard_name('train', k)}.index" for k in range(2)]
    if where == "local":
        assert sorted(os.listdir(index_dir)) == names
    else:
        assert _objects(fs, index_dir) == names
    assert not [name for name in _objects(fs, url) if name.endswith(".index")]
    assert source.__getitems__([129, 0]) == [record("train", 1, 9), record("train", 0, 0)]
    fs.requests.clear()
    data_source(url, "train[:130]", storage_options=options, index_dir=index_dir)
    assert fs.requests["put"] == 0


@pytest.mark.parametrize("versions", [False, True], ids=["times", "versions"])
def test_a_read_only_store_keeps_offsets_in_memory(
    dataset: Path, versions: bool, request: pytest.FixtureRequest
) -> None:
    target = request.getfixturevalue("gcs_store") if versions else None
    url, options, fs = wrapped(target, dataset, read_only=True)
    source = data_source(url, "test", storage_options=options)
    # As where it can write: each shard read once, its upload refused.
    assert dict(fs.requests) == {"get": 3, "ls": 1, "info": 2, "put": 2}
    assert not [name for name in _objects(fs, url) if name.endswith(".index")]
    for opened in (source, pickle.loads(pickle.dumps(source))):
        fs.requests.clear()
        fs.ranges.clear()
        assert opened[54] == record("test", 1, 24)
        # Opened with the offsets built: no walk. The binding reads the (small) file again
        # only where the store names no content version.
        binding = [] if versions else [(shard_name("test", 1), 0, _shard_size(dataset, "test", 1))]
        assert dict(fs.requests) == {"info": 1, "get": 1 + len(binding)}
        assert data_gets(fs) == [*binding, _frame("test", 1, 24)]
    assert list(source) == expected_records([("test", 0, 55)])
    assert source.__getitems__([54, 0, 31]) == expected_records(
        [("test", 54, 55), ("test", 0, 1), ("test", 31, 32)]
    )


@pytest.mark.parametrize("change", ["size", "first bytes"])
def test_offsets_kept_in_memory_are_refused_for_a_replaced_shard(
    dataset: Path, change: str
) -> None:
    url, options, fs = wrapped(None, dataset, read_only=True)
    source = data_source(url, "test", storage_options=options)
    name = shard_name("test", 0)
    data = bytearray((dataset / name).read_bytes())
    if change == "size":
        del data[-716:]
    else:
        data[20] ^= 0xFF
    fs.target.pipe_file(f"{url.split('://', 1)[1]}/{name}", bytes(data))
    with pytest.raises(IndexFileError) as caught:
        source[3]
    # No sidecar was written: the error names what holds the offsets, not a missing file.
    assert caught.value.path is None
    assert str(caught.value).startswith(f"offsets held in memory for {url}/{name} ")
    assert f"{name}.index" not in str(caught.value)
    assert caught.value.field == ("data_size" if change == "size" else "binding_crc")


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
        f"{shard_name('test', k)}.index" for k in range(2)
    ]
    assert source.__getitems__([54, 0]) == [record("test", 1, 24), record("test", 0, 0)]
    again = data_source(url, "test", storage_options=options, index_dir=index_dir)
    assert list(again) == expected_records([("test", 0, 55)])
