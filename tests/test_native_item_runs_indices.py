"""A run whose record indices pass 2^63 - 1: the compiled iterator's int64 index must not
wrap to a negative record index (signed overflow) where its twin counts on."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest

from readplan.reading import item_runs

core = importlib.import_module("readplan.records._core")


@pytest.mark.parametrize(
    "kernel", [lambda *a: core.run_items(core.Item, *a), item_runs.RunItemsPure]
)
def test_record_indices_past_int64_are_refused_not_wrapped(kernel: object) -> None:
    shards = {0: SimpleNamespace(stream=iter([b"a", b"b"]))}
    positions = np.arange(2, dtype=np.int64)
    items = kernel(shards, [0], [2**63 - 1], [2], [False], [0], positions, 0, 1, 0, {0: "f"})  # type: ignore[operator]
    with pytest.raises(ValueError, match=r"run 0 reads records 9223372036854775807 \.\. past"):
        next(items)
    assert items.stopped == (0, 0, None)
