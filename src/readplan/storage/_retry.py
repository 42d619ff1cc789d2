"""Bounded retries with backoff for transient store failures (``specs/storage.md``).

Transient: timeouts, dropped or refused connections, HTTP 408, 429 and 5xx, and the
throttling and internal-error codes of S3-style APIs.  A failure is judged by its meaning,
wherever in its chain of causes that shows: s3fs, once botocore's own attempts are spent,
raises a bare ``OSError(EREMOTEIO)`` (500) or ``OSError(EBUSY)`` (503, SlowDown) whose cause
holds the HTTP status.  A missing object and a refused permission are never retried; they
become :class:`ObjectNotFoundError` and :class:`StoragePermissionError` at once.  When the
attempts are spent the last failure is raised as :class:`StorageError` naming the URL, the
number of attempts and the backoff waited between them.
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

__all__ = [
    "DEFAULT_RETRY",
    "RetryPolicy",
    "classify",
    "configure_retries",
    "set_retry_reporter",
    "with_retries",
]

Kind = Literal["transient", "missing", "denied", "fatal"]
_T = TypeVar("_T")

_TRANSIENT_ERRNO = frozenset(
    {
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.ECONNREFUSED,
        errno.ETIMEDOUT,
        errno.EPIPE,
        # s3fs's translations of a server's own failure (500) and of "busy, try again"
        # (503 SlowDown / ServiceUnavailable, 409 OperationAborted).
        getattr(errno, "EREMOTEIO", errno.EIO),
        errno.EBUSY,
    }
)
# Error codes of S3-style APIs (botocore's ``response["Error"]["Code"]``) that mean "try
# again later", whatever status the response carried.
_TRANSIENT_CODES = frozenset(
    {
        "InternalError",
        "ServiceUnavailable",
        "SlowDown",
        "RequestTimeout",
        "RequestTimeoutException",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "BandwidthLimitExceeded",
        "OperationAborted",
    }
)
# How far down ``__cause__`` / ``__context__`` a failure's meaning is looked for.
_CHAIN_DEPTH = 8
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
    failed together do not retry together.  With ``deadline`` (seconds), no try starts
    later than that after the first one began (None: no limit beyond ``attempts``)."""

    attempts: int = 5
    first_delay: float = 0.2
    max_delay: float = 5.0
    deadline: float | None = None

    def __post_init__(self) -> None:
        check_int(self.attempts, "attempts", minimum=1, what="a number of tries >= 1")
        names = ("first_delay", "max_delay") + (() if self.deadline is None else ("deadline",))
        for name in names:
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

# What ``DEFAULT_RETRY`` stands for (set by :func:`configure_retries`), and who is told of
# each retry (:func:`set_retry_reporter`); one element each, or none.
_CONFIGURED: list[RetryPolicy] = []
_REPORTER: list[Callable[[str], None]] = []


def configure_retries(policy: RetryPolicy | None) -> None:
    """Use ``policy`` wherever the default policy is asked for (None: the default again)."""
    _CONFIGURED[:] = [] if policy is None else [policy]


def set_retry_reporter(report: Callable[[str], None] | None) -> None:
    """Call ``report(message)`` before each retry: the URL, the operation, ``attempt k of
    n`` and the failure (None: report nothing, the default)."""
    _REPORTER[:] = [] if report is None else [report]


def _response(err: BaseException) -> Mapping[str, object]:
    response = getattr(err, "response", None)
    return response if isinstance(response, Mapping) else {}


def _status(err: BaseException) -> int | None:
    # ``status`` first: aiohttp's ClientResponseError warns when its ``code`` is read.
    for name in ("status", "status_code", "code"):
        value = getattr(err, name, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
    meta = _response(err).get("ResponseMetadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("HTTPStatusCode"), int):
        return int(meta["HTTPStatusCode"])
    return None


def _code(err: BaseException) -> object:
    error = _response(err).get("Error")
    return error.get("Code") if isinstance(error, Mapping) else None


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and the failures it was raised from, nearest first."""
    links: list[BaseException] = []
    link: BaseException | None = err
    while link is not None and len(links) < _CHAIN_DEPTH and link not in links:
        links.append(link)
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    return links


def _by_status(status: int) -> Kind:
    if status == 404:
        return "missing"
    if status in (401, 403):
        return "denied"
    if status in (408, 429) or status >= 500:
        return "transient"
    return "fatal"


def classify(err: BaseException) -> Kind:
    """Whether a failure is worth retrying, a missing object, a refusal, or neither, by its
    meaning: the first HTTP status or API error code in its chain of causes, else its type."""
    if isinstance(err, FileNotFoundError):
        return "missing"
    if isinstance(err, PermissionError):
        return "denied"
    links = _chain(err)
    for link in links:
        if _code(link) in _TRANSIENT_CODES:
            return "transient"
        status = _status(link)
        if status is not None:
            return _by_status(status)
    for link in links:
        if isinstance(link, TimeoutError | asyncio.TimeoutError | ConnectionError):
            return "transient"
        if isinstance(link, OSError) and link.errno in _TRANSIENT_ERRNO:
            return "transient"
        name = type(link).__name__
        if any(part in name for part in _TRANSIENT_NAMES):
            return "transient"
    return "fatal"


def with_retries(
    operation: str, url: str, call: Callable[[], _T], policy: RetryPolicy = DEFAULT_RETRY
) -> _T:
    """``call()``, retried per ``policy`` on transient failures; errors name ``url``."""
    if policy is DEFAULT_RETRY and _CONFIGURED:
        policy = _CONFIGURED[0]
    waited = 0.0
    began = time.monotonic()
    for attempt in range(policy.attempts):
        try:
            return call()
        except ReadplanError:
            raise
        except Exception as err:
            kind = classify(err)
            pause = policy.delay(attempt)
            if kind == "transient" and _may_retry(policy, attempt, began, pause):
                _report(operation, url, attempt, policy, err, pause)
                time.sleep(pause)
                waited += pause
                continue
            raise _translated(err, kind, operation, url, attempt + 1, waited) from err
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def _may_retry(policy: RetryPolicy, attempt: int, began: float, pause: float) -> bool:
    if attempt + 1 >= policy.attempts:
        return False
    return policy.deadline is None or time.monotonic() - began + pause <= policy.deadline


def _report(
    operation: str, url: str, attempt: int, policy: RetryPolicy, err: Exception, pause: float
) -> None:
    if _REPORTER:
        _REPORTER[0](
            f"{url}: attempt {attempt + 1} of {policy.attempts} to {operation} it failed "
            f"({type(err).__name__}: {err}); retrying in {pause:.1f} s"
        )


def _translated(
    err: Exception, kind: Kind, operation: str, url: str, tries: int, waited: float
) -> StorageError:
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
            f"{url}: could not {operation} it: {tries} attempts failed with transient errors "
            f"(5xx, throttling, timeouts or dropped connections; each attempt after the client "
            f"library's own retries), {waited:.1f} s of backoff between them, the last: "
            f"{type(err).__name__}: {err}",
            url=url,
            operation=operation,
        )
    return StorageError(
        f"{url}: could not {operation} it: {type(err).__name__}: {err}",
        url=url,
        operation=operation,
    )
