"""The README's Python examples run as written and print what the README says they print."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"


def _expected_output(block: str) -> list[str]:
    """Comment lines that directly follow a ``print(...)`` statement: its documented output."""
    expected, after_print = [], False
    for line in block.splitlines():
        stripped = line.strip()
        if stripped.startswith("# ") and after_print:
            expected.append(stripped[2:])
            continue
        after_print = "print(" in stripped
    return expected


def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    documented = 0
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(README), "exec"), namespace)
        printed = iter(out.getvalue().splitlines())
        for line in _expected_output(block):
            documented += 1
            assert line in printed, f"README says {line!r} is printed; it is not (in order)"
    assert documented >= 3
