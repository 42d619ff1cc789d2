"""TBL v2 containers: reading, writing, damage handling (``specs/tbl.md``).

The documented import path ``readplan.tbl``; the code lives in :mod:`readplan.records.tbl`.
"""

from readplan.records.tbl import *  # noqa: F403
from readplan.records.tbl import __all__ as __all__
