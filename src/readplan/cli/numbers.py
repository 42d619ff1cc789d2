"""Integer arguments of every subcommand, range-checked with one message style.

Each numeric option's ``type=`` is an :func:`integer` of its range; argparse prints the
message after ``argument --NAME:`` and exits with status 2, so a number out of range never
reaches the code it would break (``--examples 99999999999999999999`` included).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from readplan._internal.validate import INT64_MAX, INT64_MIN

__all__ = ["INT64", "NON_NEGATIVE", "PORT", "POSITION", "POSITIVE", "integer"]


def integer(minimum: int, maximum: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer in ``minimum..maximum``; ``what`` names the values."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {what}, an integer in {minimum}..{maximum}; got {text!r}"
            ) from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: pass {what}, an integer in {minimum}..{maximum}"
            )
        return value

    parse.__name__ = what  # argparse names the type in some messages
    parse.bounds = (minimum, maximum)  # type: ignore[attr-defined]
    return parse


NON_NEGATIVE = integer(0, INT64_MAX, "a count (0 or more)")
POSITIVE = integer(1, INT64_MAX, "a positive number")
# Checked again against the plan, whose message names its own range (0..N).
POSITION = integer(INT64_MIN, INT64_MAX, "a position")
PORT = integer(0, 65535, "a TCP port (0: any free one)")
INT64 = integer(INT64_MIN, INT64_MAX, "an int64 (TensorFlow's seed type)")
