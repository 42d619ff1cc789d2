"""A dependency-free progress bar for long command-line steps.

It draws on standard error only when that is a terminal (or when forced), stays silent
for steps that finish within ``delay`` seconds, and never affects what is computed.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``with Progress("indexing", total=n_bytes, unit="B") as bar: bar.advance(k)``."""

    def __init__(
        self,
        label: str,
        *,
        total: int | None,
        unit: str = "",
        delay: float = 1.0,
        stream: TextIO | None = None,
        force: bool = False,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self._delay = delay
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = force or self._stream.isatty()
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._drawn:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()

    def advance(self, amount: int = 1) -> None:
        self.done += amount
        now = time.monotonic()
        if not self._enabled or now - self._start < self._delay or now - self._last_draw < 0.1:
            return
        self._last_draw = now
        self._draw()

    def _draw(self) -> None:
        self._drawn = True
        if self.total:
            fraction = min(1.0, self.done / self.total)
            filled = int(fraction * 30)
            bar = "#" * filled + "-" * (30 - filled)
            amount = f"{_human(self.done)}/{_human(self.total)}{self.unit}"
            text = f"\r{self.label} [{bar}] {fraction:6.1%} {amount}"
        else:
            text = f"\r{self.label} {_human(self.done)}{self.unit}"
        self._stream.write(text)
        self._stream.flush()


def _human(value: float) -> str:
    if abs(value) < 1000:
        return f"{value:.0f}"
    for suffix in ("k", "M", "G", "T"):
        value /= 1000
        if abs(value) < 1000 or suffix == "T":
            return f"{value:.1f}{suffix}"
    raise AssertionError("unreachable")
