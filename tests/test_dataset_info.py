"""Shard layouts, shard file names, dataset_info.json loading and the catalog."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import DatasetInfoError
from readplan.metadata.dataset_info import DatasetInfo, SplitInfo, catalog_names, shard_lengths
from readplan.metadata.loader import verify_files
from tests.tfds_toy import TOY_DIR

# ---------------------------------------------------------------------------------------------
# shard_lengths: the writer's boundary formula


def test_shard_lengths_example_from_the_writer() -> None:
    # 103 examples in 5 shards: boundaries 21, 41, 62, 82, 103 (from 20.6, 41.2, 61.8, 82.4).
    assert shard_lengths(103, 5) == [21, 20, 21, 20, 21]


def test_shard_lengths_imagenet_train_layout() -> None:
    lengths = shard_lengths(1281167, 1024)
    assert (lengths.count(1251), lengths.count(1252)) == (881, 143)
    assert [k for k, v in enumerate(lengths) if v == 1252][:5] == [3, 10, 17, 25, 32]
    assert sum(lengths[:512]) == 640584  # 640583.5 rounds to even
    assert (lengths[0], lengths[450], lengths[454], lengths[-1]) == (1251, 1251, 1252, 1251)


def test_shard_lengths_ties_use_multiply_first() -> None:
    # n*14/20 = 2029975.5 exactly, rounded to even; dividing first would give 2029975.
    assert sum(shard_lengths(2899965, 20)[:14]) == 2029976


@pytest.mark.parametrize(
    ("n", "s", "start"),
    [
        (0, 1, "No examples were yielded."),
        (3, 5, "num_examples (3) < number_of_shards (5)"),
        (5, 0, "num_shards must be at least 1"),
        (-1, 1, "num_examples must be a non-negative int"),
        (True, 1, "num_examples must be a non-negative int"),
        (5, 2.0, "num_shards must be a non-negative int"),
    ],
)
def test_shard_lengths_errors(n: Any, s: Any, start: str) -> None:
    with pytest.raises(DatasetInfoError) as info:
        shard_lengths(n, s)
    assert str(info.value).startswith(start)


@given(st.integers(1, 10**9), st.integers(1, 2000))
@example(1281167, 1024)
@example(1, 1)
@example(7, 7)
def test_shard_lengths_are_balanced(n: int, s: int) -> None:
    if n < s:
        with pytest.raises(DatasetInfoError):
            shard_lengths(n, s)
        return
    lengths = shard_lengths(n, s)
    assert len(lengths) == s
    assert sum(lengths) == n
    assert max(lengths) - min(lengths) <= 1


@given(st.integers(1, 10**12), st.sampled_from([1, 2, 4, 8, 64, 1024, 4096]))
def test_power_of_two_shard_counts_agree_with_the_older_divide_first_writer(n: int, s: int) -> None:
    if n >= s:
        older = [round(n * (k / s)) for k in range(1, s + 1)]
        assert shard_lengths(n, s) == [b - a for a, b in zip([0, *older], older)]


# ---------------------------------------------------------------------------------------------
# SplitInfo


def test_split_info_properties() -> None:
    info = SplitInfo("train", (10, 0, 25, 15, 50))
    assert (info.num_examples, info.num_shards) == (100, 5)
    assert info.shard_offsets == (0, 10, 10, 35, 50, 100)
    assert info.filepath_template is None
    assert info.num_bytes == 0
    lengths: list[int] = [1, 2]
    assert SplitInfo("train", lengths).shard_lengths == (1, 2)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bound", "records"),
    [(0, 0), (2, 10), (4, 50), (9, 100), (-1, 50), (-2, 35), (-5, 0), (-9, 0)],
)
def test_records_before_follows_python_slicing(bound: int, records: int) -> None:
    assert SplitInfo("train", (10, 0, 25, 15, 50)).records_before(bound) == records


def test_empty_template_means_default() -> None:
    assert SplitInfo("train", (1,), filepath_template="").filepath_template is None


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"name": "tr ain"}, "name", "not a valid split name"),
        ({"name": ""}, "name", "not a valid split name"),
        ({"name": "all"}, "name", "'all'"),
        ({"shard_lengths": ()}, "shard_lengths", "no shard lengths"),
        ({"shard_lengths": (1, -1)}, "shard_lengths", "-1"),
        ({"shard_lengths": (1, True)}, "shard_lengths", "True"),
        ({"shard_lengths": "12"}, "shard_lengths", "tuple of ints"),
        ({"num_bytes": -5}, "num_bytes", "-5"),
        ({"filepath_template": "../{SHARD_INDEX}"}, "filepath_template", "outside"),
        ({"filepath_template": "x/{SHARD_INDEX}"}, "filepath_template", "outside"),
        ({"filepath_template": "{SPLIT}-{SHARD}"}, "filepath_template", "'SHARD'"),
        ({"filepath_template": "{SPLIT}-{SHARD_INDEX:>3}"}, "filepath_template", "'>3'"),
        ({"filepath_template": "{SPLIT}-{SHARD_INDEX"}, "filepath_template", "malformed"),
        ({"filepath_template": "{DATASET}-{SPLIT}"}, "filepath_template", "share one file"),
    ],
)
def test_split_info_rejects(kwargs: dict[str, Any], field: str, fragment: str) -> None:
    arguments: dict[str, Any] = {"name": "train", "shard_lengths": (3, 4)} | kwargs
    with pytest.raises(DatasetInfoError) as info:
        SplitInfo(**arguments)
    assert info.value.field == field
    assert fragment in str(info.value)


# ---------------------------------------------------------------------------------------------
# DatasetInfo


def test_dataset_info_wraps_plain_lengths_and_keeps_order() -> None:
    info = DatasetInfo(name="imagenet2012", splits={"test": [7, 3], "train": (5,)})
    assert list(info.splits) == ["test", "train"]
    assert info.splits["train"] == SplitInfo("train", (5,))
    assert info.splits["test"].num_examples == 10
    assert (info.data_dir, info.file_format, info.version) == (None, "tfrecord", None)


def test_dataset_info_equality_depends_on_split_order() -> None:
    a = DatasetInfo("ds", {"train": [1], "test": [2]})
    b = DatasetInfo("ds", {"test": [2], "train": [1]})
    assert a != b
    assert a == DatasetInfo("ds", {"train": [1], "test": [2]})
    assert hash(a) == hash(DatasetInfo("ds", {"train": [1], "test": [2]}))


def test_dataset_info_is_read_only() -> None:
    info = DatasetInfo("ds", {"train": [1]})
    with pytest.raises(TypeError):
        info.splits["test"] = SplitInfo("test", (1,))  # type: ignore[index]
    with pytest.raises(AttributeError):
        info.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "splits", "kwargs", "field"),
    [
        ("2ds", {"train": [1]}, {}, "name"),
        ("ds/x", {"train": [1]}, {}, "name"),
        ("ds", {}, {}, "splits"),
        ("ds", {"train": SplitInfo("test", (1,))}, {}, "splits"),
        ("ds", {"train": "12"}, {}, "splits"),
        ("ds", {"train": [1]}, {"file_format": "tf.record"}, "file_format"),
        ("ds", {"train": [1]}, {"version": 1}, "version"),
        ("ds", {"train": [1]}, {"disable_shuffling": 1}, "disable_shuffling"),
    ],
)
def test_dataset_info_rejects(
    name: str, splits: dict[str, Any], kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(DatasetInfoError) as info:
        DatasetInfo(name, splits, **kwargs)
    assert info.value.field == field


def test_default_shard_filenames() -> None:
    info = DatasetInfo("imagenet2012", {"train": [1] * 1024})
    assert info.shard_filename("train", 450) == "imagenet2012-train.tfrecord-00450-of-01024"
    assert info.shard_path("train", 0) == "imagenet2012-train.tfrecord-00000-of-01024"


def test_shard_number_width_grows_with_the_shard_count() -> None:
    info = DatasetInfo("ds", {"train": [1] * 123456})
    assert info.shard_filename("train", 7) == "ds-train.tfrecord-000007-of-123456"


def test_custom_template_and_file_format() -> None:
    split = SplitInfo(
        "train", (1,) * 4, filepath_template="{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_INDEX}"
    )
    info = DatasetInfo("ds", {"train": split}, file_format="riegeli", data_dir="/data/ds/1.0.0")
    assert info.shard_filename("train", 3) == "ds-train.riegeli-00003"
    assert info.shard_path("train", 3) == os.path.join("/data/ds/1.0.0", "ds-train.riegeli-00003")
    assert info.shard_paths("train")[0] == os.path.join("/data/ds/1.0.0", "ds-train.riegeli-00000")


def test_literal_braces_and_num_shards_placeholder() -> None:
    template = "{{x}}{SPLIT}-{SHARD_INDEX}of{NUM_SHARDS}"
    info = DatasetInfo("ds", {"test": SplitInfo("test", (1, 1), filepath_template=template)})
    assert info.shard_filename("test", 1) == "{x}test-00001of00002"


@pytest.mark.parametrize(
    ("split", "index", "field"),
    [("train", 2, "shard_index"), ("train", -1, "shard_index"), ("nosuch", 0, "split")],
)
def test_shard_filename_rejects(split: str, index: int, field: str) -> None:
    with pytest.raises(DatasetInfoError) as info:
        DatasetInfo("ds", {"train": [1, 1]}).shard_filename(split, index)
    assert info.value.field == field


def test_shard_paths_are_in_index_order() -> None:
    paths = DatasetInfo("ds", {"train": [1] * 12}).shard_paths("train")
    assert paths == sorted(paths)
    assert paths[11] == "ds-train.tfrecord-00011-of-00012"


# ---------------------------------------------------------------------------------------------
# dataset_info.json


def test_load_fixture_directory() -> None:
    info = DatasetInfo.load(TOY_DIR, verify_files=True)
    assert info.name == "readplan_toy"
    assert list(info.splits) == ["train", "test"]
    assert info.splits["train"].shard_lengths == (7, 1, 12, 5, 9, 3, 10, 2)
    assert info.splits["test"].shard_lengths == (4, 6, 3)
    assert info.splits["train"].num_bytes == 1950
    assert info.splits["test"].filepath_template == "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
    assert (info.version, info.file_format, info.disable_shuffling) == ("1.0.0", "tfrecord", False)
    assert info.data_dir == os.fspath(TOY_DIR)
    assert info.shard_path("test", 2) == os.path.join(
        os.fspath(TOY_DIR), "readplan_toy-test.tfrecord-00002-of-00003"
    )


def test_load_accepts_the_json_file_itself() -> None:
    assert DatasetInfo.load(TOY_DIR / "dataset_info.json") == DatasetInfo.load(str(TOY_DIR))


def _write(directory: Path, content: Any) -> Path:
    text = content if isinstance(content, str) else json.dumps(content)
    (directory / "dataset_info.json").write_text(text, encoding="utf-8")
    return directory


def test_load_legacy_numbers_snake_case_and_unknown_keys(tmp_path: Path) -> None:
    # An old-style file: int64 as numbers, no fileFormat/filepathTemplate, statistics,
    # test listed before train, snake_case keys and keys readplan does not know.
    _write(
        tmp_path,
        {
            "name": "mnist",
            "version": "3.0.1",
            "config_name": "plain",
            "someFutureField": {"x": 1},
            "splits": [
                {
                    "name": "test",
                    "shard_lengths": [10000],
                    "num_bytes": 3150056,
                    "statistics": {"numExamples": "10000"},
                },
                {"name": "train", "shardLengths": ["30000", 30000.0], "numShards": "2"},
            ],
            "disableShuffling": True,
        },
    )
    info = DatasetInfo.load(tmp_path)
    assert list(info.splits) == ["test", "train"]
    assert info.splits["train"].shard_lengths == (30000, 30000)
    assert info.splits["test"].num_bytes == 3150056
    assert (info.file_format, info.config_name, info.disable_shuffling) == (
        "tfrecord",
        "plain",
        True,
    )
    assert info.shard_filename("test", 0) == "mnist-test.tfrecord-00000-of-00001"


@pytest.mark.parametrize(
    ("content", "field", "fragment"),
    [
        ("{not json", None, "not valid JSON"),
        ([], None, "must be a JSON object"),
        ({"splits": [{"name": "train", "shardLengths": ["1"]}]}, "name", "non-empty string"),
        ({"name": "ds", "splits": []}, "splits", "not been generated"),
        (
            {"name": "ds", "splits": [{"name": "train"}]},
            "splits[0].shardLengths",
            "no shard lengths",
        ),
        (
            {"name": "ds", "splits": [{"name": "train", "shardLengths": ["x"]}]},
            "splits[0].shardLengths",
            "'x'",
        ),
        (
            {"name": "ds", "splits": [{"name": "train", "shardLengths": [1.5]}]},
            "splits[0].shardLengths",
            "1.5",
        ),
        (
            {"name": "ds", "splits": [{"name": "train", "shardLengths": ["-1"]}]},
            "splits[0].shardLengths",
            "-1",
        ),
        (
            {
                "name": "ds",
                "splits": [
                    {"name": "train", "shardLengths": [1], "filepathTemplate": "../{SHARD_INDEX}"}
                ],
            },
            "splits[0].filepathTemplate",
            "outside",
        ),
        (
            {
                "name": "ds",
                "splits": [
                    {
                        "name": "train",
                        "shardLengths": [1],
                        "filepathTemplate": "{SPLIT}/{SHARD_INDEX}",
                    }
                ],
            },
            "splits[0].filepathTemplate",
            "outside",
        ),
        (
            {
                "name": "ds",
                "splits": [{"name": "a", "shardLengths": [1]}, {"name": "a", "shardLengths": [2]}],
            },
            "splits[1].name",
            "twice",
        ),
        (
            {"name": "ds", "splits": [{"name": "all", "shardLengths": [1]}]},
            "splits[0].name",
            "'all'",
        ),
        (
            {"name": "ds", "splits": [{"name": "t", "shardLengths": [1], "shard_lengths": [1]}]},
            "splits[0].shardLengths",
            "twice",
        ),
        (
            {"name": "ds", "fileFormat": "a/b", "splits": [{"name": "t", "shardLengths": [1]}]},
            "fileFormat",
            "file suffix",
        ),
        (
            {
                "name": "ds",
                "disableShuffling": "yes",
                "splits": [{"name": "t", "shardLengths": [1]}],
            },
            "disableShuffling",
            "true or false",
        ),
    ],
)
def test_load_rejects(tmp_path: Path, content: Any, field: str | None, fragment: str) -> None:
    _write(tmp_path, content)
    with pytest.raises(DatasetInfoError) as info:
        DatasetInfo.load(tmp_path)
    assert info.value.path == os.path.join(tmp_path, "dataset_info.json")
    assert info.value.field == field
    assert fragment in str(info.value)
    assert "dataset_info.json" in str(info.value)


def test_load_missing_file_points_to_the_version_folder(tmp_path: Path) -> None:
    version_dir = tmp_path / "ds" / "1.0.0"
    version_dir.mkdir(parents=True)
    _write(version_dir, {"name": "ds", "splits": [{"name": "t", "shardLengths": [1]}]})
    with pytest.raises(DatasetInfoError) as info:
        DatasetInfo.load(tmp_path / "ds")
    assert info.value.path == os.path.join(tmp_path / "ds", "dataset_info.json")
    assert "does not exist" in str(info.value)
    assert os.fspath(version_dir) in str(info.value)


def test_verify_files_names_the_missing_shard(tmp_path: Path) -> None:
    _write(tmp_path, {"name": "ds", "splits": [{"name": "train", "shardLengths": ["2", "3"]}]})
    (tmp_path / "ds-train.tfrecord-00000-of-00002").write_bytes(b"")
    assert DatasetInfo.load(tmp_path).splits["train"].num_examples == 5
    with pytest.raises(DatasetInfoError) as info:
        DatasetInfo.load(tmp_path, verify_files=True)
    missing = os.path.join(tmp_path, "ds-train.tfrecord-00001-of-00002")
    assert info.value.path == missing
    assert info.value.field == "splits[0].shardLengths"
    assert missing in str(info.value)
    loaded = DatasetInfo.load(tmp_path)
    with pytest.raises(DatasetInfoError) as again:
        verify_files(loaded)
    assert (again.value.path, again.value.field) == (missing, "splits[0].shardLengths")
    (tmp_path / "ds-train.tfrecord-00001-of-00002").write_bytes(b"")
    verify_files(loaded)
    with pytest.raises(DatasetInfoError, match="no data_dir") as bare:
        verify_files(DatasetInfo("ds", {"train": [2, 3]}))
    assert bare.value.field == "data_dir"


# ---------------------------------------------------------------------------------------------
# Catalog


def test_catalog_imagenet_train_matches_the_published_layout() -> None:
    assert "imagenet2012" in catalog_names()
    info = DatasetInfo.from_catalog("imagenet2012")
    train = info.splits["train"]
    assert (train.num_examples, train.num_shards) == (1281167, 1024)
    assert (train.shard_lengths.count(1251), train.shard_lengths.count(1252)) == (881, 143)
    starts = {k: train.shard_offsets[k] for k in (141, 450, 568, 686, 1023)}
    assert starts == {141: 176411, 450: 563013, 568: 710647, 686: 858282, 1023: 1279916}
    assert info.data_dir is None


def test_every_catalog_split_names_its_source() -> None:
    raw = json.loads((resources.files("readplan") / "data" / "catalog.json").read_text())
    for name, entry in raw["datasets"].items():
        assert name in catalog_names()
        for split in entry["splits"]:
            assert isinstance(split["source"], str)
            assert len(split["source"]) > 20


def test_unknown_catalog_name() -> None:
    with pytest.raises(DatasetInfoError) as info:
        DatasetInfo.from_catalog("imagenet")
    assert "imagenet2012" in str(info.value)


@pytest.mark.parametrize(
    "text", ["[" * 100_000, '{"name": "d", "splits": [{"shardLengths": [' + "9" * 5000 + "]}]}"]
)
def test_pathological_dataset_info_json_is_a_dataset_info_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "dataset_info.json").write_text(text)
    with pytest.raises(DatasetInfoError, match=r"dataset_info\.json"):
        DatasetInfo.load(tmp_path)
