"""The ``view`` subcommand: the browser viewer (``specs/viewer.md``).

``readplan view PATH_OR_URL...`` serves datasets, shards and saved states to a browser on
this machine; ``readplan view --static FILE`` writes the offline page, which needs no server.
"""

from __future__ import annotations

import argparse
from typing import Any

from readplan.cli.numbers import PORT
from readplan.errors import ConfigError

__all__ = ["register", "run_view"]


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``view`` to ``subparsers``."""
    parser = subparsers.add_parser(
        "view",
        help="see datasets, examples, read orders, saved states and shards in a browser",
        description="Serve TFDS dataset directories (local paths or fsspec URLs), directories "
        "of datasets, TFRecord/TBL files and saved reader states to a browser on this machine: "
        "a dataset's splits, features and examples (images with boxes), the read order of any "
        "split and read configuration, where a saved state stands, and a file's inspect "
        "numbers and damage. Prints the URL (with a random token every request must carry) "
        "and opens it. Read-only: nothing is written. With --static FILE, writes instead the "
        "self-contained offline page that walks TFRecord and TBL files in the browser.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH_OR_URL")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; anything not loopback is warned about)",
    )
    parser.add_argument(
        "--port", type=PORT, default=0, help="port to listen on (default: any free port)"
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="print the URL but do not open a browser"
    )
    parser.add_argument(
        "--static",
        metavar="FILE",
        default=None,
        help="write the offline page (one HTML file, no network) to FILE and exit",
    )
    parser.set_defaults(handler=run_view)


def run_view(args: argparse.Namespace) -> int:
    from readplan.viewer import serve, write_static

    if args.static is not None:
        if args.paths:
            raise ConfigError(
                "--static writes the offline page only; leave out the paths (drop the files "
                "onto the page instead)",
                field="static",
                value=args.paths,
            )
        write_static(args.static)
        print(f"readplan view: wrote {args.static}")
        return 0
    if not args.paths:
        raise ConfigError(
            "give one or more dataset directories, files or saved states to serve (or "
            "--static FILE for the offline page)",
            field="paths",
            value=[],
        )
    try:
        serve(args.paths, host=args.host, port=args.port, open_browser=not args.no_browser)
    except KeyboardInterrupt:
        return 0
    return 0
