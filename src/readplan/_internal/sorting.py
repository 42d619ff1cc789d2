"""A stable argsort of bounded non-negative integers, by 16-bit digits.

numpy sorts 16-bit integers with a radix sort, an order of magnitude faster than its
comparison sorts of 64-bit integers on the machines this project measures on
(``benchmarks/bench_order.py``); sorting by the low digit, then stably by the high one, gives
the stable order of values below ``2**32`` in two such passes.
"""

from __future__ import annotations

import numpy as np

from readplan._internal.arrays import IntArray

__all__ = ["stable_order"]

_DIGIT = 16
_LIMIT = 1 << 2 * _DIGIT


def stable_order(values: IntArray, bound: int) -> IntArray:
    """``np.argsort(values, kind="stable")`` for values in ``[0, bound)``."""
    if bound > _LIMIT:
        return np.argsort(values, kind="stable")
    if bound <= 1 << 8:  # one radix pass instead of two (an interleave's slots, say)
        return np.argsort(values.astype(np.uint8), kind="stable").astype(np.int64, copy=False)
    order = np.argsort(values.astype(np.uint16), kind="stable")
    if bound > 1 << _DIGIT:
        high = (values[order] >> _DIGIT).astype(np.uint16)
        order = order[np.argsort(high, kind="stable")]
    return order.astype(np.int64, copy=False)
