"""A window's records read file by file in spans (``specs/reader.md`` §2, "Reading in
spans"): the reads a rank of several, or an example shuffle, makes, and what
:class:`~readplan.reading.prefetch.SpanFetcher` fetches ahead of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.errors import ReadplanError
from readplan.reading.runs import Runs, Shard
from readplan.records.native import CORE

__all__ = ["file_reads", "place", "place_pure", "read_spans"]


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
    payloads: list[Any] = []
    taken: list[IntArray] = []
    for file_index, lo, hi in zip(named, bounds, bounds[1:]):
        try:
            read = shard(file_index).spans_into(payloads, sorted_records[lo:hi])
        except (ReadplanError, OSError):
            return None  # opening failed: the run-by-run reads report it where it belongs
        if not read:
            return None
        finished(file_index)
        taken.append(order[lo:hi])
    # Back from file order to delivery order without a Python step per record.
    return place(payloads, np.concatenate(taken))


def place_pure(values: list[Any], order: IntArray) -> list[Any]:
    """The list ``out`` with ``out[order[j]] = values[j]``; ``order`` must hold each of
    ``0 .. len(values) - 1`` once, else ``ValueError`` naming the first entry that is out of
    range or repeats an earlier one.  The twin of the compiled ``place``."""
    size = len(values)
    if len(order) != size:
        raise ValueError(f"place: {size} values but {len(order)} places")
    bad = (order < 0) | (order >= size)
    inside = np.flatnonzero(~bad)
    firsts = inside[np.unique(order[inside], return_index=True)[1]]
    repeated = ~bad
    repeated[firsts] = False
    if (bad | repeated).any():
        j = int((bad | repeated).argmax())
        raise ValueError(
            f"place: order[{j}] = {int(order[j])} is not a free place in 0 .. {size - 1}"
        )
    placed = np.empty(size, dtype=object)
    placed[order] = values
    result: list[Any] = placed.tolist()
    return result


def place(values: list[Any], order: IntArray) -> list[Any]:
    """:func:`place_pure`, by the compiled core when there is one (``specs/native.md``)."""
    if CORE is None:
        return place_pure(values, order)
    placed: list[Any] = CORE.place(values, order)
    return placed


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
    # Each file's number in the order of first delivery (runs name it once per run), so
    # that a stable sort of small numbers groups the deliveries by file in that order.
    named = np.fromiter(dict.fromkeys(runs.file[first_run:stop_run]), np.int64)
    by_name = np.argsort(named)
    small = np.int16 if len(named) <= 1 << 15 else np.int64  # radix-sorted when small
    codes = by_name[np.searchsorted(named, files, sorter=by_name)].astype(small)
    order = np.argsort(codes, kind="stable")
    sorted_records = records[order]
    bounds = np.searchsorted(codes[order], np.arange(len(named) + 1)).tolist()
    same = np.ones(len(order) - 1, dtype=bool)
    same[np.array(bounds[1:-1], dtype=np.int64) - 1] = False
    if (np.diff(sorted_records)[same] <= 0).any():
        # An example shuffle: a file's records are delivered out of order.
        order = np.lexsort((records, codes))
        sorted_records = records[order]
    return named.tolist(), order, sorted_records, bounds


def file_reads(runs: Runs, first_run: int, stop_run: int) -> list[tuple[int, IntArray]]:
    """What :func:`read_spans` reads for runs ``first_run .. stop_run - 1``, in order:
    ``(file, increasing record indices)``."""
    named, _, records, bounds = _by_file(runs, first_run, stop_run)
    return [(f, records[lo:hi]) for f, lo, hi in zip(named, bounds, bounds[1:])]
