"""The one seam between readplan and its compiled core (normative: ``specs/native.md``).

``readplan.records._core`` is the C extension the package's build compiles.  Every kernel module
(``records._crc``, ``records.tfrecord._scan``, ...) holds a kernel's pure-Python twin and takes
the compiled one from :data:`CORE` when there is one; nothing else imports the extension.  The
pure path runs where the extension was not built (no compiler), could not load, or where the
environment says ``READPLAN_PURE=1``; both paths give the same results and the same errors.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["CORE", "CORE_NAME", "NATIVE", "PURE_VARIABLE"]

PURE_VARIABLE = "READPLAN_PURE"


def _load() -> ModuleType | None:
    if os.environ.get(PURE_VARIABLE, "") not in ("", "0"):
        return None
    try:
        return importlib.import_module("readplan.records._core")
    except ImportError:
        return None


CORE: ModuleType | None = _load()
"""The compiled extension module, or ``None`` on the pure path."""

NATIVE: bool = CORE is not None
"""Whether the compiled core is in use."""

CORE_NAME: str = (
    f"compiled core, CRC32C by {CORE.CRC32C_ENGINE}" if CORE is not None else "pure-Python core"
)
"""The core in use, as ``readplan --version`` names it."""
