"""The compiled core's Item against its pure-Python twin, ItemPure (specs/native.md, "Item";
specs/reader.md, "Deliveries"): the same fields, repr, equality, hash and pickles from the same
arguments, the same errors from bad ones; and the item kernels' own checks of what they put
into items, alike in both cores."""

from __future__ import annotations

import copy
import gc
import importlib
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import ConfigError
from readplan.reading import item_runs
from readplan.reading.items import Item, ItemPure, iter_items_pure, new_items_pure
from tests.item_rows import row

core = importlib.import_module("readplan.records._core")
CLASSES = (core.Item, ItemPure)
NAMES = ("epoch", "position", "file_index", "record_index")


class Text(str):
    pass


records = st.binary(max_size=8) | st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)
valid_ints = st.integers(0, 2**63 - 1)
any_ints = (
    valid_ints
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([-1, 2**63, 2**64, True, False, 1.0, None, "3", np.int64(3)])
)


def outcome(call: Any) -> tuple[Any, ...]:
    """What a call gives, comparable across the cores: its item's fields and repr, or its
    error's type, words, field and value."""
    try:
        item = call()
    except ConfigError as error:
        return ("ConfigError", str(error), error.field, repr(error.value))
    except (TypeError, ValueError, KeyError, IndexError) as error:
        return (type(error).__name__, str(error))
    return ("item", row(item), repr(item))


@given(records, st.text(max_size=6), st.tuples(valid_ints, valid_ints, valid_ints, valid_ints))
def test_both_items_hold_their_fields_alike(
    record: Any, prefix: str, ints: tuple[int, int, int, int]
) -> None:
    tfds_id = f"{prefix}__{ints[3]}"
    made = [cls(record, tfds_id, *ints) for cls in CLASSES]
    for item in made:
        assert row(item) == (record, *ints, prefix)
        assert item.tfds_id == tfds_id
        assert type(item.tfds_id) is str
        assert type(item.epoch) is int
        assert item == type(item)(record, tfds_id, *ints)
        assert item == type(item)(record, tfds_id, *ints)
        # Pickles and copies name readplan.reading.items.Item, the type of the core in use.
        for again in (pickle.loads(pickle.dumps(item)), copy.copy(item), copy.deepcopy(item)):
            assert type(again) is Item
            assert row(again) == row(item)
    assert repr(made[0]) == repr(made[1])
    assert repr(made[0]).startswith(f"Item(record={repr(record)[:60]}, tfds_id={tfds_id!r}")
    if isinstance(record, bytes):
        assert hash(made[0]) == hash(made[1]) == hash((record, *ints, prefix))
    else:
        for item in made:
            with pytest.raises(TypeError, match="unhashable"):
                hash(item)


@given(
    records | st.none(),
    st.text(max_size=6).map(lambda t: t + "__3")
    | st.builds(Text, st.text(max_size=4).map(lambda t: t + "__3"))
    | st.sampled_from([b"x__3", None, 3, "x__03", "x_3", "__3", "x__3 "]),
    st.tuples(
        any_ints, any_ints, any_ints, st.sampled_from([3, -3, True, 2**63, "3", 3.0]) | any_ints
    ),
)
def test_both_items_refuse_the_same_fields_with_the_same_error(
    record: Any, tfds_id: Any, ints: tuple[Any, ...]
) -> None:
    keywords = dict(zip(NAMES, ints, strict=True))
    for call in (
        lambda cls: cls(record, tfds_id, *ints),
        lambda cls: cls(record=record, tfds_id=tfds_id, **keywords),
    ):
        got = [outcome(lambda cls=cls, call=call: call(cls)) for cls in CLASSES]
        assert got[0] == got[1]


def test_the_errors_name_the_field_and_the_accepted_values() -> None:
    for cls in CLASSES:
        with pytest.raises(ConfigError, match=r"Item\.position must be a non-negative int below"):
            cls(b"", "x__0", 0, 2**63, 0, 0)
        with pytest.raises(ConfigError, match=r"'<file>__7' for record_index 7, got 'x__8'"):
            cls(b"", "x__8", 0, 0, 0, 7)
        with pytest.raises(TypeError):
            cls(b"", "x__0", 0, 0, 0)


def test_items_differing_in_one_field_differ_and_compare_only_with_items() -> None:
    fields = (b"r", "p__4", 1, 2, 3, 4)
    changed = [
        (b"s", "p__4", 1, 2, 3, 4),
        (b"r", "q__4", 1, 2, 3, 4),
        (b"r", "p__4", 9, 2, 3, 4),
        (b"r", "p__4", 1, 9, 3, 4),
        (b"r", "p__4", 1, 2, 9, 4),
        (b"r", "p__9", 1, 2, 3, 9),
    ]
    for cls in CLASSES:
        item = cls(*fields)
        assert all(item != cls(*other) for other in changed)
        assert item != (b"r", 1, 2, 3, 4, "p")
        assert item != row(item)
        with pytest.raises(TypeError):
            item < item  # noqa: B015
    assert CLASSES[0](*fields) != CLASSES[1](*fields)  # one core's items, never mixed


