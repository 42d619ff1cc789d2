"""``ReadplanIterableDataset``: a plan's records for a PyTorch DataLoader, pass after pass.

``specs/reader.md`` §6 is normative.  Each iteration is a pass: pass ``k`` reads epochs
``k * E .. k * E + E - 1`` (``E = epochs``), dealt to the loader's consumers by
:mod:`readplan.torch.dealing`; which pass an iteration reads is agreed between the dataset
and its copies in worker processes by :mod:`readplan.torch.passes`.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from readplan._internal.validate import check_int, preview
from readplan.errors import CheckpointError, ConfigError, ReadplanTypeError
from readplan.plan import ReadPlan
from readplan.reading.collate import Ragged
from readplan.reading.options import check_epochs
from readplan.reading.ranks import STATE_KEY, owner
from readplan.reading.reader import Reader
from readplan.state.checkpoint import Checkpoint
from readplan.state.fingerprint import digest
from readplan.torch.dealing import LOADER_KEY, Dealing, batches, yielded_per_pass
from readplan.torch.layout import consumer, rank
from readplan.torch.passes import Load, Passes

__all__ = ["ReadplanIterableDataset"]


@dataclass(frozen=True)
class _Pending:
    """A loaded state not yet read, the process that loaded it, and its pass."""

    state: dict[str, Any]
    load: Load
    pid: int


class ReadplanIterableDataset(IterableDataset[Any]):
    """The records of ``plan`` in plan order, split across DataLoader workers and ranks.

    Each iteration (each ``for batch in loader``) reads the next pass: ``epochs`` epochs
    (default 1; ``None``: one endless pass), the epochs after the previous pass's, as each
    iteration over a TFDS dataset reads the next epoch; ``set_epoch(k)`` makes the next
    iteration read pass ``k`` (``DistributedSampler``'s convention).  Each consumer (see
    :func:`consumer`) reads its share with :class:`readplan.Reader` (``data_dir``,
    ``decode``, ``on_corruption``, ``report``, ... passed on as given) and yields
    ``transform(item)`` for each :class:`~readplan.Item`, or the item's record.  With
    ``batch_size`` it yields batches of the consumer's records of one epoch instead
    (``Reader.batches``): the collated ``batch.features`` of a decoding reader, the list of
    records of a raw one, or ``transform(batch)``.

    ``len(dataset)`` is what the calling rank's loader yields over one whole pass.
    ``state_dict()`` is the consumer's reader state with its place in the pass (call it
    where the iteration runs, as ``StatefulDataLoader`` does); ``load_state_dict(state)``
    makes the next iteration finish that state's pass.  A state restores the consumer that
    saved it, or, merged by :func:`merge_loader_states`, any consumer of any layout.
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
        epochs = reader_options.get("epochs", 1)
        check_epochs(epochs)
        self._epochs: int | None = epochs
        self._options = {k: v for k, v in reader_options.items() if k != "epochs"}
        self._batching: dict[str, Any] = {
            "batch_size": batch_size,
            "drop_remainder": drop_remainder,
            "ragged": ragged,
            "padding_values": padding_values,
        }
        self._passes = Passes()
        self._pending: _Pending | None = None
        self._pass: _Pass | None = None
        # Checks every argument now, not in a worker.
        checked = Reader(plan, **reader_options)
        checked.batches(**self._batching)
        checked.close()

    @property
    def epochs(self) -> int | None:
        """Epochs one pass reads (``None``: the pass never ends)."""
        return self._epochs

    def __getstate__(self) -> dict[str, Any]:
        # Workers started by "spawn" receive a pickled copy; an open reader stays behind.
        state = self.__dict__.copy()
        state["_pass"] = None
        return state

    # -- passes -----------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration read pass ``epoch``: epochs ``epoch * E ..`` of the plan
        (``E = epochs``; with ``epochs=None`` from epoch ``epoch`` on)."""
        check_int(epoch, "epoch", minimum=0, what="a pass number")
        pending = self._pending
        if (
            pending is not None
            and not self._passes.used(pending.load)
            and pending.load.number != epoch
        ):
            raise ConfigError(
                f"set_epoch({epoch}), but the loaded state is in pass {pending.load.number}, "
                "which the next iteration finishes; call set_epoch("
                f"{pending.load.number}) for it (the passes after it follow on), or load "
                "another state",
                field="epoch",
                value=epoch,
            )
        self._passes.set_next(epoch)

    def pass_of(self, epoch: int) -> int:
        """The pass that reads plan epoch ``epoch``."""
        return epoch if self._epochs is None else epoch // self._epochs

    def _first_epoch(self, number: int) -> int:
        return number if self._epochs is None else number * self._epochs

    def _end(self, number: int) -> int | None:
        return None if self._epochs is None else (number + 1) * self._epochs

    # -- iteration --------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:
        # Not a generator: the reader exists (and state_dict() answers) as soon as the
        # DataLoader has called iter(), before the first record is asked for.
        if self._pass is not None:
            self._pass.close()
        number, state = self._begin()
        self._pass = _Pass(self, *consumer(), number, state)
        if self._batching["batch_size"] is not None:
            return self._batches(self._pass)
        return self._records(self._pass)

    def _begin(self) -> tuple[int, Mapping[str, Any] | None]:
        """The pass this iteration reads, and the loaded state it starts from (if any)."""
        pending, self._pending = self._pending, None
        if pending is not None and pending.pid == os.getpid():
            # Loaded in this process (by the user, or by StatefulDataLoader in this worker),
            # and not yet read by the workers of a loader this process started.
            if not self._passes.used(pending.load):
                self._passes.restored(pending.load)
                return pending.load.number, pending.state
            pending = None
        load = None if pending is None else pending.load
        info = get_worker_info()
        if info is None:
            number, used = self._passes.take(load)
        else:
            # Every worker of one loader iterator has the seed base_seed + its id.
            number, used = self._passes.join(info.seed - info.id, info.num_workers, load)
        return number, (pending.state if used and pending is not None else None)

    def _records(self, run: _Pass) -> Iterator[Any]:
        transform = self.transform
        for reader in run.readers():
            if transform is None:
                for item in reader:
                    yield item.record
            else:
                for item in reader:
                    yield transform(item)

    def _batches(self, run: _Pass) -> Iterator[Any]:
        transform = self.transform
        for reader in run.readers():
            for batch in reader.batches(**self._batching):
                if transform is not None:
                    yield transform(batch)
                else:
                    yield batch.records if batch.features is None else batch.features

    def _reader(
        self, dealing: Dealing, epoch: int, start: Mapping[str, Any] | Checkpoint | None
    ) -> Reader:
        """The reader of this consumer's positions of ``epoch``, from ``start`` or the first."""
        first = dealing.first_position(epoch)
        if start is None and (epoch or first):
            start = self.plan.checkpoint(epoch, first)
        return Reader(
            self.plan,
            rank=dealing.rank_in(epoch),
            world_size=dealing.consumers,
            epochs=epoch + 1,
            start=start,
            **self._options,
        )

    # -- length -------------------------------------------------------------------------

    def __len__(self) -> int:
        """What the calling rank's loader yields over one pass (``specs/reader.md`` §6).

        Asked by ``len(DataLoader(dataset, ...))``, it counts for that loader's workers
        (each collating its own batches) and ``batch_size``; asked directly, for this
        process reading alone.
        """
        epochs = self._epochs
        if epochs is None:
            raise ReadplanTypeError(
                "a dataset with epochs=None reads one endless pass and has no len(); pass epochs=N",
                field="epochs",
                value=None,
            )
        index, ranks = rank()
        loader = _asking_loader()
        workers = 1 if loader is None else max(loader.num_workers, 1)
        size, drop = self._batching["batch_size"], self._batching["drop_remainder"]
        units = [
            yielded_per_pass(
                self.plan.num_examples, epochs, w * ranks + index, ranks * workers, size, drop
            )
            for w in range(workers)
        ]
        if loader is None or loader.batch_size is None:
            return sum(units)
        # The loader divides by its batch size: each worker's last batch is its own.
        step = loader.batch_size
        return step * sum(batches(count, step, loader.drop_last) for count in units)

    # -- state ----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """This consumer's state: its reader's (``specs/reader.md`` §4) and its place in the
        pass (section ``"loader"``).  Before any iteration: where the next one starts."""
        if self._pass is not None:
            return self._pass.state()
        pending = self._pending
        if pending is not None and not self._passes.used(pending.load):
            return dict(pending.state)
        run = _Pass(self, *consumer(), self._passes.next, None)
        try:
            return run.state()
        finally:
            run.close()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Start the next iteration from ``state`` (checked against the plan now): it
        finishes the state's pass; the iterations after it read the passes after it."""
        if not isinstance(state, Mapping):
            raise CheckpointError(
                "load_state_dict takes a state from state_dict() (or merge_loader_states), a "
                f"mapping; got {type(state).__name__} {preview(state)} (to start from the "
                "beginning, make a new dataset)",
                field="$",
            )
        checked = _Pass(self, *consumer(), None, state)
        checked.close()
        load = Load(secrets.randbits(62) + 1, checked.number)
        self._pending = _Pending(dict(state), load, os.getpid())
        if self._pass is not None:
            self._pass.close()
            self._pass = None


