"""readplan.data_source: TFDS's key mapping over TFRecord datasets, sidecars, errors.

The conformance tests compare against TFDS itself (tests/data/tfds_data_source: a real TFDS
dataset and, for 41 split strings, ``len`` and the ``id`` of every key as TFDS's own
ArrayRecord data source returned them).  The property tests write shards whose records
name their own shard and index, and derive the expected record of each key from the
split's bounds, not from readplan.
"""

from __future__ import annotations

import base64
import io
import pickle
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import readplan
from readplan import ReadPlan, SkipDecoding, example, tfrecord
from readplan.errors import (
    ConfigError,
    CorruptRecordError,
    DatasetInfoError,
    IndexFileError,
    ReadplanIndexError,
    RecordKeyError,
)
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.instructions import file_instructions
from readplan.reading import data_source as data_source_module
from readplan.reading.data_source import RecordSource, data_source
from readplan.reading.order_keys import OrderKeys
from readplan.records.example import FixedLen
from readplan.records.index import build_index
from readplan.records.tfrecord import _file as records_tfrecord
from readplan.testing import plans
from tests.data_source_checks import (
    CASES,
    TFDS_DIR,
    TFDS_INFO,
    check_access_paths,
    check_case,
    record_id,
    write_layout,
)
from tests.named_shards import NamedShards, plan_records
from tests.strategies import layouts_and_specs


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["spec"] for c in CASES["cases"]])
def test_keys_map_to_the_records_tfds_data_source_returns(
    case: dict[str, Any], index_dir: Path
) -> None:
    instructions = [
        [Path(fi.filename).name, fi.skip, fi.take, fi.examples_in_shard]
        for fi in file_instructions(TFDS_INFO, case["spec"])
    ]
    assert instructions == case["file_instructions"]
    check_case(TFDS_DIR, case, index_dir)


def test_tfds_probes(index_dir: Path) -> None:
    probes = CASES["probes"]
    source = data_source(TFDS_INFO, "train", index_dir=index_dir)
    raw = data_source(TFDS_INFO, "train", decode=True, index_dir=index_dir)
    assert record_id(raw[0]) == probes["item0"]["id"]
    assert raw[0]["payload"] == [base64.b64decode(probes["item0"]["payload_b64"])]
    assert isinstance(source[0], bytes)
    assert record_id(raw[np.int64(3)]) == probes["getitem_np_int64_3"]["id"]
    assert source.__getitems__([]) == probes["getitems_empty"]["result"]
    assert probes["getitem_neg1"]["error"] == "ValueError"
    for key in (-1, len(source), len(source) + 5, np.int64(-1), 1 << 70):
        with pytest.raises(RecordKeyError) as caught:
            source[key]
        assert isinstance(caught.value, IndexError)
        assert isinstance(caught.value, ValueError)  # what TFDS raises
        assert caught.value.key == key
        assert caught.value.length == 301
        assert f"record key {key} " in str(caught.value)
        assert "has 301 records" in str(caught.value)
    with pytest.raises(RecordKeyError):
        source.__getitems__([0, -1])
    with pytest.raises(RecordKeyError):
        source.__getitems__(np.array([5, 301]))
    for bad in (slice(1, 3), 1.0, "1", True, None):
        with pytest.raises(ConfigError, match="integer"):
            source[bad]
    with pytest.raises(ConfigError):
        source.__getitems__([1, 2.5])


def test_repr_is_stable_and_survives_pickling(index_dir: Path) -> None:
    source = data_source(TFDS_DIR, "train[10%:]", decode=True, index_dir=index_dir)
    text = repr(source)
    assert text == (
        "RecordSource('readplan_ds:1.0.0', split='train[10%:]', num_records=271, files=7, "
        "decode=True)"
    )
    source[5]
    copy = pickle.loads(pickle.dumps(source))
    assert repr(copy) == text
    assert copy.__getitems__(range(271)) == source.__getitems__(range(271))
    schema = {"id": FixedLen((), "int64")}
    parsed = data_source(TFDS_DIR, "test", decode=schema, index_dir=index_dir)
    assert repr(pickle.loads(pickle.dumps(parsed))) == repr(parsed)
    assert "'id': FixedLen(" in repr(parsed)
    assert pickle.loads(pickle.dumps(parsed))[0]["id"] == parsed[0]["id"]


