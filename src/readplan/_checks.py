"""Small argument checks shared by the modules that validate user input."""

from __future__ import annotations

from typing import TypeGuard

__all__ = ["is_int"]


def is_int(value: object) -> TypeGuard[int]:
    """A Python int that is not a bool (``True`` is an int to Python, not to readplan)."""
    return isinstance(value, int) and not isinstance(value, bool)
