"""The storage layer: local paths, fsspec URLs, real emulated stores, retries, changes."""

from __future__ import annotations

import errno
import os
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan import storage
from readplan.errors import (
    ConfigError,
    MissingExtraError,
    ObjectChangedError,
    ObjectNotFoundError,
    StorageError,
    StoragePermissionError,
)
from readplan.storage import RetryPolicy

FAST = RetryPolicy(attempts=4, first_delay=0.001, max_delay=0.002)

segment = st.text(st.sampled_from("abcXYZ019_-."), min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


# -- paths -------------------------------------------------------------------------------


@given(
    scheme=st.sampled_from(["gs", "s3", "memory", "hf", "abfs", "simplecache::gs"]),
    parts=st.lists(segment, min_size=1, max_size=4),
    name=segment,
)
def test_url_join_basename_parent_round_trip(scheme: str, parts: list[str], name: str) -> None:
    base = f"{scheme}://" + "/".join(parts)
    joined = storage.join(base, name)
    assert joined == f"{base}/{name}"
    assert storage.is_remote(joined)
    assert storage.basename(joined) == name
    assert storage.parent(joined) == base


@given(parts=st.lists(segment, min_size=1, max_size=4), name=segment)
def test_local_paths_use_os_path(parts: list[str], name: str) -> None:
    base = os.path.join(*parts)
    assert not storage.is_remote(base)
    assert storage.join(base, name) == os.path.join(base, name)
    assert storage.basename(storage.join(base, name)) == name
    assert storage.protocol(base) is None


def test_drive_letters_and_file_urls_are_local() -> None:
    assert not storage.is_remote("C:\\data\\x")
    assert not storage.is_remote("c:/data/x")
    assert storage.to_str("file:///tmp/x") == "/tmp/x"
    assert not storage.is_remote("file:///tmp/x")
    assert storage.protocol("gs://b/o") == "gs"


# -- local -----------------------------------------------------------------------------


def test_local_write_read_stat_list(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    storage.write_bytes(target, b"hello")
    assert target.read_bytes() == b"hello"
    assert storage.read_bytes(target) == b"hello"
    info = storage.stat(target)
    assert info.size == 5
    assert info.version == f"mtime_ns={os.stat(target).st_mtime_ns}"
    assert storage.listdir(tmp_path) == [(str(target), False)]
    assert storage.exists(target)
    assert storage.isfile(target)
    assert storage.isdir(tmp_path)
    handle = storage.open_read(target)
    assert isinstance(handle, int)
    os.close(handle)


def test_local_write_replaces_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    storage.write_bytes(target, b"new content")
    assert target.read_bytes() == b"new content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


# -- memory:// (fsspec, in process) ------------------------------------------------------


def _memory_url(name: str) -> str:
    return f"memory://readplan-{uuid.uuid4().hex}/{name}"


def test_memory_round_trip_and_listing() -> None:
    pytest.importorskip("fsspec")
    url = _memory_url("dir/obj.bin")
    storage.write_bytes(url, b"0123456789")
    assert storage.read_bytes(url) == b"0123456789"
    assert storage.stat(url).size == 10
    folder = storage.parent(url)
    assert storage.isdir(folder)
    assert storage.isfile(url)
    assert not storage.isfile(folder)
    assert storage.listdir(folder) == [(url, False)]
    blob = storage.open_read(url)
    assert isinstance(blob, storage.RemoteBlob)
    assert blob.fetch(2, 7) == b"23456"
    assert blob.pread(100, 8) == b"89"
    assert blob.pread(4, 10) == b""


def test_missing_object_names_the_url() -> None:
    pytest.importorskip("fsspec")
    url = _memory_url("nothing.bin")
    with pytest.raises(ObjectNotFoundError) as caught:
        storage.read_bytes(url)
    assert caught.value.url == url
    assert url in str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)
    assert not storage.exists(url)
    with pytest.raises(ObjectNotFoundError):
        storage.open_read(url)


def test_a_replaced_object_is_reported_as_changed() -> None:
    pytest.importorskip("fsspec")
    url = _memory_url("obj.bin")
    storage.write_bytes(url, b"x" * 100)
    blob = storage.open_read(url)
    assert isinstance(blob, storage.RemoteBlob)
    storage.write_bytes(url, b"y" * 40)
    with pytest.raises(ObjectChangedError) as caught:
        blob.fetch(50, 100)
    assert caught.value.url == url
    assert caught.value.expected.size == 100
    assert caught.value.found.size == 40


def test_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec.core", None)
    with pytest.raises(MissingExtraError) as caught:
        storage.read_bytes("gs://bucket/object")
    assert caught.value.extra == "remote"
    assert "readplan[remote]" in str(caught.value)
    assert isinstance(caught.value, ImportError)


def test_unknown_protocol_and_bad_options_are_config_errors() -> None:
    pytest.importorskip("fsspec")
    with pytest.raises(ConfigError):
        storage.read_bytes("nosuchprotocol://bucket/object")
    with pytest.raises(ConfigError):
        storage.read_bytes(_memory_url("x"), storage_options=[("a", 1)])  # type: ignore[arg-type]


# -- whole small objects, and object identity ---------------------------------------------


@given(data=st.binary(max_size=64), size=st.integers(1, 80))
def test_read_prefix_returns_at_most_the_bytes_asked(data: bytes, size: int) -> None:
    pytest.importorskip("fsspec")
    url = _memory_url("prefix.bin")
    storage.write_bytes(url, data)
    assert storage.read_prefix(url, size) == data[:size]


def test_read_prefix_of_a_local_file(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"0123456789")
    assert storage.read_prefix(path, 4) == b"0123"
    assert storage.read_prefix(path, 1 << 40) == b"0123456789"  # no buffer of 1 TiB
    with pytest.raises(FileNotFoundError):
        storage.read_prefix(tmp_path / "absent", 4)


_CONTENT = ["generation", "VersionId", "ETag", "etag"]
_TIMES = ["mtime", "mtime_ns", "LastModified", "created"]


@given(
    url=st.text(min_size=1, max_size=20),
    key=st.sampled_from(_CONTENT + _TIMES),
    value=st.text(max_size=12),
)
def test_a_fingerprint_names_a_content_version_only(url: str, key: str, value: str) -> None:
    info = storage.ObjectInfo(url, 7, f"{key}={value}")
    weak = value.startswith("W/")
    expected = f"{url} {key}={value}" if key in _CONTENT and not weak else None
    assert info.fingerprint == expected
    assert storage.ObjectInfo(url, 7, None).fingerprint is None


# -- retries -------------------------------------------------------------------------------


def _wrapped(failures: int, **extra: Any) -> tuple[str, dict[str, Any], Any]:
    pytest.importorskip("fsspec")
    import fsspec

    from tests.remote_stores import WrappedFileSystem

    options = {"failures": failures, "tag": uuid.uuid4().hex, **extra}
    fs = fsspec.filesystem("wrapped", **options)
    assert isinstance(fs, WrappedFileSystem)
    return f"wrapped://readplan-{uuid.uuid4().hex}/obj.bin", options, fs


@given(failures=st.integers(0, 3))
def test_transient_failures_are_retried(failures: int) -> None:
    url, options, fs = _wrapped(0)
    storage.write_bytes(url, b"payload", storage_options=options)
    fs.failures_left = failures
    before = fs.requests["get"]
    assert storage.read_bytes(url, storage_options=options, retry=FAST) == b"payload"
    assert fs.requests["get"] - before == failures + 1


def test_retries_are_bounded() -> None:
    url, options, fs = _wrapped(0)
    storage.write_bytes(url, b"payload", storage_options=options)
    fs.failures_left = 100
    with pytest.raises(StorageError) as caught:
        storage.read_bytes(url, storage_options=options, retry=FAST)
    assert caught.value.url == url
    assert "4 attempts" in str(caught.value)
    assert fs.requests["get"] == 4


class _StatusError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"HTTP {code}")
        self.code = code


