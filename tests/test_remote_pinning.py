"""Objects replaced while they are read, and failures that arrive after a client library's
own retries, against a real S3 emulator (moto) on loopback (``specs/storage.md`` §3, §4).

A shard is overwritten mid-read by another one of the same size and the same record sizes,
so nothing but the pin on each ranged read can tell the two apart: without versioning the
read fails with ``ObjectChangedError`` naming the object; with versioning it goes on reading
the version it opened, to its end.  Expected records come from ``tests/big_dataset.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readplan import storage, tfrecord
from readplan.errors import ObjectChangedError, StorageError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadPlan
from readplan.reading.data_source import data_source
from readplan.reading.reader import Reader
from tests.big_dataset import big_name, big_record, write_big

pytest.importorskip("fsspec")
from tests.remote_stores import FaultProxy, Store, upload_tree

LENGTHS = [5000, 5000]  # two shards of 5000 1-KiB records: more than one 4 MiB block each


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_big(tmp_path_factory.mktemp("pinning") / "big" / "1.0.0", LENGTHS)


@pytest.fixture(params=[False, True], ids=["unversioned", "versioned"])
def bucket(request: pytest.FixtureRequest, s3_store: Store, big: Path) -> tuple[str, bool]:
    """The dataset in a fresh bucket, with or without versioning; ``(url, versioned)``."""
    name = f"readplan-pin-{uuid.uuid4().hex[:8]}"
    fs = s3_store.filesystem()
    fs.mkdir(name)
    if request.param:
        fs.call_s3(
            "put_bucket_versioning", Bucket=name, VersioningConfiguration={"Status": "Enabled"}
        )
    return upload_tree(s3_store, big, name, "big/1.0.0"), request.param


@pytest.fixture
def no_prefetch() -> Iterator[None]:
    storage.set_prefetch(max_bytes=0)  # each block is fetched only when the parse needs it
    try:
        yield
    finally:
        storage.set_prefetch()


def _overwrite(store: Store, url: str, big: Path) -> None:
    """Replace shard 0 with shard 1's bytes: same size, same framing, other records."""
    path = url.removeprefix("s3://") + "/" + big_name(0, 2)
    fs = store.filesystem()
    fs.pipe_file(path, (big / big_name(1, 2)).read_bytes())
    fs.invalidate_cache()


@pytest.mark.usefixtures("no_prefetch")
@pytest.mark.parametrize("on_corruption", ["raise", "skip"])
def test_a_stream_over_an_object_replaced_mid_read(
    s3_store: Store, big: Path, bucket: tuple[str, bool], on_corruption: str
) -> None:
    url, versioned = bucket
    shard = f"{url}/{big_name(0, 2)}"
    report = tfrecord.CorruptionReport()
    records = tfrecord.read(
        shard,
        storage_options=s3_store.storage_options,
        on_corruption=on_corruption,  # type: ignore[arg-type]
        report=report,
    )
    assert next(records) == big_record(0, 0)
    _overwrite(s3_store, url, big)
    if versioned:
        # Every read asks for the version opened, which the bucket keeps.
        assert list(records) == [big_record(0, k) for k in range(1, LENGTHS[0])]
        return
    delivered = []
    with pytest.raises(ObjectChangedError) as caught:
        delivered.extend(records)
    # Only the version opened: the records of the block read before the change.
    assert delivered == [big_record(0, k) for k in range(1, len(delivered) + 1)]
    assert caught.value.url == shard
    assert shard in str(caught.value)
    assert "If-Match" in str(caught.value)
    assert list(report) == []  # a change, not damage: skip mode does not step over it


def test_random_access_to_an_object_replaced_between_reads(
    s3_store: Store, big: Path, bucket: tuple[str, bool]
) -> None:
    url, versioned = bucket
    options = s3_store.storage_options
    source = data_source(url, "train", storage_options=options)
    assert source[0] == big_record(0, 0)
    _overwrite(s3_store, url, big)
    if versioned:
        assert source[1] == big_record(0, 1)
        assert source[LENGTHS[0] - 1] == big_record(0, LENGTHS[0] - 1)
        return
    with pytest.raises(ObjectChangedError) as caught:
        source[1]
    assert caught.value.url == f"{url}/{big_name(0, 2)}"


@pytest.mark.usefixtures("no_prefetch")
def test_a_reader_never_mixes_versions(
    s3_store: Store, big: Path, bucket: tuple[str, bool]
) -> None:
    url, versioned = bucket
    options = s3_store.storage_options
    plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "train[:5000]")
    items = iter(Reader(plan, storage_options=options))
    assert next(items).record == big_record(0, 0)
    _overwrite(s3_store, url, big)
    if versioned:
        assert [item.record for item in items] == [big_record(0, k) for k in range(1, 5000)]
        return
    delivered = []
    with pytest.raises(ObjectChangedError):
        delivered.extend(item.record for item in items)
    assert delivered == [big_record(0, k) for k in range(1, len(delivered) + 1)]


# -- the pin each store offers --------------------------------------------------------


class _FS:
    def __init__(self, protocol: str | tuple[str, ...]) -> None:
        self.protocol = protocol


