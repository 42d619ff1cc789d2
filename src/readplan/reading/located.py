"""A failure that stops a reader, naming where its record sits (``specs/reader.md`` §1, §3).

The reader stops at the first record it cannot deliver: a damaged record
(``CorruptRecordError``) or one that does not decode (``ExampleError``/``FeatureError``).
Its error then says where that record is: its position in the epoch, its file and its index.
"""

from __future__ import annotations

from readplan.errors import CorruptRecordError, ExampleError, FeatureError

__all__ = ["located"]


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
