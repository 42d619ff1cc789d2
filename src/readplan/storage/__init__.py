"""File access for the rest of readplan: local paths and fsspec URLs (``specs/storage.md``).

Local paths (and ``file://`` URLs) go straight to the operating system, as they always
did.  Any other ``protocol://`` URL (``gs://``, ``s3://``, ``memory://``, ...) goes through
fsspec, installed with ``pip install 'readplan[remote]'``; credentials and endpoints come
from fsspec's configuration (``FSSPEC_<PROTOCOL>_<OPTION>`` variables, config files) and
from ``storage_options``.  Transient failures are retried with backoff a bounded number of
times; missing objects, refusals and objects that change while read raise
:class:`~readplan.errors.StorageError` subclasses naming the URL.
"""

from readplan.storage._blob import DEFAULT_BLOCK, BlobView, ObjectInfo, RemoteBlob
from readplan.storage._fs import EXTRA
from readplan.storage._ops import (
    Handle,
    StorageOptions,
    close,
    dup,
    exists,
    fetch_ahead,
    isdir,
    isfile,
    listdir,
    open_read,
    positioned,
    read_bytes,
    read_capped,
    read_prefix,
    read_span,
    size_of,
    stat,
    warm,
    write_bytes,
)
from readplan.storage._paths import PathLike, basename, is_remote, join, parent, protocol, to_str
from readplan.storage._prefetch import (
    DEFAULT_PREFETCH_BYTES,
    DEFAULT_PREFETCH_WORKERS,
    Ahead,
    Prefetcher,
    prefetcher,
    set_prefetch,
)
from readplan.storage._retry import (
    DEFAULT_RETRY,
    RetryPolicy,
    classify,
    configure_retries,
    set_retry_reporter,
    with_retries,
)

__all__ = [
    "DEFAULT_BLOCK",
    "DEFAULT_PREFETCH_BYTES",
    "DEFAULT_PREFETCH_WORKERS",
    "DEFAULT_RETRY",
    "EXTRA",
    "Ahead",
    "BlobView",
    "Handle",
    "ObjectInfo",
    "PathLike",
    "Prefetcher",
    "RemoteBlob",
    "RetryPolicy",
    "StorageOptions",
    "basename",
    "classify",
    "close",
    "configure_retries",
    "dup",
    "exists",
    "fetch_ahead",
    "is_remote",
    "isdir",
    "isfile",
    "join",
    "listdir",
    "open_read",
    "parent",
    "positioned",
    "prefetcher",
    "protocol",
    "read_bytes",
    "read_capped",
    "read_prefix",
    "read_span",
    "set_prefetch",
    "set_retry_reporter",
    "size_of",
    "stat",
    "to_str",
    "warm",
    "with_retries",
    "write_bytes",
]
