"""Running code in a child process whose address space is capped (``RLIMIT_AS``).

A hostile input that makes readplan allocate what a header or a length says fails there
with ``MemoryError`` (or is killed), so a child that exits 0 shows that the work stayed
within the bound. The child imports the test tree, so the code it runs can call helpers
of the test modules (hypothesis-driven functions included).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["GIB", "run_bounded"]

GIB = 2**30
_ROOT = Path(__file__).resolve().parent.parent


def run_bounded(code: str, *, address_space: int = GIB, timeout: float = 300) -> str:
    """Run ``code`` (Python source) in a child limited to ``address_space`` bytes; return
    its stdout, or fail the test with its stderr when it does not exit 0."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    env = {
        **os.environ,
        # One BLAS thread: each would reserve address space of its own.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(_ROOT / "src"), str(_ROOT)]),
    }
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        env=env,
        cwd=_ROOT,
        check=False,
    )
    assert done.returncode == 0, (
        f"the child (address space {address_space} bytes) exited {done.returncode}:\n"
        f"{done.stderr[-4000:]}"
    )
    return done.stdout
