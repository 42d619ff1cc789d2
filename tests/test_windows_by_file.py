"""A window's deliveries grouped by file (reading/windows.py): the groups read file by file
in spans, against a grouping written out one delivery at a time."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from readplan.reading.chunks import Runs
from readplan.reading.windows import _by_file


def runs_of(files: list[int], records: list[int]) -> Runs:
    """One run per stretch of one file (what ``Runs.of`` cuts at least)."""
    size = len(files)
    start = [k for k in range(size) if k == 0 or files[k] != files[k - 1]]
    return Runs(
        positions=np.arange(size, dtype=np.int64),
        file_index=np.array(files, dtype=np.int64),
        record_index=np.array(records, dtype=np.int64),
        starts=np.array(start, dtype=np.int64),
        closing_marks=np.zeros(len(start), dtype=bool),
        close_files=[],
        close_before=[],
    )


def grouped(files: list[int], records: list[int]) -> tuple[list[int], list[list[int]]]:
    """Files in the order of their first delivery, and each file's deliveries ordered by
    record (then by delivery)."""
    named: list[int] = []
    for f in files:
        if f not in named:
            named.append(f)
    groups = [
        sorted((k for k in range(len(files)) if files[k] == f), key=lambda k: (records[k], k))
        for f in named
    ]
    return named, groups


def by_file(files: list[int], records: list[int]) -> tuple[list[int], Any, Any, list[int]]:
    runs = runs_of(files, records)
    return _by_file(runs, 0, len(runs.start))


deliveries = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.one_of(st.integers(0, 6), st.integers(0, 10**6)), min_size=n, max_size=n),
        st.lists(st.integers(0, 40), min_size=n, max_size=n),
    )
)


@given(deliveries)
def test_groups_follow_the_first_delivery_of_each_file(
    window: tuple[list[int], list[int]],
) -> None:
    files, records = window
    named, order, sorted_records, bounds = by_file(files, records)
    expected_named, expected_groups = grouped(files, records)
    assert named == expected_named
    assert bounds == [0, *np.cumsum([len(g) for g in expected_groups]).tolist()]
    for j, group in enumerate(expected_groups):
        taken = order[bounds[j] : bounds[j + 1]].tolist()
        # Ties between equal records of a file keep delivery order.
        assert taken == group
        assert sorted_records[bounds[j] : bounds[j + 1]].tolist() == [records[k] for k in group]


def test_a_window_over_few_files_of_a_large_plan() -> None:
    # File indices far beyond the window's size are numbered without a table over them.
    files = [900_000, 5, 900_000, 5, 77, 900_000]
    records = [3, 1, 4, 2, 0, 9]
    named, order, sorted_records, bounds = by_file(files, records)
    assert named == [900_000, 5, 77]
    assert bounds == [0, 3, 5, 6]
    assert order.tolist() == [0, 2, 5, 1, 3, 4]
    assert sorted_records.tolist() == [3, 4, 9, 1, 2, 0]
