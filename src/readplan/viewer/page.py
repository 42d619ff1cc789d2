"""The viewer's one HTML page, assembled from the package's static files (``specs/viewer.md`` §2).

The page is one self-contained file: its CSS and JavaScript are inlined, it loads nothing
from the network, and its Content-Security-Policy says so.  ``readplan view --static`` writes
the offline form (the files view only, no connection allowed at all); the server sends the
served form, whose views fetch their data from the server's ``/api/``.
"""

from __future__ import annotations

import os
from importlib import resources
from typing import Literal

from readplan._internal.atomic import atomic_write

__all__ = ["Mode", "render", "write_static"]

Mode = Literal["static", "served"]

# Order matters: later files use what earlier ones define on ``window.RP``.
_SHARED_SCRIPTS = ("framing.js", "tbl.js", "example.js", "ui.js", "files.js")
_SERVED_SCRIPTS = ("api.js", "views.js", "order.js", "state.js", "app.js")
_CSP = {
    "static": "default-src 'none'; img-src data: blob:; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'",
    "served": "default-src 'none'; img-src 'self' data: blob:; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'; connect-src 'self'",
}


def _static(name: str) -> str:
    return (resources.files("readplan.viewer") / "static" / name).read_text(encoding="utf-8")


def render(mode: Mode) -> str:
    """The page in ``mode``: ``"static"`` (offline file) or ``"served"`` (by the server)."""
    names = _SHARED_SCRIPTS + (_SERVED_SCRIPTS if mode == "served" else ()) + ("boot.js",)
    script = "\n".join(_static(name) for name in names)
    # An inlined script ends at the first "</script"; none of ours may contain one.
    if "</script" in script.lower():
        raise RuntimeError("a viewer script contains '</script' and cannot be inlined")
    page = _static("viewer.html")
    for marker, value in (
        ("@CSP@", _CSP[mode]),
        ("@MODE@", mode),
        ("@HOME@", "#" if mode == "static" else "/"),
        ("@CSS@", _static("viewer.css")),
        ("@JS@", script),
    ):
        page = page.replace(marker, value, 1)
    return page


def write_static(path: str | os.PathLike[str]) -> None:
    """Write the offline page to ``path`` (atomically: a reader sees the old file or the new)."""
    atomic_write(os.fspath(path), render("static").encode("utf-8"))
