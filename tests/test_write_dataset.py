"""readplan.write_dataset: TFDS-layout datasets that TFDS itself loads, checked against what
TFDS wrote and yielded for the same datasets (tests/data/written/written_tfds.json, made by
tests/data/written/generate.py with TFDS 4.9.10 / TF 2.21)."""

from __future__ import annotations

import base64
import functools
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import readplan
from readplan import example, features, tfrecord
from readplan.errors import ConfigError, FeatureError
from tests.conftest import DATA
from tests.features_oracle import assert_same_leaves
from tests.written_cases import CASES, Case

FIXTURE = DATA / "written" / "written_tfds.json"


@functools.cache
def recorded(name: str) -> dict[str, Any]:
    document = json.loads(FIXTURE.read_text(encoding="utf-8"))
    (case,) = (c for c in document["cases"] if c["name"] == name)
    return case  # type: ignore[no-any-return]


@functools.cache
def written(name: str, root: str) -> readplan.DatasetInfo:
    (case,) = (c for c in CASES if c.name == name)
    return case.write(Path(root) / name)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("written"))


def _records(info: readplan.DatasetInfo, split: str) -> list[bytes]:
    return [bytes(r) for path in info.shard_paths(split) for r in tfrecord.read(path)]


def _id(record: bytes) -> str:
    return str(int(example.decode(record)["id"][0]))


CASE_NAMES = [case.name for case in CASES]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_features_json_and_label_files_are_what_tfds_writes(name: str, root: str) -> None:
    info = written(name, root)
    assert info.data_dir is not None
    folder = Path(info.data_dir)
    assert (folder / "features.json").read_text(encoding="utf-8") == recorded(name)["features_json"]
    labels = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.labels.txt")}
    assert labels == recorded(name)["label_files"]


def _sorted_splits(text: str) -> dict[str, Any]:
    document = json.loads(text)
    document["splits"] = sorted(document["splits"], key=lambda s: s["name"])
    return document  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_dataset_info_is_what_tfds_writes_for_the_shards(name: str, root: str) -> None:
    info = written(name, root)
    assert info.data_dir is not None
    mine = (Path(info.data_dir) / "dataset_info.json").read_text(encoding="utf-8")
    # TFDS's write_metadata finds the splits on disk, so it lists them sorted by name.
    assert _sorted_splits(mine) == _sorted_splits(recorded(name)["dataset_info"])
    for split, layout in recorded(name)["builder"].items():
        assert list(info.splits[split].shard_lengths) == layout["shard_lengths"]
        assert info.splits[split].num_examples == layout["num_examples"]


def _entry(values: Any) -> dict[str, Any]:
    if isinstance(values, list):
        return {"kind": "bytes_list", "values": [base64.b64encode(v).decode() for v in values]}
    if values.dtype == np.float32:
        return {"kind": "float_list", "values": [f"{v:08x}" for v in values.view(np.uint32)]}
    return {"kind": "int64_list", "values": values.tolist()}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_records_hold_the_entries_tfds_serialize_example_makes(name: str, root: str) -> None:
    info = written(name, root)
    for split, by_id in recorded(name)["entries"].items():
        records = _records(info, split)
        assert sorted(_id(r) for r in records) == sorted(by_id)
        for record in records:
            tfds_entries = by_id[_id(record)]
            mine = {key: _entry(values) for key, values in example.decode(record).items()}
            assert sorted(mine) == sorted(tfds_entries), _id(record)
            for key, want in tfds_entries.items():
                got = mine[key] if "values" in want else {"kind": mine[key]["kind"]}
                assert got == want, f"{split} id {_id(record)} entry {key}"


@pytest.mark.parametrize("name", CASE_NAMES)
def test_readplan_decodes_what_tfds_yielded_from_the_written_files(name: str, root: str) -> None:
    info = written(name, root)
    assert info.features is not None
    decode = info.features.decoder()
    for split, by_id in recorded(name)["yielded"].items():
        for record in _records(info, split):
            assert_same_leaves(decode(record), by_id[_id(record)], f"{split} id {_id(record)}")


def test_tfds_yielded_the_pixels_written_and_float64_through_float32() -> None:
    (case,) = (c for c in CASES if c.name == "everything")
    yielded = recorded("everything")["yielded"]["train"]
    for values in case.splits()["train"]:
        leaves = yielded[str(values["id"])]
        for key in ("image", "image_gray", "image_rgba", "image_u16", "image_fixed"):
            assert leaves[key]["values"] == values[key].reshape(-1).tolist(), key
        floats = values["image_float"].reshape(-1).view(np.uint32).tolist()
        assert [int(h, 16) for h in leaves["image_float"]["values"]] == floats
        rounded = values["t_float64"].astype(np.float32).astype(np.float64)
        got = [struct.unpack(">d", bytes.fromhex(h))[0] for h in leaves["t_float64"]["values"]]
        assert got == rounded.tolist()