@given(code=st.integers(100, 599))
def test_classification_of_http_statuses(code: int) -> None:
    kind = storage.classify(_StatusError(code))
    if code == 404:
        assert kind == "missing"
    elif code in (401, 403):
        assert kind == "denied"
    elif code in (408, 429) or code >= 500:
        assert kind == "transient"
    else:
        assert kind == "fatal"


def test_classification_of_connection_level_failures() -> None:
    assert storage.classify(ConnectionResetError()) == "transient"
    assert storage.classify(TimeoutError()) == "transient"
    assert storage.classify(FileNotFoundError()) == "missing"
    assert storage.classify(PermissionError()) == "denied"
    assert storage.classify(ValueError("bad")) == "fatal"


class _ClientError(Exception):
    """A botocore ClientError as s3fs chains it under the OSError it raises."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__(f"An error occurred ({code})")
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


def _translated(err: OSError, cause: BaseException | None) -> OSError:
    err.__cause__ = cause
    return err


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        # s3fs after botocore's attempts: 500 InternalError, 503 SlowDown, with their cause.
        (
            _translated(OSError(errno.EREMOTEIO, "We encountered an internal error"), None),
            "transient",
        ),
        (_translated(OSError(errno.EIO, "x"), _ClientError(500, "InternalError")), "transient"),
        (
            _translated(OSError(errno.EBUSY, "Please reduce"), _ClientError(503, "SlowDown")),
            "transient",
        ),
        (_translated(OSError(errno.EIO, "x"), _ClientError(400, "RequestTimeout")), "transient"),
        (
            _translated(OSError(errno.EINVAL, "x"), _ClientError(400, "ThrottlingException")),
            "transient",
        ),
        # A failed If-Match is no reason to retry; nor is a malformed request.
        (_translated(OSError(errno.EINVAL, "x"), _ClientError(412, "PreconditionFailed")), "fatal"),
        (_translated(OSError(errno.EINVAL, "x"), _ClientError(400, "InvalidArgument")), "fatal"),
        (_translated(OSError(errno.EIO, "x"), _ClientError(404, "NoSuchVersion")), "missing"),
    ],
)
def test_classification_by_the_meaning_behind_the_exception(error: OSError, kind: str) -> None:
    assert storage.classify(error) == kind


def test_permission_errors_are_not_retried() -> None:
    calls = []

    def refuse() -> bytes:
        calls.append(1)
        raise PermissionError("403 Forbidden")

    with pytest.raises(StoragePermissionError) as caught:
        storage.with_retries("read", "gs://b/o", refuse, FAST)
    assert calls == [1]
    assert getattr(caught.value, "url", None) == "gs://b/o"


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"attempts": 0}, "attempts"),
        ({"first_delay": -1.0}, "first_delay"),
        ({"attempts": 1.5}, "attempts"),
    ],
)
def test_retry_policy_validates(value: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RetryPolicy(**value)
    assert caught.value.field == field


# -- real emulated stores ----------------------------------------------------------------


def _bucket(store: Any) -> str:
    name = f"readplan-{uuid.uuid4().hex[:12]}"
    store.filesystem().mkdir(name)
    return name


def test_store_round_trip_ranges_and_listing(store: Any) -> None:
    bucket = _bucket(store)
    url = store.url(bucket, "dir/obj.bin")
    options = store.storage_options
    data = bytes(range(256)) * 40
    storage.write_bytes(url, data, storage_options=options)
    assert storage.read_bytes(url, storage_options=options) == data
    info = storage.stat(url, storage_options=options)
    assert info.size == len(data)
    assert info.version is not None
    blob = storage.open_read(url, storage_options=options)
    assert isinstance(blob, storage.RemoteBlob)
    assert blob.fetch(1000, 1500) == data[1000:1500]
    assert blob.pread(10, len(data) - 4) == data[-4:]
    folder = store.url(bucket, "dir")
    assert storage.listdir(folder, storage_options=options) == [(url, False)]
    assert storage.isdir(folder, storage_options=options)


def test_store_missing_object(store: Any) -> None:
    bucket = _bucket(store)
    url = store.url(bucket, "absent.bin")
    with pytest.raises(ObjectNotFoundError) as caught:
        storage.open_read(url, storage_options=store.storage_options)
    assert caught.value.url == url
    assert not storage.exists(url, storage_options=store.storage_options)


def _opened_object(store: Any) -> tuple[str, str, storage.RemoteBlob]:
    """``(bucket, url, handle)`` of a new 64-byte object ``obj.bin``."""
    bucket = _bucket(store)
    url = store.url(bucket, "obj.bin")
    storage.write_bytes(url, b"a" * 64, storage_options=store.storage_options)
    blob = storage.open_read(url, storage_options=store.storage_options)
    assert isinstance(blob, storage.RemoteBlob)
    return bucket, url, blob


def test_store_replaced_object_is_detected(store: Any) -> None:
    _, url, blob = _opened_object(store)
    storage.write_bytes(url, b"b" * 64, storage_options=store.storage_options)
    with pytest.raises(ObjectChangedError) as caught:
        blob.check_unchanged()
    assert caught.value.url == url
    assert caught.value.expected == blob.info


def test_gcs_reads_pin_the_generation_opened(
    gcs_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real GCS answers 404 for a replaced generation (the emulator ignores the parameter,
    # so the request itself is checked here).
    bucket, _, blob = _opened_object(gcs_store)
    generation = gcs_store.filesystem().info(f"{bucket}/obj.bin")["generation"]
    seen: list[dict[str, Any]] = []
    fs = gcs_store.filesystem()
    original = fs.cat_file

    def recording(path: str, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return original(path, **kwargs)

    monkeypatch.setattr(fs, "cat_file", recording)
    assert blob.fetch(0, 8) == b"a" * 8
    assert seen == [{"start": 0, "end": 8, "generation": generation}]


def test_warm_opens_ahead_and_open_read_takes_it() -> None:
    url, options, fs = _wrapped(0)
    storage.write_bytes(url, bytes(range(200)), storage_options=options)
    storage.warm(url, storage_options=options)
    blob = storage.open_read(url, storage_options=options)
    assert isinstance(blob, storage.RemoteBlob)
    requests = dict(fs.requests)
    assert requests["info"] >= 1
    assert requests["get"] == 1  # the first block, fetched by the warm-up
    assert blob.pread(10, 5) == bytes(range(5, 15))
    assert dict(fs.requests) == requests  # served from the warmed block
    assert storage.prefetcher().held == 0


def test_prefetch_budget_is_never_exceeded() -> None:
    url, options, _fs = _wrapped(0)
    data = bytes(range(256)) * 4096 * 5  # 5 MiB: two read-ahead blocks
    storage.write_bytes(url, data, storage_options=options)
    for bound in (0, 1 << 20, 8 << 20):
        prefetcher = storage.set_prefetch(max_bytes=bound)
        try:
            blob = storage.open_read(url, storage_options=options)
            assert isinstance(blob, storage.RemoteBlob)
            got = b"".join(blob.pread(1 << 16, offset) for offset in range(0, len(data), 1 << 16))
        finally:
            storage.set_prefetch()
        assert got == data
        assert prefetcher.peak <= bound
        assert (prefetcher.requests > 0) == (bound > 0)


def test_a_pool_thread_never_waits_for_a_fetch_queued_behind_it() -> None:
    # One thread: the outer fetch holds it and needs a result queued behind itself. A pool
    # thread waiting for it would wait forever (as 16 opens ahead, each needing a queued
    # warm-up, would); it runs that fetch itself.
    prefetcher = storage.Prefetcher(max_bytes=10, workers=1)
    queued = threading.Event()
    inner: list[storage.Ahead[str]] = []

    def outer() -> str:
        queued.wait()
        return "outer+" + inner[0].take()

    taken = prefetcher.ahead(1, outer)
    assert taken is not None
    behind = prefetcher.ahead(1, lambda: threading.current_thread().name)
    assert behind is not None
    inner.append(behind)
    queued.set()
    try:
        # A bound on waiting for a hung thread, not a timing figure.
        result = taken.future.result(timeout=60)
    finally:
        behind.future.cancel()  # frees a thread stuck waiting for it, if one is
        prefetcher.shutdown()
    assert result.startswith("outer+readplan-fetch")  # ran in the outer fetch's thread
    assert taken.take() == result
    assert prefetcher.held == 0


def test_a_fetch_taken_outside_the_pool_runs_in_the_pool() -> None:
    prefetcher = storage.Prefetcher(max_bytes=10, workers=1)
    gate = threading.Event()
    blocker = prefetcher.ahead(1, gate.wait)
    queued = prefetcher.ahead(1, lambda: threading.current_thread().name)
    assert blocker is not None
    assert queued is not None
    gate.set()
    try:
        assert queued.take().startswith("readplan-fetch")
        assert blocker.take() is True
    finally:
        prefetcher.shutdown()
    assert prefetcher.held == 0


def test_store_read_prefix_is_one_ranged_get(store: Any) -> None:
    from tests.remote_stores import put

    bucket = _bucket(store)
    _, options, fs = _wrapped(
        0, target_protocol=store.protocol, target_options=dict(store.storage_options)
    )
    put(store.protocol, fs.target, f"{bucket}/full.bin", b"0123456789")
    put(store.protocol, fs.target, f"{bucket}/empty.bin", b"")
    fs.requests.clear()
    assert storage.read_prefix(f"wrapped://{bucket}/full.bin", 4, storage_options=options) == (
        b"0123"
    )
    assert storage.read_prefix(f"wrapped://{bucket}/full.bin", 99, storage_options=options) == (
        b"0123456789"
    )
    assert dict(fs.requests) == {"get": 2}  # no metadata lookup
    # An empty object: S3 refuses the range (416); the size says why.
    assert storage.read_prefix(f"wrapped://{bucket}/empty.bin", 4, storage_options=options) == b""
    with pytest.raises(ObjectNotFoundError) as caught:
        storage.read_prefix(f"wrapped://{bucket}/absent.bin", 4, storage_options=options)
    assert caught.value.url == f"wrapped://{bucket}/absent.bin"


def test_reading_a_whole_s3_object_sends_one_get_and_no_head(s3_store: Any) -> None:
    """s3fs asks for an object's size (a HEAD) before reading it whole, unless the read is
    a range; ``read_bytes`` (dataset_info.json, states) reads the range from byte 0.  The
    HTTP requests are counted with botocore's events on the client fsspec gives readplan."""
    import fsspec

    from tests.remote_stores import put

    options = s3_store.storage_options
    fs = s3_store.filesystem()
    bucket = _bucket(s3_store)
    put("s3", fs, f"{bucket}/info.json", b'{"name": "x"}')
    put("s3", fs, f"{bucket}/empty.json", b"")
    assert fsspec.core.url_to_fs(f"s3://{bucket}/info.json", **options)[0] is fs
    sent: list[str] = []

    def count(request: Any, **_: Any) -> None:
        sent.append(request.method)

    fs.s3.meta.events.register("before-send.s3", count)
    try:
        fs.invalidate_cache()  # no cached listing answers the size instead
        assert storage.read_bytes(f"s3://{bucket}/info.json", storage_options=options) == (
            b'{"name": "x"}'
        )
        assert sent == ["GET"]  # before: ["HEAD", "GET"]
        sent.clear()
        fs.invalidate_cache()
        # An empty object refuses the range (416): its size, asked then, says it is empty.
        assert storage.read_bytes(f"s3://{bucket}/empty.json", storage_options=options) == b""
        assert sent == ["GET", "HEAD"]
    finally:
        fs.s3.meta.events.unregister("before-send.s3", count)
