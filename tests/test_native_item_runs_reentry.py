"""run_items re-entered from its own stream: the compiled iterator must refuse the inner
next() (as its twin's generator does) and never hand out more items than the run counts, nor
read a position outside the array it holds."""

from __future__ import annotations

import importlib
from itertools import islice
from types import SimpleNamespace
from typing import Any

import numpy as np

from readplan.reading import item_runs
from tests.item_rows import row

core = importlib.import_module("readplan.records._core")


class ReenteringStream:
    """A stream whose first next() calls next() on the items it feeds (as another thread
    taking from a shared reader iterator would, while this stream's read released the GIL)."""

    def __init__(self) -> None:
        self.items: Any = None
        self.inner: list[str] = []

    def __iter__(self) -> ReenteringStream:
        return self

    def __next__(self) -> bytes:
        if self.items is not None and not self.inner:
            self.inner.append("entered")
            try:
                next(self.items)
                self.inner.append("item")
            except Exception as error:
                self.inner.append(type(error).__name__)
        return b"r"


def test_a_reentered_run_items_refuses_and_stays_in_its_positions() -> None:
    # A one-position view of a larger array: a read past the view's end reads 1, 2, 3.
    backing = np.arange(10, dtype=np.int64)
    positions = backing[:1]
    for kernel in (partial_native, item_runs.RunItemsPure):
        stream = ReenteringStream()
        shards = {0: SimpleNamespace(stream=stream)}
        items = kernel(shards, [0], [0], [1], [False], [0], positions, 0, 1, 0, {0: "f"})
        stream.items = items
        got = list(islice(items, 4))
        assert stream.inner == ["entered", "ValueError"], kernel
        assert len(got) <= 1, (kernel, [row(item) for item in got])
        assert all(item.position == 0 for item in got), kernel


def partial_native(*args: Any) -> Any:
    return core.run_items(core.Item, *args)


THREADED = r"""
import threading
from types import SimpleNamespace

import numpy as np

from readplan.reading import item_runs
from readplan.reading.items import Item
import importlib

core = importlib.import_module("readplan.records._core")
entered, release = threading.Event(), threading.Event()


def stream():
    entered.set()
    release.wait()  # a read with the GIL released
    yield b"r"


for name in ("native", "pure"):
    entered.clear()
    release.clear()
    args = ({0: SimpleNamespace(stream=stream())}, [0], [0], [1], [False], [0],
            np.arange(1, dtype=np.int64), 0, 1, 0, {0: "f"})
    items = core.run_items(core.Item, *args) if name == "native" else item_runs.RunItemsPure(*args)
    taken = []
    worker = threading.Thread(target=lambda: taken.append(next(items)))
    worker.start()
    entered.wait()
    try:
        next(items)
        other = "item"
    except StopIteration:
        other = "StopIteration"
    except ValueError:
        other = "ValueError"
    release.set()
    worker.join()
    print(name, other, len(taken), items.stopped[2])
"""


def test_a_second_thread_taking_an_item_meanwhile_is_refused() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", THREADED], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["native ValueError 1 None", "pure ValueError 1 None"]