def test_the_written_dataset_reads_as_tfds_orders_it(root: str) -> None:
    info = written("sized", root)
    items = list(readplan.Reader(readplan.ReadPlan(info, "train"), decode="tfds"))
    assert len(items) == 40
    assert sorted(int(item.record["id"]) for item in items) == list(range(40))  # type: ignore[index]


# --- sharding, atomicity, refusals -------------------------------------------------------


def _small(**sharding: Any) -> dict[str, Any]:
    return {
        "name": "small",
        "version": "1.0.0",
        "features": {"id": np.int64, "text": features.Text()},
        "splits": {"train": [{"id": k, "text": "x" * k} for k in range(10)]},
        **sharding,
    }


def test_examples_per_shard_cuts_every_n_examples(tmp_path: Path) -> None:
    info = readplan.write_dataset(tmp_path / "d", **_small(examples_per_shard=4))
    assert info.splits["train"].shard_lengths == (4, 4, 2)
    assert sorted(os.listdir(tmp_path / "d"))[2:] == [
        "small-train.tfrecord-00000-of-00003",
        "small-train.tfrecord-00001-of-00003",
        "small-train.tfrecord-00002-of-00003",
    ]


def test_shard_size_bounds_each_shard_but_keeps_one_example(tmp_path: Path) -> None:
    info = readplan.write_dataset(tmp_path / "d", **_small(shard_size=1))
    assert info.splits["train"].shard_lengths == (1,) * 10
    bigger = readplan.write_dataset(tmp_path / "e", **_small(shard_size=100))
    for path in bigger.shard_paths("train"):
        assert os.path.getsize(path) <= 100 or tfrecord.count(path) == 1


def test_num_shards_cuts_as_tfds_sizes_shards(tmp_path: Path) -> None:
    info = readplan.write_dataset(tmp_path / "d", **_small(num_shards=3))
    assert info.splits["train"].shard_lengths == tuple(readplan.shard_lengths(10, 3)) == (3, 4, 3)
    ids = [
        int(example.decode(r)["id"][0]) for p in info.shard_paths("train") for r in tfrecord.read(p)
    ]
    assert ids == list(range(10))
    assert sorted(os.listdir(tmp_path / "d"))[2:] == [
        f"small-train.tfrecord-0000{k}-of-00003" for k in range(3)
    ]


def _failing_examples(after: int, error: BaseException) -> Any:
    for k in range(after):
        yield {"id": k, "text": "ok"}
    raise error


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_an_interrupted_write_leaves_no_dataset(tmp_path: Path, error: BaseException) -> None:
    args = _small()
    args["splits"] = {"train": [{"id": 0, "text": "a"}], "test": _failing_examples(3, error)}
    with pytest.raises(type(error)):
        readplan.write_dataset(tmp_path / "d", **args)
    assert os.listdir(tmp_path) == []  # neither the dataset nor its staging directory


def test_a_bad_example_names_split_position_and_feature(tmp_path: Path) -> None:
    args = _small()
    args["splits"] = {"train": [{"id": 0, "text": "a"}, {"id": "one", "text": "b"}]}
    with pytest.raises(FeatureError, match=r"split 'train', example 1: feature id") as caught:
        readplan.write_dataset(tmp_path / "d", **args)
    assert caught.value.feature == "id"
    assert not (tmp_path / "d").exists()


def test_an_existing_dataset_or_a_non_empty_directory_is_never_replaced(tmp_path: Path) -> None:
    readplan.write_dataset(tmp_path / "d", **_small())
    before = sorted(os.listdir(tmp_path / "d"))
    with pytest.raises(ConfigError, match="already holds a dataset"):
        readplan.write_dataset(tmp_path / "d", **_small())
    assert sorted(os.listdir(tmp_path / "d")) == before
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty"):
        readplan.write_dataset(tmp_path / "other", **_small())
    (tmp_path / "empty").mkdir()
    assert readplan.write_dataset(tmp_path / "empty", **_small()).splits["train"].num_examples == 10


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"version": "1.0"}, "major.minor.patch"),
        ({"name": "my-data"}, "not a TFDS dataset name"),
        ({"examples_per_shard": 0}, "examples_per_shard must be a positive int"),
        ({"shard_size": 10, "examples_per_shard": 2}, "not shard_size and examples_per_shard"),
        ({"num_shards": 11}, r"num_examples \(10\) < number_of_shards \(11\)"),
        ({"splits": {}}, "non-empty dict"),
        ({"splits": {"train": []}}, "no examples"),
        ({"splits": {"train": {"id": 1}}}, "iterable of examples"),
    ],
)
def test_bad_arguments_are_config_errors(
    tmp_path: Path, changes: dict[str, Any], match: str
) -> None:
    with pytest.raises((ConfigError, readplan.DatasetInfoError), match=match):
        readplan.write_dataset(tmp_path / "d", **{**_small(), **changes})
    assert not (tmp_path / "d" / "dataset_info.json").exists()


