"""``tf.train.Example`` decoding and encoding without TensorFlow (``specs/example.md``).

The documented import path ``readplan.example``; the code lives in
:mod:`readplan.records.example` (batches of records: :mod:`readplan.records.example._many`).
"""

from readplan.records.example import *  # noqa: F403
from readplan.records.example import __all__ as _one_record
from readplan.records.example._many import decode_many, parse_many

__all__ = [*_one_record, "decode_many", "parse_many"]
