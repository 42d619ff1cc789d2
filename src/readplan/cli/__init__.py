"""The ``readplan`` command line: ``plan``, ``order``, ``checkpoint``, ``inspect``,
``index`` and ``demo``."""

from readplan.cli.main import main

__all__ = ["main"]
