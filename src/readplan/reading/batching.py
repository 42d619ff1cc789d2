"""Batches of a chosen size from the reader's batches (``specs/reader.md``, "Batches").

The reader produces batches that follow its reads; :func:`rebatch` cuts and joins them
into batches of ``batch_size`` deliveries of one epoch (the last of an epoch may be short,
or dropped), and collates the decoded examples of each into ``Batch.features``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from readplan.reading.collate import Ragged, collate
from readplan.reading.items import Batch

__all__ = ["close_iterator", "collated", "rebatch"]


def rebatch(
    produced: Iterator[Batch],
    size: int,
    drop_remainder: bool,
    finish: Callable[[Batch], Batch],
) -> Generator[Batch, None, None]:
    """Batches of ``size`` deliveries of one epoch, each passed through ``finish``."""
    held: list[Batch] = []
    count = 0
    try:
        for batch in produced:
            if held and held[0].epoch != batch.epoch:
                if not drop_remainder:
                    yield finish(_joined(held))
                held, count = [], 0
            held.append(batch)
            count += len(batch)
            if count >= size:
                whole = _joined(held)
                cuts = range(0, count - size + 1, size)
                for start in cuts:
                    yield finish(_sliced(whole, start, start + size))
                rest = cuts[-1] + size
                held = [_sliced(whole, rest, count)] if rest < count else []
                count -= rest
        if held and not drop_remainder:
            yield finish(_joined(held))
    finally:
        close_iterator(produced)


def collated(batch: Batch, ragged: Ragged, padding_values: Mapping[str, Any] | None) -> Batch:
    """``batch`` with its decoded examples collated into ``features``."""
    examples: list[Any] = batch.records
    return replace(batch, features=collate(examples, ragged=ragged, padding_values=padding_values))


def close_iterator(iterator: Iterator[Any]) -> None:
    """Close a generator (and the files it holds) now, not when it is collected."""
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def _sliced(batch: Batch, start: int, stop: int) -> Batch:
    return Batch(
        plan=batch.plan,
        epoch=batch.epoch,
        records=batch.records[start:stop],
        positions=batch.positions[start:stop],
        file_index=batch.file_index[start:stop],
        record_index=batch.record_index[start:stop],
    )


def _joined(batches: list[Batch]) -> Batch:
    if len(batches) == 1:
        return batches[0]
    return Batch(
        plan=batches[0].plan,
        epoch=batches[0].epoch,
        records=[record for batch in batches for record in batch.records],
        positions=np.concatenate([batch.positions for batch in batches]),
        file_index=np.concatenate([batch.file_index for batch in batches]),
        record_index=np.concatenate([batch.record_index for batch in batches]),
    )
