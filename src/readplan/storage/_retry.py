"""Bounded retries with backoff for transient store failures (``specs/storage.md``).

Transient: timeouts, dropped or refused connections, HTTP 429 and 5xx.  A missing object
and a refused permission are never retried; they become :class:`ObjectNotFoundError` and
:class:`StoragePermissionError` at once.  When the attempts are spent the last failure is
raised as :class:`StorageError` naming the URL and the number of attempts.
"""

from __future__ import annotations

import asyncio
import errno
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from readplan._internal.validate import check_int
from readplan.errors import (
    ConfigError,
    ObjectNotFoundError,
    ReadplanError,
    StorageError,
    StoragePermissionError,
)

__all__ = ["DEFAULT_RETRY", "RetryPolicy", "classify", "with_retries"]

Kind = Literal["transient", "missing", "denied", "fatal"]
_T = TypeVar("_T")

_TRANSIENT_ERRNO = frozenset(
    {errno.ECONNRESET, errno.ECONNABORTED, errno.ECONNREFUSED, errno.ETIMEDOUT, errno.EPIPE}
)
# Client libraries' connection-level failures, by class name: importing the libraries to
# name the classes would make the optional extra a dependency of this module.
_TRANSIENT_NAMES = (
    "Timeout",
    "Connection",
    "Disconnected",
    "PayloadError",
    "ResponseStreamingError",
    "IncompleteRead",
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` tries in all; the wait after try ``k`` (from 0) is drawn uniformly from
    ``[d/2, d]`` with ``d = min(max_delay, first_delay * 2**k)``, so that many readers that
    failed together do not retry together."""

    attempts: int = 5
    first_delay: float = 0.2
    max_delay: float = 5.0

    def __post_init__(self) -> None:
        check_int(self.attempts, "attempts", minimum=1, what="a number of tries >= 1")
        for name in ("first_delay", "max_delay"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
                raise ConfigError(
                    f"RetryPolicy.{name} must be a number of seconds >= 0, got {value!r}",
                    field=name,
                    value=value,
                )

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try ``attempt`` (0-based)."""
        ceiling = min(self.max_delay, self.first_delay * 2.0**attempt)
        return random.uniform(ceiling / 2, ceiling)


DEFAULT_RETRY = RetryPolicy()


def _status(err: BaseException) -> int | None:
    for name in ("code", "status", "status_code"):
        value = getattr(err, name, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
    response = getattr(err, "response", None)
    if isinstance(response, Mapping):
        meta = response.get("ResponseMetadata")
        if isinstance(meta, Mapping) and isinstance(meta.get("HTTPStatusCode"), int):
            return int(meta["HTTPStatusCode"])
    return None


def classify(err: BaseException) -> Kind:
    """Whether a failure is worth retrying, a missing object, a refusal, or neither."""
    if isinstance(err, FileNotFoundError):
        return "missing"
    if isinstance(err, PermissionError):
        return "denied"
    status = _status(err)
    if status is not None:
        if status == 404:
            return "missing"
        if status in (401, 403):
            return "denied"
        if status in (408, 429) or status >= 500:
            return "transient"
        return "fatal"
    if isinstance(err, TimeoutError | asyncio.TimeoutError | ConnectionError):
        return "transient"
    if isinstance(err, OSError) and err.errno in _TRANSIENT_ERRNO:
        return "transient"
    name = type(err).__name__
    if any(part in name for part in _TRANSIENT_NAMES):
        return "transient"
    return "fatal"


def with_retries(
    operation: str, url: str, call: Callable[[], _T], policy: RetryPolicy = DEFAULT_RETRY
) -> _T:
    """``call()``, retried per ``policy`` on transient failures; errors name ``url``."""
    for attempt in range(policy.attempts):
        try:
            return call()
        except ReadplanError:
            raise
        except Exception as err:
            kind = classify(err)
            if kind == "transient" and attempt + 1 < policy.attempts:
                time.sleep(policy.delay(attempt))
                continue
            raise _translated(err, kind, operation, url, attempt + 1) from err
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def _translated(err: Exception, kind: Kind, operation: str, url: str, tries: int) -> StorageError:
    if kind == "missing":
        return ObjectNotFoundError(
            f"{url}: no such object (while trying to {operation} it); check the URL, the "
            "bucket name and the endpoint the store is reached at",
            url=url,
            operation=operation,
        )
    if kind == "denied":
        return StoragePermissionError(
            f"{url}: the store refused to {operation} it ({err}); check the credentials "
            "fsspec finds (environment, config files, storage_options)",
            url=url,
            operation=operation,
        )
    if kind == "transient":
        return StorageError(
            f"{url}: could not {operation} it: {tries} attempts failed with transient errors, "
            f"the last: {type(err).__name__}: {err}",
            url=url,
            operation=operation,
        )
    return StorageError(
        f"{url}: could not {operation} it: {type(err).__name__}: {err}",
        url=url,
        operation=operation,
    )
