"""``Reader(plan, decode="tfds")``: TFDS's order and TFDS's values, end to end.

The oracle's ``examples[k]`` is the k-th element ``tfds.as_numpy(builder.as_dataset(split,
shuffle_files=False))`` yields with the default ReadConfig, so a reader of the same plan must
deliver exactly those examples in that order.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from readplan import DatasetInfo, Reader, ReadPlan, SkipDecoding
from readplan.errors import ConfigError, FeatureError
from readplan.records.example import decode, encode
from readplan.records.tfrecord import read, write
from tests.features_oracle import DATASET_DIR, ORACLE, assert_same_leaves

IMAGES = ("image", "image_jpeg", "image_gray")
SKIP = {name: SkipDecoding() for name in IMAGES}


def _case(split: str, skip: bool) -> dict[str, Any]:
    for case in ORACLE["cases"]:
        if case["split"] == split and (case["decoders"] is not None) == skip:
            return case  # type: ignore[no-any-return]
    raise AssertionError((split, skip))


@pytest.mark.parametrize(("split", "skip"), [("train", False), ("test", False), ("test", True)])
def test_reader_yields_what_tfds_yields_in_tfds_order(split: str, skip: bool) -> None:
    if not skip:
        pytest.importorskip("PIL")
        pytest.importorskip("simplejpeg")
    case = _case(split, skip)
    plan = ReadPlan(DatasetInfo.load(DATASET_DIR), split)
    with Reader(plan, decode="tfds", decoders=SKIP if skip else None) as reader:
        delivered = [item.record for item in reader]
    assert len(delivered) == case["num_examples"]
    for k, (got, expected) in enumerate(zip(delivered, case["examples"])):
        assert_same_leaves(got, expected, f"{split} example {k}")


def test_torch_dataset_decodes_like_the_reader() -> None:
    pytest.importorskip("torch")
    torch_module = pytest.importorskip("readplan.torch")
    plan = ReadPlan(DatasetInfo.load(DATASET_DIR), "test")
    dataset = torch_module.ReadplanIterableDataset(plan, decode="tfds", decoders=SKIP)
    expected = _case("test", True)["examples"]
    delivered = list(dataset)
    assert len(delivered) == len(expected)
    for k, (got, leaves) in enumerate(zip(delivered, expected)):
        assert_same_leaves(got, leaves, f"torch example {k}")


def test_decode_tfds_needs_features() -> None:
    plan = ReadPlan(DatasetInfo("layout", {"train": [2]}), "train")
    with pytest.raises(ConfigError, match=r"decode='tfds' needs the dataset's features\.json"):
        Reader(plan, decode="tfds")
    with pytest.raises(ConfigError, match="decoders apply to decode='tfds'"):
        Reader(plan, decode=True, decoders=SKIP)


def test_decode_tfds_reads_features_from_the_readers_data_dir() -> None:
    # A DatasetInfo without data_dir, the shard files (and features.json) found by the reader.
    loaded = DatasetInfo.load(DATASET_DIR)
    bare = DatasetInfo(loaded.name, loaded.splits)
    plan = ReadPlan(bare, "test")
    with Reader(plan, data_dir=DATASET_DIR, decode="tfds", decoders=SKIP) as reader:
        first = next(iter(reader)).record
    assert_same_leaves(first, _case("test", True)["examples"][0], "data_dir example 0")


def test_an_image_that_does_not_decode_is_located(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    directory = tmp_path / "ds"
    shutil.copytree(DATASET_DIR, directory)
    info = DatasetInfo.load(directory)
    features = info.features
    assert features is not None
    # Rewrite test shard 1 with its second record's PNG truncated.
    path = directory / Path(info.shard_path("test", 1)).name
    records = list(read(path))
    stored = features.decode(records[1], decoders=SKIP)
    stored_image = stored["image"]
    damaged = _reencode(records[1], "image", stored_image[: len(stored_image) // 2])
    write(path, [records[0], damaged, *records[2:]])
    plan = ReadPlan(info, "test[13:]")
    with Reader(plan, decode="tfds", decoders={"image_jpeg": SkipDecoding()}) as reader:
        items = iter(reader)
        next(items)
        with pytest.raises(FeatureError, match=r"PNG does not decode[\s\S]*record 1\)") as err:
            next(items)
    assert err.value.feature == "image"


def _reencode(record: bytes, key: str, value: bytes) -> bytes:
    features = decode(record)
    features[key] = [value]
    return encode(features)
