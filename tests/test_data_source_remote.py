"""readplan.data_source over object stores, against real local emulators: the same records as
the local source, fetched in few exact requests, in worker processes too.

The GCS and S3 emulators run as separate processes on loopback ports (session fixtures in
``conftest.py``); ``wrapped://`` (``tests/remote_stores.py``) counts requests and ranges,
refuses writes, and forwards to an in-process memory store or to an emulator. Records
name their own shard and index (``tests/remote_source.py``), so the expected record of a key
comes from the split's bounds, not from readplan; the local source over the same files is
read alongside. ``specs/data_source.md`` §2 and §3.1.
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadConfig, ReadPlan
from readplan.reading.data_source import RecordSource, data_source
from readplan.reading.reader import Reader
from tests.conftest import DATA
from tests.tfds_toy import TOY, TOY_DIR

pytest.importorskip("fsspec")
from tests import remote_source
from tests.remote_source import (
    LENGTHS,
    TRAIN,
    data_gets,
    expected_records,
    record,
    shard_name,
    wrapped,
)
from tests.remote_stores import Store, upload_tree

# The shared module-scoped fixtures, bound here: this module's own copies.
dataset = remote_source.dataset
local_indexes = remote_source.local_indexes
uploaded = remote_source.uploaded
remote = remote_source.remote
tbl_dataset = remote_source.tbl_dataset
copy = remote_source.copy


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
    expected = expected_records(parts)
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
    expected = expected_records([("test", 0, 55), ("train", 100, 150)])
    assert list(source) == expected
    assert source.paths[0] == f"{url}/{shard_name('test', 0)}"
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
    url, options, _ = wrapped(gcs_store, folder)
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


def test_keys_are_fetched_as_exact_spans_and_batches_per_file(
    dataset: Path, local_indexes: Path
) -> None:
    url, options, fs = wrapped(None, dataset)
    source = data_source(url, "train", storage_options=options)
    offsets = {k: tfrecord.RecordFile(dataset / shard_name("train", k)).offsets for k in range(4)}
    frame = {k: 16 + size for k, size in enumerate(TRAIN["sizes"])}
    first = {k: sum(TRAIN["lengths"][:k]) for k in range(4)}
    source[0], source[first[1]], source[first[2]], source[first[3]]  # every file opened
    fs.ranges.clear()
    assert source[first[2] + 17] == record("train", 2, 17)
    start = int(offsets[2][17])
    assert data_gets(fs) == [(shard_name("train", 2), start, start + frame[2])]
    # Nearby records of one file: one request from the first frame to the end of the last.
    fs.ranges.clear()
    keys = [first[0] + 90, first[0] + 5, first[0] + 40, first[0] + 5]
    assert source.__getitems__(keys) == [record("train", 0, i) for i in (90, 5, 40, 5)]
    span = (int(offsets[0][5]), int(offsets[0][90]) + frame[0])
    assert data_gets(fs) == [(shard_name("train", 0), *span)]
    # Records of several files: one request per file.
    fs.ranges.clear()
    keys = [first[3] + 80, first[0] + 1, first[2] + 3, first[3] + 2, first[0] + 0]
    assert len(source.__getitems__(keys)) == 5
    assert sorted(name for name, _, _ in data_gets(fs)) == sorted(
        shard_name("train", k) for k in (0, 2, 3)
    )
    # Records more than 1 MiB apart in one file are two requests, not one of the gap.
    fs.ranges.clear()
    assert source.__getitems__([first[1] + 39, first[1]]) == [
        record("train", 1, 39),
        record("train", 1, 0),
    ]
    assert sorted(data_gets(fs)) == [
        (shard_name("train", 1), int(offsets[1][i]), int(offsets[1][i]) + frame[1]) for i in (0, 39)
    ]


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
    url, options, fs = wrapped(None, dataset)
    source = data_source(url, "train", storage_options=options)
    assert source[130] == record("train", 1, 10)
    fs.requests.clear()
    copy = pickle.loads(pickle.dumps(source))
    assert sum(fs.requests.values()) == 0
    assert repr(copy) == repr(source)
    assert copy[130] == record("train", 1, 10)
    assert fs.requests["info"] > 0  # opened, in this copy, on first access
    source.close()
    source.close()
    assert all(file is None for file in source._files)
    assert source[131] == record("train", 1, 11)


def test_grain_worker_processes_read_a_source_in_a_bucket(gcs_store: Store) -> None:
    grain = pytest.importorskip("grain")
    from absl import flags  # installed with grain

    from readplan.grain import OrderSampler

    flags.FLAGS.mark_as_parsed()  # Grain's workers read absl flags, parsed by absl apps only
    case = next(c for c in TOY["cases"] if c["shuffle_files"])
    bucket = f"readplan-grain-{uuid.uuid4().hex[:8]}"
    url = upload_tree(gcs_store, TOY_DIR, bucket, "toy/1.0.0")
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
