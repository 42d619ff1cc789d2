"""The viewer under test: a running server on a loopback port, raw HTTP requests to it, and
a headless Chromium (Debian's, driven by Selenium) reading its pages."""

from __future__ import annotations

import http.client
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from readplan.viewer import make_server
from readplan.viewer.server import ViewerServer
from tests.conftest import DATA

FEATURES_ROOT = DATA / "tfds_features"
FEATURES_DIR = FEATURES_ROOT / "readplan_features" / "1.0.0"
FEATURES_PATH = "readplan_features/1.0.0"
TFRECORD_DIR = DATA / "tfrecord"
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


@contextmanager
def running(paths: Sequence[str], host: str = "127.0.0.1") -> Iterator[ViewerServer]:
    """A viewer server over ``paths`` on a free port, stopped on exit."""
    server = make_server([str(path) for path in paths], host=host, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def request(
    server: ViewerServer,
    target: str,
    *,
    method: str = "GET",
    host: str | None = None,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request; ``host`` overrides the Host header (default: the right one)."""
    address, port = server.server_address[:2]
    connection = http.client.HTTPConnection(str(address), int(port), timeout=30)
    try:
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", server.host_header if host is None else host)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _first(paths: Sequence[str]) -> str | None:
    return next((path for path in paths if shutil.which(path)), None)


def chromium() -> Any:
    """A headless Chromium with its console log kept; skips when it is not installed."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (test extra) missing")
    binary, driver = _first(CHROMIUM), _first(CHROMEDRIVER)
    if binary is None or driver is None:
        pytest.skip(
            "Debian's chromium and chromium-driver are not installed (.ci/run installs them)"
        )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument("--window-size=1280,900")
    options.add_argument("--enable-precise-memory-info")  # performance.memory, unrounded
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))


def wait_for(browser: Any, script: str, timeout: float = 30.0) -> Any:
    """Polls ``script`` (returning a value) until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = browser.execute_script(script)
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def console_errors(browser: Any) -> list[dict[str, Any]]:
    """Console entries at SEVERE level (errors, uncaught exceptions, failed loads)."""
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
