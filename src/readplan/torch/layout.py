"""Who is reading: the calling process's rank and DataLoader worker (``specs/reader.md`` §6)."""

from __future__ import annotations

import torch.distributed as _dist
from torch.utils.data import get_worker_info

__all__ = ["consumer", "rank"]


def consumer() -> tuple[int, int]:
    """``(index, count)`` of the calling consumer: ``worker * ranks + rank`` of all of them.

    Ranks come from ``torch.distributed`` when it is initialised (one rank otherwise),
    workers from ``torch.utils.data.get_worker_info()`` (one, the main process, outside
    DataLoader workers).  Counting workers outermost gives rank ``r`` the indices
    ``g % ranks == r`` whatever the number of workers: its loader yields them in plan order.
    """
    info = get_worker_info()
    worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
    index, ranks = rank()
    return worker * ranks + index, ranks * workers


def rank() -> tuple[int, int]:
    """``(rank, world_size)`` from ``torch.distributed``, ``(0, 1)`` when not initialised."""
    if _dist.is_available() and _dist.is_initialized():
        return _dist.get_rank(), _dist.get_world_size()
    return 0, 1
