"""The viewer server's rules (specs/viewer.md §5), each tested with raw HTTP requests:
loopback by default, a token on every request, the Host header, paths confined to the
command line's roots, read-only, bounded requests."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from readplan.cli.main import main
from readplan.viewer.server import MAX_BODY_BYTES, ViewerServer
from tests.viewer_harness import FEATURES_PATH, FEATURES_ROOT, TFRECORD_DIR, request, running


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A served folder with a symbolic link out of it, and a secret beside it."""
    base = tmp_path_factory.mktemp("served")
    (base / "secret.txt").write_text("not to be served")
    served = base / "served"
    served.mkdir()
    (served / "data.tfrecord").write_bytes((TFRECORD_DIR / "examples.tfrecord").read_bytes())
    os.symlink(base / "secret.txt", served / "escape.tfrecord")
    os.symlink(base, served / "up")
    return served


@pytest.fixture(scope="module")
def server(tree: Path) -> Iterator[ViewerServer]:
    with running([str(FEATURES_ROOT), str(tree)]) as viewer:
        yield viewer


def api(server: ViewerServer, target: str, **kwargs: object) -> tuple[int, dict[str, object]]:
    joiner = "&" if "?" in target else "?"
    status, _, body = request(server, f"{target}{joiner}token={server.token}", **kwargs)  # type: ignore[arg-type]
    return status, json.loads(body)


def test_binds_loopback_by_default(server: ViewerServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    assert server.url.startswith(f"http://127.0.0.1:{server.server_address[1]}/?token=")


def test_warns_when_not_loopback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve(host="0.0.0.0")`` warns; the test binds loopback all the same (no socket is
    opened on other interfaces) and does not run the server."""
    from readplan.viewer import server as module

    asked: list[str] = []
    real = module.make_server

    def loopback_server(paths: list[str], host: str, port: int) -> ViewerServer:
        asked.append(host)
        return real(paths, "127.0.0.1", port)

    monkeypatch.setattr(module, "make_server", loopback_server)
    monkeypatch.setattr(module.ViewerServer, "serve_forever", lambda self: None)
    module.serve([str(FEATURES_ROOT)], host="0.0.0.0", port=0, open_browser=False)
    printed = capsys.readouterr()
    assert "not a loopback address" in printed.err
    assert "readplan view: serving 1 path(s) at http://127.0.0.1:" in printed.out
    assert "/?token=" in printed.out
    assert asked == ["0.0.0.0"]
    module.serve([str(FEATURES_ROOT)], host="127.0.0.1", port=0, open_browser=False)
    assert "warning" not in capsys.readouterr().err


def test_token_required(server: ViewerServer) -> None:
    for target in ("/", "/api/roots", "/dataset?root=0", f"/?token={server.token[:-1]}x"):
        status, _, body = request(server, target)
        assert status == 403, target
        assert b"token" in body
        assert b"readplan_features" not in body


def test_token_in_url_sets_a_cookie_that_then_suffices(server: ViewerServer) -> None:
    status, headers, body = request(server, f"/?token={server.token}")
    assert status == 200
    assert b"<!doctype html>" in body
    cookie = headers["Set-Cookie"]
    name = f"readplan_view_token_{server.server_address[1]}"
    assert cookie.startswith(f"{name}={server.token};")
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    status, _, body = request(server, "/api/roots", headers={"Cookie": f"{name}={server.token}"})
    assert status == 200
    assert b"readplan_features" in body
    status, _, _ = request(server, "/api/roots", headers={"Cookie": f"{name}=wrong"})
    assert status == 403


@pytest.mark.parametrize(
    "host", ["evil.example:80", "localhost", "127.0.0.1", "127.0.0.1:1", "", "LOCALHOST:1"]
)
def test_host_header_must_be_the_bound_address(server: ViewerServer, host: str) -> None:
    status, _, body = request(server, f"/api/roots?token={server.token}", host=host)
    assert status == 421
    assert b"Host header" in body


def test_missing_host_header_refused(server: ViewerServer) -> None:
    address, port = server.server_address[:2]
    with socket.create_connection((str(address), int(port)), timeout=10) as sock:
        sock.sendall(f"GET /api/roots?token={server.token} HTTP/1.0\r\n\r\n".encode())
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 421")


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "sub/../../secret.txt",
        "/etc/passwd",
        "./data.tfrecord",
        "a\\..\\secret.txt",
        "c:/x",
        "escape.tfrecord",
        "up/secret.txt",
    ],
)
def test_paths_stay_under_the_roots(server: ViewerServer, path: str) -> None:
    status, document = api(server, f"/api/inspect?root=1&path={path}")
    assert status == 403, document
    assert "secret" not in json.dumps(document.get("summary", ""))


def test_percent_encoded_escape_refused(server: ViewerServer) -> None:
    status, _ = api(server, "/api/inspect?root=1&path=%2E%2E%2Fsecret.txt")
    assert status == 403


def test_only_given_roots(server: ViewerServer) -> None:
    status, document = api(server, "/api/inspect?root=2")
    assert status == 400
    assert "0..1" in str(document["error"])


def test_a_file_under_a_root_is_served(server: ViewerServer) -> None:
    for _ in range(200):
        status, document = api(server, "/api/inspect?root=1&path=data.tfrecord")
        assert status == 200
        if document["status"] == "done":
            break
    summary = document["summary"]
    assert isinstance(summary, dict)
    assert summary["records"] == 40


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_read_only_methods(server: ViewerServer, method: str) -> None:
    status, _, _ = request(server, f"/api/roots?token={server.token}", method=method, body=b"x")
    assert status == 405


def test_post_only_for_states_and_bounded(server: ViewerServer) -> None:
    status, _ = api(server, "/api/roots", method="POST", body=b"{}")
    assert status == 405
    address, port = server.server_address[:2]
    with socket.create_connection((str(address), int(port)), timeout=10) as sock:
        head = (
            f"POST /api/state?token={server.token} HTTP/1.1\r\nHost: {server.host_header}\r\n"
            f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
        )
        sock.sendall(head.encode())
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413")


def test_bounded_work_per_request(server: ViewerServer) -> None:
    status, document = api(server, f"/api/examples?root=0&path={FEATURES_PATH}&count=100000")
    assert status == 400
    assert "0..64" in str(document["error"])
    status, document = api(server, f"/api/order?root=0&path={FEATURES_PATH}&batch_size=5000")
    assert status == 400
    assert "1..1024" in str(document["error"])
    status, _, _ = request(server, "/api/roots?token=" + server.token + "&x=" + "a" * 9000)
    assert status == 414


def test_nothing_written(server: ViewerServer, tree: Path) -> None:
    before = sorted(p.name for p in tree.iterdir())
    features_before = sorted(p.name for p in (FEATURES_ROOT / FEATURES_PATH).iterdir())
    api(server, f"/api/examples?root=0&path={FEATURES_PATH}&count=4")
    api(server, f"/api/order?root=0&path={FEATURES_PATH}&batch_size=4")
    api(server, "/api/inspect?root=1&path=data.tfrecord")
    assert sorted(p.name for p in tree.iterdir()) == before
    assert sorted(p.name for p in (FEATURES_ROOT / FEATURES_PATH).iterdir()) == features_before


def test_security_headers(server: ViewerServer) -> None:
    _, headers, body = request(server, f"/?token={server.token}")
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert b"connect-src 'self'" in body


def test_cli_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view"]) == 2
    assert "give one or more" in capsys.readouterr().err
    assert main(["view", "--static", "x.html", str(FEATURES_ROOT)]) == 2
    assert main(["view", "--no-browser", str(FEATURES_ROOT / "missing")]) == 2
