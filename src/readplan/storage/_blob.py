"""Identity of a stored object, and a read handle on a remote one (``specs/storage.md``).

A :class:`RemoteBlob` fixes the object's identity (size and generation, ETag or
modification time) when it is opened.  :meth:`RemoteBlob.fetch` reads an exact byte span
in one ranged request; :meth:`RemoteBlob.pread` serves small positioned reads from one
read-ahead block, so a sequential parse costs one request per block, not per record.  A
read that comes back short, or a GCS generation that no longer exists, means the object
changed under the reader: :class:`~readplan.errors.ObjectChangedError`, naming the URL.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from readplan.errors import (
    ObjectChangedError,
    ObjectNotFoundError,
    StorageError,
    StoragePermissionError,
)
from readplan.storage._fs import filesystem
from readplan.storage._pinning import Pin, pin_for
from readplan.storage._prefetch import Ahead, prefetcher
from readplan.storage._retry import DEFAULT_RETRY, RetryPolicy, with_retries

__all__ = [
    "DEFAULT_BLOCK",
    "BlobView",
    "ObjectInfo",
    "RemoteBlob",
    "local_info",
    "remote_info",
]

DEFAULT_BLOCK = 4 << 20
# Metadata keys that change whenever an object is replaced, most specific first.
_VERSION_KEYS = ("generation", "VersionId", "ETag", "etag", "mtime", "LastModified", "created")
# Those that name one content of one object: a new upload gets a new generation or version
# id, and an ETag is a digest of (or unique to) the bytes.  Times do not: two writes within
# a clock tick, or a copy that keeps the time, share one.
_CONTENT_KEYS = ("generation", "VersionId", "ETag", "etag")


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """What identifies one version of a stored object: its size and its version tag.

    ``version`` is the GCS generation, the S3 version id or ETag, or a modification time
    (local files: ``mtime_ns``); ``None`` when the store reports none.
    """

    url: str
    size: int
    version: str | None

    def same_version(self, other: ObjectInfo) -> bool:
        """Whether ``other`` describes the same bytes (same size and version tag)."""
        return self.size == other.size and self.version == other.version

    @property
    def fingerprint(self) -> str | None:
        """``"<url> <version>"`` when the version names exactly one content of this object
        (a GCS generation, an S3 version id or an ETag, not a time); else ``None``.  Two
        lookups with the same fingerprint saw the same bytes."""
        version = self.version
        if version is None or version.partition("=")[0] not in _CONTENT_KEYS:
            return None
        if version.partition("=")[2].startswith("W/"):
            return None  # an HTTP weak ETag promises equivalence, not equal bytes
        return f"{self.url} {version}"


def local_info(path: str) -> ObjectInfo:
    """The identity of a local file (``os.stat``)."""
    status = os.stat(path)
    return ObjectInfo(path, status.st_size, f"mtime_ns={status.st_mtime_ns}")


def _version(info: Mapping[str, Any]) -> str | None:
    for key in _VERSION_KEYS:
        value = info.get(key)
        # S3's "null" version id is that of every write while versioning is off: no tag.
        if value is not None and not (key == "VersionId" and value == "null"):
            return f"{key}={value}"
    return None


def remote_info(
    fs: Any, path: str, url: str, retry: RetryPolicy = DEFAULT_RETRY
) -> tuple[ObjectInfo, Mapping[str, Any]]:
    """The current identity of the object at ``url`` (not a cached listing) and fsspec's info."""
    fs.invalidate_cache(path)
    info = with_retries("stat", url, lambda: fs.info(path), retry)
    if info.get("type") == "directory":
        raise StorageError(
            f"{url} is a directory (a prefix of other objects), not an object",
            url=url,
            operation="stat",
        )
    return ObjectInfo(url, int(info["size"]), _version(info)), info


class _Pending(NamedTuple):
    """Bytes ``[start, stop)`` being fetched ahead."""

    start: int
    stop: int
    ahead: Ahead[bytes]

    def covers(self, start: int, stop: int) -> bool:
        return self.start <= start and stop <= self.stop


