"""The viewer over a bucket (a GCS emulator on loopback): a dataset directory and a single
shard given as gs:// URLs are served like local ones. The bucket is reached through
fsspec's own configuration, as a user's credentials and endpoint would be."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from readplan.cli.framing import inspect_file
from tests.viewer_harness import FEATURES_DIR, request, running


@pytest.fixture(scope="module")
def bucket(gcs_store: Any) -> Iterator[str]:
    import fsspec.config

    from tests.remote_stores import upload_tree

    url = upload_tree(gcs_store, FEATURES_DIR, "viewer", "readplan_features/1.0.0")
    saved = fsspec.config.conf.get("gs")
    fsspec.config.conf["gs"] = dict(gcs_store.storage_options)
    try:
        yield url
    finally:
        if saved is None:
            fsspec.config.conf.pop("gs", None)
        else:
            fsspec.config.conf["gs"] = saved


def get(server: Any, target: str) -> dict[str, Any]:
    status, _, body = request(server, f"{target}&token={server.token}")
    document: dict[str, Any] = json.loads(body)
    assert status == 200, document
    return document


def test_dataset_and_shard_in_a_bucket(bucket: str) -> None:
    shard = f"{bucket}/readplan_features-train.tfrecord-00001-of-00004"
    with running([bucket, shard]) as server:
        roots = get(server, "/api/roots?x=1")["roots"]
        assert [r["kind"] for r in roots] == ["dataset", "file"]
        dataset = get(server, "/api/dataset?root=0")
        assert [s["examples"] for s in dataset["splits"]] == [60, 20]
        assert len(dataset["first"]) == 8
        page = get(server, "/api/examples?root=0&split=train&start=22&count=3")
        assert [e["tfds_id"] for e in page["examples"]] == [
            f"readplan_features-train.tfrecord-00001-of-00004__{k}" for k in range(3)
        ]
        deadline = time.monotonic() + 60
        while True:
            job = get(server, "/api/inspect?root=1")
            if job["status"] == "done" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        local = inspect_file(str(FEATURES_DIR / "readplan_features-train.tfrecord-00001-of-00004"))
        assert job["summary"]["records"] == local["records"] == 9
        assert job["summary"]["features"] == local["features"]
