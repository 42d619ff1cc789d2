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
* :class:`ImageBatchIterDataset` is one serving a TBL-RAW dataset's image batches
  (``Reader.image_batches``, ``specs/tbl.md`` §11) with the same passes and states.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator, Mapping
from typing import Any, Literal

try:
    import grain
    from absl import flags  # installed with grain
except ImportError as err:  # pragma: no cover - exercised without grain only
    raise ImportError(
        "readplan.grain needs Grain, an optional dependency of readplan (Python >= 3.11): "
        "pip install 'readplan[grain]'"
    ) from err

from readplan._internal.validate import check_int, preview
from readplan.errors import CheckpointError
from readplan.plan import ReadPlan
from readplan.reading.batching import close_iterator
from readplan.reading.items import Record
from readplan.reading.order_keys import OrderKeys
from readplan.reading.raw_batches import ImageBatch, ImageOptions, Layout, OutKind
from readplan.reading.reader import Reader
from readplan.state.codec import parse_json

__all__ = ["ImageBatchIterDataset", "OrderSampler", "PlanIterDataset", "parse_absl_flags"]

_STATE_FIELDS = ("epoch", "position", "checkpoint")


def parse_absl_flags() -> None:
    """Parse absl's flags with no arguments (their defaults) unless the program has.

    Grain reads its absl flags as soon as a DataLoader has worker processes
    (``worker_count >= 1``), and absl refuses a flag read before the flags are parsed,
    which only an absl app (``absl.app.run``) does.  Flags an app has parsed are left as
    they are; an app that parses them later (``app.run`` after the sampler exists) parses
    them again, from its own command line.
    """
    if not flags.FLAGS.is_parsed():
        flags.FLAGS([sys.argv[0] if sys.argv and sys.argv[0] else "python"], known_only=True)


class OrderSampler:
    """A Grain sampler: index ``i`` reads position ``i mod n`` of epoch ``i div n``.

    ``record_key`` is the record's key in ``readplan.data_source(plan.info, plan.spec)``;
    ``epochs=None`` never ends.  ``set_epoch(k)`` makes the indices read pass ``k``: epochs
    ``k * epochs ..`` (with ``epochs=None``, epochs ``k ..``).  Grain's DataLoader reads a
    sampler from index 0 at each iteration, from a copy made for each worker process, and
    never tells the sampler that an iteration began: read all epochs in one iteration, or
    call ``set_epoch(epoch)`` before each.  The ``repr`` names the plan's digest (and the
    pass, once set), so Grain refuses to restore a loader state into another plan or pass.
    With ``shard_options`` (for example ``grain.sharding.ShardByJaxProcess()``) given to
    the ``DataLoader``, process ``p`` of ``P`` reads the indices ``p, p + P, ...``:
    readplan's elastic mode.
    """

    def __init__(self, plan: ReadPlan, *, epochs: int | None = None) -> None:
        parse_absl_flags()
        self._keys = OrderKeys(plan, epochs=epochs)
        self._pass = 0

    def __len__(self) -> int:
        return len(self._keys)

    def set_epoch(self, epoch: int) -> None:
        """Read pass ``epoch`` from now on (a loader iterator made afterwards reads it)."""
        self._pass = check_int(epoch, "epoch", minimum=0, what="a pass number")

    def __getitem__(self, index: int) -> grain.RecordMetadata:
        key = self._keys[index]  # checks the index
        if self._pass:
            epoch, position = divmod(int(index), self._keys.records_per_epoch)
            first = self._pass * (1 if self._keys.epochs is None else self._keys.epochs)
            key = int(self._keys.epoch_keys(first + epoch)[position])
        return grain.RecordMetadata(index=index, record_key=key)

    def __repr__(self) -> str:
        plan = self._keys.plan
        number = f", epoch={self._pass}" if self._pass else ""
        return (
            f"OrderSampler(dataset={plan.info.name!r}, split={plan.spec!r}, "
            f"plan_digest={self._keys.digest!r}, epochs={self._keys.epochs}{number})"
        )


