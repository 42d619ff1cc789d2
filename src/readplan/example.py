"""``tf.train.Example`` decoding and encoding without TensorFlow (``specs/example.md``).

The documented import path ``readplan.example``; the code lives in
:mod:`readplan.records.example`.
"""

from readplan.records.example import *  # noqa: F403
from readplan.records.example import __all__ as __all__
