"""The ``readplan`` console script: the command line, and a quiet Ctrl-C while it loads.

Importing readplan (numpy, protobuf, the compiled core) takes a moment; a Ctrl-C in that
moment would otherwise print the traceback of whichever import it interrupted. This
package sits outside ``readplan`` so that importing it imports nothing else.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


def main() -> int:
    """Run ``readplan`` with the process's arguments; 130 when interrupted while loading."""
    try:
        from readplan.cli.main import main as run
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return _INTERRUPTED
    return run()