def test_writes_to_a_url_with_the_info_last(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    url = "memory://readplan-write-test/ds"
    info = readplan.write_dataset(url, **_small(examples_per_shard=3))
    assert info.data_dir == url
    items = list(readplan.Reader(readplan.ReadPlan(info, "train"), decode="tfds"))
    assert sorted(int(i.record["id"]) for i in items) == list(range(10))  # type: ignore[index]
    failing = _small()
    failing["splits"] = {"train": _failing_examples(2, RuntimeError("boom"))}
    with pytest.raises(RuntimeError):
        readplan.write_dataset("memory://readplan-write-test/broken", **failing)
    import fsspec

    assert not fsspec.filesystem("memory").exists("/readplan-write-test/broken/dataset_info.json")


def test_writes_to_an_s3_store(s3_store: Any) -> None:
    fs = s3_store.filesystem()
    fs.mkdir("readplan-written")
    url = s3_store.url("readplan-written", "small/1.0.0")
    options = dict(s3_store.storage_options)
    info = readplan.write_dataset(url, storage_options=options, **_small(examples_per_shard=4))
    loaded = readplan.DatasetInfo.load(url, storage_options=options)
    assert loaded.splits["train"].shard_lengths == (4, 4, 2)
    assert info.resolve_features(options) == readplan.FeaturesDict(
        {"id": features.Tensor((), "int64"), "text": features.Text()}
    )


# --- the feature model as TFDS spells it, and encoding errors -----------------------------


def test_features_are_built_with_tfds_names() -> None:
    declared = features.FeaturesDict(
        {
            "image": features.Image(shape=(None, None, 3), encoding_format="png"),
            "label": features.ClassLabel(names=["cat", "dog"]),
            "count": features.ClassLabel(num_classes=3),
            "objects": features.Sequence({"bbox": features.BBoxFeature(), "n": np.int32}),
            "x": features.Tensor(shape=(2,), dtype="float32"),
            "s": features.Scalar(dtype="int8"),
        }
    )
    label = declared["label"]
    assert isinstance(label, features.ClassLabel)
    assert (label.num_classes, label.names) == (2, ("cat", "dog"))
    assert declared["count"] == features.ClassLabel(3, ("0", "1", "2"))
    objects = declared["objects"]
    assert isinstance(objects, features.Sequence)
    assert isinstance(objects.feature, features.FeaturesDict)
    assert objects.feature["n"] == features.Tensor((), "int32")
    with pytest.raises(FeatureError, match="give num_classes"):
        features.ClassLabel()


@pytest.mark.parametrize(
    ("feature", "value", "match"),
    [
        (features.Tensor((2,), "int64"), np.zeros(2, np.int32), "dtype is int32 but the feature"),
        (features.Tensor((2,), "int64"), [1, 2, 3], r"shape \(3,\) does not match \(2,\)"),
        (features.Tensor((), "int8"), 300, "is not int8"),
        (features.Tensor((), "bool"), "yes", "is text, not a bool"),
        (features.ClassLabel(names=["a"]), "b", "not a class name"),
        (features.ClassLabel(num_classes=2), 2, r"index in \[-1, 2\)"),
        (features.BBoxFeature(), [0.1, 0.2, 1.5, 0.3], r"within \[0, 1\]"),
        (features.BBoxFeature(), [0.5, 0.2, 0.1, 0.3], "ends before it starts"),
        (features.Image(shape=(None, None, 3)), np.zeros((2, 2, 3), np.uint16), "dtype is uint16"),
        (features.Image(), b"GIF89a...", "the image is GIF"),
        (
            features.Image(shape=(None, None, 2), encoding_format="jpeg"),
            np.zeros((2, 2, 2), np.uint8),
            "1 or 3 channels",
        ),
        (features.Sequence(np.int64, length=2), [1], "length is 2"),
        (features.Text(), 5, "Text takes str or bytes"),
        (features.Tensor((), "int64"), None, "is not int64"),
    ],
)
def test_values_that_break_the_feature_are_feature_errors(
    feature: Any, value: Any, match: str
) -> None:
    declared = features.FeaturesDict({"f": feature})
    with pytest.raises(FeatureError, match=match) as caught:
        declared.serialize_example({"f": value})
    assert caught.value.feature == "f"


def test_missing_and_unknown_keys_are_named() -> None:
    declared = features.FeaturesDict(
        {"a": np.int64, "b": features.Tensor((), "int64", optional=True)}
    )
    with pytest.raises(FeatureError, match="feature b: is missing"):
        declared.serialize_example({"a": 1})
    with pytest.raises(FeatureError, match=r"keys \['c'\]"):
        declared.serialize_example({"a": 1, "b": None, "c": 2})
    record = declared.serialize_example({"a": 1, "b": None})
    assert sorted(example.decode(record)) == ["a"]  # an absent optional is left out


# --- plain-schema records ------------------------------------------------------------------


def test_write_records_round_trips_a_plain_schema(tmp_path: Path) -> None:
    schema = {
        "image/encoded": example.FixedLen((), "bytes"),
        "boxes": example.VarLen("float32", shape=(-1, 4)),
        "classes": example.VarLen("int64"),
        "size": example.FixedLen((2,), "int64"),
    }
    boxes = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]], np.float32)
    rows = [
        {"image/encoded": b"jpeg...", "boxes": boxes, "classes": [3, 1], "size": [480, 640]},
        {"image/encoded": b"", "boxes": np.zeros((0, 4)), "classes": [], "size": (1, 2)},
    ]
    path = tmp_path / "records.tfrecord"
    assert readplan.write_records(path, rows, schema) == 2
    parsed = [example.parse(bytes(r), schema) for r in tfrecord.read(path)]
    np.testing.assert_array_equal(parsed[0]["boxes"], boxes)
    assert parsed[1]["boxes"].shape == (0, 4)
    assert parsed[0]["classes"].tolist() == [3, 1]
    assert parsed[1]["size"].tolist() == [1, 2]
    assert parsed[0]["image/encoded"] == b"jpeg..."


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"boxes": np.zeros((2, 3))}, "does not fit shape"),
        ({"boxes": [[0.0] * 4], "size": [1]}, "holds 1 values"),
        ({"boxes": [["a"] * 4]}, "float32; got values of <U1"),
        ({"boxes": [[0.0] * 4], "extra": 1}, r"\['extra'\] are not in the schema"),
        ({}, "'size' is missing"),
    ],
)
def test_write_records_refuses_values_outside_the_schema(
    tmp_path: Path, values: dict[str, Any], match: str
) -> None:
    schema = {
        "boxes": example.VarLen("float32", shape=(-1, 4)),
        "size": example.FixedLen((2,), "int64"),
    }
    row = {"size": [1, 2], **values}
    if not values:
        row = {"boxes": [[0.0] * 4]}
    with pytest.raises(readplan.ExampleError, match=match):
        readplan.write_records(tmp_path / "r.tfrecord", [row], schema)