def test_items_are_immutable_and_final() -> None:
    for cls in CLASSES:
        item = cls(b"r", "p__0", 0, 0, 0, 0)
        for name in ("record", "tfds_id", "epoch", "other"):
            with pytest.raises(AttributeError):
                setattr(item, name, 1)
        with pytest.raises(AttributeError):
            del item.record
        with pytest.raises(TypeError, match="not an acceptable base type"):
            type("Child", (cls,), {})
        assert cls.__module__ == "readplan.reading.items"
        assert cls.__qualname__ == "Item"


def test_a_compiled_item_in_a_reference_cycle_is_collected_and_bytes_items_are_untracked() -> None:
    assert not gc.is_tracked(core.Item(b"r", "p__0", 0, 0, 0, 0))
    record: dict[str, Any] = {}
    item = core.Item(record, "p__0", 0, 0, 0, 0)
    assert gc.is_tracked(item)
    record["self"] = item
    del item, record
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o) is core.Item]


@given(st.lists(st.tuples(records, st.text(max_size=3), valid_ints), min_size=1, max_size=600))
def test_items_made_in_the_memory_of_freed_ones_hold_only_their_own_fields(
    made: list[tuple[Any, str, int]],
) -> None:
    """Freed items are reused, up to some hundreds: each item made after others were freed
    (of bytes or of dicts, tracked or not) holds its own fields, and is tracked by the
    collector exactly when its record is not bytes."""
    for batch in (made, made[::-1]):
        items = [core.Item(record, f"{p}__{k}", k, k, k, k) for record, p, k in batch]
        for item, (record, prefix, k) in zip(items, batch, strict=True):
            assert row(item) == (record, k, k, k, k, prefix)
            assert item.tfds_id == f"{prefix}__{k}"
            assert gc.is_tracked(item) == (type(record) is not bytes)
        del items


one = np.zeros(1, dtype=np.int64)


def kernel_pairs(epoch: Any, prefix: Any) -> list[tuple[Any, Any]]:
    """Each item kernel and its twin, called with this epoch and this file prefix."""
    shards = {0: type("Shard", (), {"stream": iter([b"a"])})()}

    def runs(make: Any) -> Any:
        return lambda: list(
            make({0: shards[0]}, [0], [0], [1], [False], [0], one, 0, 1, epoch, {0: prefix})
        )

    shards_again = {0: type("Shard", (), {"stream": iter([b"a"])})()}

    def runs_pure() -> Any:
        return list(
            item_runs.RunItemsPure(
                shards_again, [0], [0], [1], [False], [0], one, 0, 1, epoch, {0: prefix}
            )
        )

    return [
        (
            lambda: core.make_items(core.Item, [b"a"], [prefix], epoch, one, one, one),
            lambda: new_items_pure([b"a"], [prefix], epoch, one, one, one),
        ),
        (
            lambda: list(core.iter_items(core.Item, [b"a"], {0: prefix}, epoch, one, one, one)),
            lambda: list(iter_items_pure([b"a"], {0: prefix}, epoch, one, one, one)),
        ),
        (runs(lambda *a: core.run_items(core.Item, *a)), runs_pure),
    ]


def listed(call: Any) -> tuple[Any, ...]:
    try:
        made = call()
    except (TypeError, ValueError) as error:
        return (type(error).__name__, str(error))
    return ("items", [row(item) for item in made])


@pytest.mark.parametrize(
    ("epoch", "prefix"),
    [(-1, "p"), (True, "p"), (2**63, "p"), ("0", "p"), (None, "p"), (0, b"p"), (0, None), (0, 3)],
)
def test_every_item_kernel_and_its_twin_refuse_an_epoch_or_prefix_alike(
    epoch: Any, prefix: Any
) -> None:
    for native, pure in kernel_pairs(epoch, prefix):
        got, want = listed(native), listed(pure)
        assert got == want
        assert got[0] in ("TypeError", "ValueError")
        assert "epoch must be a non-negative int below 2**63" in got[1] or "must be a str" in got[1]


@given(st.integers(0, 2**63 - 1), st.text(max_size=5))
def test_every_item_kernel_and_its_twin_make_the_same_item(epoch: int, prefix: str) -> None:
    for native, pure in kernel_pairs(epoch, prefix):
        assert listed(native) == listed(pure) == ("items", [(b"a", epoch, 0, 0, 0, prefix)])
