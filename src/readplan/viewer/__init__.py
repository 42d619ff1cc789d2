"""The browser viewer (``specs/viewer.md``): an offline page and a local read-only server.

A front end: it imports from the layers below and nothing imports it but the command line.
"""

from readplan.viewer.page import render, write_static
from readplan.viewer.server import make_server, serve

__all__ = ["make_server", "render", "serve", "write_static"]
