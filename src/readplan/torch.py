"""PyTorch integration: a plan's records as an ``IterableDataset``, exactly resumable.

``specs/reader.md`` ("PyTorch") is normative.  PyTorch is an optional dependency
(``pip install 'readplan[torch]'``); importing this module without it raises an
``ImportError`` that says so.

The work of each epoch is dealt out position by position: with ``R`` ranks (from
``torch.distributed`` when it is initialised) of ``W`` DataLoader workers each, consumer
``c = rank * W + worker`` delivers the positions ``p`` with ``p mod (R * W) == c``.  The
dataset's ``state_dict``/``load_state_dict`` follow torchdata's ``StatefulDataLoader``
protocol (each worker saves and restores its own reader); :func:`merge_loader_states`
turns the loader states of all ranks into one state from which any number of ranks and
workers continues exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

try:
    import torch.distributed as _dist
    from torch.utils.data import IterableDataset, Sampler, get_worker_info
except ImportError as err:  # pragma: no cover - exercised without torch only
    raise ImportError(
        "readplan.torch needs PyTorch, an optional dependency of readplan: "
        "pip install 'readplan[torch]'"
    ) from err

from readplan._internal.validate import preview
from readplan.errors import CheckpointError, CheckpointMismatchError, ConfigError
from readplan.plan import ReadPlan
from readplan.reading.collate import Ragged
from readplan.reading.order_keys import OrderKeys
from readplan.reading.ranks import STATE_KEY, merge_states
from readplan.reading.reader import Reader
from readplan.state.codec import FORMAT
from readplan.state.limits import MAX_STATE_DEPTH, check_bounds

__all__ = ["OrderSampler", "ReadplanIterableDataset", "consumer", "merge_loader_states"]


def consumer() -> tuple[int, int]:
    """``(index, count)`` of the calling consumer: ``worker * ranks + rank`` of all of them.

    Ranks come from ``torch.distributed`` when it is initialised (one rank otherwise),
    workers from ``torch.utils.data.get_worker_info()`` (one, the main process, outside
    DataLoader workers).  Counting workers outermost gives rank ``r`` the positions
    ``p % ranks == r`` whatever the number of workers: its loader yields them in plan order.
    """
    info = get_worker_info()
    worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
    rank, ranks = _rank()
    return worker * ranks + rank, ranks * workers


def _rank() -> tuple[int, int]:
    if _dist.is_available() and _dist.is_initialized():
        return _dist.get_rank(), _dist.get_world_size()
    return 0, 1


class ReadplanIterableDataset(IterableDataset[Any]):
    """The records of ``plan`` in plan order, split across DataLoader workers and ranks.

    Each consumer (see :func:`consumer`) runs a :class:`readplan.Reader` with
    ``rank``/``world_size`` set to its consumer index and count, and the other keywords
    (``data_dir``, ``epochs``, ``decode``, ``on_corruption``, ``report``, ...) passed on as
    given.  An iteration reads epochs up to ``epochs`` (exclusive; ``None``: forever),
    starting where the loaded state stands (from the beginning without one).  It yields
    ``transform(item)`` for each :class:`~readplan.Item`, or the item's record without a
    transform.  With ``batch_size`` it yields batches of the consumer's records instead
    (``Reader.batches``): the collated ``batch.features`` of a decoding reader, the list of
    records of a raw one, or ``transform(batch)``.

    ``len(dataset)`` is what the calling rank's loader yields over ``epochs`` from the
    start (``specs/reader.md``, "PyTorch").  ``state_dict()`` is the state of the
    consumer's reader (call it where the iteration runs: in the worker, as
    ``StatefulDataLoader`` does); ``load_state_dict(state)`` applies to the iterations that
    start afterwards.  A state restores the consumer that saved it, or, when merged by
    :func:`merge_loader_states`, any consumer of any layout.
    """

    def __init__(
        self,
        plan: ReadPlan,
        *,
        transform: Callable[[Any], Any] | None = None,
        batch_size: int | None = None,
        drop_remainder: bool = False,
        ragged: Ragged = "list",
        padding_values: Mapping[str, Any] | None = None,
        **reader_options: Any,
    ) -> None:
        super().__init__()
        for name in ("rank", "world_size", "start"):
            if name in reader_options:
                raise ConfigError(
                    f"{name}= is set by the dataset (ranks and workers, load_state_dict); "
                    "leave it out",
                    field=name,
                    value=reader_options[name],
                )
        self.plan = plan
        self.transform = transform
        self.reader_options = reader_options
        self._batching: dict[str, Any] = {
            "batch_size": batch_size,
            "drop_remainder": drop_remainder,
            "ragged": ragged,
            "padding_values": padding_values,
        }
        self._state: dict[str, Any] | None = None
        self._reader: Reader | None = None
        # Checks every argument now, not in a worker.
        checked = self._new_reader(0, 1, None)
        checked.batches(**self._batching)
        checked.close()

    @property
    def epochs(self) -> int | None:
        epochs: int | None = self.reader_options.get("epochs", 1)
        return epochs

    def __getstate__(self) -> dict[str, Any]:
        # Workers started by "spawn" receive a pickled copy; an open reader stays behind.
        state = self.__dict__.copy()
        state["_reader"] = None
        return state

    def _new_reader(self, index: int, count: int, state: Mapping[str, Any] | None) -> Reader:
        reader = Reader(self.plan, rank=index, world_size=count, **self.reader_options)
        if state is not None:
            reader.load_state_dict(state)
        return reader

    def __len__(self) -> int:
        """Items (or batches) the calling rank's loader yields over ``epochs``, from the start.

        Exact for items; for batches it counts one worker's batches (each of ``W`` workers
        may end an epoch with a short batch of its own).
        """
        rank, ranks = _rank()
        reader = self._new_reader(rank, ranks, None)
        size = self._batching["batch_size"]
        if size is None:
            return len(reader)
        assert isinstance(size, int)
        epochs = reader.epochs
        if epochs is None:
            return len(reader)  # raises: an endless reader has no length
        per_epoch = len(Reader(self.plan, rank=rank, world_size=ranks, epochs=1))
        whole, rest = divmod(per_epoch, size)
        return epochs * (whole + (1 if rest and not self._batching["drop_remainder"] else 0))

    def __iter__(self) -> Iterator[Any]:
        # Not a generator: the reader exists (and state_dict() answers) as soon as the
        # DataLoader has called iter(), before the first record is asked for.
        if self._reader is not None:
            self._reader.close()
        self._reader = self._new_reader(*consumer(), self._state)
        if self._batching["batch_size"] is not None:
            return self._batches(self._reader)
        return self._records(self._reader)

    def _records(self, reader: Reader) -> Iterator[Any]:
        transform = self.transform
        if transform is None:
            for item in reader:
                yield item.record
        else:
            for item in reader:
                yield transform(item)

    def _batches(self, reader: Reader) -> Iterator[Any]:
        transform = self.transform
        for batch in reader.batches(**self._batching):
            if transform is not None:
                yield transform(batch)
            else:
                yield batch.records if batch.features is None else batch.features

    def state_dict(self) -> dict[str, Any]:
        """The state of this consumer's reader (``specs/reader.md``)."""
        reader = self._reader
        if reader is None:
            reader = self._new_reader(*consumer(), self._state)
        return reader.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Start the next iterations from ``state`` (checked against the plan now)."""
        if not isinstance(state, Mapping):
            raise CheckpointError(
                "load_state_dict takes a state from state_dict() (or merge_loader_states), a "
                f"mapping; got {type(state).__name__} {preview(state)} (to start from the "
                "beginning, make a new dataset)",
                field="$",
            )
        self._new_reader(*consumer(), state)
        self._state = dict(state)
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class OrderSampler(Sampler[int]):
    """Keys of ``readplan.data_source(plan.info, plan.spec)`` in the plan's order.

    One pass yields epochs ``0 .. epochs - 1`` (``None``: endless), position by position:
    ``torch.utils.data.DataLoader(source, sampler=OrderSampler(plan, epochs=3))`` reads
    the records in TFDS's order.  ``state_dict()``/``load_state_dict()`` follow torchdata's
    ``StatefulDataLoader`` protocol: the state is the number of keys handed out in the
    current pass, bound to the plan's digest.  A new pass continues from the loaded state,
    or starts over after a complete one.
    """

    def __init__(self, plan: ReadPlan, *, epochs: int | None = 1) -> None:
        self._keys = OrderKeys(plan, epochs=epochs)
        self._next = 0

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[int]:
        keys, per_epoch = self._keys, self._keys.records_per_epoch
        while self._next < len(keys):
            epoch, position = divmod(self._next, per_epoch)
            for key in keys.epoch_keys(epoch)[position:].tolist():
                self._next += 1
                yield key
        self._next = 0

    def state_dict(self) -> dict[str, Any]:
        """``{"plan_digest", "index"}``: the keys handed out so far in this pass."""
        return {"plan_digest": self._keys.digest, "index": self._next}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue the next pass from ``state`` (from :meth:`state_dict` of this plan)."""
        if not isinstance(state, Mapping) or set(state) != {"plan_digest", "index"}:
            raise CheckpointError(
                "an OrderSampler state is a mapping with keys 'plan_digest' and 'index' (from "
                f"state_dict()), got {preview(state, 120)}",
                field="$",
            )
        if state["plan_digest"] != self._keys.digest:
            raise CheckpointMismatchError(
                f"the state was saved by a sampler of another plan (digest "
                f"{state['plan_digest']!r}, this plan's is {self._keys.digest!r})",
                differences={"plan_digest": (state["plan_digest"], self._keys.digest)},
            )
        index = state["index"]
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= len(self):
            raise CheckpointError(
                f"the state's index must be an integer in 0..{len(self)}, got {index!r}",
                field="index",
            )
        self._next = index


def merge_loader_states(states: Iterable[Any]) -> dict[str, Any]:
    """One global state from the saved states of every rank's loader (or dataset).

    ``states`` holds, per rank, a ``StatefulDataLoader.state_dict()`` (or the dataset's own
    ``state_dict()``); the readplan reader states nested in them, one per consumer, are
    merged by :func:`readplan.merge_states`.  Load the result with
    ``dataset.load_state_dict(merged)`` before building the new loaders.
    """
    found: list[Mapping[str, Any]] = []
    for state in states:
        found.extend(_reader_states(state))
    return merge_states(found)


def _reader_states(value: Any) -> Iterator[Mapping[str, Any]]:
    """The reader states nested in a loader's state, in order, found without recursion (a
    state nested 100,000 levels deep is refused by its depth, not by Python's stack)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if not isinstance(node, Mapping | list | tuple):
            continue
        if depth > MAX_STATE_DEPTH:
            check_bounds(value, "a loader state")  # raises, naming the bound
        if isinstance(node, Mapping):
            if node.get("format") == FORMAT and STATE_KEY in node:
                yield node
                continue
            children = list(node.values())
        else:
            children = list(node)
        pending.extend((child, depth + 1) for child in reversed(children))
