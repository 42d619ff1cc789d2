"""Where arrays' memory is, and threads that each check their own arrays (the tests of memory
handed out again: test_buffer_pool.py, test_jpeg_batch.py, test_images_pooled.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np


def address_of(array: np.ndarray) -> int:
    """Where ``array``'s memory begins."""
    return int(array.__array_interface__["data"][0])


def errors_of_threads(work: Callable[[int, list[str]], None], threads: int) -> list[str]:
    """``work(k, errors)`` run on ``threads`` threads at once; what they added to ``errors``."""
    errors: list[str] = []
    started = [threading.Thread(target=work, args=(k, errors)) for k in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return errors
