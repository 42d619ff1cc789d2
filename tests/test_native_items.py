"""iter_items, the compiled iterator that makes a batch's items one per next(), against its
pure-Python twin (specs/native.md, "iter_items"): the same items, the same length hints after
every item, the same errors.  The expected items are built here from their fields."""

from __future__ import annotations

import gc
import importlib
import os
import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.reading.items import Item, ItemPure, iter_items_pure
from tests.item_rows import row

core = importlib.import_module("readplan.records._core")

Kernel = Callable[..., Iterator[Item]]
KERNELS: list[Kernel] = [lambda *a: core.iter_items(core.Item, *a), iter_items_pure]


def name(file: int) -> str:
    return f"ds-train.tfrecord-{file:05d}-of-99999"


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[Any], int, np.ndarray, np.ndarray, np.ndarray]:
    """Records (bytes or decoded dicts) with columns whose files come in stretches, as a
    reader's runs give them, or at random."""
    records = draw(
        st.lists(
            st.binary(max_size=4) | st.dictionaries(st.text(max_size=2), st.integers()), max_size=24
        )
    )
    n = len(records)
    column = st.lists(st.integers(0, 2**62), min_size=n, max_size=n)
    files = sorted(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    if draw(st.booleans()):
        files = draw(st.permutations(files))
    epoch = draw(st.integers(0, 2**40))
    positions, indices = (np.array(draw(column), dtype=np.int64) for _ in range(2))
    return records, epoch, positions, np.array(files, dtype=np.int64), indices


def expected(records: list[Any], epoch: int, positions: Any, files: Any, indices: Any) -> list[Any]:
    rows = zip(records, positions.tolist(), files.tolist(), indices.tolist())
    return [(r, epoch, p, f, i, name(f)) for r, p, f, i in rows]


@given(batches(), st.sampled_from(["dict", "tuple"]))
def test_both_cores_make_the_items_of_the_columns_and_hint_what_is_left(
    batch: tuple[Any, ...], table: str
) -> None:
    records, epoch, positions, files, indices = batch
    names: Any = {f: name(f) for f in set(files.tolist())}
    if table == "tuple":
        names = tuple(name(f) for f in range(6))
    want = expected(records, epoch, positions, files, indices)
    for kernel in KERNELS:
        items = kernel(list(records), names, epoch, positions, files, indices)
        assert iter(items) is items
        got = []
        for left in range(len(want), 0, -1):
            assert items.__length_hint__() == left
            got.append(next(items))
        assert items.__length_hint__() == 0
        assert next(items, None) is None
        assert [row(item) for item in got] == want
        assert all(type(item) in (core.Item, ItemPure) for item in got)
        assert [item.tfds_id for item in got] == [f"{w[5]}__{w[4]}" for w in want]
        # Pickles name readplan.reading.items.Item: they load as the core in use makes items.
        loaded = pickle.loads(pickle.dumps(got))
        assert [row(item) for item in loaded] == want
        assert all(type(item) is Item for item in loaded)


@given(batches())
def test_the_items_keep_the_records_they_were_made_from(batch: tuple[Any, ...]) -> None:
    records, epoch, positions, files, indices = batch
    want = expected(records, epoch, positions, files, indices)
    for kernel in KERNELS:
        names = {f: name(f) for f in set(files.tolist())}
        given_records = list(records)
        columns = [positions.copy(), files.copy(), indices.copy()]
        items = kernel(given_records, names, epoch, *columns)
        # What the caller does with its list, arrays and names later changes no item.
        given_records.clear()
        for array in columns:
            array[:] = 7
        names.clear()
        assert [row(item) for item in items] == want


def test_a_file_the_names_lack_raises_the_lookups_error_when_the_iterator_is_made() -> None:
    one = np.zeros(1, dtype=np.int64)
    for kernel in KERNELS:
        with pytest.raises(KeyError) as raised:
            kernel([b"a"], {1: "x"}, 0, one, one, one)
        assert raised.value.args == (0,)
        with pytest.raises(IndexError):
            kernel([b"a"], (), 0, one, one, one)


def test_columns_of_other_lengths_are_refused_by_both() -> None:
    one, two = np.zeros(1, dtype=np.int64), np.zeros(2, dtype=np.int64)
    for kernel in KERNELS:
        for columns in ((one, two, one), (two, one, one), (one, one, two)):
            with pytest.raises(ValueError, match="iter_items: every column must hold one entry"):
                kernel([b"a"], {0: "p"}, 0, *columns)


def test_the_compiled_iterator_refuses_what_it_cannot_read() -> None:
    one = np.zeros(1, dtype=np.int64)
    with pytest.raises(TypeError):
        core.iter_items(core.Item, (b"a",), {0: "p"}, 0, one, one, one)
    with pytest.raises((TypeError, ValueError), match="int64"):
        core.iter_items(core.Item, [b"a"], {0: "p"}, 0, one.astype(np.int32), one, one)


def test_an_iterator_in_a_reference_cycle_is_collected() -> None:
    one = np.zeros(1, dtype=np.int64)
    record: dict[str, Any] = {}
    items = core.iter_items(core.Item, [record], {0: "p"}, 0, one, one, one)
    record["self"] = items  # the iterator holds the record that holds the iterator
    del items, record
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o).__name__ == "ItemIter"]


