"""A small dataset whose records name themselves, on local disk and in the GCS and S3
emulators: what the data-source tests over object stores share.

Records name their own shard and index, so the expected record of a key comes from the
split's bounds, not from readplan. The fixtures here are module-scoped (the emulators are
``conftest.py``'s session fixtures); a test module binds those it uses, and those they use,
to its own names (``dataset = remote_source.dataset``), and so has its own copies.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from readplan import tfrecord
from readplan.convert import convert
from tests.remote_stores import Store, put, upload_tree, wrapped_copy

# Bytes per record of each train shard: small records, records far apart (a key 17
# records further is more than 1 MiB away), and in between.
TRAIN = {"sizes": [50, 60_000, 300, 9_000], "lengths": [120, 40, 200, 90]}
TEST = {"sizes": [700, 120], "lengths": [30, 25]}
LENGTHS = {"train": TRAIN["lengths"], "test": TEST["lengths"]}
SIZES = {"train": TRAIN["sizes"], "test": TEST["sizes"]}


def record(split: str, shard: int, index: int) -> bytes:
    size = SIZES[split][shard]
    return (f"{split}/{shard}/{index}/".encode() * size)[:size]


def shard_name(split: str, shard: int) -> str:
    return f"remote_ds-{split}.tfrecord-{shard:05d}-of-{len(LENGTHS[split]):05d}"


def _write_dataset(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for split, lengths in LENGTHS.items():
        for shard, count in enumerate(lengths):
            records = (record(split, shard, i) for i in range(count))
            tfrecord.write(folder / shard_name(split, shard), records)
    splits = [{"name": name, "shardLengths": [str(n) for n in n_]} for name, n_ in LENGTHS.items()]
    info = {"name": "remote_ds", "version": "1.0.0", "splits": splits}
    (folder / "dataset_info.json").write_text(json.dumps(info))
    return folder


def expected_records(parts: list[tuple[str, int, int]]) -> list[bytes]:
    """Records ``a .. b-1`` of each split, in order."""
    out = []
    for split, a, b in parts:
        where = [(k, i) for k, count in enumerate(LENGTHS[split]) for i in range(count)]
        out.extend(record(split, k, i) for k, i in where[a:b])
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset on local disk, without sidecars (sources over it use an index_dir)."""
    return _write_dataset(tmp_path_factory.mktemp("remote_source") / "remote_ds" / "1.0.0")


@pytest.fixture(scope="module")
def local_indexes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("local_indexes")


def upload(store: Store, folder: Path, name: str = "ds") -> str:
    return upload_tree(store, folder, f"readplan-{name}-{uuid.uuid4().hex[:8]}", "remote_ds/1.0.0")


@pytest.fixture(scope="module")
def uploaded(gcs_store: Store, s3_store: Store, dataset: Path) -> dict[str, tuple[str, Store]]:
    """The dataset in both emulators: ``{protocol: (url, store)}``."""
    return {store.protocol: (upload(store, dataset), store) for store in (gcs_store, s3_store)}


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
    return upload(store, local, "tbl"), store, local


def wrapped(target: Store | None, folder: Path, **options: Any) -> tuple[str, dict[str, Any], Any]:
    return wrapped_copy(folder, "ds", target, **options)


def data_gets(fs: Any) -> list[tuple[str, int, int]]:
    return [
        (path.rsplit("/", 1)[-1], start, end)
        for path, start, end in fs.ranges
        if ".tfrecord-" in path and not path.endswith(".index")
    ]


def copy_without(store: Store, folder: Path, skip: str) -> str:
    fs = store.filesystem()
    bucket = f"readplan-partial-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    for path in sorted(folder.iterdir()):
        if path.name != skip:
            put(store.protocol, fs, f"{bucket}/ds/{path.name}", path.read_bytes())
    fs.invalidate_cache()
    return store.url(bucket, "ds")


def tbl_name(split: str, shard: int) -> str:
    return shard_name(split, shard).replace(".tfrecord-", ".tbl-")
