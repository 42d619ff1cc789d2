"""``tf.train.Example`` without TensorFlow: decode, encode, parse, batches (``specs/example.md``).

The implementation lives in this package's private modules; this module is the import path
the rest of readplan and the public re-export module use.
"""

from __future__ import annotations

from readplan.records.example._codec import (
    FeatureValue,
    ParsedValue,
    decode,
    decode_batch,
    encode,
    parse,
)
from readplan.records.example._columns import (
    Column,
)
from readplan.records.example._kinds import (
    BYTES,
    DTYPES,
    FLOAT32,
    INT64,
)
from readplan.records.example._schema import (
    DTypeLike,
    FixedLen,
    VarLen,
)
from readplan.records.example._spans import (
    BytesSpans,
)

__all__ = [
    "BYTES",
    "DTYPES",
    "FLOAT32",
    "INT64",
    "BytesSpans",
    "Column",
    "DTypeLike",
    "FeatureValue",
    "FixedLen",
    "ParsedValue",
    "VarLen",
    "decode",
    "decode_batch",
    "encode",
    "parse",
]
