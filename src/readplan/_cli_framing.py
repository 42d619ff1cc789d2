"""Subcommands of this layer (registered by :mod:`readplan.cli`)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: "argparse._SubParsersAction[Any]") -> None:
    """Add this layer's subcommands to ``subparsers``."""
