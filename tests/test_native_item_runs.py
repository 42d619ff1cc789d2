"""The compiled ``run_items`` against its pure-Python twin (specs/native.md, "run_items"): the
same items, length hints, stops and errors on random runs over fake shards whose streams end
early, raise, or are missing, and on tables that do not fit.

The compiled module is imported directly, so these tests compare both cores whichever one the
seam chose for the rest of the suite.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import CorruptRecordError
from readplan.reading import item_runs
from readplan.reading.items import Item, ItemPure
from readplan.reading.run_streams import RUN_ENDED, RUN_NOT_TAKEN
from tests.item_rows import row
from tests.test_native_runs import FakeShard, drawn_shards

core = importlib.import_module("readplan.records._core")


def native(*args: Any) -> Iterator[Item]:
    made: Iterator[Item] = core.run_items(core.Item, *args)
    return made


KERNELS: tuple[Callable[..., Iterator[Item]], ...] = (native, item_runs.RunItemsPure)


def dict_subclass() -> dict[int, Any]:
    """Shards in a dict subclass, whose lookups the compiled core would not make."""

    class Shards(dict):  # type: ignore[type-arg]
        pass

    return Shards({0: FakeShard([b"a"], None, True)})


class Interrupt(BaseException):
    """Not an ``Exception``: it propagates from the items instead of stopping a run."""


@st.composite
def run_tables(draw: st.DrawFn) -> dict[str, Any]:
    files = draw(st.lists(st.integers(0, 4), max_size=12))
    errors = [None, None, CorruptRecordError("damage"), OSError(5, "io"), Interrupt()]
    shards = drawn_shards(draw, files, errors, lambda f, k: b"%d-%d" % (f, k))
    n = len(files)
    counts = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    firsts = draw(st.lists(st.integers(0, 70_000), min_size=n, max_size=n))
    closing = draw(st.lists(st.integers(0, 5).map(lambda v: v == 0), min_size=n, max_size=n))
    starts = np.cumsum([0, *counts])[:-1].tolist()
    positions = draw(st.lists(st.integers(0, 2**40), min_size=sum(counts), max_size=sum(counts)))
    names = {f: f"file-{f}" for f in range(5)}
    lo = draw(st.integers(0, n))
    hi = draw(st.integers(lo, n))
    if n and draw(st.integers(0, 3)) == 0:  # a table that does not fit, or a missing name
        k = draw(st.integers(0, n - 1))
        broken = draw(st.sampled_from(["count", "start", "positions", "lo", "hi", "name"]))
        if broken == "count":
            counts[k] = -1
        elif broken == "start":
            starts[k] += draw(st.sampled_from([-1, 1, 50]))
        elif broken == "positions":
            positions = positions[: draw(st.integers(0, len(positions)))]
        elif broken == "lo":
            lo = draw(st.sampled_from([-1, n + 1]))
        elif broken == "hi":
            hi = draw(st.sampled_from([-1, n + 1]))
        else:
            names.pop(files[k])
    return {
        "shards": shards,
        "runs": (files, firsts, counts, closing, starts),
        "positions": np.array(positions, dtype=np.int64),
        "lo": lo,
        "hi": hi,
        "epoch": draw(st.integers(0, 3)),
        "names": names,
    }


def taken(kernel: Callable[..., Iterator[Item]], table: dict[str, Any]) -> list[Any]:
    """Everything the kernel shows: each item (type and fields) with the length hint before
    it, how it stopped, and the error of a table that does not fit or that propagated."""
    shards = {f: FakeShard(*spec) for f, spec in table["shards"].items()}
    args = (shards, *table["runs"], table["positions"], table["lo"], table["hi"])
    seen: list[Any] = []
    try:
        items = kernel(*args, table["epoch"], table["names"])
    except (ValueError, TypeError) as error:
        return [type(error).__name__, str(error)]
    while True:
        hint = operator.length_hint(items)
        try:
            item = next(items)
        except StopIteration:
            break
        except (Interrupt, KeyError, ValueError) as error:
            seen.append((type(error).__name__, str(error)))
            break
        seen.append((hint, type(item).__name__, row(item)))
    stopped = items.stopped  # type: ignore[attr-defined]
    k, got, how = stopped
    if isinstance(how, BaseException):
        how = (type(how).__name__, str(how))
    # A stopped iterator stays stopped.
    return [*seen, (k, got, how), operator.length_hint(items), list(items)]


@given(run_tables())
def test_run_items_agrees_with_its_twin(table: dict[str, Any]) -> None:
    assert taken(native, table) == taken(item_runs.RunItemsPure, table)


def test_run_items_makes_each_runs_items_until_a_run_it_cannot_take() -> None:
    records = {0: [b"a%d" % k for k in range(10)], 1: [b"b%d" % k for k in range(10)]}
    runs = ([0, 1, 0, 2, 1], [0, 0, 3, 0, 2], [3, 2, 4, 1, 1], [False] * 5, [0, 3, 5, 9, 10])
    positions = np.arange(100, 111, dtype=np.int64)
    names = {0: "zero", 1: "one", 2: "two"}
    for kernel in KERNELS:
        shards = {f: FakeShard(r, CorruptRecordError("bad"), True) for f, r in records.items()}
        shards[2] = FakeShard([b"c"], None, False)  # open, read by the shard itself
        items = kernel(shards, *runs, positions, 0, 5, 7, names)
        assert operator.length_hint(items) == 11
        got = list(items)
        assert all(type(item) in (core.Item, ItemPure) for item in got)
        assert [row(item) for item in got] == [
            (b"a0", 7, 100, 0, 0, "zero"),
            (b"a1", 7, 101, 0, 1, "zero"),
            (b"a2", 7, 102, 0, 2, "zero"),
            (b"b0", 7, 103, 1, 0, "one"),
            (b"b1", 7, 104, 1, 1, "one"),
            (b"a3", 7, 105, 0, 3, "zero"),
            (b"a4", 7, 106, 0, 4, "zero"),
            (b"a5", 7, 107, 0, 5, "zero"),
            (b"a6", 7, 108, 0, 6, "zero"),
        ]
        assert got[0].tfds_id == "zero__0"
        assert items.stopped == (3, 0, RUN_NOT_TAKEN)  # type: ignore[attr-defined]
        assert operator.length_hint(items) == 2
        # A stream that raises an Exception: the items before it, then the error as the outcome.
        items = kernel(shards, [0], [7], [5], [False], [0], positions, 0, 1, 0, names)
        assert [item.record for item in items] == [b"a7", b"a8", b"a9"]
        k, got_, error = items.stopped  # type: ignore[attr-defined]
        assert (k, got_, type(error)) == (0, 3, CorruptRecordError)
        # A stream that ends early; a run marked closing; past the last run.
        ended = {0: FakeShard([b"x"], None, True)}
        items = kernel(
            ended, [0, 0], [0, 1], [2, 1], [False] * 2, [0, 2], positions, 0, 2, 0, names
        )
        assert len(list(items)) == 1
        assert items.stopped == (0, 1, RUN_ENDED)  # type: ignore[attr-defined]
        items = kernel(
            shards, [1, 1], [0, 1], [1, 1], [False, True], [0, 1], positions, 0, 2, 0, names
        )
        assert len(list(items)) == 1
        assert items.stopped == (1, 0, RUN_NOT_TAKEN)  # type: ignore[attr-defined]
        items = kernel(shards, [1], [2], [1], [False], [0], positions, 1, 1, 0, names)
        assert list(items) == []
        assert items.stopped == (1, 0, RUN_NOT_TAKEN)  # type: ignore[attr-defined]


def test_record_indices_far_into_a_file_are_exact() -> None:
    """Items share the ints of record indices below a bound: those beyond have their own."""
    for kernel in KERNELS:
        for first in (0, 65_530, 1 << 40):
            shards = {3: FakeShard([b"r"] * 10, None, True)}
            positions = np.arange(10, dtype=np.int64)
            items = kernel(shards, [3], [first], [10], [False], [0], positions, 0, 1, 0, {3: "f"})
            assert [item.record_index for item in items] == list(range(first, first + 10))


def test_an_error_that_propagates_stops_the_items() -> None:
    for kernel in KERNELS:
        shards = {0: FakeShard([b"a", b"b"], Interrupt(), True)}
        positions = np.arange(5, dtype=np.int64)
        items = kernel(
            shards, [0, 0], [0, 2], [2, 2], [False] * 2, [0, 2], positions, 0, 2, 0, {0: "f"}
        )
        assert len([next(items), next(items)]) == 2
        with pytest.raises(Interrupt):
            next(items)
        assert items.stopped == (1, 0, None)  # type: ignore[attr-defined]
        assert list(items) == []
        # A file the names lack: the lookup's error, once.
        shards = {0: FakeShard([b"a"], None, True)}
        items = kernel(shards, [0], [0], [1], [False], [0], positions, 0, 1, 0, {})
        with pytest.raises(KeyError):
            next(items)
        assert items.stopped == (0, 0, None)  # type: ignore[attr-defined]


def test_run_items_refuses_tables_that_do_not_fit() -> None:
    positions = np.arange(3, dtype=np.int64)
    for kernel in KERNELS:
        for shards in (dict_subclass(), None):
            with pytest.raises(TypeError, match="run_items: shards must be a dict"):
                kernel(shards, [0], [0], [1], [False], [0], positions, 0, 1, 0, {0: "f"})
        with pytest.raises(ValueError, match="one entry per run"):
            kernel({}, [0], [0], [1, 2], [False], [0], positions, 0, 1, 0, {})
        with pytest.raises(ValueError, match="not within"):
            kernel({}, [0], [0], [1], [False], [0], positions, 0, 2, 0, {})
        with pytest.raises(ValueError, match="counts -1 records"):
            kernel({}, [0], [0], [-1], [False], [0], positions, 0, 1, 0, {})
        with pytest.raises(ValueError, match="more than the 3 positions"):
            kernel({}, [0, 0], [0, 2], [2, 2], [False] * 2, [0, 2], positions, 0, 2, 0, {})
        shards = {0: FakeShard([b"a"] * 4, None, True)}
        items = kernel(shards, [0], [0], [2], [False], [2], positions, 0, 1, 0, {0: "f"})
        with pytest.raises(ValueError, match=r"run 0 delivers 2 \.\. 3, outside the 3 positions"):
            next(items)
