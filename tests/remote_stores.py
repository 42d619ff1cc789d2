"""Local object stores for tests and benchmarks: emulator servers and a wrapping filesystem.

Servers are real processes from Python packages (``gcp-storage-emulator`` for the GCS API,
``moto_server`` for the S3 API) listening on free loopback ports.  Clients are pinned to
them: anonymous GCS token, fake AWS keys, and no cloud metadata lookups, so nothing here
ever leaves 127.0.0.1.

:class:`WrappedFileSystem` (protocol ``wrapped://``) forwards to another fsspec
filesystem and adds what a test or a benchmark needs: request counting, a fixed latency
per request, and injected failures for the first calls.
"""

from __future__ import annotations

import collections
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.spec import AbstractFileSystem

# Set before gcsfs or botocore is imported anywhere in the process.
CLIENT_ENVIRONMENT = {
    "NO_GCE_CHECK": "true",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_ACCESS_KEY_ID": "readplan-test",
    "AWS_SECRET_ACCESS_KEY": "readplan-test",
    "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
}


def pin_clients_to_loopback() -> None:
    os.environ.update(CLIENT_ENVIRONMENT)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Store:
    """A running emulator: its URL scheme, endpoint and the fsspec options that reach it."""

    protocol: str
    endpoint: str
    storage_options: Mapping[str, Any]

    def url(self, bucket: str, key: str = "") -> str:
        return f"{self.protocol}://{bucket}/{key}".rstrip("/")

    def filesystem(self) -> Any:
        return fsspec.filesystem(self.protocol, **self.storage_options)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within 60 s")


@contextmanager
def _server(command: list[str], port: int) -> Iterator[None]:
    if shutil.which(command[0]) is None:
        raise RuntimeError(f"{command[0]} is not installed (the test extra provides it)")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process, command[0])
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def gcs_emulator() -> Iterator[Store]:
    pin_clients_to_loopback()
    port = free_port()
    command = ["gcp-storage-emulator", "start", "--host=127.0.0.1", f"--port={port}"]
    with _server([*command, "--in-memory"], port):
        endpoint = f"http://127.0.0.1:{port}"
        yield Store("gs", endpoint, {"token": "anon", "project": "test", "endpoint_url": endpoint})


@contextmanager
def s3_emulator() -> Iterator[Store]:
    pin_clients_to_loopback()
    port = free_port()
    with _server(["moto_server", "-H", "127.0.0.1", "-p", str(port)], port):
        endpoint = f"http://127.0.0.1:{port}"
        options = {"endpoint_url": endpoint, "key": "readplan-test", "secret": "readplan-test"}
        yield Store("s3", endpoint, options)


def upload_tree(store: Store, local: str | os.PathLike[str], bucket: str, prefix: str) -> str:
    """Copy a local folder into ``bucket/prefix`` (creating the bucket); returns its URL."""
    fs = store.filesystem()
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    root = os.fspath(local)
    for folder, _, names in os.walk(root):
        for name in names:
            source = os.path.join(folder, name)
            relative = os.path.relpath(source, root).replace(os.sep, "/")
            with open(source, "rb") as handle:
                put(store.protocol, fs, f"{bucket}/{prefix}/{relative}", handle.read())
    fs.invalidate_cache()
    return store.url(bucket, prefix)


def put(protocol: str, fs: Any, path: str, data: bytes) -> None:
    """Upload ``data`` whole.

    The GCS emulator parses gcsfs's small (multipart) uploads as e-mail, which drops a
    trailing CR or LF byte of the content; a one-chunk resumable upload keeps every byte.
    """
    with warnings.catch_warnings():
        # aiohttp warns that a multi-megabyte body given as bytes may block its event loop.
        warnings.simplefilter("ignore", ResourceWarning)
        if protocol == "gs":
            fs.pipe_file(path, data, chunksize=max(1, len(data)))
        else:
            fs.pipe_file(path, data)


def wrapped_copy(
    folder: str | os.PathLike[str], prefix: str, target: Store | None = None, **options: Any
) -> tuple[str, dict[str, Any], Any]:
    """The files of ``folder`` copied to ``bucket/prefix`` behind a counting ``wrapped://``
    store over ``target`` (an in-process memory store without one); returns the copy's URL,
    the storage options that reach it and the wrapping filesystem (counters cleared).

    ``options`` are :class:`WrappedFileSystem`'s (``latency``, ``failures``, ...); each copy
    gets its own counters.
    """
    opts: dict[str, Any] = {"tag": uuid.uuid4().hex, **options}
    if target is not None:
        opts.update(target_protocol=target.protocol, target_options=dict(target.storage_options))
    fs = fsspec.filesystem("wrapped", **opts)
    bucket = f"readplan-wrapped-{uuid.uuid4().hex[:8]}"
    if target is not None:
        fs.target.mkdir(bucket)
    protocol = opts.get("target_protocol", "memory")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as handle:
            put(protocol, fs.target, f"{bucket}/{prefix}/{name}", handle.read())
    fs.requests.clear()
    fs.ranges.clear()
    return f"wrapped://{bucket}/{prefix}", opts, fs