class _ItemChild(tuple):  # type: ignore[type-arg]
    __slots__ = ()


@pytest.mark.parametrize("cls", [os.stat_result, time.struct_time, _ItemChild, dict, ItemPure])
def test_every_item_kernel_refuses_any_class_but_the_compiled_item(cls: type) -> None:
    """The kernels fill the compiled Item's fields themselves: any other class is refused
    before anything is made, and the Item is accepted again after a refusal."""
    one = np.zeros(1, dtype=np.int64)
    refusing = r"cls must be readplan's compiled Item"
    with pytest.raises(TypeError, match=refusing):
        core.iter_items(cls, [b"a"], {0: "p"}, 0, one, one, one)
    with pytest.raises(TypeError, match=refusing):
        core.make_items(cls, [b"a"], ["p"], 0, one, one, one)
    with pytest.raises(TypeError, match=refusing):
        core.run_items(cls, {}, [0], [0], [1], [False], [0], one, 0, 1, 0, {0: "p"})
    assert [
        row(item) for item in core.iter_items(core.Item, [b"a"], {0: "p"}, 0, one, one, one)
    ] == [(b"a", 0, 0, 0, 0, "p")]


def test_a_finalizer_that_steps_the_iterator_while_an_item_is_made_is_refused() -> None:
    """Making an item can run a collection, and a finalizer then runs Python: a next() from
    there is refused, and the outer next() still gives the item it was making, none skipped
    or given twice."""
    n = 40
    columns = np.arange(n, dtype=np.int64)
    items = core.iter_items(
        core.Item,
        [bytes([k]) for k in range(n)],
        dict.fromkeys(range(n), "p"),
        0,
        columns,
        columns,
        columns,
    )
    inner: list[Any] = []
    armed = False  # only within next(), where the one object tracked by the collector is the item

    class Stepper:
        def __init__(self) -> None:
            self.cycle = self

        def __del__(self) -> None:
            if armed:
                try:
                    inner.append(next(items))
                except ValueError as error:
                    inner.append(str(error))

    # Items freed earlier are reused first; with all of them in use, each next() allocates,
    # and the allocation is what collects.
    in_use = [core.Item(b"", "p__0", 0, 0, 0, 0) for _ in range(1024)]
    thresholds = gc.get_threshold()
    got, kept = [], []
    try:
        gc.set_threshold(1)
        for _ in range(n):
            Stepper()  # garbage in a cycle: the next collection runs its finalizer
            while gc.get_count()[0] < 1:  # the item's allocation is the one that collects
                kept.append([])
            armed = True
            got.append(next(items))
            armed = False
    finally:
        armed = False
        gc.set_threshold(*thresholds)
        gc.collect()
    assert [item.record_index for item in got] == list(range(n))
    assert inner
    assert set(inner) == {"generator already executing"}
    del in_use
