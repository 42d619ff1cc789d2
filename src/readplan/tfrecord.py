"""TFRecord files: reading, writing, damage handling (``specs/tfrecord.md``).

The documented import path ``readplan.tfrecord``; the code lives in
:mod:`readplan.records.tfrecord`.
"""

from readplan.records.tfrecord import *  # noqa: F403
from readplan.records.tfrecord import __all__ as __all__
