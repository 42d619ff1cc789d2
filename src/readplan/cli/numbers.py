"""Integer arguments of every subcommand, range-checked with one message style.

Each numeric option's ``type=`` is an :func:`integer` of its range; argparse prints the
message after ``argument --NAME:`` and exits with status 2, so a number out of range never
reaches the code it would break (``--examples 99999999999999999999`` included).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from readplan._internal.validate import INT64_MAX, INT64_MIN
from readplan.state.limits import MAX_STATE_INT_BITS

__all__ = [
    "INT64",
    "NON_NEGATIVE",
    "PORT",
    "POSITION",
    "POSITIVE",
    "SECONDS",
    "SEED",
    "integer",
    "seconds",
]


def integer(
    minimum: int, maximum: int, what: str, shown: str | None = None
) -> Callable[[str], int]:
    """An argparse type: an integer in ``minimum..maximum``; ``what`` names the values and
    ``shown`` the range when its bounds are too long to print."""
    bounds = shown or f"{minimum}..{maximum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {what}, an integer in {bounds}; got {text!r:.40}"
            ) from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"{text:.40} is out of range: pass {what}, an integer in {bounds}"
            )
        return value

    parse.__name__ = what  # argparse names the type in some messages
    parse.bounds = (minimum, maximum)  # type: ignore[attr-defined]
    return parse


def seconds(maximum: float, what: str) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds in ``0..maximum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {what}, a number in 0..{maximum:g}; got {text!r:.40}"
            ) from None
        if not 0 <= value <= maximum:  # NaN and infinities fail too
            raise argparse.ArgumentTypeError(
                f"{text:.40} is out of range: pass {what}, a number in 0..{maximum:g}"
            )
        return value

    parse.__name__ = what
    parse.bounds = (0, maximum)  # type: ignore[attr-defined]
    return parse


NON_NEGATIVE = integer(0, INT64_MAX, "a count (0 or more)")
POSITIVE = integer(1, INT64_MAX, "a positive number")
# Checked again against the plan, whose message names its own range (0..N).
POSITION = integer(INT64_MIN, INT64_MAX, "a position")
PORT = integer(0, 65535, "a TCP port (0: any free one)")
INT64 = integer(INT64_MIN, INT64_MAX, "an int64 (TensorFlow's seed type)")
# TF folds seeds of any size; a state holds integers of up to MAX_STATE_INT_BITS bits.
SEED = integer(
    -(1 << MAX_STATE_INT_BITS),
    1 << MAX_STATE_INT_BITS,
    "a seed",
    shown=f"-2**{MAX_STATE_INT_BITS}..2**{MAX_STATE_INT_BITS}",
)
SECONDS = seconds(7 * 24 * 3600.0, "a number of seconds")
