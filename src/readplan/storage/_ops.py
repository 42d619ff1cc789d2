"""Whole-object operations on local paths and URLs (``specs/storage.md``).

Local paths go straight to the operating system, exactly as without this layer; URLs go
through fsspec with bounded retries, and their failures are
:class:`~readplan.errors.StorageError` subclasses naming the URL.
"""

from __future__ import annotations

import functools
import os
import stat as stat_module
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from readplan._internal.atomic import atomic_write
from readplan.errors import ObjectNotFoundError, StorageError
from readplan.storage._blob import DEFAULT_BLOCK, ObjectInfo, RemoteBlob, local_info, remote_info
from readplan.storage._fs import filesystem
from readplan.storage._paths import PathLike, is_remote, to_str
from readplan.storage._prefetch import Ahead, prefetcher
from readplan.storage._retry import DEFAULT_RETRY, RetryPolicy, classify, with_retries

__all__ = [
    "Handle",
    "StorageOptions",
    "close",
    "dup",
    "exists",
    "fetch_ahead",
    "isdir",
    "isfile",
    "listdir",
    "open_read",
    "positioned",
    "read_bytes",
    "read_capped",
    "read_prefix",
    "read_span",
    "size_of",
    "stat",
    "warm",
    "write_bytes",
]

StorageOptions = Mapping[str, Any] | None
Handle = int | RemoteBlob
"""An open file: a descriptor for a local path, a :class:`RemoteBlob` for a URL."""


