"""Comparisons shared by the test modules: decoded values bit for bit, record subsequences."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np


def assert_same_value(got: Any, want: Any, where: object) -> None:
    """Same type, dtype, shape and bits (NaN payloads included); bytes objects equal."""
    assert type(got) is type(want), where
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype, where
        assert got.shape == want.shape, where
        if want.dtype == object:
            assert [type(v) for v in got.reshape(-1)] == [type(v) for v in want.reshape(-1)]
            assert got.tolist() == want.tolist(), where
        else:
            assert got.tobytes() == want.tobytes(), where
    elif isinstance(want, np.generic):
        assert got.dtype == want.dtype, where
        assert got.tobytes() == want.tobytes(), where
    elif isinstance(want, list):
        assert [type(v) for v in got] == [type(v) for v in want], where
        assert got == want, where
    elif isinstance(want, float):  # a Python scalar from .item(): NaN compares by its bits
        assert struct.pack("<d", got) == struct.pack("<d", want), where
    else:
        assert got == want, where


def checked_array(value: object, dtype: Any, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """``value`` after checking that it is an array of that dtype and shape."""
    assert isinstance(value, np.ndarray)
    assert value.dtype == np.dtype(dtype)
    assert value.shape == shape
    return value


def assert_same_nested(got: Any, want: Any, where: tuple[Any, ...]) -> None:
    """Dicts with the same keys in the same order, down to leaves that are the same value."""
    if isinstance(want, dict):
        assert type(got) is dict, where
        assert list(got) == list(want), where
        for key in want:
            assert_same_nested(got[key], want[key], (*where, key))
        return
    assert_same_value(got, want, where)


def is_subsequence(items: list[bytes], of: list[bytes]) -> bool:
    """Whether ``items`` appear in ``of`` in the same order (others may come between)."""
    remaining = iter(of)
    return all(any(item == candidate for candidate in remaining) for item in items)
