"""The ``readplan`` command line: one subcommand per task, each defined beside its layer.

The subcommands live in modules of their own so that this file stays a table of contents:
framing (``inspect``, ``index``), planning (``plan``, ``order``), ``convert``, the
reader demo (``demo``) and the browser viewer (``view``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from readplan import __version__
from readplan.cli import convert, demo, framing, planning, view
from readplan.cli.numbers import POSITIVE, SECONDS
from readplan.cli.retries import retry_reporting
from readplan.errors import ReadplanError
from readplan.records.native import CORE_NAME
from readplan.storage import DEFAULT_RETRY

DEFAULT_RETRY_TIMEOUT = 30.0
"""Seconds after a request's first try past which the command line starts no retry."""

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="readplan",
        description="Exact, reproducible and resumable TFDS read order, without TensorFlow.",
    )
    version = f"readplan {__version__} ({CORE_NAME})"
    parser.add_argument("--version", action="version", version=version)
    parser.add_argument(
        "--retries",
        type=POSITIVE,
        default=DEFAULT_RETRY.attempts,
        metavar="N",
        help="tries of each object-store request that fails transiently (default "
        f"{DEFAULT_RETRY.attempts}); each retry is reported on stderr",
    )
    parser.add_argument(
        "--retry-timeout",
        type=SECONDS,
        default=DEFAULT_RETRY_TIMEOUT,
        metavar="SECONDS",
        help="start no retry later than this after a request's first try (default "
        f"{DEFAULT_RETRY_TIMEOUT:g} s; a try in flight is not cut short)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (demo, planning, framing, convert, view):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(convert.flag_values_joined(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help()
        return 0
    try:
        with retry_reporting(args):
            status: int = args.handler(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        # Ctrl-C is the user's wish, not a failure to explain: 128 + SIGINT, no traceback.
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output (e.g. `| head`) went away: that is not an error, but
        # the interpreter must not try to flush into the closed pipe again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ReadplanError, OSError) as err:
        print(f"readplan {args.command}: error: {err}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
