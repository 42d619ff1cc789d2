"""Data-source failures over object stores: a missing, replaced or damaged shard is an error
naming its URL (and the record's offset), never a wrong record.

``specs/data_source.md`` §3.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from readplan import tfrecord
from readplan.errors import (
    CorruptRecordError,
    IndexFileError,
    ObjectChangedError,
    ObjectNotFoundError,
)
from readplan.reading.data_source import data_source

pytest.importorskip("fsspec")
from tests import remote_source
from tests.remote_source import TRAIN, copy_without, record, shard_name, upload
from tests.remote_stores import Store, put

# The shared module-scoped fixtures, bound here: this module's own copies.
dataset = remote_source.dataset
uploaded = remote_source.uploaded
remote = remote_source.remote


# -- errors --------------------------------------------------------------------------------


def test_a_missing_shard_is_an_object_not_found_error_naming_its_url(
    remote: tuple[str, Store], dataset: Path, tmp_path: Path
) -> None:
    _, store = remote
    options = store.storage_options
    missing = shard_name("train", 2)
    url = copy_without(store, dataset, missing)
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
    url = upload(store, dataset, "changed")
    source = data_source(url, "train", storage_options=store.storage_options)
    first = sum(TRAIN["lengths"][:3])
    assert source[first] == record("train", 3, 0)  # shard 3 is open: its version pinned
    name = shard_name("train", 3)
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
    name = shard_name("train", 1)  # 2.4 MB: its middle is outside the sidecar's binding
    offsets = tfrecord.RecordFile(dataset / name).offsets
    damaged = bytearray((dataset / name).read_bytes())
    start = int(offsets[20])
    damaged[start + 12 + 1000] ^= 0xFF
    sidecars = tmp_path / "sidecars"
    data_source(dataset, "train", index_dir=sidecars)  # sidecars of the sound files
    url = upload(store, dataset, "damaged")
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
    assert source.__getitems__([key + 1, 0]) == [record("train", 1, 21), record("train", 0, 0)]
    # Without a sidecar, building it reads every record and finds the damage.
    with pytest.raises(CorruptRecordError) as caught:
        data_source(url, "train", storage_options=store.storage_options)
    assert (caught.value.path, caught.value.offset) == (f"{url}/{name}", start)
