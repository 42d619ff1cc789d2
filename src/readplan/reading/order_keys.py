"""A plan's read order as keys of its data source (``specs/data_source.md``, "Samplers").

Index ``i`` of the sequence is position ``i mod n`` of epoch ``i div n`` of the plan
(``n`` records per epoch), given as the key of that record in
``data_source(plan.info, plan.spec)``: TFDS's exact order for any random-access loader.
Grain's and PyTorch's samplers (:mod:`readplan.grain`, :mod:`readplan.torch`) are thin
wrappers around :class:`OrderKeys`.
"""

from __future__ import annotations

import operator
import sys
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from readplan._internal.arrays import IntArray
from readplan._internal.validate import is_int
from readplan.errors import ConfigError, ConfigTypeError, RecordKeyError
from readplan.plan import ReadPlan
from readplan.planning.instructions import file_instructions
from readplan.state.fingerprint import digest

__all__ = ["OrderKeys"]


# Epochs whose keys are kept: the one being read and the next (loaders read ahead).
_CACHED_EPOCHS = 2


class OrderKeys:
    """``keys[i]``: the data-source key of position ``i mod n`` of epoch ``i div n``.

    ``epochs=None`` is endless (``len`` is then ``sys.maxsize``, as for Grain's own
    samplers).  Each epoch's keys are computed at once with numpy from ``plan.epoch(e)``
    and cached; safe to use from many threads.
    """

    def __init__(self, plan: ReadPlan, *, epochs: int | None = None) -> None:
        if not isinstance(plan, ReadPlan):
            raise ConfigError(
                f"plan must be a readplan.ReadPlan, got {type(plan).__name__}",
                field="plan",
                value=plan,
            )
        if epochs is not None and (not is_int(epochs) or epochs < 1):
            raise ConfigError(
                f"epochs must be a positive integer or None (endless), got {epochs!r}",
                field="epochs",
                value=epochs,
            )
        self.plan = plan
        self.epochs = epochs
        self.records_per_epoch = plan.num_examples
        self.digest = digest(plan.fingerprint)
        self._base = _key_bases(plan)
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, IntArray] = OrderedDict()

    def __len__(self) -> int:
        if self.epochs is None:
            return sys.maxsize
        return self.epochs * self.records_per_epoch

    def __getitem__(self, index: object) -> int:
        if not is_int(index) and not isinstance(index, np.integer):
            raise ConfigTypeError(
                f"an order index must be an integer, got {type(index).__name__}",
                field="index",
                value=index,
            )
        index = operator.index(index)
        if not 0 <= index < len(self):
            raise RecordKeyError(
                f"order index {index} is out of range: the order has {len(self)} positions "
                f"({self.epochs} epochs of {self.records_per_epoch} records)",
                key=index,
                length=len(self),
            )
        epoch, position = divmod(index, self.records_per_epoch)
        return int(self.epoch_keys(epoch)[position])

    def epoch_keys(self, epoch: int) -> IntArray:
        """The keys of the whole epoch ``epoch``, in read order (read-only, cached)."""
        with self._lock:
            found = self._cache.get(epoch)
            if found is None:
                order = self.plan.epoch(epoch)
                found = self._base[order.file_index] + order.record_index
                found.flags.writeable = False
                self._cache[epoch] = found
                if len(self._cache) > _CACHED_EPOCHS:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(epoch)
            return found

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"], state["_cache"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._cache = OrderedDict()


def _key_bases(plan: ReadPlan) -> IntArray:
    """Per plan instruction: ``key - record_index`` for its records in the data source.

    The data source concatenates ``file_instructions(info, spec)``; the plan's instructions
    are the same list unless a sort function reordered it.  Equal instructions (a split
    union naming one range twice) are matched in order.
    """
    source = file_instructions(plan.info, plan.spec)
    starts = np.concatenate([[0], np.cumsum([fi.take for fi in source])]).astype(np.int64)
    slots: dict[tuple[str, int, int], list[int]] = {}
    for j, fi in enumerate(source):
        slots.setdefault((fi.filename, fi.skip, fi.take), []).append(j)
    bases = np.zeros(len(plan.instructions), dtype=np.int64)
    for k, fi in enumerate(plan.instructions):
        free = slots.get((fi.filename, fi.skip, fi.take), [])
        if not free:
            raise ConfigError(
                f"the plan reads {fi.filename} records {fi.skip}..{fi.skip + fi.take - 1}, "
                f"which data_source(info, {plan.spec!r}) has no key for: a sort function "
                "may reorder the split's file instructions, not change them",
                field="experimental_interleave_sort_fn",
                value=fi,
            )
        j = free.pop(0)
        bases[k] = starts[j] - fi.skip
    return bases
