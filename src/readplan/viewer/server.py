"""The viewer's local HTTP server (``specs/viewer.md`` §4-§5).

A :class:`http.server.ThreadingHTTPServer` serving the one page (every view is a URL of its
own, the page routes by path) and a JSON API under ``/api/``.  Every request must pass the
rules of §5 before anything is read: the ``Host`` header equals the bound address and port
(no DNS rebinding), the random token comes with it (in the URL, or in the cookie the first
page load sets), the method is ``GET``/``HEAD`` (``POST`` only for the endpoints that take
an uploaded state, whose body is bounded).  Nothing is ever written on disk.
"""

from __future__ import annotations

import hmac
import http.server
import ipaddress
import json
import secrets
import sys
import threading
import webbrowser
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from readplan.errors import ReadplanError
from readplan.viewer import api
from readplan.viewer.page import render
from readplan.viewer.roots import Root, classify

__all__ = ["COOKIE", "MAX_BODY_BYTES", "ViewerServer", "make_server", "serve"]

COOKIE = "readplan_view_token"
"""The cookie's name is this plus ``_PORT``: browsers keep cookies per host, not per port,
so two viewers on one machine must not overwrite each other's token."""
MAX_BODY_BYTES = 4 << 20
_MAX_TARGET_BYTES = 8192
_PAGES = ("/", "/dataset", "/gallery", "/order", "/state", "/file", "/files")
_SECURITY_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)


class ViewerServer(http.server.ThreadingHTTPServer):
    """The server, with what every request is checked against."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], roots: Sequence[Root], token: str) -> None:
        super().__init__(address, _Handler)
        self.roots = tuple(roots)
        self.token = token
        self.host_header = _host_header(address[0], self.server_address[1])
        self.cookie = f"{COOKIE}_{self.server_address[1]}"
        self.api = api.Api(self.roots)

    @property
    def url(self) -> str:
        """The URL to open: the start page with the token."""
        return f"http://{self.host_header}/?token={quote(self.token)}"


def _host_header(host: str, port: int) -> str:
    """The ``Host`` header a browser sends for the bound address."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"{host}:{port}"
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "readplan-view"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged: their URLs carry the token."""

    # -- checks -----------------------------------------------------------------------
    def _refusal(self) -> tuple[HTTPStatus, str] | None:
        if len(self.path) > _MAX_TARGET_BYTES:
            return HTTPStatus.REQUEST_URI_TOO_LONG, "request target too long"
        if self.headers.get("Host") != self.server.host_header:
            return HTTPStatus.MISDIRECTED_REQUEST, (
                f"Host header must be {self.server.host_header} (the address the viewer is "
                "bound to)"
            )
        if not self._token_ok():
            return HTTPStatus.FORBIDDEN, "missing or wrong token: open the URL the viewer printed"
        return None

    def _token_ok(self) -> bool:
        given = parse_qs(urlsplit(self.path).query).get("token", [""])[0]
        if not given:
            given = _cookie(self.headers.get("Cookie", ""), self.server.cookie)
        return hmac.compare_digest(given.encode("utf-8"), self.server.token.encode("utf-8"))

    # -- methods ----------------------------------------------------------------------
    def do_GET(self) -> None:
        self._answer(None)

    def do_HEAD(self) -> None:
        self._answer(None, head=True)

    def do_POST(self) -> None:
        # The body is never read before the request is known to come from the page.
        self.close_connection = True
        refusal = self._refusal()
        length = self.headers.get("Content-Length", "")
        if refusal is not None:
            self._send_error(*refusal)
        elif not length.isdigit():
            self._send_error(HTTPStatus.LENGTH_REQUIRED, "a POST needs a Content-Length")
        elif int(length) > MAX_BODY_BYTES:
            self._send_error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the body is {int(length)} bytes; at most {MAX_BODY_BYTES} are accepted",
            )
        else:
            self._answer(self.rfile.read(int(length)))

    def _refuse_method(self) -> None:
        self._send_error(HTTPStatus.METHOD_NOT_ALLOWED, "the viewer is read-only")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815

    def _answer(self, body: bytes | None, head: bool = False) -> None:
        refusal = self._refusal()
        if refusal is not None:
            self._send_error(*refusal)
            return
        target = urlsplit(self.path)
        route = target.path
        if route.startswith("/api/"):
            self._api(route[len("/api/") :], parse_qs(target.query), body, head)
        elif body is None and (route in _PAGES or route.startswith(_PAGES[1:])):
            self._page(head)
        else:
            self._send_error(HTTPStatus.NOT_FOUND, f"no such page or endpoint: {route}")

    def _page(self, head: bool) -> None:
        data = render("served").encode("utf-8")
        cookie = f"{self.server.cookie}={self.server.token}; Path=/; HttpOnly; SameSite=Strict"
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", data, head, [("Set-Cookie", cookie)])

    def _api(self, name: str, query: dict[str, list[str]], body: bytes | None, head: bool) -> None:
        params = {key: values[-1] for key, values in query.items() if key != "token"}
        try:
            status, document = HTTPStatus.OK, self.server.api.call(name, params, body)
        except api.ApiError as err:
            status, document = err.status, {"error": str(err)}
        except (ReadplanError, OSError, ValueError, KeyError, TypeError) as err:
            status, document = HTTPStatus.UNPROCESSABLE_ENTITY, {"error": _message(err)}
        data = json.dumps(document, allow_nan=False, default=str).encode("utf-8")
        self._send(status, "application/json", data, head)

    # -- output -----------------------------------------------------------------------
    def _send_error(self, status: HTTPStatus, message: str) -> None:
        data = json.dumps({"error": message}).encode("utf-8")
        self._send(status, "application/json", data, False)

    def _send(
        self,
        status: HTTPStatus,
        kind: str,
        data: bytes,
        head: bool,
        extra: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (*_SECURITY_HEADERS, *extra):
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not head:
            self.wfile.write(data)


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def _message(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return f"{err.filename or ''}: {err.strerror}".lstrip(": ")
    return str(err)


def make_server(paths: Sequence[str], host: str = "127.0.0.1", port: int = 0) -> ViewerServer:
    """A server over ``paths`` bound to ``host:port`` (``0``: any free port), not yet running."""
    roots = [classify(number, path) for number, path in enumerate(paths)]
    return ViewerServer((host, port), roots, secrets.token_urlsafe(24))


def serve(
    paths: Sequence[str], *, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True
) -> None:
    """Serve ``paths`` until interrupted; prints the URL, opens a browser unless told not to."""
    server = make_server(paths, host, port)
    if not is_loopback(host):
        print(
            f"readplan view: warning: listening on {host}, which is not a loopback address: "
            "anyone who can reach it and has the URL can read the served paths",
            file=sys.stderr,
        )
    print(f"readplan view: serving {len(paths)} path(s) at {server.url}", flush=True)
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(server.url,), daemon=True).start()
    try:
        server.serve_forever()
    finally:
        server.server_close()