def open_read(
    path: PathLike, *, storage_options: StorageOptions = None, retry: RetryPolicy = DEFAULT_RETRY
) -> Handle:
    """Open ``path`` for positioned reads (a missing local file raises FileNotFoundError).

    A local path must name a regular file (or a link to one): a FIFO or a device has no size
    to read up to (``/dev/zero`` reports 0 bytes and never ends), so it is refused with
    :class:`~readplan.errors.StorageError` before it is opened."""
    text = to_str(path)
    if not is_remote(text):
        mode = os.stat(text).st_mode
        if not stat_module.S_ISREG(mode) and not stat_module.S_ISDIR(mode):
            raise StorageError(
                f"{text}: not a regular file ({_kind(mode)}): records are read from files "
                "whose size is known; copy the data into a file first",
                url=text,
                operation="open",
            )
        return os.open(text, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    warmed = _take_warm(text, storage_options)
    if warmed is not None:
        return warmed
    return RemoteBlob(text, storage_options=storage_options, retry=retry)


def _kind(mode: int) -> str:
    if stat_module.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "a device"
    if stat_module.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def size_of(handle: Handle) -> int:
    """The size of the open file or object."""
    if isinstance(handle, int):
        return os.fstat(handle).st_size
    return handle.size


def read_span(handle: Handle, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset``, without reading ahead (a remote handle makes
    exactly one ranged request); shorter only at the end."""
    if not isinstance(handle, int):
        return handle.fetch(min(offset, handle.size), min(offset + size, handle.size))
    first = _pread_once(handle, size, offset)
    if len(first) == size or not first:
        return first
    pieces = [first]
    got = len(first)
    while got < size:
        more = _pread_once(handle, size - got, offset + got)
        if not more:
            break
        pieces.append(more)
        got += len(more)
    return b"".join(pieces)


def fetch_ahead(handle: Handle, size: int, offset: int) -> bool:
    """Start fetching the bytes a later :func:`read_span` of ``size`` at ``offset`` (or of
    a part of them) reads, in the background within the prefetch budget; ``False`` when
    they do not fit.  A local file is read when asked: nothing to do."""
    if isinstance(handle, int):
        return True
    return handle.fetch_ahead(offset, offset + size)


def positioned(handle: Handle) -> Callable[[int, int], bytes]:
    """``read(size, offset)`` for hot loops: one bare system call on a descriptor (it may
    return fewer bytes; callers check and fall back), the read-ahead of a remote handle."""
    if isinstance(handle, int):
        return functools.partial(_pread_once, handle)
    return handle.pread


def _pread_once(fd: int, size: int, offset: int) -> bytes:
    if _OS_PREAD is not None:
        data: bytes = _OS_PREAD(fd, size, offset)
        return data
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


# Windows has no os.pread; there the reader seeks before every read instead.
_OS_PREAD = getattr(os, "pread", None)


def dup(handle: Handle, *, limit: int | None = None) -> Handle:
    """An independent handle on the same file or object version.

    ``limit``: a remote handle made to read up to that offset never reads ahead past it.
    """
    if isinstance(handle, int):
        return os.dup(handle)
    return handle.dup(limit)


def close(handle: Handle) -> None:
    """Close a handle from :func:`open_read` or :func:`dup`."""
    if isinstance(handle, int):
        os.close(handle)
    else:
        handle.close()


def stat(
    path: PathLike, *, storage_options: StorageOptions = None, retry: RetryPolicy = DEFAULT_RETRY
) -> ObjectInfo:
    """Size and version of the file or object at ``path``, as it is now."""
    text = to_str(path)
    if not is_remote(text):
        return local_info(text)
    fs, inner = filesystem(text, storage_options)
    return remote_info(fs, inner, text, retry)[0]


def exists(
    path: PathLike, *, storage_options: StorageOptions = None, retry: RetryPolicy = DEFAULT_RETRY
) -> bool:
    """Whether ``path`` names a file, an object, a directory or a non-empty prefix."""
    return _is(path, os.path.exists, ("file", "directory"), storage_options, retry)


def isfile(
    path: PathLike, *, storage_options: StorageOptions = None, retry: RetryPolicy = DEFAULT_RETRY
) -> bool:
    """Whether ``path`` names a file or an object."""
    return _is(path, os.path.isfile, ("file",), storage_options, retry)


def isdir(
    path: PathLike, *, storage_options: StorageOptions = None, retry: RetryPolicy = DEFAULT_RETRY
) -> bool:
    """Whether ``path`` names a directory or a prefix of objects."""
    return _is(path, os.path.isdir, ("directory",), storage_options, retry)


def _is(
    path: PathLike,
    local: Callable[[str], bool],
    kinds: tuple[str, ...],
    storage_options: StorageOptions,
    retry: RetryPolicy,
) -> bool:
    text = to_str(path)
    if not is_remote(text):
        return local(text)
    fs, inner = filesystem(text, storage_options)
    fs.invalidate_cache(inner)
    try:
        info = with_retries("stat", text, lambda: fs.info(inner), retry)
    except ObjectNotFoundError:
        return False
    return info.get("type") in kinds


def listdir(
    path: PathLike, *, storage_options: StorageOptions = None, retry: RetryPolicy = DEFAULT_RETRY
) -> list[tuple[str, bool]]:
    """``(full path or URL, is a directory)`` of each entry of ``path``, sorted by name."""
    text = to_str(path)
    if not is_remote(text):
        return sorted((entry.path, entry.is_dir()) for entry in os.scandir(text))
    fs, inner = filesystem(text, storage_options)
    fs.invalidate_cache(inner)
    entries = with_retries("list", text, lambda: fs.ls(inner, detail=True), retry)
    base = text.rstrip("/")
    listed = []
    for entry in entries:
        name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
        listed.append((f"{base}/{name}", entry.get("type") == "directory"))
    return sorted(listed)


def read_bytes(
    path: PathLike, *, storage_options: StorageOptions = None, retry: RetryPolicy = DEFAULT_RETRY
) -> bytes:
    """The whole content of the file or object at ``path``: for a URL one request, without
    a metadata lookup (a range from the first byte; asked for the whole object, s3fs would
    first ask for its size)."""
    text = to_str(path)
    if not is_remote(text):
        with open(text, "rb") as handle:
            return handle.read()
    fs, inner = filesystem(text, storage_options)
    return bytes(with_retries("read", text, lambda: _prefix(fs, inner, None), retry))


def read_capped(
    path: PathLike,
    cap: int,
    *,
    storage_options: StorageOptions = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> bytes:
    """The whole content of ``path`` when it holds at most ``cap`` bytes, else its first
    ``cap + 1`` (so the caller sees it is longer): never more than that in memory, whatever
    the file is (``/dev/zero``, a FIFO, a huge object)."""
    text = to_str(path)
    if is_remote(text):
        return read_prefix(text, cap + 1, storage_options=storage_options, retry=retry)
    pieces: list[bytes] = []
    got = 0
    with open(text, "rb", buffering=0) as handle:
        while got <= cap:
            piece = handle.read(min(cap + 1 - got, _CAPPED_CHUNK))
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
    return b"".join(pieces)


# A bounded read grows by this much at a time, not by its bound at once.
_CAPPED_CHUNK = 1 << 20


def read_prefix(
    path: PathLike,
    size: int,
    *,
    storage_options: StorageOptions = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> bytes:
    """The first ``size`` bytes of the file or object at ``path``, all of it when it is
    shorter: one ranged request, without a metadata lookup (a missing object raises
    :class:`~readplan.errors.ObjectNotFoundError`)."""
    text = to_str(path)
    if not is_remote(text):
        with open(text, "rb") as handle:
            # Never a buffer of ``size`` bytes when the file is shorter.
            return handle.read(min(size, os.fstat(handle.fileno()).st_size))
    fs, inner = filesystem(text, storage_options)
    return bytes(with_retries("read", text, lambda: _prefix(fs, inner, size), retry))


def _prefix(fs: Any, inner: str, size: int | None) -> bytes:
    """The first ``size`` bytes of the object (``None``: all of them) in one ranged request."""
    try:
        return bytes(fs.cat_file(inner, start=0, end=size))
    except Exception as err:
        if classify(err) != "fatal":
            raise
        # A range is unsatisfiable (HTTP 416) on some stores when the object is empty.
        if fs.size(inner) != 0:
            raise
        return b""


def write_bytes(
    path: PathLike,
    data: bytes,
    *,
    storage_options: StorageOptions = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> None:
    """Replace the file or object at ``path`` with ``data``, whole or not at all.

    Locally: a temporary file in the same directory, flushed to disk, renamed over the
    target, and the directory flushed.  In a store: one upload, which the store makes
    visible only once complete (a single PUT, or a multipart upload finished as a whole).
    """
    text = to_str(path)
    if not is_remote(text):
        atomic_write(text, data)
        return
    fs, inner = filesystem(text, storage_options)
    with_retries("write", text, lambda: fs.pipe_file(inner, data), retry)
    fs.invalidate_cache(inner)


# -- opening objects ahead of their first read -----------------------------------------------

_WARM_LIMIT = 64


_warm: OrderedDict[tuple[str, str], Ahead[RemoteBlob]] = OrderedDict()
_warm_lock = threading.Lock()


def _forget_warm_after_fork() -> None:
    # The handles being opened belong to the parent's threads, which a child lacks.
    global _warm_lock
    _warm_lock = threading.Lock()
    _warm.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_warm_after_fork)


def _warm_key(url: str, storage_options: StorageOptions) -> tuple[str, str]:
    return url, repr(sorted((storage_options or {}).items()))


def warm(path: PathLike, *, storage_options: StorageOptions = None, head: bool = True) -> None:
    """Start opening the object at ``path`` in the background, and with ``head`` fetching
    its first block (for a read that starts at the beginning).

    The next :func:`open_read` of the same path (and options) takes the opened handle
    instead of waiting for the store.  Local paths, and requests that do not fit the
    prefetch budget, are ignored; at most 64 objects are held open ahead.
    """
    url = to_str(path)
    if not is_remote(url):
        return
    key = _warm_key(url, storage_options)
    with _warm_lock:
        if key in _warm:
            return
        reserved = DEFAULT_BLOCK if head else 0
        ahead = prefetcher().ahead(reserved, lambda: _opened(url, storage_options, head))
        if ahead is None:
            return
        _warm[key] = ahead
        dropped = _warm.popitem(last=False)[1] if len(_warm) > _WARM_LIMIT else None
    if dropped is not None:
        dropped.drop()


def _opened(url: str, storage_options: StorageOptions, head: bool) -> RemoteBlob:
    blob = RemoteBlob(url, storage_options=storage_options)
    if head:
        blob.pread(1, 0)  # the first block, and the next one fetched ahead
    return blob


def _take_warm(url: str, storage_options: StorageOptions) -> RemoteBlob | None:
    with _warm_lock:
        entry = _warm.pop(_warm_key(url, storage_options), None)
    if entry is None:
        return None
    return entry.take()
