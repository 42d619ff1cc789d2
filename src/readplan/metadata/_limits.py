"""The decoded-value cap: no decoded value larger than this is allocated.

A ``features.json`` and a record are untrusted bytes: a declared shape, an image header or a
zlib stream can each ask for gigabytes from a few bytes. Every value decoding allocates for
(an absent optional Tensor's default, an inflated encoded Tensor, a decoded image) is
checked against ``max_value_bytes`` before it is allocated; ``specs/features.md`` §6 is
normative.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy.typing as npt

from readplan._internal.validate import INT64_MAX, is_int
from readplan.errors import ConfigError, FeatureError

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "MAX_FEATURE_DEPTH",
    "RAISE_CAP",
    "VALUE_BYTES_ENV",
    "Budget",
    "check_capacity",
    "value_cap",
]

# 256 MiB: an RGB image of 9,459 x 9,459 pixels; the same bound as one compressed record's.
DEFAULT_MAX_VALUE_BYTES = 2**28
VALUE_BYTES_ENV = "READPLAN_MAX_VALUE_BYTES"
"""The environment variable that sets the default (it reaches reader worker processes)."""

MAX_FEATURE_DEPTH = 64
"""How deeply features may nest in ``features.json`` (TFDS datasets nest a few levels)."""


def value_cap(max_value_bytes: object) -> int:
    """The cap of one decoder: as given, else ``$READPLAN_MAX_VALUE_BYTES``, else the default."""
    if max_value_bytes is None:
        env = os.environ.get(VALUE_BYTES_ENV)
        if env is None:
            return DEFAULT_MAX_VALUE_BYTES
        if len(env) > 20 or not env.strip().isdecimal():
            raise ConfigError(
                f"{VALUE_BYTES_ENV}={env[:40]!r} must be a non-negative decimal integer "
                f"(bytes), e.g. {2**30}",
                field=VALUE_BYTES_ENV,
                value=env[:40],
            )
        max_value_bytes = int(env)
    if not is_int(max_value_bytes) or not 0 <= max_value_bytes <= INT64_MAX:
        raise ConfigError(
            f"max_value_bytes={max_value_bytes!r} must be a non-negative int (bytes), or None "
            f"for ${VALUE_BYTES_ENV} or the default {DEFAULT_MAX_VALUE_BYTES}",
            field="max_value_bytes",
            value=max_value_bytes,
        )
    return max_value_bytes


RAISE_CAP = (
    "pass a larger max_value_bytes to the decoder or set $READPLAN_MAX_VALUE_BYTES "
    "(specs/features.md §6)"
)


class Budget:
    """What is left of ``max_value_bytes`` while one value's elements are decoded."""

    __slots__ = ("left",)

    def __init__(self, cap: int) -> None:
        self.left = cap

    def spend(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        self.left -= values.nbytes
        return values


def check_capacity(
    feature: str, feature_type: str, shape: tuple[int | None, ...], itemsize: int
) -> None:
    """Refuse a declared shape no array can have (numpy raises for any such array, even
    an empty one: the known dimensions other than 0 must fit in memory's address range)."""
    if math.prod(max(dim or 1, 1) for dim in shape) * itemsize * 4 <= INT64_MAX:
        return
    raise FeatureError(
        f"feature {feature}: the declared shape {shape} is larger than any array can be; the "
        "dataset's features.json is damaged",
        feature=feature,
        feature_type=feature_type,
    )