class PlanIterDataset(grain.IterDataset):  # type: ignore[misc]
    """The records of ``plan`` in plan order, one pass per iteration.

    Each ``iter(dataset)`` reads the next pass: ``epochs`` epochs, the epochs after the
    previous pass's (pass ``k`` reads epochs ``k * epochs ..``; ``None``: one endless
    pass), as each iteration over a TFDS dataset reads the next epoch; ``set_epoch(k)``
    makes the next iteration read pass ``k``.  ``decode`` and ``data_dir`` are as for
    :class:`~readplan.Reader`.  The iterator's ``get_state()`` is ``{"epoch": int,
    "position": int, "checkpoint": str}`` at every step (the reader's state as JSON), so
    Grain and Orbax can save it and ``grain.experimental.assert_equal_output_after_checkpoint``
    holds; ``set_state`` continues that state's pass, and the dataset's next iteration reads
    the pass after it.
    """

    def __init__(
        self,
        plan: ReadPlan,
        *,
        epochs: int | None = None,
        decode: bool | Literal["tfds"] | Mapping[str, Any] | None = None,
        data_dir: str | None = None,
    ) -> None:
        super().__init__()
        parse_absl_flags()
        # Built once here so that bad arguments fail at construction, not at first read.
        Reader(plan, epochs=epochs, decode=decode, data_dir=data_dir)
        self.plan = plan
        self.epochs = epochs
        self.decode = decode
        self.data_dir = data_dir
        self._next_pass = 0

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration read pass ``epoch``."""
        self._next_pass = check_int(epoch, "epoch", minimum=0, what="a pass number")

    def __iter__(self) -> _PlanIterator:
        number, self._next_pass = self._next_pass, self._next_pass + 1
        return _PlanIterator(self, number)

    def pass_of(self, epoch: int) -> int:
        """The pass that reads plan epoch ``epoch``."""
        return epoch if self.epochs is None else epoch // self.epochs

    def reader(self, number: int) -> Reader:
        """A reader of pass ``number``, at its start."""
        first = number if self.epochs is None else number * self.epochs
        return Reader(
            self.plan,
            epochs=None if self.epochs is None else first + self.epochs,
            start=self.plan.checkpoint(first, 0) if first else None,
            decode=self.decode,
            data_dir=self.data_dir,
        )

    def items(self, reader: Reader) -> Iterator[Record]:
        """What an iterator yields from ``reader``: its records."""
        return (item.record for item in reader)

    def __str__(self) -> str:
        return f"PlanIterDataset({self.plan!r}, epochs={self.epochs})"


class ImageBatchIterDataset(PlanIterDataset):
    """The image batches of a TBL-RAW ``plan``, one pass per iteration.

    Each element is ``reader.image_batches(batch_size, normalize=, layout=, dtype=, hflip=,
    seed=, drop_remainder=)``'s next batch (``specs/tbl.md`` §11) as a dict of its fields
    (``images``, ``features``, ``epoch``, ``positions``, ``file_index``, ``record_index``,
    ``flips``), numpy arrays over the gathered memory.  Passes, ``set_epoch`` and the
    iterator's ``get_state``/``set_state`` are :class:`PlanIterDataset`'s: a state taken
    between two batches continues with the same batches and flips.
    """

    def __init__(
        self,
        plan: ReadPlan,
        batch_size: int,
        *,
        normalize: tuple[Any, Any] | None = None,
        layout: Layout = "NCHW",
        dtype: OutKind = "float32",
        hflip: float = 0.0,
        seed: int = 0,
        drop_remainder: bool = False,
        epochs: int | None = None,
        data_dir: str | None = None,
    ) -> None:
        options = ImageOptions(batch_size, normalize, layout, dtype, hflip, seed, drop_remainder)
        super().__init__(plan, epochs=epochs, data_dir=data_dir)
        self.batch_size = batch_size
        self.image_options: dict[str, Any] = options.keywords()
        # A dataset that is not TBL-RAW is refused now, not at the first batch.
        with Reader(plan, epochs=epochs, data_dir=data_dir) as reader:
            close_iterator(reader.image_batches(self.batch_size, **self.image_options))

    def items(self, reader: Reader) -> Iterator[dict[str, Any]]:
        return map(_fields, reader.image_batches(self.batch_size, **self.image_options))

    def __str__(self) -> str:
        return (
            f"ImageBatchIterDataset({self.plan!r}, batch_size={self.batch_size}, "
            f"epochs={self.epochs})"
        )


def _fields(batch: ImageBatch) -> dict[str, Any]:
    # Not dataclasses.asdict: it would deep-copy the arrays.
    return {field.name: getattr(batch, field.name) for field in dataclasses.fields(batch)}


class _PlanIterator(grain.DatasetIterator):  # type: ignore[misc]
    def __init__(self, dataset: PlanIterDataset, number: int) -> None:
        super().__init__()
        self._dataset = dataset
        self._reader = dataset.reader(number)
        self._items = dataset.items(self._reader)

    def __next__(self) -> Any:
        return next(self._items)

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
        number = self._dataset.pass_of(state["epoch"])
        reader = self._dataset.reader(number)
        reader.load_state_dict(checkpoint)
        self._reader.close()
        self._reader, self._items = reader, self._dataset.items(reader)
        self._dataset.set_epoch(number + 1)
