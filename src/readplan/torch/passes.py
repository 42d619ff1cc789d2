"""Which pass an iteration of a dataset reads, agreed between its copies (``specs/reader.md`` §6).

Each ``for batch in loader`` is a pass, and pass ``k`` reads the epochs after pass
``k - 1``'s.  The dataset object in the main process never sees the passes of a loader
with workers: each worker iterates its own copy (persistent workers keep theirs, fresh
workers get a new copy each pass).  So the count lives in shared memory
(:class:`~readplan._internal.shared_ints.SharedInts`) that every copy started from the
dataset maps: ``next`` is the pass the next iteration reads (``set_epoch`` sets it), and the
first worker of a loader's pass to start registers the pass, taking ``next`` and advancing
it; the other workers of that pass join the registration.  The workers of one pass are
told apart from the next pass's by the loader's base seed, which all workers of one
iterator share (``worker_info.seed - worker_info.id``), by their number, and by the last
registration each worker process joined (a persistent worker may start its next pass while
a slower one has yet to start the current).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from readplan._internal.shared_ints import SharedInts

__all__ = ["Load", "Passes"]

_NEXT, _SEQUENCE, _USED_LOAD, _HEADER = 0, 1, 2, 3
_KEY, _SEQ, _WORKERS, _JOINED, _PASS, _LOAD, _FIELDS = 0, 1, 2, 3, 4, 5, 6
# Registrations kept: those of passes whose workers may still be starting.
_ENTRIES = 16


@dataclass(frozen=True)
class Load:
    """A state loaded into the dataset: ``ident`` tells it apart, ``number`` is its pass."""

    ident: int
    number: int


class Passes:
    """The pass counter of one dataset, shared with its copies in worker processes."""

    def __init__(self) -> None:
        self._shared = SharedInts(_HEADER + _ENTRIES * _FIELDS)
        # The last registration this process joined (copies in fresh workers start at 0).
        self._joined = 0

    @property
    def next(self) -> int:
        with self._shared as values:
            return int(values[_NEXT])

    def set_next(self, number: int) -> None:
        with self._shared as values:
            values[_NEXT] = number

    def used(self, load: Load) -> bool:
        with self._shared as values:
            return int(values[_USED_LOAD]) == load.ident

    def take(self, load: Load | None) -> tuple[int, bool]:
        """The pass an iteration of the main process reads, and whether it starts from
        ``load`` (a loaded state not yet read by any iteration)."""
        with self._shared as values:
            return _take(values, load)

    def restored(self, load: Load) -> None:
        """An iteration starts from ``load``, loaded in its own process: the pass after
        the state's comes next."""
        with self._shared as values:
            values[_USED_LOAD] = load.ident
            values[_NEXT] = load.number + 1

    def join(self, key: int, workers: int, load: Load | None) -> tuple[int, bool]:
        """The pass a worker of the loader iterator ``key`` (of ``workers`` workers) reads,
        and whether it starts from ``load``."""
        with self._shared as values:
            entries = values[_HEADER:].reshape(_ENTRIES, _FIELDS)
            found = _open_registration(entries, key, workers, self._joined)
            if found is not None:
                entry = entries[found]
                entry[_JOINED] += 1
                self._joined = int(entry[_SEQ])
                used = load is not None and int(entry[_LOAD]) == load.ident
                return int(entry[_PASS]), used
            number, used = _take(values, load)
            values[_SEQUENCE] += 1
            self._joined = int(values[_SEQUENCE])
            oldest = int(np.argmin(entries[:, _SEQ]))
            ident = load.ident if used and load is not None else 0
            entries[oldest] = (key, self._joined, workers, 1, number, ident)
            return number, used


def _take(values: npt.NDArray[np.int64], load: Load | None) -> tuple[int, bool]:
    if load is not None and int(values[_USED_LOAD]) != load.ident:
        values[_USED_LOAD] = load.ident
        values[_NEXT] = load.number + 1
        return load.number, True
    number = int(values[_NEXT])
    values[_NEXT] = number + 1
    return number, False


def _open_registration(
    entries: npt.NDArray[np.int64], key: int, workers: int, joined: int
) -> int | None:
    """The earliest registration of ``key`` still missing workers, after ``joined``."""
    candidates = np.flatnonzero(
        (entries[:, _SEQ] > joined)
        & (entries[:, _KEY] == key)
        & (entries[:, _WORKERS] == workers)
        & (entries[:, _JOINED] < workers)
    )
    if not candidates.size:
        return None
    return int(candidates[np.argmin(entries[candidates, _SEQ])])
