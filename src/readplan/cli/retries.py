"""What the command line says while a store request is retried (``specs/storage.md`` §3).

readplan's own retries are bounded by ``--retries``/``--retry-timeout`` and each is said
on stderr. Inside one try the client library retries too (gcsfs six times over some 30 s,
s3fs and botocore a few times): those retries, which it logs at debug level, are said on
stderr as well, so that a wrong endpoint is never a long silence; its tracebacks are not
printed, since readplan reports the failure itself.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from readplan import storage
from readplan.storage import DEFAULT_RETRY, RetryPolicy

__all__ = ["CLIENT_LOGGERS", "retry_reporting"]

CLIENT_LOGGERS = ("gcsfs", "s3fs")
# How each client library words a retry it is about to make.
_RETRY_WORDS = ("retrying after exception", "Retryable error", "maybe retryable")


class _ClientRetries(logging.Handler):
    """Says a client library's retries on stderr and drops its other records."""

    def __init__(self, command: str) -> None:
        super().__init__(logging.DEBUG)
        self.command = command

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if any(words in message for words in _RETRY_WORDS):
            print(
                f"readplan {self.command}: {record.name} retries within one try: {message}",
                file=sys.stderr,
                flush=True,
            )


@contextmanager
def retry_reporting(args: argparse.Namespace) -> Iterator[None]:
    """Within the block, store requests retry per the flags and every retry is said."""
    storage.configure_retries(
        RetryPolicy(
            attempts=args.retries,
            first_delay=DEFAULT_RETRY.first_delay,
            max_delay=DEFAULT_RETRY.max_delay,
            deadline=args.retry_timeout,
        )
    )
    command = args.command

    def report(message: str) -> None:
        print(f"readplan {command}: {message}", file=sys.stderr, flush=True)

    storage.set_retry_reporter(report)
    handler = _ClientRetries(command)
    saved = []
    for name in CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
    try:
        yield
    finally:
        storage.configure_retries(None)
        storage.set_retry_reporter(None)
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
