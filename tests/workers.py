"""Running several worker scripts of this folder at once, as separate processes (the
JAX processes and torch.distributed ranks of test_grain.py and test_torch.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def run_workers(
    script: str, argvs: Sequence[Sequence[object]], reports: Sequence[Path], timeout: float
) -> list[Any]:
    """Start ``script`` once per argument list, wait for all, and return the JSON each run
    wrote to its path in ``reports``; every run must exit 0 (their output is the message)."""
    worker = Path(__file__).with_name(script)
    processes = [
        subprocess.Popen(
            [sys.executable, str(worker), *map(str, argv)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for argv in argvs
    ]
    try:
        logs = [p.communicate(timeout=timeout)[0].decode(errors="replace") for p in processes]
    finally:
        for process in processes:
            process.kill()
    assert [p.returncode for p in processes] == [0] * len(processes), logs
    return [json.loads(path.read_text()) for path in reports]
