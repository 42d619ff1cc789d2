"""The three kinds of values a ``tf.train.Example`` feature holds, named once
(``specs/example.md`` §1): ``int64_list``, ``float_list`` and ``bytes_list``."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

__all__ = ["BYTES", "DTYPES", "FLOAT32", "INT64", "NUMPY_DTYPE", "Kind"]

INT64 = "int64"
FLOAT32 = "float32"
BYTES = "bytes"
DTYPES = (INT64, FLOAT32, BYTES)
Kind = Literal["int64", "float32", "bytes"]

NUMPY_DTYPE: dict[str, np.dtype[Any]] = {INT64: np.dtype(np.int64), FLOAT32: np.dtype(np.float32)}
"""The numpy dtype of a numeric kind's values (bytes values are Python ``bytes``)."""