def test_the_case_module_is_deterministic() -> None:
    case: Case = CASES[1]
    first, second = case.splits(), case.splits()
    assert [e["payload"].tolist() for e in first["train"]] == [
        e["payload"].tolist() for e in second["train"]
    ]


def test_names_file_pil_images_and_what_tfds_refuses(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("cat\n\n dog \n")
    assert features.ClassLabel(names_file=names).names == ("cat", "dog")
    image = pytest.importorskip("PIL.Image").fromarray(np.full((3, 5, 3), 7, np.uint8))
    declared = features.FeaturesDict(
        {"image": features.Image(), "label": features.ClassLabel(names_file=names)}
    )
    record = declared.serialize_example({"image": image, "label": "dog"})
    decoded = declared.decode(record)
    assert decoded["image"].shape == (3, 5, 3)
    assert int(decoded["label"]) == 1
    with pytest.raises(FeatureError, match="needs encoding='zlib' or 'bytes'"):
        features.FeaturesDict({"t": features.Tensor((None, None), "int64")}).serialize_example(
            {"t": np.zeros((2, 2), np.int64)}
        )
    unread = features.FeaturesDict({"s": features.Sequence(features.Tensor((None,), "int64"))})
    with pytest.raises(FeatureError, match="more than one unknown dimension, which TFDS cannot"):
        unread.serialize_example({"s": [[1, 2], [3]]})
    fixed = features.FeaturesDict({"s": features.Sequence(features.Sequence(np.int64, length=2))})
    with pytest.raises(FeatureError, match="ragged tensor it cannot read back"):
        fixed.serialize_example({"s": [[1, 2], [3, 4]]})