def test_many_threads_read_what_one_thread_reads(index_dir: Path) -> None:
    source = data_source(TFDS_DIR, "all", index_dir=index_dir)
    source.close()  # every file is opened by the racing threads
    keys = np.random.default_rng(0).integers(0, len(source), size=4000)
    expected = list(_records_by_walk(TFDS_INFO, "all"))
    with ThreadPoolExecutor(8) as pool:
        singles = list(pool.map(source.__getitem__, keys.tolist()))
        batches = list(pool.map(source.__getitems__, np.array_split(keys, 40)))
    assert singles == [expected[k] for k in keys.tolist()]
    assert [r for b in batches for r in b] == singles


def _records_by_walk(info: DatasetInfo, spec: str) -> Iterator[bytes]:
    """The split's records by a plain sequential read of each file (no data source)."""
    for fi in file_instructions(info, spec):
        records = list(tfrecord.read(fi.filename))
        yield from records[fi.skip : fi.skip + fi.take]


# -- sidecars ----------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "readplan_ds"
    shutil.copytree(TFDS_DIR, target)
    return target


def test_sidecars_are_built_beside_the_data_or_into_index_dir(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    source = data_source(directory, "test")
    assert sorted(p.name for p in directory.glob("*.index")) == [
        f"readplan_ds-test.tfrecord-0000{k}-of-00003.index" for k in range(3)
    ]
    assert list(source) == list(_records_by_walk(DatasetInfo.load(directory), "test"))
    elsewhere = tmp_path / "indexes" / "nested"
    other = data_source(directory, "train[:50]", index_dir=elsewhere)
    assert sorted(p.name for p in elsewhere.iterdir()) == [
        "readplan_ds-train.tfrecord-00000-of-00008.index",
        "readplan_ds-train.tfrecord-00001-of-00008.index",
        "readplan_ds-train.tfrecord-00002-of-00008.index",
    ]
    assert not list(directory.glob("*train*.index"))
    assert len(other) == 50


def test_offsets_stay_in_memory_when_nothing_is_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _copy(tmp_path)
    # The tests run as root, for whom every folder is writable: simulate a read-only one.
    monkeypatch.setattr(data_source_module.os, "access", lambda path, mode: False)
    source = data_source(directory, "train")
    assert not list(directory.glob("*.index"))
    assert list(source) == list(_records_by_walk(DatasetInfo.load(directory), "train"))
    assert source.__getitems__([300, 0]) == [source[300], source[0]]


def test_stale_and_damaged_sidecars_are_refused(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    shard = directory / "readplan_ds-test.tfrecord-00001-of-00003"
    source = data_source(directory, "test")
    good = source[17]
    source.close()
    original = shard.read_bytes()
    shard.write_bytes(original + original[:20])  # changed after indexing
    with pytest.raises(IndexFileError, match="stale") as caught:
        data_source(directory, "test")[17]
    assert caught.value.path == str(shard) + ".index"
    shard.write_bytes(original)
    sidecar = Path(str(shard) + ".index")
    sidecar.write_bytes(sidecar.read_bytes()[:-3])
    with pytest.raises(IndexFileError, match="truncated"):
        data_source(directory, "test")[17]
    build_index(shard)
    assert data_source(directory, "test")[17] == good


def test_damage_is_reported_with_file_and_offset(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    shard = directory / "readplan_ds-test.tfrecord-00002-of-00003"
    data = bytearray(shard.read_bytes())
    data[-5] ^= 0xFF  # the last record's data (its CRC no longer matches)
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as caught:
        data_source(directory, "test")  # building the sidecar reads every record
    assert caught.value.path == str(shard)
    assert caught.value.record_index == 22
    assert not Path(str(shard) + ".index").exists()


def test_damage_after_indexing_is_reported_on_access(tmp_path: Path) -> None:
    # 600 records of 1 KiB: the middle lies outside the 64 KiB at each end that bind a
    # sidecar to its file, so the sidecar stays valid and the record's CRC catches it.
    info = DatasetInfo("big", {"train": [600]}, data_dir=str(tmp_path))
    records = [bytes([i % 256]) * 1024 for i in range(600)]
    shard = Path(info.shard_path("train", 0))
    tfrecord.write(shard, records)
    source = data_source(info, "train")
    data = bytearray(shard.read_bytes())
    start = 300 * (1024 + 16)
    data[start + 12 + 7] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as caught:
        source[300]
    assert (caught.value.path, caught.value.record_index) == (str(shard), 300)
    assert caught.value.offset == start
    assert caught.value.kind == tfrecord.KIND_DATA_CRC
    with pytest.raises(CorruptRecordError):
        source.__getitems__([299, 300, 301])
    assert source.__getitems__([301, 0]) == [records[301], records[0]]


def test_a_shard_shorter_than_its_metadata_is_refused(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    shard = directory / "readplan_ds-test.tfrecord-00001-of-00003"
    tfrecord.write(shard, list(tfrecord.read(shard))[:3])
    source = data_source(directory, "test")
    assert (
        source[16]
        == list(tfrecord.read(directory / "readplan_ds-test.tfrecord-00000-of-00003"))[16]
    )
    with pytest.raises(DatasetInfoError, match="holds only 3 records") as caught:
        source[17]
    assert caught.value.field == "shardLengths"


def test_records_of_one_file_share_positioned_reads(
    index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = data_source(TFDS_DIR, "train", index_dir=index_dir)
    expected = [source[k] for k in (100, 50, 60, 50)]  # keys 48..110 are shard 2
    calls: list[tuple[int, int]] = []
    real = records_tfrecord.read_span

    def counting(fd: int, size: int, offset: int) -> bytes:
        calls.append((size, offset))
        return real(fd, size, offset)

    monkeypatch.setattr(records_tfrecord, "read_span", counting)
    assert source.__getitems__([100, 50, 60, 50]) == expected
    assert len(calls) == 1
    calls.clear()
    assert source.__getitems__([0, 300]) == [source[0], source[300]]  # two files
    assert len(calls) == 4


# -- edges and arguments -----------------------------------------------------------------


def test_an_empty_split_gives_an_empty_source(index_dir: Path) -> None:
    source = data_source(TFDS_INFO, "train[5:5]", index_dir=index_dir)
    assert len(source) == 0
    assert list(source) == []
    assert source.__getitems__([]) == []
    with pytest.raises(RecordKeyError, match="has 0 records"):
        source[0]


def test_tfds_decoding_takes_decoders(tmp_path: Path) -> None:
    skipping = data_source(
        TFDS_DIR, "test", decode="tfds", decoders={"id": SkipDecoding()}, index_dir=tmp_path
    )
    assert repr(skipping).endswith("decode='tfds', decoders={'id': SkipDecoding()})")
    plain = data_source(TFDS_DIR, "test", index_dir=tmp_path)
    # These features have no encoding: skipping their decoding yields the same values.
    assert skipping[3] == {
        "id": int(example.decode(plain[3])["id"][0]),
        "payload": example.decode(plain[3])["payload"][0],
    }
    copy = pickle.loads(pickle.dumps(skipping))
    assert copy.__getitems__([3, 0]) == skipping.__getitems__([3, 0])
    bare = write_layout(tmp_path / "bare", {"train": [2]})
    with pytest.raises(ConfigError, match=r"no features\.json"):
        data_source(bare, "train", decode="tfds")
    with pytest.raises(ConfigError, match="decode='tfds'"):
        data_source(TFDS_DIR, "train", decoders={"id": SkipDecoding()})


def test_arguments_are_checked() -> None:
    with pytest.raises(ConfigError, match="decode"):
        data_source(TFDS_DIR, "train", decode="example")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="data_dir"):
        data_source(DatasetInfo.from_catalog("imagenet2012"), "train")
    with pytest.raises(ConfigError, match="DatasetInfo"):
        data_source(42, "train")  # type: ignore[arg-type]
    with pytest.raises(readplan.SplitError):
        data_source(TFDS_DIR, "validation")
    assert readplan.data_source is data_source
    assert readplan.RecordSource is RecordSource


# -- properties --------------------------------------------------------------------------


@settings(max_examples=60)
@given(layouts_and_specs(), st.data())
def test_keys_follow_the_split_and_every_access_path_agrees(
    layout: tuple[dict[str, list[int]], list[tuple[str, int, int]]], data: st.DataObject
) -> None:
    check_access_paths(layout, "tfrecord", data)


@settings(max_examples=40)
@given(
    st.lists(st.integers(0, 40_000), min_size=1, max_size=40),
    st.sampled_from([None, "GZIP"]),
    st.data(),
)
def test_gather_returns_the_records_asked_for(
    sizes: list[int], compression: str | None, data: st.DataObject
) -> None:
    records = [bytes([k % 251]) * size for k, size in enumerate(sizes)]
    wanted = data.draw(st.lists(st.integers(0, len(records) - 1), max_size=60))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.tfrecord"
        tfrecord.write(path, records, compression=compression)
        with tfrecord.RecordFile(path, compression=compression) as opened:
            assert opened.gather(wanted) == [records[i] for i in wanted]
            assert opened.gather(np.array(wanted, dtype=np.int64)) == [records[i] for i in wanted]
            assert opened.gather([-1, -len(records)]) == [records[-1], records[0]]
            for bad in (len(records), -len(records) - 1):
                with pytest.raises(ReadplanIndexError) as raised:
                    opened.gather([*wanted, bad])
                assert (raised.value.key, raised.value.length) == (bad, len(records))


def test_large_records_of_many_files_read_alike_in_parallel(tmp_path: Path) -> None:
    lengths = {"train": [3, 4, 2]}
    info = DatasetInfo("large", lengths, data_dir=str(tmp_path))
    expected = []
    for k, count in enumerate(lengths["train"]):
        records = [bytes([k, i]) * 150_000 for i in range(count)]
        tfrecord.write(info.shard_path("train", k), records)
        expected.extend(records)
    source = data_source(info, "train")
    keys = [8, 0, 4, 1, 8, 5, 2]
    assert source.__getitems__(keys) == [expected[k] for k in keys]  # 2 MB: parallel reads
    assert source.__getitems__(keys[:2]) == [expected[k] for k in keys[:2]]


@settings(max_examples=40)
@given(plans(), st.integers(1, 3))
def test_order_keys_read_the_plans_records_in_order(plan: ReadPlan, epochs: int) -> None:
    with NamedShards(plan.info) as shards:
        layout = {name: list(split.shard_lengths) for name, split in plan.info.splits.items()}
        info = DatasetInfo(plan.info.name, layout, data_dir=str(shards.directory))
        source = data_source(info, plan.spec)
        keys = OrderKeys(plan, epochs=epochs)
        assert len(keys) == epochs * plan.num_examples
        got = source.__getitems__([keys[i] for i in range(len(keys))])
        assert got == [r for e in range(epochs) for r in plan_records(plan, e)]
        with pytest.raises(RecordKeyError):
            keys[len(keys)]
        copy = pickle.loads(pickle.dumps(keys))
        assert [copy[i] for i in range(len(keys))] == [keys[i] for i in range(len(keys))]
        source.close()


def test_building_sidecars_reports_progress_over_the_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _copy(tmp_path)
    shown = io.StringIO()
    real = data_source_module.Progress

    def drawing(label: str, **options: Any) -> Any:
        # As on a terminal, with no delay: every step is drawn.
        return real(label, **{**options, "delay": 0.0, "stream": shown, "force": True})

    monkeypatch.setattr(data_source_module, "Progress", drawing)
    size = sum(p.stat().st_size for p in directory.glob("*test.tfrecord*"))  # 2,560 bytes
    data_source(directory, "test")
    assert "indexing readplan_ds test" in shown.getvalue()
    assert f"100.0% {size / 1000:.1f}k/{size / 1000:.1f}kB" in shown.getvalue()
    shown.truncate(0)
    data_source(directory, "test")  # nothing to build: no bar
    assert shown.getvalue().strip("\x00") == ""