class _Pass:
    """One consumer's iteration: the readers of its epochs, one after the other."""

    def __init__(
        self,
        dataset: ReadplanIterableDataset,
        index: int,
        count: int,
        number: int | None,
        state: Mapping[str, Any] | None,
    ) -> None:
        self._dataset = dataset
        size = dataset.plan.num_examples
        if state is None:
            assert number is not None
            epoch = dataset._first_epoch(number)
            self.dealing = Dealing(index, count, epoch, 0, size)
        else:
            checkpoint = Checkpoint.from_dict(dict(state))
            self.dealing = _dealing_of(state, checkpoint, index, count, size)
            epoch = checkpoint.epoch
            number = dataset.pass_of(epoch)
        self.number = number
        self._end = dataset._end(number)
        self._epoch = epoch
        self._upcoming: tuple[int, Reader] | None = None
        self.reader = dataset._reader(self.dealing, epoch, state)

    def readers(self) -> Iterator[Reader]:
        while True:
            yield self.reader
            epoch = self._epoch + 1
            if self._end is not None and epoch >= self._end:
                return
            self.reader.close()
            self.reader = self._next_reader(epoch)
            self._epoch = epoch

    def _next_reader(self, epoch: int) -> Reader:
        upcoming, self._upcoming = self._upcoming, None
        if upcoming is not None and upcoming[0] == epoch:
            return upcoming[1]
        return self._dataset._reader(self.dealing, epoch, None)

    def state(self) -> dict[str, Any]:
        state = self.reader.state_dict()
        size = self._dataset.plan.num_examples
        epoch = self._epoch
        # A consumer done with its epoch stands at its first position of the next epoch
        # it reads in (within the pass): merging compares where consumers stand next.
        while state["position"] >= size and (self._end is None or epoch + 1 < self._end):
            epoch += 1
            if epoch - self._epoch > self.dealing.consumers:
                break  # more consumers than positions: this one has none for a while
            reader = self._dataset._reader(self.dealing, epoch, None)
            state = reader.state_dict()
            if epoch == self._epoch + 1:
                if self._upcoming is not None:
                    self._upcoming[1].close()
                self._upcoming = (epoch, reader)
            else:
                reader.close()
        section = self.dealing.section()
        state[LOADER_KEY] = section
        state["integrity"] = {**state["integrity"], LOADER_KEY: digest(section)}
        return state

    def close(self) -> None:
        self.reader.close()
        if self._upcoming is not None:
            self._upcoming[1].close()


