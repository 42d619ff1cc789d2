"""The construction step of frozen dataclasses that accept friendlier inputs than they store.

Such a class declares ``@dataclass(frozen=True, init=False)`` and an explicit ``__init__``
that converts its arguments (a list to a tuple, a numpy integer to ``int``, TFDS's
``take=-1`` to a count), stores them with :func:`init_fields` and then calls
``__post_init__``, which only validates (``specs/architecture.md`` §3).  Converters do not
validate: a value they cannot convert is stored as given and ``__post_init__`` refuses it
(a nested value object they build, such as a FeaturesDict's, validates itself).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["init_fields", "plain_bool", "plain_int"]


def init_fields(instance: object, **values: object) -> None:
    """Store the converted fields of a frozen dataclass; called only from its ``__init__``.

    One update of the instance's dict (these classes have no ``__slots__``): as fast as the
    generated ``__init__``, which matters for values built once per shard.
    """
    instance.__dict__.update(values)


def plain_int(value: Any) -> Any:
    """A numpy integer as the Python ``int`` it equals; anything else as given (for checking)."""
    return int(value) if isinstance(value, np.integer) else value


def plain_bool(value: Any) -> Any:
    """A ``numpy.bool_`` as the Python ``bool`` it equals; anything else as given."""
    return bool(value) if isinstance(value, np.bool_) else value
