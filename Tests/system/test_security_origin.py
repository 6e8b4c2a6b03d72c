"""Issue 27 item 1: a web page of another site must not drive the bridge, in any mode.

`oa-bridge serve --auth none` on loopback (and with tokens, the default) is attacked the way a browser would: a
WebSocket upgrade and state-changing requests carrying a foreign `Origin`, `Origin: null`, and a page whose host name
was rebound to 127.0.0.1 (DNS rebinding: its `Origin` matches its `Host`, and both are a name that is not the
bridge's). Then real Chromium: a page served from another loopback address (127.0.0.2, its own origin) opens
`new WebSocket("ws://127.0.0.1:PORT/")`, and a page at `http://rebound.example:PORT/app` (Chromium's resolver maps the
name to 127.0.0.1) opens a WebSocket back to its own host; both are refused, while the bridge's own `/app` at
127.0.0.1 still connects and runs `initialize`.

Every loop is bounded; all traffic stays on loopback."""

from __future__ import annotations

import base64
import http.server
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from loopback import BIN

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

CHROMIUM = os.environ.get("OA_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture
def open_bridge(serve_factory):
    return serve_factory("--auth", "none", "--log-level", "info", prefix="oa-sec-origin-")


@pytest.fixture
def token_bridge(serve_factory):
    return serve_factory("--log-level", "info", prefix="oa-sec-origin-tokens-")


def exchange(port: int, raw: bytes, timeout: float = 10.0) -> bytes:
    """Sends `raw` on a fresh connection to 127.0.0.1:port and returns what came back until the peer closed, the
    answer's head was complete after a 101, or `timeout` passed."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        data = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
            if data.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in data:
                break
        return data


def upgrade(port: int, *, host: str | None = None, origin: str | None = None, path: str = "/") -> tuple[int, str]:
    """A WebSocket upgrade with the given `Host` and `Origin`; the status and the body of the answer."""
    key = base64.b64encode(os.urandom(16)).decode()
    head = (f"GET {path} HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if origin is not None:
        head += f"Origin: {origin}\r\n"
    data = exchange(port, (head + "\r\n").encode())
    status_line, _, rest = data.partition(b"\r\n")
    assert status_line, "no answer to the upgrade"
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2].decode(errors="replace")


def post(port: int, path: str, body: bytes, *, host: str | None = None, origin: str | None = None,
         content_type: str = "application/json") -> tuple[int, str]:
    head = (f"POST {path} HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\nConnection: close\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n")
    if origin is not None:
        head += f"Origin: {origin}\r\n"
    data = exchange(port, head.encode() + b"\r\n" + body)
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2].decode(errors="replace")


FOREIGN_ORIGINS = ["https://evil.example", "null", "http://evil.example:9099", "http://127.0.0.2:8000",
                   "https://127.0.0.1.evil.example"]


def test_auth_none_refuses_the_upgrade_of_a_page_of_another_site(open_bridge):
    port = open_bridge.port
    for origin in FOREIGN_ORIGINS:
        status, body = upgrade(port, origin=origin)
        assert status == 403, f"Origin {origin}: {status} {body}"
        assert json.loads(body)["error"] == "forbidden_origin", body
    # Several values in one Origin are refused too.
    status, _ = upgrade(port, origin=f"http://127.0.0.1:{port}, https://evil.example")
    assert status == 403


def test_auth_none_refuses_a_rebound_host_name(open_bridge):
    """DNS rebinding: the page's Origin is its own host, which is not one of the bridge's names."""
    port = open_bridge.port
    for name in ["localhost.evil.example", "evil.example", "127.0.0.1.nip.io"]:
        status, body = upgrade(port, host=f"{name}:{port}", origin=f"http://{name}:{port}")
        assert status == 403, f"Host {name}: {status} {body}"
        assert json.loads(body)["error"] == "forbidden_host", body


def test_auth_none_keeps_native_clients_and_the_bridges_own_pages(open_bridge):
    port = open_bridge.port
    assert upgrade(port)[0] == 101, "a native client (no Origin) is accepted"
    assert upgrade(port, origin=f"http://127.0.0.1:{port}")[0] == 101
    assert upgrade(port, host=f"localhost:{port}", origin=f"http://localhost:{port}")[0] == 101
    # A native client that names the bridge by another DNS name sends no Origin: still accepted.
    assert upgrade(port, host=f"desk.lan:{port}")[0] == 101


def test_tokens_on_refuse_state_changing_requests_of_a_page_of_another_site(token_bridge):
    """With tokens, a cross-site page could still post a guessed pairing token as text/plain (no CORS preflight):
    refused before the route looks at it, and the guess is not counted."""
    port = token_bridge.port
    guess = json.dumps({"pairing_token": "oa_p_guess"}).encode()
    for origin in FOREIGN_ORIGINS:
        status, body = post(port, "/api/auth/exchange", guess, origin=origin, content_type="text/plain")
        assert status == 403, f"Origin {origin}: {status} {body}"
        assert json.loads(body)["error"] == "forbidden_origin", body
    status, body = post(port, "/api/auth/refresh", b'{"refresh_token":"oa_r_x"}',
                        host=f"rebound.example:{port}", origin=f"http://rebound.example:{port}")
    assert (status, json.loads(body)["error"]) == (403, "forbidden_host"), body
    status, body = upgrade(port, host=f"rebound.example:{port}", origin=f"http://rebound.example:{port}")
    assert status == 403, body
    # The bridge's own page and native clients get the usual answers (401 for a wrong token).
    assert post(port, "/api/auth/exchange", guess, origin=f"http://127.0.0.1:{port}")[0] == 401
    assert post(port, "/api/auth/exchange", guess)[0] == 401


class ForeignSite:
    """A page on another loopback origin (http://127.0.0.2:PORT/) that opens a WebSocket to the bridge."""

    def __init__(self, page: bytes):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.url = f"http://127.0.0.2:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# Opens a WebSocket to URL, sends `initialize`, and reports what happened in window.outcome.
PROBE = """
(url) => new Promise((resolve) => {
  const socket = new WebSocket(url);
  const timer = setTimeout(() => resolve("timeout"), 10000);
  socket.onopen = () => socket.send(JSON.stringify({jsonrpc: "2.0", id: 1, method: "initialize",
                                                   params: {protocolVersion: 1, clientCapabilities: {}}}));
  socket.onmessage = (event) => { clearTimeout(timer); resolve("message: " + event.data.slice(0, 200)); socket.close(); };
  socket.onerror = () => { clearTimeout(timer); resolve("error"); };
})
"""


@pytest.fixture
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--host-resolver-rules=MAP rebound.example 127.0.0.1"])
        try:
            yield browser
        finally:
            browser.close()


def test_chromium_page_of_another_loopback_origin_cannot_open_the_bridges_websocket(open_bridge, chromium):
    port = open_bridge.port
    site = ForeignSite(b"<!doctype html><title>another site</title><p>hello</p>")
    try:
        page = chromium.new_page()
        page.goto(site.url)
        assert page.evaluate(PROBE, f"ws://127.0.0.1:{port}/") == "error"
        # DNS rebinding in the browser: a page at http://rebound.example:PORT (the bridge's own /app, the name mapped
        # to 127.0.0.1 by Chromium's resolver) opens a WebSocket to its own origin.
        page.goto(f"http://rebound.example:{port}/app")
        assert page.evaluate(PROBE, f"ws://rebound.example:{port}/") == "error"
        # The bridge's own web app at 127.0.0.1 still connects and runs initialize.
        page.goto(f"http://127.0.0.1:{port}/app")
        outcome = page.evaluate(PROBE, f"ws://127.0.0.1:{port}/")
        assert outcome.startswith("message: ") and '"result"' in outcome, outcome
        page.close()
    finally:
        site.close()
    log = open_bridge.stop()
    assert "forbidden_origin" in log and "forbidden_host" in log, log[-3000:]


def test_the_acp_path_upgrades_with_a_connection_id(open_bridge):
    """ACP's remote-transport RFD: the WebSocket at /acp, its 101 carrying Acp-Connection-Id (a fresh one each)."""
    ids = []
    for _ in range(2):
        key = base64.b64encode(os.urandom(16)).decode()
        head = (f"GET /acp HTTP/1.1\r\nHost: 127.0.0.1:{open_bridge.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        data = exchange(open_bridge.port, head.encode())
        assert data.startswith(b"HTTP/1.1 101"), data[:200]
        fields = dict(line.split(": ", 1) for line in data.split(b"\r\n\r\n")[0].decode().split("\r\n")[1:])
        ids.append({k.lower(): v for k, v in fields.items()}["acp-connection-id"])
    assert len(set(ids)) == 2 and all(len(i) == 36 for i in ids), ids

