"""A chunk of the plan's order and a rank's deliveries in it, cut into runs of consecutive
records of one file (``specs/reader.md``, "Reading runs")."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray
from readplan.plan import EpochOrder, ReadPlan
from readplan.reading.spans import MAX_GAP

__all__ = ["Chunk", "Runs", "last_read_marks"]


def last_read_marks(
    plan: ReadPlan, epoch: int, last_records: IntArray
) -> Callable[[EpochOrder], npt.NDArray[np.bool_]]:
    """Marks, per position of a chunk of ``epoch``, whether the plan reads its file there
    last; ``last_records[f]`` is the last record the plan reads of file ``f``."""
    if plan.config.example_shuffle is None:
        return lambda chunk: chunk.record_index == np.take(last_records, chunk.file_index)
    # The example shuffle scatters a file's records: find each file's last position.
    order = plan.epoch(epoch)
    files, first_from_end = np.unique(order.file_index[::-1], return_index=True)
    last_positions = np.full(len(plan.instructions), -1, dtype=np.int64)
    last_positions[files] = len(order) - 1 - first_from_end

    def marks(chunk: EpochOrder) -> npt.NDArray[np.bool_]:
        positions = np.arange(chunk.start, chunk.start + len(chunk), dtype=np.int64)
        last: npt.NDArray[np.bool_] = positions == last_positions[chunk.file_index]
        return last

    return marks


@dataclass(frozen=True, eq=False)
class Chunk:
    """Consecutive pieces of epoch ``epoch``'s order that a reader handles as one chunk.

    A rank of several takes a quarter or less of each position: it asks the plan for pieces
    of a few hundred KB of arrays each and keeps its share of each, so that the plan's arrays
    reuse the memory just freed where one chunk of the same positions would take fresh
    pages (a page fault per 4 KiB: 9 of the 15 ms the plan took for a rank of four over
    10^6 positions).
    """

    epoch: int
    pieces: tuple[EpochOrder, ...]


@dataclass(frozen=True, eq=False)
class _Share:
    """A rank's positions of some pieces: their files and records, whether the plan reads
    their file for the last time there, and the positions (any rank's) and files of the
    plan's last reads of files in the pieces."""

    positions: IntArray
    file_index: IntArray
    record_index: IntArray
    marks: npt.NDArray[np.bool_]
    last_reads: IntArray
    closing_files: IntArray

    @classmethod
    def of(
        cls, piece: EpochOrder, is_last: npt.NDArray[np.bool_], rank: int, world_size: int
    ) -> _Share:
        offset = (rank - piece.start) % world_size
        file_index = piece.file_index[offset::world_size]
        size = file_index.size
        ends = np.flatnonzero(is_last)
        return cls(
            positions=piece.start + offset + world_size * np.arange(size, dtype=np.int64),
            file_index=file_index,
            record_index=piece.record_index[offset::world_size],
            marks=is_last[offset::world_size],
            last_reads=piece.start + ends,
            closing_files=piece.file_index[ends],
        )

    @classmethod
    def joined(cls, shares: list[_Share]) -> _Share:
        columns = (
            np.concatenate([getattr(share, field.name) for share in shares])
            for field in dataclasses.fields(cls)
        )
        return cls(*columns)


@dataclass(frozen=True, eq=False)
class Runs:
    """One chunk's deliveries of a rank, cut into runs of nearby records of one file.

    Run ``k`` delivers ``count[k]`` records of file ``file[k]``, in increasing record order
    from record ``first[k]`` to record ``first[k] + span[k] - 1``; they are the rank's
    deliveries ``start[k] ..`` of the chunk.  With ``span == count`` the records are
    consecutive; otherwise (a rank of several, an example shuffle) no two delivered records
    of a run are more than ``MAX_GAP`` apart, so the run is read with one positioned read.
    Runs never cross a multiple of the batch size, so batches are whole runs.  File
    ``close_files[j]`` is read for the last time before run ``close_before[j]``;
    ``closing[k]``: run ``k`` holds the plan's last read of its file.  The per-run lists
    are made from ``starts`` and ``closing_marks`` when first asked for: reads in spans
    need only ``start``.
    """

    positions: IntArray
    file_index: IntArray
    record_index: IntArray
    starts: IntArray
    closing_marks: npt.NDArray[np.bool_]
    close_files: list[int]
    close_before: list[int]

    @classmethod
    def of(
        cls,
        chunk: Chunk,
        is_last: Callable[[EpochOrder], npt.NDArray[np.bool_]],
        rank: int,
        world_size: int,
        batch_size: int,
    ) -> Runs:
        """The runs of ``rank``'s deliveries in ``chunk``; ``is_last`` marks the positions of
        a piece where the plan reads their file for the last time (``last_read_marks``)."""
        shares = [_Share.of(piece, is_last(piece), rank, world_size) for piece in chunk.pieces]
        share = shares[0] if len(shares) == 1 else _Share.joined(shares)
        file_index, record_index, positions = share.file_index, share.record_index, share.positions
        size = file_index.size
        cut = np.ones(size, dtype=bool)
        step = np.diff(record_index)
        cut[1:] = (file_index[1:] != file_index[:-1]) | (step < 1) | (step > MAX_GAP)
        cut[::batch_size] = True
        starts = np.flatnonzero(cut)
        close_before = np.searchsorted(positions[starts], share.last_reads, side="right")
        return cls(
            positions=positions,
            file_index=file_index,
            record_index=record_index,
            starts=starts,
            closing_marks=share.marks[_run_lasts(starts, size)],
            close_files=share.closing_files.tolist(),
            close_before=close_before.tolist(),
        )

    @cached_property
    def start(self) -> list[int]:
        starts: list[int] = self.starts.tolist()
        return starts

    @cached_property
    def file(self) -> list[int]:
        files: list[int] = self.file_index[self.starts].tolist()
        return files

    @cached_property
    def first(self) -> list[int]:
        firsts: list[int] = self.record_index[self.starts].tolist()
        return firsts

    @cached_property
    def count(self) -> list[int]:
        counts: list[int] = np.diff(self.starts, append=self.positions.size).tolist()
        return counts

    @cached_property
    def span(self) -> list[int]:
        lasts = self.record_index[_run_lasts(self.starts, self.positions.size)]
        spans: list[int] = (lasts - self.record_index[self.starts] + 1).tolist()
        return spans

    @cached_property
    def closing(self) -> list[bool]:
        closing: list[bool] = self.closing_marks.tolist()
        return closing

    def deliveries(self, first_run: int, stop_run: int) -> tuple[int, int]:
        """``(begin, end)``: runs ``first_run .. stop_run - 1`` deliver ``begin .. end - 1``."""
        end = self.start[stop_run] if stop_run < len(self.start) else len(self.positions)
        return self.start[first_run], end

    def windows(self, batch_size: int, deliveries: int) -> Iterator[list[tuple[int, int]]]:
        """Consecutive batches (``(first run, stop run)`` each) read together: as many as
        hold at most ``deliveries`` deliveries, one at least."""
        window: list[tuple[int, int]] = []
        size = 0
        for bounds in self.batches(batch_size):
            begin, end = self.deliveries(*bounds)
            if window and size + end - begin > deliveries:
                yield window
                window, size = [], 0
            window.append(bounds)
            size += end - begin
        if window:
            yield window

    def batches(self, batch_size: int) -> Iterator[tuple[int, int]]:
        """``(first run, stop run)`` of each batch of ``batch_size`` deliveries."""
        if not self.starts.size:
            return
        bounds = np.searchsorted(
            self.starts, np.arange(0, len(self.positions), batch_size), side="left"
        ).tolist()
        bounds.append(len(self.starts))
        yield from pairwise(bounds)


def _run_lasts(starts: IntArray, size: int) -> IntArray:
    """The last delivery of each run, for runs starting at ``starts`` of ``size``."""
    lasts = np.empty_like(starts)
    lasts[:-1] = starts[1:] - 1
    if starts.size:
        lasts[-1] = size - 1
    return lasts
