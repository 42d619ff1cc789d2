"""Grain integration: TFDS's read order inside Grain, with Grain's own checkpoints.

``specs/data_source.md`` ("Grain") is normative.  Grain is an optional dependency
(``pip install 'readplan[grain]'``, Python >= 3.11 like Grain itself); importing this
module without it raises an ``ImportError`` that says so.

* :class:`OrderSampler` is a Grain sampler: with
  ``grain.DataLoader(data_source=readplan.data_source(info, split), sampler=OrderSampler(plan))``
  the loader reads the plan's records in TFDS's exact order, with Grain's worker processes
  and Grain's checkpoints.
* :class:`PlanIterDataset` is a ``grain.IterDataset`` reading the plan's records with a
  :class:`~readplan.Reader`; its iterator's state keeps one structure at every step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

try:
    import grain
except ImportError as err:  # pragma: no cover - exercised without grain only
    raise ImportError(
        "readplan.grain needs Grain, an optional dependency of readplan (Python >= 3.11): "
        "pip install 'readplan[grain]'"
    ) from err

from readplan._internal.validate import preview
from readplan.errors import CheckpointError
from readplan.plan import ReadPlan
from readplan.reading.items import Record
from readplan.reading.order_keys import OrderKeys
from readplan.reading.reader import Reader
from readplan.state.codec import parse_json

__all__ = ["OrderSampler", "PlanIterDataset"]

_STATE_FIELDS = ("epoch", "position", "checkpoint")


class OrderSampler:
    """A Grain sampler: index ``i`` reads position ``i mod n`` of epoch ``i div n``.

    ``record_key`` is the record's key in ``readplan.data_source(plan.info, plan.spec)``;
    ``epochs=None`` never ends.  The ``repr`` names the plan's digest, so Grain refuses to
    restore a loader state into another plan.  With ``shard_options`` (for example
    ``grain.sharding.ShardByJaxProcess()``) given to the ``DataLoader``, process ``p`` of
    ``P`` reads the indices ``p, p + P, ...``: readplan's elastic mode.
    """

    def __init__(self, plan: ReadPlan, *, epochs: int | None = None) -> None:
        self._keys = OrderKeys(plan, epochs=epochs)

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, index: int) -> grain.RecordMetadata:
        return grain.RecordMetadata(index=index, record_key=self._keys[index])

    def __repr__(self) -> str:
        plan = self._keys.plan
        return (
            f"OrderSampler(dataset={plan.info.name!r}, split={plan.spec!r}, "
            f"plan_digest={self._keys.digest!r}, epochs={self._keys.epochs})"
        )


class PlanIterDataset(grain.IterDataset):  # type: ignore[misc]
    """The records of ``plan`` in plan order, epochs ``0 .. epochs - 1`` (``None``: endless).

    ``decode`` and ``data_dir`` are as for :class:`~readplan.Reader`.  The iterator's
    ``get_state()`` is ``{"epoch": int, "position": int, "checkpoint": str}`` at every step
    (the reader's state as JSON), so Grain and Orbax can save it and
    ``grain.experimental.assert_equal_output_after_checkpoint`` holds.
    """

    def __init__(
        self,
        plan: ReadPlan,
        *,
        epochs: int | None = None,
        decode: bool | Mapping[str, Any] | None = None,
        data_dir: str | None = None,
    ) -> None:
        super().__init__()
        # Built once here so that bad arguments fail at construction, not at first read.
        Reader(plan, epochs=epochs, decode=decode, data_dir=data_dir)
        self.plan = plan
        self.epochs = epochs
        self.decode = decode
        self.data_dir = data_dir

    def __iter__(self) -> _PlanIterator:
        reader = Reader(self.plan, epochs=self.epochs, decode=self.decode, data_dir=self.data_dir)
        return _PlanIterator(reader)

    def __str__(self) -> str:
        return f"PlanIterDataset({self.plan!r}, epochs={self.epochs})"


class _PlanIterator(grain.DatasetIterator):  # type: ignore[misc]
    def __init__(self, reader: Reader) -> None:
        super().__init__()
        self._reader = reader
        self._items = iter(reader)

    def __next__(self) -> Record:
        return next(self._items).record

    def get_state(self) -> dict[str, Any]:
        state = self._reader.state_dict()
        return {
            "epoch": state["epoch"],
            "position": state["position"],
            "checkpoint": json.dumps(state, sort_keys=True, separators=(",", ":")),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, Mapping) or set(state) != set(_STATE_FIELDS):
            raise CheckpointError(
                f"a PlanIterDataset state is a mapping with keys {list(_STATE_FIELDS)} (from "
                f"get_state()), got {preview(state, 120)}",
                field="$",
            )
        try:
            checkpoint = parse_json(state["checkpoint"])
        except CheckpointError as err:
            raise CheckpointError(
                f"the state's 'checkpoint' must be the JSON text get_state() wrote: {err}",
                field="checkpoint",
            ) from None
        if not isinstance(checkpoint, dict) or any(
            checkpoint.get(name) != state[name] for name in ("epoch", "position")
        ):
            raise CheckpointError(
                "the state's 'epoch' and 'position' disagree with its 'checkpoint' (edited "
                "state?); restore a state exactly as get_state() returned it",
                field="position",
            )
        self._reader.load_state_dict(checkpoint)
        self._items = iter(self._reader)
