"""``OrderSampler``: the plan's order as keys of its data source, pass after pass
(``specs/data_source.md`` §4)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from torch.utils.data import Sampler

from readplan._internal.validate import check_int, is_int, preview
from readplan.errors import CheckpointError, CheckpointMismatchError
from readplan.plan import ReadPlan
from readplan.reading.order_keys import OrderKeys

__all__ = ["OrderSampler"]

_FIELDS = ("epoch", "index", "plan_digest")


class OrderSampler(Sampler[int]):
    """Keys of ``readplan.data_source(plan.info, plan.spec)`` in the plan's order.

    Each pass (each iteration, as a DataLoader makes one per ``for batch in loader``) yields
    the keys of ``epochs`` epochs (``None``: endless), the epochs after the previous pass's:
    pass ``k`` reads epochs ``k * epochs ..``; ``set_epoch(k)`` makes the next pass read
    pass ``k``.  ``torch.utils.data.DataLoader(source, sampler=OrderSampler(plan))`` reads
    the records in TFDS's order.  ``state_dict()``/``load_state_dict()`` follow torchdata's
    ``StatefulDataLoader`` protocol: the state is the pass and the number of its keys handed
    out, bound to the plan's digest; a loaded state's pass is finished by the next pass,
    and the passes after it follow on.
    """

    def __init__(self, plan: ReadPlan, *, epochs: int | None = 1) -> None:
        self._keys = OrderKeys(plan, epochs=epochs)
        self._pass = 0  # the pass being read, or last read
        self._next = 0  # keys of it handed out
        self._next_pass = 0
        self._resume: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self._keys)

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass read pass ``epoch`` (a loaded state is dropped)."""
        self._next_pass = check_int(epoch, "epoch", minimum=0, what="a pass number")
        self._resume = None

    def __iter__(self) -> Iterator[int]:
        # A generator: a loader may make an iterator it never draws from (DataLoader makes
        # two per pass); only the one it draws from takes a pass.
        if self._resume is not None:
            (self._pass, self._next), self._resume = self._resume, None
        else:
            self._pass, self._next = self._next_pass, 0
        self._next_pass = self._pass + 1
        keys, per_epoch = self._keys, self._keys.records_per_epoch
        epochs = 1 if keys.epochs is None else keys.epochs
        first_epoch = self._pass * epochs
        while self._next < len(keys):
            epoch, position = divmod(self._next, per_epoch)
            for key in keys.epoch_keys(first_epoch + epoch)[position:].tolist():
                self._next += 1
                yield key

    def state_dict(self) -> dict[str, Any]:
        """``{"plan_digest", "epoch", "index"}``: the pass and the keys handed out in it."""
        if self._resume is not None:
            number, index = self._resume
        else:
            number, index = self._pass, self._next
        return {"plan_digest": self._keys.digest, "epoch": number, "index": index}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue the next pass from ``state`` (from :meth:`state_dict` of this plan)."""
        if (
            not isinstance(state, Mapping)
            or not {"plan_digest", "index"} <= set(state)
            or not (set(state) <= set(_FIELDS))
        ):
            raise CheckpointError(
                "an OrderSampler state is a mapping with keys 'plan_digest', 'epoch' and "
                f"'index' (from state_dict()), got {preview(state, 120)}",
                field="$",
            )
        if state["plan_digest"] != self._keys.digest:
            raise CheckpointMismatchError(
                f"the state was saved by a sampler of another plan (digest "
                f"{state['plan_digest']!r}, this plan's is {self._keys.digest!r})",
                differences={"plan_digest": (state["plan_digest"], self._keys.digest)},
            )
        index = state["index"]
        if not is_int(index) or not 0 <= index <= len(self):
            raise CheckpointError(
                f"the state's index must be an integer in 0..{len(self)}, got {index!r}",
                field="index",
            )
        # States saved before passes were counted are of the first pass.
        number = state.get("epoch", 0)
        if not is_int(number) or number < 0:
            raise CheckpointError(
                f"the state's epoch (its pass) must be an integer >= 0, got {number!r}",
                field="epoch",
            )
        self._resume = (number, index)
