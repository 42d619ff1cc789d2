"""Which records of one file a batched read fetches together (``specs/data_source.md`` §2).

Records closer than a gap share one positioned read: reading the gap is cheaper than a
second system call, and in a store far cheaper than a second request (each waits for the
store's time to first byte).  A shared read never exceeds 4 MiB.
"""

from __future__ import annotations

from collections.abc import Iterator

from readplan.storage import Handle

__all__ = ["LOCAL_GAP", "MAX_BLOCK", "REMOTE_GAP", "clusters", "gap_for"]

LOCAL_GAP = 1 << 14
REMOTE_GAP = 1 << 20
MAX_BLOCK = 1 << 22


def gap_for(handle: Handle) -> int:
    """The gap for reads of ``handle``: a local descriptor's, or a remote object's."""
    return LOCAL_GAP if isinstance(handle, int) else REMOTE_GAP


def clusters(starts: list[int], ends: list[int], gap: int) -> Iterator[tuple[int, int]]:
    """``[first, stop)`` ranges of the ascending records ``starts``/``ends`` read together."""
    first = 0
    for k in range(1, len(starts)):
        if starts[k] - ends[k - 1] > gap or ends[k] - starts[first] > MAX_BLOCK:
            yield first, k
            first = k
    yield first, len(starts)