def _dealing_of(
    state: Mapping[str, Any], checkpoint: Checkpoint, index: int, count: int, size: int
) -> Dealing:
    """How consumer ``index`` of ``count`` continues from ``state``."""
    section = state.get(LOADER_KEY)
    if section is not None:
        dealing = Dealing.from_section(section, size)
        if (dealing.consumer, dealing.consumers) != (index, count):
            raise CheckpointError(
                f"this state belongs to consumer {dealing.consumer} of {dealing.consumers} "
                f"(DataLoader workers times ranks); it cannot be restored by consumer {index} "
                f"of {count} on its own. Restore the loader's state in the same layout "
                "(StatefulDataLoader.load_state_dict), or gather the loader states of all "
                "ranks, merge them with readplan.torch.merge_loader_states(states) and load "
                "the result with dataset.load_state_dict(merged)",
                field=f"{LOADER_KEY}.consumer",
            )
        return dealing
    saved_by = owner(state.get(STATE_KEY))
    if saved_by is not None and saved_by[1] > 1:
        raise CheckpointError(
            f"this state belongs to rank {saved_by[0]} of {saved_by[1]}; merge the states of "
            "all ranks with readplan.torch.merge_loader_states(states) (or "
            "readplan.merge_states) and load the result",
            field=f"{STATE_KEY}.rank",
        )
    # A global state: every consumer deals from where it stands.
    return Dealing(index, count, checkpoint.epoch, checkpoint.position, size)


def _asking_loader() -> DataLoader[Any] | None:
    """The DataLoader whose ``__len__`` called ``len(dataset)``, if one did."""
    try:
        frame = sys._getframe(2)
    except ValueError:  # called from C with no Python caller
        return None
    asking = frame.f_locals.get("self")
    return asking if isinstance(asking, DataLoader) else None
