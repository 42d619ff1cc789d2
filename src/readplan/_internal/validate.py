"""Argument validation, in one place for every layer.

Integers are Python ints or numpy integers (positions and indices often come out of numpy
arrays), never bools, and always within int64 (TFDS and tf.data count in int64); the
checks return a plain ``int`` so the value serialises.  Flags are ``bool`` or ``numpy.bool_``
only: ``0`` or ``""`` for a flag is refused, not read as false.  A wrong type raises an
error that is also a ``TypeError``, a wrong value one that is also a ``ValueError``; both
are ``ConfigError`` unless the caller names another class.
"""

from __future__ import annotations

import reprlib
from typing import Any, TypeGuard

import numpy as np

from readplan.errors import ConfigError, ConfigTypeError

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "a_type",
    "check_bool",
    "check_int",
    "check_optional_int",
    "is_int",
    "not_int",
    "preview",
]

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
_PREVIEW_CHARS = 80


def is_int(value: object) -> TypeGuard[int]:
    """A Python int that is not a bool (``True`` is an int to Python, not to readplan)."""
    return isinstance(value, int) and not isinstance(value, bool)


def not_int(value: object) -> bool:
    """Neither a Python int (bools excluded) nor a numpy integer."""
    return not (is_int(value) or isinstance(value, np.integer))


def check_int(
    value: Any,
    field: str,
    *,
    minimum: int | None = INT64_MIN,
    maximum: int | None = INT64_MAX,
    what: str = "an integer",
) -> int:
    """``value`` as an ``int`` in ``minimum..maximum``, or a ConfigError naming ``field``.

    ``what`` describes the accepted values in the message (``"a positive integer"``).  A
    bound of ``None`` is no bound: TF folds seeds of any size, so seeds are unbounded.
    """
    if not_int(value):
        raise ConfigTypeError(
            f"{field}={preview(value)} is not {what} (it is {a_type(value)}); pass an int",
            field=field,
            value=value,
        )
    number = int(value)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        shown = f"{'' if minimum is None else minimum}..{'' if maximum is None else maximum}"
        raise ConfigError(
            f"{field}={preview(number)} is out of range: {field} must be {what} in {shown}",
            field=field,
            value=value,
        )
    return number


def check_optional_int(
    value: Any,
    field: str,
    *,
    minimum: int | None = INT64_MIN,
    maximum: int | None = INT64_MAX,
    what: str = "an integer",
) -> int | None:
    """:func:`check_int`, with ``None`` passed through."""
    if value is None:
        return None
    return check_int(value, field, minimum=minimum, maximum=maximum, what=f"{what} or None")


def check_seed(value: Any, field: str) -> int | None:
    """A shuffle or global seed as TF accepts it: any integer (numpy ones too) or bool
    (``True`` is seed 1), of any size, or None; TF folds it (``specs/shuffle.md`` §1).
    Floats, strings and other types are refused, as TF refuses them."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not_int(value):
        raise ConfigTypeError(
            f"{field}={value!r} is not a seed (it is a {type(value).__name__}); TensorFlow "
            "takes an integer of any size (or a bool) and refuses floats and strings",
            field=field,
            value=value,
        )
    return int(value)


def check_bool(value: Any, field: str) -> bool:
    """``value`` as a ``bool``; ``0``, ``1``, ``""`` or ``None`` are refused, not coerced."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigTypeError(
            f"{field}={preview(value)} is not a flag: pass True or False (got {a_type(value)})",
            field=field,
            value=value,
        )
    return bool(value)


def a_type(value: object) -> str:
    """The type of ``value`` with its article, for messages: ``"an int"``, ``"a str"``."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class _Brief(reprlib.Repr):
    """A repr that stops at a few levels and items, whatever the value's depth or size
    (the built-in one recurses once per level and renders everything before a message
    could cut it), and names an int too long to print instead of failing."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 6
        self.maxstring = self.maxother = _PREVIEW_CHARS
        self.maxlong = 40

    def repr_int(self, x: int, level: int) -> str:
        # Beyond 128 bits the digits say less than the size (and past 4,300 digits Python
        # refuses to print them at all).
        if x.bit_length() > 128:
            return f"<an int of {x.bit_length()} bits>"
        return repr(x)

    def repr_str(self, x: str, level: int) -> str:
        return repr(x[: self.maxstring + 2])  # a prefix the message cuts, not a middle cut


_BRIEF = _Brief()


def preview(value: object, width: int = _PREVIEW_CHARS) -> str:
    """The repr of a refused value, cut to a length an error message can quote; bounded in
    time and depth for any value (a state nested 100,000 levels deep, a 10^5-digit int)."""
    try:
        text = _BRIEF.repr(value)
    except (RecursionError, ValueError):
        text = f"<a {type(value).__name__} that cannot be shown>"
    return text if len(text) <= width else text[: width - 3] + "..."
