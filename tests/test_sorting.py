"""The radix-based stable argsort against numpy's own stable sort."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from readplan._internal.sorting import stable_order


@given(st.sampled_from([1, 2, 200, 256, 257, 1 << 16, (1 << 16) + 1, 1 << 32, 1 << 40]), st.data())
@example(256, None)
def test_stable_order_is_the_stable_argsort(bound: int, data: st.DataObject | None) -> None:
    if data is None:
        values = np.array([255, 0, 255, 3, 0], dtype=np.int64)
    else:
        values = np.array(
            data.draw(st.lists(st.integers(0, bound - 1), max_size=300)), dtype=np.int64
        )
    order = stable_order(values, bound)
    assert order.dtype == np.int64
    assert order.tolist() == np.argsort(values, kind="stable").tolist()