@pytest.mark.parametrize(
    ("protocol", "info", "expected"),
    [
        (("gs", "gcs"), {"generation": "17", "etag": "CAE="}, ("gs", "generation", "17")),
        (("s3", "s3a"), {"VersionId": "v1", "ETag": '"e"'}, ("s3", "VersionId", "v1")),
        (("s3", "s3a"), {"VersionId": None, "ETag": '"e"'}, ("s3", "IfMatch", '"e"')),
        # Written while versioning was suspended: "null" is rewritten in place.
        (("s3", "s3a"), {"VersionId": "null", "ETag": '"e"'}, ("s3", "IfMatch", '"e"')),
        (("https", "http"), {"ETag": '"e"'}, ("https", "If-Match", '"e"')),
        (("https", "http"), {"ETag": 'W/"e"'}, ("https", None, None)),
        ("memory", {"created": 1.0}, ("memory", None, None)),
    ],
)
def test_each_store_gets_the_strongest_pin_it_offers(
    protocol: Any, info: dict[str, Any], expected: tuple[str, str | None, str | None]
) -> None:
    from readplan.storage._pinning import Pin, pin_for

    assert pin_for(_FS(protocol), info) == Pin(*expected)


# -- failures after the client library's own retries ---------------------------------------


@pytest.mark.parametrize(
    ("status", "code"), [(500, "InternalError"), (503, "SlowDown"), (503, "ServiceUnavailable")]
)
def test_s3_failures_after_botocores_attempts_are_retried(
    s3_store: Store, status: int, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import s3fs

    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)
    bucket = f"readplan-fault-{uuid.uuid4().hex[:8]}"
    fs = s3_store.filesystem()
    fs.mkdir(bucket)
    fs.pipe_file(f"{bucket}/obj", b"payload")
    # botocore and s3fs each try once: every failure reaches readplan as s3fs's OSError.
    with FaultProxy(s3_store.endpoint, failures=2, status=status, code=code) as proxy:
        options = {
            **s3_store.storage_options,
            "endpoint_url": proxy.endpoint,
            "config_kwargs": {"retries": {"max_attempts": 1, "mode": "standard"}},
            "skip_instance_cache": True,
        }
        policy = storage.RetryPolicy(attempts=3, first_delay=0.001, max_delay=0.002)
        url = f"s3://{bucket}/obj"
        assert storage.read_bytes(url, storage_options=options, retry=policy) == b"payload"
        assert proxy.failed == 2
        proxy.failures_left = 10
        with pytest.raises(StorageError) as caught:
            storage.read_bytes(url, storage_options=options, retry=policy)
    message = str(caught.value)
    assert caught.value.url == url
    assert "3 attempts failed with transient errors" in message
    assert "client library's own retries" in message


# -- HTTP(S): If-Match on the ETag -----------------------------------------------------------


class _Objects:
    """Bytes served by :func:`_http_server`, replaceable while served."""

    def __init__(self) -> None:
        self.content: dict[str, bytes] = {}


def _etag(data: bytes) -> str:
    import hashlib

    return '"' + hashlib.md5(data).hexdigest() + '"'


def _http_server(objects: _Objects) -> Any:
    """A loopback HTTP server that answers HEAD and ranged GETs with a strong ETag and
    honours If-Match (412 when the object's ETag differs), as object stores' HTTP APIs do."""
    import http.server
    import re as _re

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _object(self) -> bytes | None:
            data = objects.content.get(self.path)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
            return data

        def do_HEAD(self) -> None:
            data = self._object()
            if data is not None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", _etag(data))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()

        def do_GET(self) -> None:
            data = self._object()
            if data is None:
                return
            wanted = self.headers.get("If-Match")
            if wanted is not None and wanted != _etag(data):
                self.send_response(412)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            match = _re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
            start, stop = 0, len(data)
            if match:
                start = int(match.group(1))
                stop = int(match.group(2)) + 1 if match.group(2) else len(data)
            body = data[start:stop]
            self.send_response(206 if match else 200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", _etag(data))
            if match:
                self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{len(data)}")
            self.end_headers()
            self.wfile.write(body)

    from tests.remote_stores import free_port

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    server.daemon_threads = True
    return server


@pytest.mark.usefixtures("no_prefetch")
def test_an_http_object_replaced_mid_read_fails_its_if_match(big: Path) -> None:
    import threading

    objects = _Objects()
    objects.content["/shard"] = (big / big_name(0, 2)).read_bytes()
    server = _http_server(objects)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/shard"
    try:
        records = tfrecord.read(url, storage_options={"skip_instance_cache": True})
        assert next(records) == big_record(0, 0)
        objects.content["/shard"] = (big / big_name(1, 2)).read_bytes()
        delivered = []
        with pytest.raises(ObjectChangedError) as caught:
            delivered.extend(records)
    finally:
        server.shutdown()
        server.server_close()
    assert delivered == [big_record(0, k) for k in range(1, len(delivered) + 1)]
    assert caught.value.url == url
    assert "If-Match" in str(caught.value)


def test_a_reader_state_saved_through_500s_after_botocores_attempts(
    s3_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Reader.save`` failed with "OSError: [Errno 121]" at the first 500 that botocore
    gave up on; readplan's own policy now retries it."""
    import s3fs

    from readplan.state.checkpoint import Checkpoint
    from tests.tfds_toy import TOY_INFO

    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)
    bucket = f"readplan-fault-{uuid.uuid4().hex[:8]}"
    s3_store.filesystem().mkdir(bucket)
    with FaultProxy(s3_store.endpoint, failures=2, methods=("PUT",)) as proxy:
        options = {
            **s3_store.storage_options,
            "endpoint_url": proxy.endpoint,
            "config_kwargs": {"retries": {"max_attempts": 1, "mode": "standard"}},
            "skip_instance_cache": True,
        }
        reader = Reader(ReadPlan(TOY_INFO, "train"), storage_options=options)
        for _ in zip(range(5), reader):
            pass
        url = f"s3://{bucket}/state.json"
        reader.save(url)
        assert proxy.failed == 2
        assert Checkpoint.load(url, storage_options=options).position == 5
