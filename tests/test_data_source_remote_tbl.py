"""TBL v2 shards over object stores: samples fetched exactly and batched per cluster, damage
and changes named by URL, and TblFile reading a store.

``specs/tbl.md`` and ``specs/data_source.md`` §3.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from readplan import tbl
from readplan.errors import ConfigError, CorruptTblError, ObjectChangedError, ObjectNotFoundError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadConfig, ReadPlan
from readplan.reading.data_source import data_source
from readplan.reading.reader import Reader

pytest.importorskip("fsspec")
from tests import remote_source
from tests.remote_source import (
    TRAIN,
    copy_without,
    expected_records,
    record,
    tbl_name,
    upload,
    wrapped,
)
from tests.remote_stores import Store, put

# The shared module-scoped fixtures, bound here: this module's own copies.
dataset = remote_source.dataset
uploaded = remote_source.uploaded
remote = remote_source.remote
tbl_dataset = remote_source.tbl_dataset


def _tbl_gets(fs: Any) -> list[tuple[str, int, int]]:
    return [(path.rsplit("/", 1)[-1], start, end) for path, start, end in fs.ranges]


def test_tbl_samples_are_fetched_exactly_and_batches_per_cluster(tbl_dataset: Path) -> None:
    url, options, fs = wrapped(None, tbl_dataset)
    source = data_source(url, "train", storage_options=options)
    entries = {k: tbl.TblFile(tbl_dataset / tbl_name("train", k)).entries for k in range(4)}
    first = {k: sum(TRAIN["lengths"][:k]) for k in range(4)}

    def span(shard: int, *samples: int) -> tuple[str, int, int]:
        start = int(entries[shard]["offset"][samples[0]])
        last = samples[-1]
        stop = int(entries[shard]["offset"][last] + entries[shard]["size"][last])
        return tbl_name("train", shard), start, stop

    # Opening a shard fetches its header and index: one request for each.
    fs.ranges.clear()
    assert source[first[2] + 17] == record("train", 2, 17)
    assert _tbl_gets(fs)[-1] == span(2, 17)
    fs.ranges.clear()
    assert source[first[2] + 18] == record("train", 2, 18)
    assert _tbl_gets(fs) == [span(2, 18)]
    source[0], source[first[1]]  # shards 0 and 1 open
    fs.ranges.clear()
    keys = [first[0] + 90, first[0] + 5, first[0] + 40, first[0] + 5]
    assert source.__getitems__(keys) == [record("train", 0, i) for i in (90, 5, 40, 5)]
    assert _tbl_gets(fs) == [span(0, 5, 90)]
    fs.ranges.clear()
    assert source.__getitems__([first[1] + 39, first[1]]) == [
        record("train", 1, 39),
        record("train", 1, 0),
    ]
    assert sorted(_tbl_gets(fs)) == [span(1, 0), span(1, 39)]


def test_tbl_damage_and_changes_name_the_url(gcs_store: Store, tbl_dataset: Path) -> None:
    name = tbl_name("train", 1)
    entries = tbl.TblFile(tbl_dataset / name).entries
    offset = int(entries["offset"][20])
    damaged = bytearray((tbl_dataset / name).read_bytes())
    damaged[offset + 100] ^= 0xFF
    url = upload(gcs_store, tbl_dataset, "tbl-damaged")
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
    assert source.__getitems__([key + 1]) == [record("train", 1, 21)]
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
    missing = tbl_name("train", 3)
    url = copy_without(s3_store, tbl_dataset, missing)
    source = data_source(url, "train", storage_options=s3_store.storage_options)
    assert source[0] == record("train", 0, 0)  # no sidecars: built without opening shards
    with pytest.raises(ObjectNotFoundError) as caught:
        source[len(source) - 1]
    assert caught.value.url == f"{url}/{missing}"


def test_the_reader_reads_a_tbl_dataset_in_a_bucket(
    remote: tuple[str, Store], tbl_dataset: Path
) -> None:
    _, store = remote
    url = upload(store, tbl_dataset, "tbl-reader")
    config = ReadConfig(shuffle_files=True, shuffle_seed=5, interleave_cycle_length=3)
    options = store.storage_options
    remote_plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train", config)
    local_plan = ReadPlan(DatasetInfo.load(tbl_dataset), "train", config)
    read = [item.record for item in Reader(remote_plan, storage_options=options, epochs=2)]
    assert read == [item.record for item in Reader(local_plan, epochs=2)]
    assert sorted(set(read)) == sorted(expected_records([("train", 0, 450)]))
    assert tbl.count(f"{url}/{tbl_name('train', 1)}", storage_options=options) == 40


def test_tbl_file_reads_samples_and_metadata_from_a_store(tmp_path: Path) -> None:
    pytest.importorskip("fastcrc")
    local = tmp_path / "files" / "images.tbl"
    local.parent.mkdir()
    with tbl.TblWriter(local, compression=True) as writer:
        for k in range(6):
            writer.add(bytes([k]) * 12, format="raw_u8", width=2, height=2, metadata=f"m{k}")
    url, options, _fs = wrapped(None, local.parent)
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
    url, options, fs = wrapped(None, local.parent)
    remote = tbl.TblFile(f"{url}/samples.tbl", storage_options=options, read_ahead=False)
    assert remote.gather([7, 2]) == [bytes([7]) * 1000, bytes([2]) * 1000]
    fs.ranges.clear()
    with pytest.raises(CorruptTblError) as caught:
        remote.gather([2, 3, 4])
    assert caught.value.record_index == 3
    # Sample 2 is read, then sample 3 raises from its entry alone (samples start at 256).
    assert [(start, end) for _, start, end in fs.ranges] == [(2256, 3256)]
