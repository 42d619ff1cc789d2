"""Collated batches decoded in groups, on worker threads or the reading thread
(``specs/reader.md`` §7).

A decode worker holds the GIL for every Python step of a batch's decode (arrays allocated,
leaves checked, cast and shaped, per leaf and per batch) and releases it only inside the
compiled kernels; for small records those steps cost more than the kernels' walk, so threads
decoding one batch each mostly wait for one another. :func:`grouped` joins consecutive
batches into groups, each closed once it holds :data:`GROUP_RECORDS` records or
:data:`GROUP_BYTES` of them (so never less than one batch); a decoder of images or audio
(``RecordDecoder.media``) takes batches one at a time, since one record's decode then costs
far more than its bytes say and a group could hold a whole pass; :func:`group_finisher` decodes a
group's records in one leaf decode and cuts it into the batches' collated features, which is
exactly what decoding each batch alone gives (``LeafBatch.sliced``), and falls back to each
batch alone when the group does not decode so (a record that fails, records of other
structures), so every error is raised at its own batch's turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from readplan.reading.collate import Ragged
from readplan.reading.decoding import RecordDecoder
from readplan.reading.items import Batch

__all__ = ["GROUP_BYTES", "GROUP_RECORDS", "group_finisher", "grouped"]

GROUP_RECORDS = 8192
"""Records a decode worker decodes in one step: enough that the per-step Python is a small
share of the kernels' walk for records of a few hundred bytes."""
GROUP_BYTES = 4 << 20
"""A group closes once its records hold this many bytes (large records make groups of one
batch: their decode is long enough alone, and groups are held while decoded ahead)."""

Outcome = Batch | Exception


def grouped(batches: Iterator[Batch], *, single: bool = False) -> Iterator[list[Batch]]:
    """``batches`` in consecutive groups (of one batch each when ``single``); when
    ``batches`` fails, the group held so far comes first, then the failure."""
    group: list[Batch] = []
    records = size = 0
    try:
        for batch in batches:
            group.append(batch)
            records += len(batch)
            size += sum(map(len, batch.records))
            if single or records >= GROUP_RECORDS or size >= GROUP_BYTES:
                yield group
                group, records, size = [], 0, 0
    except Exception:
        if group:
            yield group
        raise
    if group:
        yield group


def group_finisher(
    decoder: RecordDecoder,
    finish: Callable[[Batch], Batch],
    ragged: Ragged,
    padding_values: Mapping[str, Any] | None,
) -> Callable[[list[Batch]], list[Outcome]]:
    """The function giving a group's batches decoded and collated, as ``finish`` gives each,
    up to the first that ``finish`` refuses, whose error comes last."""

    def finish_group(group: list[Batch]) -> list[Outcome]:
        if len(group) > 1:
            # Undecoded batches: their records are bytes.
            records: list[Any] = [raw for batch in group for raw in batch.records]
            bounds = [0]
            for batch in group:
                bounds.append(bounds[-1] + len(batch))
            try:
                parts = decoder.collate_parts(records, bounds, ragged, padding_values)
            except Exception:
                parts = None
            if parts is not None:
                return [
                    replace(batch, records=part_records, features=features)
                    for batch, (part_records, features) in zip(group, parts)
                ]
        return _one_by_one(group, finish)

    return finish_group


def _one_by_one(group: list[Batch], finish: Callable[[Batch], Batch]) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for batch in group:
        try:
            outcomes.append(finish(batch))
        except Exception as error:  # raised when its batch's turn comes
            outcomes.append(error)
            break
    return outcomes