class RemoteBlob:
    """A read handle on one object at a URL; cheap to :meth:`dup`, safe across threads.

    ``limit`` (default: the object's size) is where read-ahead stops: a handle made to
    read one span never fetches past it.
    """

    def __init__(
        self,
        url: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        retry: RetryPolicy = DEFAULT_RETRY,
        block_size: int = DEFAULT_BLOCK,
        limit: int | None = None,
        _opened: tuple[Any, str, ObjectInfo, Pin] | None = None,
    ) -> None:
        self.url = url
        self.retry = retry
        self.block_size = block_size
        if _opened is None:
            fs, path = filesystem(url, storage_options)
            opened, info = remote_info(fs, path, url, retry)
            _opened = fs, path, opened, pin_for(fs, info)
        self._fs, self._path, self.info, self._pin = _opened
        self.limit = self.info.size if limit is None else min(limit, self.info.size)
        self._lock = threading.Lock()
        self._block_start = 0
        self._block = b""
        self._pending: _Pending | None = None
        # Exact spans fetched ahead for a later fetch (fetch_ahead), in request order.
        self._ranges: list[_Pending] = []

    @property
    def size(self) -> int:
        return self.info.size

    def __repr__(self) -> str:
        return f"RemoteBlob({self.url!r}, size={self.size}, {self.info.version})"

    def dup(self, limit: int | None = None) -> RemoteBlob:
        """A second handle on the same version of the object, with its own read-ahead."""
        return RemoteBlob(
            self.url,
            retry=self.retry,
            block_size=self.block_size,
            limit=limit,
            _opened=(self._fs, self._path, self.info, self._pin),
        )

    def close(self) -> None:
        """Drop the read-ahead; the handle stays usable."""
        with self._lock:
            self._block_start, self._block = 0, b""
            pending, self._pending = self._pending, None
            ranges, self._ranges = self._ranges, []
        for dropped in ranges if pending is None else [pending, *ranges]:
            dropped.ahead.drop()

    def __del__(self) -> None:
        pending = getattr(self, "_pending", None)
        held = [] if pending is None else [pending]
        for dropped in [*held, *getattr(self, "_ranges", ())]:
            dropped.ahead.drop()

    def fetch_ahead(self, start: int, stop: int) -> bool:
        """Start fetching bytes ``[start, stop)`` in the background, for a later
        :meth:`fetch` of them or of a part of them; ``False`` when they do not fit the
        prefetch budget (nothing is fetched: the later fetch makes the request itself)."""
        start, stop = max(start, 0), min(stop, self.size)
        if start >= stop:
            return True
        with self._lock:
            # Asked again after the budget refused a later span: only those are new.  (A
            # span inside another one is fetched too: each read takes the span it covers.)
            if any(p.start == start and p.stop == stop for p in self._ranges):
                return True
        ahead = prefetcher().ahead(stop - start, lambda: self._request(start, stop))
        if ahead is None:
            return False
        with self._lock:
            self._ranges.append(_Pending(start, stop, ahead))
        return True

    def fetch(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of the object in one ranged request (``stop <= size``),
        or from a span :meth:`fetch_ahead` fetched."""
        if not 0 <= start <= stop <= self.size:
            raise ValueError(
                f"{self.url}: cannot read bytes [{start}, {stop}) of an object of {self.size}"
            )
        if start == stop:
            return b""
        if self._ranges:
            with self._lock:
                exact = (p for p in self._ranges if (p.start, p.stop) == (start, stop))
                inside = (p for p in self._ranges if p.covers(start, stop))
                found = next(exact, None) or next(inside, None)
                if found is not None:
                    self._ranges.remove(found)
            if found is not None:
                try:
                    data = found.ahead.take()
                except Exception:
                    # The request below meets the same failure and reports it, from here.
                    pass
                else:
                    return data[start - found.start : stop - found.start]
        return self._request(start, stop)

    def _request(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of the version opened in one ranged request (pinned to it
        where the store can, ``_pinning.py``); a failed or short read, or a vanished
        object, is checked for a change of the object."""
        try:
            data = with_retries(
                "read",
                self.url,
                lambda: self._pin.read(self._fs, self._path, start, stop),
                self.retry,
            )
        except StoragePermissionError:
            raise
        except StorageError:
            # Gone since it was opened (404), or its pin no longer holds (412): a change.
            self._raise_if_changed()
            raise
        if len(data) != stop - start:
            self.check_unchanged()
            raise StorageError(
                f"{self.url}: asked for bytes [{start}, {stop}) and got {len(data)} bytes; the "
                "store returned a short read",
                url=self.url,
                operation="read",
            )
        return data

    def _raise_if_changed(self) -> None:
        """:meth:`check_unchanged`, but a failing lookup returns: a failed read then reports
        its own failure."""
        try:
            self.check_unchanged()
        except ObjectChangedError:
            raise
        except StorageError:
            return

    def pread(self, size: int, offset: int) -> bytes:
        """Up to ``size`` bytes at ``offset``; shorter only at the end of the object.

        Served from the current block; a read past it fetches a new block of at least
        ``block_size`` bytes (up to ``limit``), using the block fetched ahead when the read
        continues where the current block ends, and then asks for the next one.
        """
        stop = min(offset + size, self.size)
        if offset >= stop:
            return b""
        with self._lock:
            start = self._block_start
            if not (start <= offset and stop <= start + len(self._block)):
                self._advance(offset, stop)
                start = self._block_start
            return self._block[offset - start : stop - start]

    def _advance(self, offset: int, stop: int) -> None:
        block_end = self._block_start + len(self._block)
        forward = self._block_start <= offset <= block_end
        pending, self._pending = self._pending, None
        if pending is not None and forward and pending.start == block_end and stop <= pending.stop:
            head = self._block[offset - self._block_start :]
            data = pending.ahead.take()
            self._block_start, self._block = offset, head + data if head else data
            fetched_to = pending.stop
        else:
            if pending is not None:
                pending.ahead.drop()
            fetched_to = max(stop, min(self.limit, offset + self.block_size))
            self._block_start, self._block = offset, self._request(offset, fetched_to)
        if forward:
            self._fetch_ahead(fetched_to)

    def _fetch_ahead(self, start: int) -> None:
        stop = min(self.limit, start + self.block_size)
        if stop <= start:
            return
        ahead = prefetcher().ahead(stop - start, lambda: self._request(start, stop))
        if ahead is not None:
            self._pending = _Pending(start, stop, ahead)

    def check_unchanged(self) -> None:
        """Raise :class:`ObjectChangedError` if the object is not the version opened."""
        try:
            now, _ = remote_info(self._fs, self._path, self.url, self.retry)
        except ObjectNotFoundError as err:
            raise self._changed(None) from err
        if not now.same_version(self.info):
            raise self._changed(now)

    def _changed(self, now: ObjectInfo | None) -> ObjectChangedError:
        found = "it no longer exists" if now is None else f"now {now.size} bytes, {now.version}"
        return ObjectChangedError(
            f"{self.url} changed while it was being read: it was {self.size} bytes, "
            f"{self.info.version} when opened, {found} ({self._pin.describe()}). Restart "
            "the read on the new data (its metadata, index sidecars and plans may no longer "
            "match it)",
            url=self.url,
            operation="read",
            expected=self.info,
            found=now,
        )


class BlobView:
    """``view[a:b]``: bytes of an opened object by slice, as a memory map of a local file
    gives them.  With ``read_ahead`` slices are served from the handle's read-ahead blocks
    (a walk forward through the object); without, each slice is one exact ranged request."""

    def __init__(self, blob: RemoteBlob, *, read_ahead: bool) -> None:
        self.blob = blob
        self._read_ahead = read_ahead

    def __len__(self) -> int:
        return self.blob.size

    def __getitem__(self, span: slice) -> bytes:
        start, stop, step = span.indices(self.blob.size)
        if step != 1:
            raise ValueError(f"{self.blob.url}: a view is sliced with step 1, not {step}")
        if stop <= start:
            return b""
        if self._read_ahead:
            return self.blob.pread(stop - start, start)
        return self.blob.fetch(start, stop)
