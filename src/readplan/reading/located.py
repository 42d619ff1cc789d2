"""A failure that stops a reader, naming where its record sits (``specs/reader.md`` §1, §3).

The reader stops at the first record it cannot deliver: a damaged record
(``CorruptRecordError``) or one that does not decode (``ExampleError``/``FeatureError``).
Its error then says where that record is: its position in the epoch, its file and its index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from readplan._internal.arrays import IntArray
from readplan.errors import CorruptRecordError, ExampleError, FeatureError

__all__ = ["Rows", "located", "located_at"]


class Rows(Protocol):
    """Deliveries as columns: a batch, or a chunk's runs."""

    @property
    def positions(self) -> IntArray: ...

    @property
    def file_index(self) -> IntArray: ...

    @property
    def record_index(self) -> IntArray: ...


def located_at(
    failure: Exception, epoch: int, rows: Rows, at: int, path_of: Callable[[int], str]
) -> Exception:
    """:func:`located` at delivery ``at`` of ``rows`` in epoch ``epoch`` (``path_of(f)``:
    where file ``f`` is read)."""
    position = int(rows.positions[at])
    file_index = int(rows.file_index[at])
    where = (
        f"position {position} of epoch {epoch} (file {file_index}: "
        f"{path_of(file_index)}, record {int(rows.record_index[at])})"
    )
    return located(failure, where)


def located(failure: Exception, where: str) -> Exception:
    """``failure`` with ``where`` (``position P of epoch E (file F: path, record R)``) in its
    message; other exceptions unchanged."""
    if isinstance(failure, CorruptRecordError):
        return failure.with_context(
            f"\nThe reader stopped at {where}; every earlier record was delivered, and "
            "its state points at this record. To deliver every undamaged record and list "
            "the lost ones instead, read with "
            "Reader(..., on_corruption='skip', report=CorruptionReport())."
        )
    if isinstance(failure, ExampleError):
        return ExampleError(f"{failure}\nThe record is at {where}.", key=failure.key)
    if isinstance(failure, FeatureError):
        return failure.with_context(f"\nThe record is at {where}.")
    return failure
