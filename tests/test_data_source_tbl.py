"""readplan.data_source over a dataset converted to TBL v2: TFDS's key mapping, as on TFRecord.

The conformance test converts the TFDS fixture (tests/data/tfds_data_source) and checks
every split string of ``data_source_cases.json`` against the ids TFDS's own data source
returned, and the records against those of the TFRecord original.  The property test
writes TBL shards whose samples name their own shard and index.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import tbl
from readplan.convert import convert
from readplan.errors import CorruptTblError, DatasetInfoError, RecordKeyError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading.data_source import data_source
from tests.data_source_checks import CASES, TFDS_DIR, check_access_paths, check_case
from tests.strategies import layouts_and_specs

pytest.importorskip("fastcrc")


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("tbl") / "readplan_ds"
    convert(TFDS_DIR, target, format="tbl")
    return target


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["spec"] for c in CASES["cases"]])
def test_converted_keys_map_as_on_the_tfrecord_original(
    converted: Path, index_dir: Path, case: dict[str, Any]
) -> None:
    check_case(converted, case, index_dir)
    if "data_source" in case:
        return
    raw = data_source(converted, case["spec"])
    original = data_source(TFDS_DIR, case["spec"], index_dir=index_dir)
    backwards = list(range(len(raw)))[::-1]
    assert raw.__getitems__(backwards) == original.__getitems__(backwards)
    assert list(raw) == list(original)


def test_no_sidecars_repr_and_pickling(converted: Path) -> None:
    source = data_source(converted, "train[10%:]", decode=True)
    assert not list(converted.glob("*.index"))
    assert repr(source) == (
        "RecordSource('readplan_ds:1.0.0', split='train[10%:]', num_records=271, files=7, "
        "decode=True)"
    )
    source[5]
    copy = pickle.loads(pickle.dumps(source))
    assert repr(copy) == repr(source)
    assert copy.__getitems__(range(271)) == source.__getitems__(range(271))
    with pytest.raises(RecordKeyError, match="has 271 records"):
        source[271]


def test_a_damaged_shard_gives_the_containers_error(converted: Path, tmp_path: Path) -> None:
    directory = tmp_path / "readplan_ds"
    convert(converted, directory, format="tbl")
    # The test shards hold 17, 4 and 23 records: key 20 is the last sample of the second.
    shard = directory / "readplan_ds-test.tbl-00001-of-00003"
    with tbl.TblFile(shard) as opened:
        entry = opened.info(3)
    data = bytearray(shard.read_bytes())
    data[entry.offset + entry.size - 1] ^= 0xFF
    shard.write_bytes(bytes(data))
    source = data_source(directory, "test")
    for read in (lambda: source[20], lambda: source.__getitems__([0, 20, 21])):
        with pytest.raises(CorruptTblError) as caught:
            read()
        assert (caught.value.path, caught.value.record_index) == (str(shard), 3)
        assert caught.value.kind == "data_crc"
        assert caught.value.offset == entry.offset
    assert source.__getitems__([21, 0]) == [source[21], source[0]]
    data[:4] = b"XXXX"  # the header's magic: the file is refused when it is opened
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptTblError) as caught:
        data_source(directory, "test")[20]
    assert caught.value.path == str(shard)
    assert caught.value.kind == "bad_magic"


def test_a_shard_shorter_than_its_metadata_is_refused(tmp_path: Path) -> None:
    info = DatasetInfo("short", {"train": [4, 5]}, data_dir=str(tmp_path), file_format="tbl")
    tbl.write(info.shard_path("train", 0), [b"a"] * 4)
    tbl.write(info.shard_path("train", 1), [b"b"] * 2)
    source = data_source(info, "train")
    assert source[3] == b"a"
    with pytest.raises(DatasetInfoError, match="holds only 2 records") as caught:
        source[5]
    assert caught.value.field == "shardLengths"


def test_a_format_without_a_container_is_refused(tmp_path: Path) -> None:
    info = DatasetInfo("other", {"train": [1]}, data_dir=str(tmp_path), file_format="riegeli")
    with pytest.raises(DatasetInfoError, match="'riegeli' has no reader") as caught:
        data_source(info, "train")
    assert caught.value.field == "fileFormat"


@settings(max_examples=40)
@given(layouts_and_specs(), st.data())
def test_keys_follow_the_split_and_every_access_path_agrees(
    layout: tuple[dict[str, list[int]], list[tuple[str, int, int]]], data: st.DataObject
) -> None:
    check_access_paths(layout, "tbl", data)
