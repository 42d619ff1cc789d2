"""The reader's batches decoded, and batches of a chosen size (``specs/reader.md``, "Batches").

The reader produces batches of undecoded records that follow its reads.  :func:`decoded`
decodes each (a decoding reader's ``batches()`` and items); :func:`rebatch` cuts and joins
them into batches of ``batch_size`` deliveries of one epoch (the last of an epoch may be
short, or dropped), which a decoding reader decodes and collates into ``Batch.features``
(:func:`collated_batches`).  Either way a record that does not decode stops the batches
exactly where decoding each read would: after the batches before it, with its error.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

import numpy as np

from readplan.reading.collate import Ragged
from readplan.reading.decode_groups import group_finisher, grouped
from readplan.reading.decoding import RecordDecoder
from readplan.reading.items import Batch
from readplan.reading.workers import AHEAD, ordered
from readplan.records.tfrecord._packed import packed_batches

__all__ = [
    "Locate",
    "close_iterator",
    "collated_batches",
    "decoded",
    "packed_batch",
    "rebatch",
]

Locate = Callable[[Exception, Batch, int], Exception]
"""The error of record ``k`` of a batch, naming where the record sits in the plan."""


def decoded(
    produced: Iterator[Batch], decoder: RecordDecoder, locate: Locate, workers: int = 1
) -> Generator[Batch, None, None]:
    """Each batch with its records decoded (on ``workers`` threads, in order); a record that
    does not decode ends the batches after the records before it, with its error located."""
    try:
        for batch, (records, error) in ordered(produced, _decode_all(decoder), workers):
            if records:
                yield _with_records(batch, records)
            if error is not None:
                raise locate(error, batch, len(records)) from error
    finally:
        close_iterator(produced)


def _decode_all(
    decoder: RecordDecoder,
) -> Callable[[Batch], tuple[list[Any], Exception | None]]:
    return lambda batch: decoder.decode_all(_raw(batch))


def collated_batches(
    produced: Iterator[Batch],
    size: int,
    drop_remainder: bool,
    decoder: RecordDecoder,
    ragged: Ragged,
    padding_values: Mapping[str, Any] | None,
    locate: Locate,
    workers: int = 1,
) -> Generator[Batch, None, None]:
    """Batches of ``size`` deliveries, decoded and collated (on ``workers`` threads, in
    order); the records decoded only when read.  Records read but not delivered (a dropped
    remainder, those before a read failure) are decoded too, so that the first that does
    not decode stops the batches."""

    def finish(batch: Batch) -> Batch:
        records, features, error = decoder.collate_all(_raw(batch), ragged, padding_values)
        if error is not None:
            raise locate(error, batch, len(records)) from error
        return replace(batch, records=records, features=features)

    def undelivered(batch: Batch) -> None:
        records, error = decoder.decode_all(_raw(batch))
        if error is not None:
            raise locate(error, batch, len(records)) from error

    cut = rebatch(produced, size, drop_remainder, undelivered=undelivered)
    try:
        # Batches are decoded in groups, in the reading thread too: see decode_groups.
        finish_group = group_finisher(decoder, finish, ragged, padding_values)
        groups = grouped(cut, single=decoder.media)
        # A batch of images takes long to decode and its array is large: one in flight per
        # worker keeps them busy, and each array more in flight is fresh memory.
        ahead = 1 if decoder.media else AHEAD
        for _, outcomes in ordered(groups, finish_group, workers, ahead):
            for outcome in outcomes:
                if isinstance(outcome, Exception):
                    raise outcome
                yield outcome
    finally:
        cut.close()


def rebatch(
    produced: Iterator[Batch],
    size: int,
    drop_remainder: bool,
    finish: Callable[[Batch], Batch] = lambda batch: batch,
    undelivered: Callable[[Batch], None] = lambda batch: None,
) -> Generator[Batch, None, None]:
    """Batches of ``size`` deliveries of one epoch, each passed through ``finish``; the
    records held when ``produced`` fails, and dropped remainders, go to ``undelivered``."""
    held: list[Batch] = []
    count = 0
    try:
        while (batch := _next_or_settle(produced, held, undelivered)) is not None:
            if held and held[0].epoch != batch.epoch:
                if drop_remainder:
                    undelivered(_joined(held))
                else:
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
        if held:
            if drop_remainder:
                undelivered(_joined(held))
            else:
                yield finish(_joined(held))
    finally:
        close_iterator(produced)


def _next_or_settle(
    produced: Iterator[Batch], held: list[Batch], undelivered: Callable[[Batch], None]
) -> Batch | None:
    """The next batch, None at the end; when ``produced`` fails, the held records (read
    before the failure) are settled first."""
    try:
        return next(produced)
    except StopIteration:
        return None
    except Exception:
        if held:
            undelivered(_joined(held))
        raise


def packed_batch(batch: Batch) -> Batch:
    """``batch`` with its raw records packed into one :class:`PackedRecords`."""
    (packed,) = packed_batches([list(_raw(batch))], max(1, len(batch)))
    return replace(batch, records=cast(Sequence[Any], packed))


def close_iterator(iterator: Iterator[Any]) -> None:
    """Close a generator (and the files it holds) now, not when it is collected."""
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def _raw(batch: Batch) -> Sequence[bytes]:
    """The records of a batch the reader has not decoded: their bytes."""
    raw: Sequence[Any] = batch.records
    return raw


def _with_records(batch: Batch, records: list[Any]) -> Batch:
    """``batch`` holding ``records``: its first ``len(records)`` deliveries."""
    size = len(records)
    return Batch(
        plan=batch.plan,
        epoch=batch.epoch,
        records=records,
        positions=batch.positions[:size],
        file_index=batch.file_index[:size],
        record_index=batch.record_index[:size],
    )


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
