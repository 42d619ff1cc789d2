"""A window's records read file by file in spans (``specs/reader.md`` §2, "Reading in
spans"): the reads a rank of several, or an example shuffle, makes, and what
:class:`~readplan.reading.prefetch.SpanFetcher` fetches ahead of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray
from readplan.errors import ReadplanError
from readplan.reading.chunks import Runs
from readplan.reading.runs import Shard

__all__ = ["file_reads", "read_spans"]


def read_spans(
    runs: Runs,
    first_run: int,
    stop_run: int,
    shard: Callable[[int], Shard],
    finished: Callable[[int], None],
) -> list[Any] | None:
    """The records of runs ``first_run .. stop_run - 1`` in delivery order, read file by
    file in spans (``specs/reader.md`` §2); ``None`` when some file must be read run by run
    (damage, or a file that cannot be read in spans).

    Files are read in the order of their first delivery, each with its records in
    increasing order: ``shard(f)`` gives file ``f`` open, and ``finished(f)`` is called
    once its records are read.
    """
    named, order, sorted_records, bounds = _by_file(runs, first_run, stop_run)
    # Each payload goes straight to its place in delivery order as it is cut.
    records: list[Any] = [None] * len(order)
    for file_index, lo, hi in zip(named, bounds, bounds[1:]):
        try:
            read = shard(file_index).spans_into(records, order[lo:hi], sorted_records[lo:hi])
        except (ReadplanError, OSError):
            return None  # opening failed: the run-by-run reads report it where it belongs
        if not read:
            return None
        finished(file_index)
    return records


def _by_file(
    runs: Runs, first_run: int, stop_run: int
) -> tuple[list[int], IntArray, IntArray, list[int]]:
    """The deliveries of runs ``first_run .. stop_run - 1`` grouped by file, in the order
    of each file's first delivery: ``(files, order, records, bounds)``, where the
    deliveries ``order[bounds[j]:bounds[j + 1]]`` read ``records[bounds[j]:bounds[j + 1]]``
    (increasing) of ``files[j]``."""
    begin, stop = runs.deliveries(first_run, stop_run)
    files = runs.file_index[begin:stop]
    records = runs.record_index[begin:stop]
    named, codes = _file_codes(files)
    # A stable sort of small numbers (radix-sorted) groups the deliveries by file in the
    # order of first delivery.
    order = np.argsort(codes, kind="stable")
    sorted_records = records[order]
    bounds = np.zeros(len(named) + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=len(named)), out=bounds[1:])
    steps = np.diff(sorted_records)
    steps[bounds[1:-1] - 1] = 1  # where one file's records end and the next one's begin
    if (steps <= 0).any():
        # An example shuffle: a file's records are delivered out of order.
        order = np.lexsort((records, codes))
        sorted_records = records[order]
    return named.tolist(), order, sorted_records, bounds.tolist()


def _file_codes(files: IntArray) -> tuple[IntArray, npt.NDArray[np.signedinteger[Any]]]:
    """The files of ``files`` in the order of their first appearance, and each entry's
    number in that order (int16 when there are few files)."""
    size = len(files)
    top = int(files.max()) + 1
    # Where the file changes: each file's first appearance is at one of these.
    changes = np.flatnonzero(files[1:] != files[:-1]) + 1
    heads = files[np.concatenate((np.zeros(1, dtype=np.int64), changes))]
    small = np.int16 if top <= 1 << 15 else np.int64  # radix-sorted when small
    if top <= 4 * size:
        # A table over the file indices, no larger than the deliveries' arrays.
        first = np.full(top, size, dtype=np.int64)
        np.minimum.at(first, heads, np.arange(len(heads), dtype=np.int64))
        present = np.flatnonzero(first < size)
        named = present[np.argsort(first[present])]
        number = np.empty(top, dtype=small)
        number[named] = np.arange(len(named), dtype=small)
        return named, number[files]
    named = np.fromiter(dict.fromkeys(heads.tolist()), np.int64)
    by_name = np.argsort(named)
    small = np.int16 if len(named) <= 1 << 15 else np.int64
    return named, by_name[np.searchsorted(named, files, sorter=by_name)].astype(small)


def file_reads(runs: Runs, first_run: int, stop_run: int) -> list[tuple[int, IntArray]]:
    """What :func:`read_spans` reads for runs ``first_run .. stop_run - 1``, in order:
    ``(file, increasing record indices)``."""
    named, _, records, bounds = _by_file(runs, first_run, stop_run)
    return [(f, records[lo:hi]) for f, lo, hi in zip(named, bounds, bounds[1:])]
