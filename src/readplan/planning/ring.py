"""The full shuffle buffer's ring after many outputs, without computing the outputs.

``specs/shuffle.md`` §5 (implementation note) keeps a full buffer as a ring of ``S``
positions whose front is position ``t mod S`` at step ``t``: step ``t`` emits the element at
its pick ``p_t``, moves the front's element there, and puts the next input at the front.
Only the ring's final contents are wanted here (a checkpoint's buffer), so each position's
element is traced back instead of stepping: the last write into position ``q`` before time
``tau`` is either the front visit of ``q`` (the input pulled then) or a later pick into
``q`` (the element the front held just before that step), and in the second case the trace
continues from the front position and time of that pick. A pick lands on a given position
within a lap of ``S`` steps with probability about 0.63, so traces are a few links long.
"""

from __future__ import annotations

import numpy as np

from readplan._internal.arrays import IntArray
from readplan.planning.philox import Pair, stream_words

__all__ = ["advance_ring"]

# Steps per traced batch: at least this many, and a few laps of the ring, so the traces
# (one search per position and link) cost little per step.
_MIN_BATCH = 1 << 17
_LAPS = 2
# pick * batch + time must stay within int64.
_KEY_LIMIT = 1 << 62


def advance_ring(
    ring: list[int], pair: Pair, draws: int, pulled: int, steps: int, *, batch: int | None = None
) -> list[int]:
    """The ring after ``steps`` steps from front position 0 (draw ``draws`` first, next input
    ``pulled``), front back at position ``steps % len(ring)``; memory of a batch and the ring.

    ``batch`` (steps traced at once) is for tests; by default a few laps of the ring.
    """
    size = len(ring)
    if not steps:
        return ring
    span = batch if batch is not None else max(_MIN_BATCH, _LAPS * size)
    if size * (span + 1) >= _KEY_LIMIT:
        span = max(1, _KEY_LIMIT // (size + 1) - 1)
    state = np.array(ring, dtype=np.int64)
    for done in range(0, steps, span):
        count = min(span, steps - done)
        state = _traced(state, pair, draws + done, pulled + done, done, count)
    traced: list[int] = state.tolist()
    return traced


def _traced(
    state: IntArray, pair: Pair, draws: int, pulled: int, first: int, count: int
) -> IntArray:
    """The ring after steps ``first .. first + count - 1`` (``first`` counts from front 0)."""
    size = state.size
    fronts = np.arange(first, first + count, dtype=np.int64)
    fronts %= size
    picks = stream_words(pair, draws, count).astype(np.int64)
    picks %= size
    picks += fronts
    picks -= np.where(picks >= size, size, 0)
    moves = np.flatnonzero(picks != fronts)  # a pick onto the front moves nothing
    # Picks grouped by position, in time order; a last key above every query keeps the
    # lookups in range (it is never the one found).
    keys = np.empty(moves.size + 1, dtype=np.int64)
    np.multiply(picks[moves], count, out=keys[:-1])
    keys[:-1] += moves
    keys[:-1].sort()
    keys[-1] = np.iinfo(np.int64).max
    out = np.empty_like(state)
    target = np.arange(size, dtype=np.int64)  # the ring position a trace fills
    where = target.copy()  # the position it has reached
    until = np.full(size, count, dtype=np.int64)  # and the time (writes before it count)
    while target.size:
        # The last front visit of `where` before `until` (negative: none in this batch).
        visit = until - 1 - (until - 1 + first - where) % size
        found = np.searchsorted(keys, where * count + until) - 1
        pick_time = keys[np.maximum(found, 0)] - where * count
        picked = (found >= 0) & (pick_time >= 0) & (pick_time > visit)
        ends = np.flatnonzero(~picked)
        visited = visit[ends] >= 0
        out[target[ends]] = np.where(visited, pulled + visit[ends], state[where[ends]])
        go = np.flatnonzero(picked)
        target, until = target[go], pick_time[go]
        where = fronts[until]
    return out
