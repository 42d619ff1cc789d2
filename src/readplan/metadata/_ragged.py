"""TFDS's ragged tensors (a Sequence of Sequences) as numpy: row lengths checked, rows nested.

TFDS stores such a leaf as its flat values and one row-length list per Sequence level but
the last; ``specs/features.md`` §3.8 is normative.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.errors import ExampleError
from readplan.metadata._feature_types import Shape

__all__ = ["check_lengths", "nest_rows"]


def check_lengths(key: str, levels: Shape, counts_of: list[npt.NDArray[Any]], values: int) -> None:
    """Each level's row lengths add up to the rows below it, and Sequences of a fixed length
    hold that many elements."""
    below = [len(counts) for counts in counts_of[1:]] + [values]
    for k, (counts, count) in enumerate(zip(counts_of, below)):
        if counts.sum() != count or (counts < 0).any():
            raise ExampleError(
                f"feature {key!r}: ragged_row_lengths_{k} sums to {int(counts.sum())} "
                f"but there are {count} rows or values below it; the record does not match "
                "its dataset's features",
                key=f"{key}/ragged_row_lengths_{k}",
            )
    sizes = [np.array([len(counts_of[0])]), *counts_of]
    for level, (want, got) in enumerate(zip(levels, sizes)):
        if want is not None and (got != want).any():
            raise ExampleError(
                f"feature {key!r}: a Sequence of length {want} at level {level} holds "
                f"{sorted(set(got.tolist()))} elements; the record does not match its "
                "dataset's features",
                key=key,
            )


def nest_rows(rows: npt.NDArray[Any], counts_of: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """``rows`` cut by each level's row lengths, innermost first: nested 1-D object arrays."""
    for counts in reversed(counts_of):
        ends = np.cumsum(counts)
        nested = np.empty(len(counts), dtype=object)
        for i, (start, end) in enumerate(zip(ends - counts, ends)):
            nested[i] = rows[start:end]
        rows = nested
    return rows
