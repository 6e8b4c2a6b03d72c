"""TLS session resumption on the bridge's port (issue 32 goal 2): a phone that drops its link gets back in with an
abbreviated handshake. The bridge's BoringSSL context (NIOSSL sets no session options) issues TLS 1.3 session tickets
with its first write after the handshake and keeps TLS 1.2 sessions; clients that keep a session (OpenSSL's
s_client, Python's ssl) resume it, for a plain HTTPS request and for the WebSocket upgrade + `initialize` a phone
makes. The Swift client cannot resume: NIOSSL 2.37 has no API to keep or offer a client session.

Checked with peers that are not the bridge's code: openssl s_client (-sess_out / -sess_in, "Reused") and Python's ssl
(`SSLSocket.session`, `session_reused`)."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import tempfile
from pathlib import Path

import pytest

from loopback import upgrade_request
from tls_support import unverified_context

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "resume", "version": "0"}}}


@pytest.fixture(scope="module")
def bridge(module_serve_factory):
    return module_serve_factory("--auth", "none", "--log-level", "error", prefix="oa-resume-")


def https_get(port: int, context: ssl.SSLContext, session: ssl.SSLSession | None = None) -> tuple[bool, ssl.SSLSession, str]:
    """One request on a new TLS connection (offering `session`); whether the handshake resumed, the session to keep
    (read after the answer, which carries the TLS 1.3 tickets), and the status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
            tls.sendall(b"GET /app HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
            return tls.session_reused, tls.session, answer.split(b"\r\n", 1)[0].decode()


def text_frame(payload: bytes) -> bytes:
    """One masked client text frame (RFC 6455), of any length under 64 KiB."""
    mask = os.urandom(4)
    size = bytes([0x80 | len(payload)]) if len(payload) < 126 else bytes([0x80 | 126]) + len(payload).to_bytes(2, "big")
    return bytes([0x81]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def read_frame(tls: ssl.SSLSocket, buffered: bytes) -> tuple[dict, bytes]:
    """The next server text frame (unmasked, short) after `buffered`, as JSON, and the bytes left over."""
    data = buffered
    while True:
        if len(data) >= 2:
            length, header = data[1] & 0x7F, 2
            if length == 126 and len(data) >= 4:
                length, header = int.from_bytes(data[2:4], "big"), 4
            if length != 126 and len(data) >= header + length:
                return json.loads(data[header:header + length]), data[header + length:]
        chunk = tls.recv(65536)
        assert chunk, "the bridge closed the connection"
        data += chunk


def websocket_initialize(port: int, context: ssl.SSLContext, session: ssl.SSLSession | None) -> tuple[bool, ssl.SSLSession, dict]:
    """A phone's reconnect: TLS (offering `session`), upgrade, `initialize`; whether it resumed, the session, the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
            tls.sendall(upgrade_request(f"127.0.0.1:{port}"))
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = tls.recv(65536)
                assert chunk, "no answer to the upgrade"
                head += chunk
            status, rest = head.split(b"\r\n\r\n", 1)
            assert status.startswith(b"HTTP/1.1 101"), status
            tls.sendall(text_frame(json.dumps(INITIALIZE).encode()))
            answer, _ = read_frame(tls, rest)
            return tls.session_reused, tls.session, answer


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["tls1.3", "tls1.2"])
def test_a_client_that_keeps_its_session_resumes_it(bridge, version):
    context = unverified_context(minimum=version, maximum=version)
    reused, session, status = https_get(bridge.port, context)
    assert not reused and status.startswith("HTTP/1.1 "), status
    assert session is not None and (version == ssl.TLSVersion.TLSv1_2 or session.has_ticket), "no session ticket issued"
    for _ in range(2):
        reused, session, status = https_get(bridge.port, context, session)
        assert reused, f"{version.name}: the bridge did not resume the session"
        assert status.startswith("HTTP/1.1 "), status


def test_a_phone_reconnecting_over_wss_resumes_and_is_answered(bridge):
    context = unverified_context(minimum=ssl.TLSVersion.TLSv1_3)
    reused, session, answer = websocket_initialize(bridge.port, context, None)
    assert not reused and "result" in answer, answer
    reused, _, answer = websocket_initialize(bridge.port, context, session)
    assert reused, "the WebSocket reconnect did not resume the TLS session"
    assert answer.get("id") == 0 and "result" in answer, answer


def test_openssl_s_client_reports_the_session_reused(bridge):
    session_file = Path(tempfile.mkdtemp(prefix="oa-resume-")) / "session.pem"
    request = b"GET /app HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"

    def s_client(*extra: str) -> str:
        return subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{bridge.port}", "-servername", "localhost",
                               "-tls1_3", "-ign_eof", *extra], input=request, capture_output=True, timeout=20).stdout.decode()

    first = s_client("-sess_out", str(session_file))
    assert "New, TLSv1.3" in first and "HTTP/1.1 " in first, first[-2000:]
    assert session_file.exists(), "s_client got no session ticket to keep"
    second = s_client("-sess_in", str(session_file))
    assert "Reused, TLSv1.3" in second, second[-2000:]