class InjectedResetError(ConnectionResetError):
    """A transient failure raised on purpose by :class:`WrappedFileSystem`."""


class ServiceUnavailableError(Exception):
    """An HTTP 503 as client libraries report it (a ``code`` attribute)."""

    code = 503


class _Shared:
    """Counters and injected failures of every instance with one ``tag``.

    fsspec caches one instance per thread, and prefetching threads open objects too, so
    the counts live here, not on an instance.
    """

    def __init__(self, failures: int) -> None:
        self.lock = threading.Lock()
        self.failures_left = failures
        self.requests: collections.Counter[str] = collections.Counter()
        self.ranges: list[tuple[str, int | None, int | None]] = []


_SHARED: dict[object, _Shared] = {}


class WrappedFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """``wrapped://bucket/key`` -> ``bucket/key`` of the ``target_protocol`` filesystem.

    Options: ``target_options`` for the target, ``latency`` seconds added to every
    request, ``failures``: the first that many requests fail transiently (alternating a
    reset connection and a 503), ``tag``: any value naming the counters (``requests``,
    ``ranges``) that the instances made with it share, ``read_only``: writes are refused
    as a store refuses them without write access.
    """

    protocol = "wrapped"

    def __init__(
        self,
        target_protocol: str = "memory",
        target_options: Mapping[str, Any] | None = None,
        latency: float = 0.0,
        failures: int = 0,
        tag: object = None,
        read_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.read_only = read_only
        self.target = fsspec.filesystem(target_protocol, **dict(target_options or {}))
        self.latency = latency
        self.shared = _SHARED.setdefault(tag, _Shared(failures))
        self.requests = self.shared.requests
        self.ranges = self.shared.ranges

    @property
    def failures_left(self) -> int:
        return self.shared.failures_left

    @failures_left.setter
    def failures_left(self, value: int) -> None:
        self.shared.failures_left = value

    def _request(self, kind: str) -> None:
        shared = self.shared
        with shared.lock:
            shared.requests[kind] += 1
            fail = shared.failures_left > 0
            if fail:
                shared.failures_left -= 1
                odd = shared.failures_left % 2
        if self.latency:
            time.sleep(self.latency)
        if fail:
            if odd:
                raise ServiceUnavailableError(f"injected 503 for a {kind} request")
            raise InjectedResetError(f"injected connection reset for a {kind} request")

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self._request("info")
        info = dict(self.target.info(self._strip_protocol(path)))
        info["name"] = self._strip_protocol(path)
        return info

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        self._request("ls")
        entries = self.target.ls(self._strip_protocol(path), detail=True)
        return entries if detail else [entry["name"] for entry in entries]

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        self._request("get")
        with self.shared.lock:
            self.ranges.append((path, start, end))
        return bytes(self.target.cat_file(self._strip_protocol(path), start=start, end=end))

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        self._request("put")
        if self.read_only:
            raise PermissionError(f"403: no write access to {path} (read_only store)")
        self.target.pipe_file(self._strip_protocol(path), value)

    def invalidate_cache(self, path: str | None = None) -> None:
        self.target.invalidate_cache(None if path is None else self._strip_protocol(path))


fsspec.register_implementation("wrapped", WrappedFileSystem, clobber=True)


class FaultProxy:
    """An HTTP proxy on a loopback port in front of an emulator's ``endpoint`` that answers
    the first ``failures`` requests whose method is in ``methods`` with ``status`` and an
    S3-style error body (``code``), and forwards everything else unchanged.

    Use as a context manager; ``endpoint`` is the proxy's URL, ``failed`` counts the
    answers it made up, ``forwarded`` the requests it passed on.
    """

    def __init__(
        self,
        target: str,
        *,
        failures: int,
        status: int = 500,
        code: str = "InternalError",
        methods: tuple[str, ...] = ("GET",),
    ) -> None:
        import http.server

        self.target = target.removeprefix("http://")
        self.failures_left = failures
        self.failed = 0
        self.forwarded = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if proxy._take_failure(self.command, methods):
                    self._reply(status, {"Content-Type": "application/xml"}, _s3_error(code))
                    return
                self._forward(body)

            def _forward(self, body: bytes) -> None:
                import http.client

                connection = http.client.HTTPConnection(proxy.target, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = proxy.target
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                kept = {
                    k: v
                    for k, v in response.getheaders()
                    if k.lower() not in ("content-length", "transfer-encoding", "connection")
                }
                connection.close()
                self._reply(response.status, kept, data, head=self.command == "HEAD")

            def _reply(
                self, code: int, headers: Mapping[str, str], data: bytes, head: bool = False
            ) -> None:
                self.send_response(code)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle  # noqa: N815

        port = free_port()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{port}"

    def _take_failure(self, method: str, methods: tuple[str, ...]) -> bool:
        with self._lock:
            if method in methods and self.failures_left > 0:
                self.failures_left -= 1
                self.failed += 1
                return True
            self.forwarded += 1
            return False

    def __enter__(self) -> FaultProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _s3_error(code: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>injected {code}</Message>"
        "<RequestId>readplan-test</RequestId></Error>"
    ).encode()
