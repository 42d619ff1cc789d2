"""Index sidecars of TFRecord files (``specs/tfrecord.md``, "Index sidecars").

The documented import path ``readplan.index``; the code lives in
:mod:`readplan.records.index`.
"""

from readplan.records.index import *  # noqa: F403
from readplan.records.index import __all__ as __all__
