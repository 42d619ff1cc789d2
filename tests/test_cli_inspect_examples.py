"""``readplan inspect`` of URLs and ``--examples N``; ``readplan index``'s answers."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import readplan
from readplan import features as feat
from tests.cli_runs import run
from tests.conftest import DATA
from tests.tfrecord_fixtures import FIXTURES


@pytest.fixture
def memory_copy() -> Any:
    """Copy a local file to a fresh memory:// URL."""
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    root = f"/readplan-cli-{uuid.uuid4().hex[:8]}"

    def copy(path: Path) -> str:
        fs.pipe_file(f"{root}/{path.name}", path.read_bytes())
        return f"memory://{root}/{path.name}"

    yield copy
    fs.rm(root, recursive=True)


@pytest.mark.parametrize("name", ["tfrecord/examples.tfrecord", "tbl/mixed.tbl"])
def test_inspect_takes_a_url(
    capsys: pytest.CaptureFixture[str], memory_copy: Any, name: str
) -> None:
    url = memory_copy(DATA / name)
    status, out, err = run(capsys, "inspect", "--json", url)
    assert status == 0, err
    (summary,) = json.loads(out)["files"]
    _, local_out, _ = run(capsys, "inspect", "--json", str(DATA / name))
    (local,) = json.loads(local_out)["files"]
    assert summary == {**local, "path": url}


@pytest.fixture(scope="module")
def pets(tmp_path_factory: pytest.TempPathFactory) -> readplan.DatasetInfo:
    return readplan.write_dataset(
        tmp_path_factory.mktemp("pets") / "pets",
        name="pets",
        version="1.0.0",
        features={
            "image": feat.Image(shape=(None, None, 3)),
            "photo": feat.Image(shape=(None, None, 3), encoding_format="jpeg"),
            "label": feat.ClassLabel(names=["cat", "dog"]),
            "frames": feat.Sequence(feat.Image(shape=(2, 2, 1))),
            "score": np.float32,
            "tags": feat.Tensor(shape=(None,), dtype="string"),
            "objects": feat.Sequence({"bbox": feat.BBoxFeature()}),
        },
        splits={
            "train": [
                {
                    "image": np.zeros((4, 6, 3), np.uint8),
                    "photo": np.zeros((8, 16, 3), np.uint8),
                    "label": ["cat", "dog"][k % 2],
                    "frames": [np.zeros((2, 2, 1), np.uint8)] * k,
                    "score": 0.7,
                    "tags": ["a", "b"][:k],
                    "objects": [{"bbox": np.array([0.1, 0.2, 0.3, 0.4])}],
                }
                for k in range(3)
            ]
        },
    )


def test_inspect_examples_prints_decoded_values(
    capsys: pytest.CaptureFixture[str], pets: readplan.DatasetInfo
) -> None:
    status, out, _ = run(capsys, "inspect", "--examples", "2", pets.shard_path("train", 0))
    assert status == 0
    assert "first 2 examples (decoded with features.json):" in out
    assert "example 1:" in out
    assert "example 2:" not in out
    lines = [line.split(maxsplit=1) for line in out.splitlines() if line.startswith("      ")]
    second = dict(lines[len(lines) // 2 :])
    assert second["image"] == "image   png (4, 6, 3), 69 bytes"
    assert second["photo"].startswith("image   jpeg (8, 16, 3), ")
    assert second["label"] == "int64   ()       1 (dog)"
    assert second["score"] == "float32 ()       0.7"
    assert second["tags"] == "object  (1,)     ['a']"
    assert second["objects/bbox"] == "float32 (1, 4)   [0.1, 0.2, 0.3, 0.4]"
    assert second["frames"] == "images  (1,): png (2, 2, 1), 68 bytes"


def test_inspect_examples_json(
    capsys: pytest.CaptureFixture[str], pets: readplan.DatasetInfo
) -> None:
    _, out, _ = run(capsys, "inspect", "--json", "--examples", "1", pets.shard_path("train", 0))
    (summary,) = json.loads(out)["files"]
    (first,) = summary["examples"]["examples"]
    values = first["values"]
    assert values["image"] == {"dtype": "image", "format": "png", "bytes": 69, "shape": [4, 6, 3]}
    assert values["label"] == {"dtype": "int64", "shape": [], "values": [0], "names": ["cat"]}
    assert values["tags"] == {"dtype": "object", "shape": [0], "values": []}
    assert values["frames"] == {"dtype": "object", "shape": [0], "values": []}


def test_inspect_examples_without_features_shows_example_entries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(
        capsys, "inspect", "--json", "--examples", "2", str(FIXTURES / "examples.tfrecord")
    )
    (summary,) = json.loads(out)["files"]
    described = summary["examples"]
    assert described["decoded_with"] == "tf.train.Example"
    second = described["examples"][1]["values"]
    assert second["height"] == {"dtype": "int64", "shape": [1], "values": [479]}
    assert second["bboxes"]["values"] == [0.5, 0.5, 0.7, 0.7]
    assert second["image/name"] == {"dtype": "bytes", "shape": [1], "values": ["img_1.jpg"]}
    assert summary["features_note"] == "over the first 40 examples"  # the summary is apart


def test_index_blames_a_missing_index_dir(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    copy = tmp_path / "e.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord", copy)
    missing = tmp_path / "no_such_dir"
    status, out, err = run(capsys, "index", "--json", "--index-dir", str(missing), str(copy))
    assert status == 2
    assert f"--index-dir {missing}: no such directory" in err
    (result,) = json.loads(out)["files"]
    assert result["status"] == "unreadable"
    status, out, _ = run(capsys, "index", "--json", str(copy))
    assert (status, json.loads(out)["files"][0]["status"]) == (0, "indexed")
    damaged = tmp_path / "d.tfrecord"
    shutil.copy(FIXTURES / "damaged_flip_data_bit.tfrecord", damaged)
    status, out, _ = run(capsys, "index", "--json", str(damaged))
    assert (status, json.loads(out)["files"][0]["status"]) == (1, "damaged")


def test_inspect_takes_an_s3_url(
    capsys: pytest.CaptureFixture[str], s3_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsspec = pytest.importorskip("fsspec")
    from tests.remote_stores import put

    fs = s3_store.filesystem()
    bucket = f"readplan-inspect-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    for name in ("tfrecord/examples.tfrecord", "tbl/mixed.tbl"):
        put("s3", fs, f"{bucket}/{Path(name).name}", (DATA / name).read_bytes())
    # The command line reaches the emulator through fsspec's own configuration.
    monkeypatch.setitem(fsspec.config.conf, "s3", dict(s3_store.storage_options))
    urls = [s3_store.url(bucket, "examples.tfrecord"), s3_store.url(bucket, "mixed.tbl")]
    status, out, err = run(capsys, "inspect", "--json", *urls)
    assert status == 0, err
    summaries = json.loads(out)["files"]
    assert [s["records"] for s in summaries] == [40, summaries[1]["records"]]
    assert summaries[1]["container"] == "tbl"
