"""HTTP/2 on the bridge's one port (issue 28 item 1): ALPN `h2` on the TLS side, h2c with prior knowledge (the
`PRI * HTTP/2.0` preface) in clear, every route per stream, and the edges of HTTP/1.1 kept per stream.

Peers: curl (`--http2` over TLS held to the pin with `--pinnedpubkey`, `--http2-prior-knowledge` in clear), httpx with
`http2=True` (the `h2` package) driving the Streamable HTTP flow at `/acp` (initialize → 200 with `Acp-Connection-Id`,
POST → 202, the answer on the SSE GET of the same HTTP/2 connection, DELETE), the official SDK's `acp.http` client
over an httpx client that speaks only HTTP/2, and the `h2` package's own connection for what clients never send
(more streams than SETTINGS allow, a CONNECT, a stream whose window is never opened again).

Edges checked: `Origin` (another site: 403) and `Host` (`:authority`; a loopback-only route: 403) per stream; a
token in clear from another machine is still refused (403 `tls_required`) on an h2c stream, and the
same request over TLS is judged by its token (the stream's connection is TLS); a stream without a token gets 401;
`SETTINGS_MAX_CONCURRENT_STREAMS` is sent and enforced (a client that opens more loses its connection, GOAWAY
PROTOCOL_ERROR; a place freed is usable again); no `SETTINGS_ENABLE_CONNECT_PROTOCOL` (the WebSocket stays on
HTTP/1.1) and a CONNECT gets 501; an SSE stream whose client stops reading (its window never opened again) is cut off
by the hub's bound for slow clients, as on HTTP/1.1, and its stream ended. (Left shut, the stream is reset by
StreamableHTTPStallHandler 20 s later, as an HTTP/1.1 connection is closed: seen by hand at 20.2 s, too long for CI.)"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from loopback import BIN, REPO, Serve, listening_port
from test_acp_http import HTTPBridge, check_whole_flow, open_session, read_events, whole_flow
from tls_support import unverified_context

httpx = pytest.importorskip("httpx")
h2_connection = pytest.importorskip("h2.connection")
import h2.config  # noqa: E402
import h2.events  # noqa: E402
import h2.exceptions  # noqa: E402
import h2.settings  # noqa: E402
from h2.errors import ErrorCodes  # noqa: E402

FLOOD = Path(REPO) / "bench" / "flood_agent.py"


@pytest.fixture(scope="module")
def bridge():
    served = HTTPBridge()
    try:
        with httpx.Client(timeout=5) as client:
            served.pin = client.get(f"{served.base_url}/api/pair/info").json()["pin"]
        yield served
    finally:
        served.stop()


def curl(*args: str) -> tuple[int, int, str, str]:
    """curl's exit status, the HTTP status, the HTTP version it used, and the body."""
    with tempfile.NamedTemporaryFile() as body:
        done = subprocess.run(["curl", "-sS", "--max-time", "10", "-o", body.name, "-w", "%{http_code} %{http_version}",
                               *args], capture_output=True, text=True, timeout=20)
        status, _, version = done.stdout.partition(" ")
        return done.returncode, int(status or 0), version, Path(body.name).read_text(errors="replace")


def test_curl_gets_every_kind_of_route_over_http2_with_the_pin_and_over_h2c(bridge):
    token = bridge.pair("curl-h2")
    pinned = ["--http2", "-k", "--pinnedpubkey", bridge.pin.replace("sha256/", "sha256//")]
    tls = f"https://127.0.0.1:{bridge.port}"
    clear = f"http://127.0.0.1:{bridge.port}"
    for base, options in ((tls, pinned), (clear, ["--http2-prior-knowledge"])):
        code, status, version, body = curl(*options, f"{base}/api/health")
        assert (code, status, version) == (0, 200, "2"), (base, code, status, version, body)
        assert json.loads(body) == {"status": "ok"}
        code, status, version, body = curl(*options, f"{base}/app")
        assert (code, status, version) == (0, 200, "2") and "<html" in body.lower(), (base, status, version)
        # A protected route: 401 without a token, 200 with one (loopback may send it in clear).
        code, status, version, body = curl(*options, f"{base}/api/status")
        assert (status, version) == (401, "2"), (base, status, body)
        code, status, version, body = curl(*options, "-H", f"Authorization: Bearer {token}", f"{base}/api/status")
        assert (status, version) == (200, "2"), (base, status, body)
        # Path normalisation holds per stream: another spelling of the protected path is still protected.
        code, status, version, body = curl(*options, "--path-as-is", f"{base}//api/./status")
        assert status == 401, (base, status, body)
        # The Streamable HTTP endpoint without a token: 401 as on HTTP/1.1.
        code, status, version, body = curl(*options, "-X", "POST", "-H", "Content-Type: application/json",
                                           "--data", '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}',
                                           f"{base}/acp")
        assert (status, version) == (401, "2"), (base, status, body)
        # Origin and Host checks: a web page of another site, and a loopback-only route asked for another host
        # (curl sends the Host header as :authority).
        code, status, version, body = curl(*options, "-X", "POST", "-H", "Origin: https://evil.example", "-H",
                                           "Content-Type: application/json", "--data", "{}", f"{base}/api/auth/refresh")
        assert (status, version) == (403, "2") and json.loads(body)["error"] == "forbidden_origin", (base, body)
        code, status, version, body = curl(*options, "-H", "Host: evil.example", f"{base}/metrics")
        assert (status, version) == (403, "2") and json.loads(body)["error"] == "loopback_only", (base, body)
    # The pin is what curl holds the connection to: another pin fails the handshake (curl's exit 90).
    code, _, _, _ = curl("--http2", "-k", "--pinnedpubkey", "sha256//" + "A" * 43 + "=", f"{tls}/api/health")
    assert code == 90
    # A client that offers only HTTP/1.1 still gets it on the same port.
    code, status, version, _ = curl("--http1.1", "-k", f"{tls}/api/health")
    assert (status, version) == (200, "1.1")


def streamable_flow(client, url: str, token: str) -> list[str]:
    """initialize, POST, the answer on the SSE GET (open while the POST goes out on the same connection), DELETE;
    returns the HTTP versions httpx used."""
    versions = []
    answer = client.post(url, headers={"Authorization": f"Bearer {token}"}, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    assert answer.status_code == 200 and answer.json()["result"]["protocolVersion"] == 1, answer.text
    versions.append(answer.http_version)
    connection = answer.headers["Acp-Connection-Id"]
    headers = {"Authorization": f"Bearer {token}", "Acp-Connection-Id": connection}
    with client.stream("GET", url, headers={**headers, "Accept": "text/event-stream"}) as stream:
        assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
        versions.append(stream.http_version)
        posted = client.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 7, "method": "_oa/ping", "params": {}})
        assert posted.status_code == 202, posted.text
        versions.append(posted.http_version)
        events = read_events(stream, 1)
    assert [data for _, data in events] == [{"jsonrpc": "2.0", "id": 7, "result": {}}]
    deleted = client.delete(url, headers=headers)
    assert deleted.status_code == 202
    versions.append(deleted.http_version)
    gone = client.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 8, "method": "_oa/ping", "params": {}})
    assert gone.status_code == 404
    return versions


def test_httpx_runs_the_streamable_http_flow_over_h2_and_h2c(bridge):
    token = bridge.pair("httpx-h2")
    context = unverified_context()
    context.set_alpn_protocols(["h2"])
    with httpx.Client(http2=True, verify=context, timeout=15) as client:
        versions = streamable_flow(client, f"https://127.0.0.1:{bridge.port}/acp", token)
    assert set(versions) == {"HTTP/2"}, versions
    with httpx.Client(http1=False, http2=True, timeout=15) as client:
        versions = streamable_flow(client, f"http://127.0.0.1:{bridge.port}/acp", token)
    assert set(versions) == {"HTTP/2"}, versions


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_the_sdk_http_client_runs_the_whole_flow_over_http2(bridge, scheme):
    """The SDK's `acp.http` transport on an httpx client that speaks only HTTP/2 (ALPN `h2` alone over TLS; h2c with
    prior knowledge in clear): initialize, new, permissions, cancel, load and resume from other connections."""
    token = bridge.pair(f"sdk-h2-{scheme}")
    versions: list[str] = []

    async def record(response):
        versions.append(response.http_version)

    if scheme == "https":
        context = unverified_context()
        context.set_alpn_protocols(["h2"])
        options = {"verify": context, "http2": True}
    else:
        options = {"http1": False, "http2": True}
    url = f"{scheme}://127.0.0.1:{bridge.port}/acp"
    result = asyncio.run(asyncio.wait_for(whole_flow(
        url, token, str(bridge.workspace), event_hooks={"response": [record]}, **options), 120))
    check_whole_flow(result)
    assert len(versions) >= 10 and set(versions) == {"HTTP/2"}, versions


class H2:
    """A client HTTP/2 connection by the `h2` package over a plain socket (h2c with prior knowledge)."""

    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.conn = h2_connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.events: list = []
        self.host = f"{host}:{port}"

    def pump(self, until, timeout: float = 10.0) -> None:
        """Reads frames until `until()` holds (or fails after `timeout`)."""
        deadline = time.monotonic() + timeout
        while not until():
            assert time.monotonic() < deadline, f"not within {timeout} s: {self.events[-10:]}"
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            data = self.sock.recv(65536)
            assert data, f"the bridge closed the connection: {self.events[-10:]}"
            try:
                self.events += self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                # Frames after the bridge's GOAWAY (answers of streams already open): the connection is over.
                assert self.terminated() is not None, self.events[-10:]
                return
            self.sock.sendall(self.conn.data_to_send())

    def drain(self, quiet: float = 0.3) -> None:
        """Reads what has arrived, until nothing more comes for `quiet` seconds (window updates are not sent)."""
        while True:
            self.sock.settimeout(quiet)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return
            if not data:
                return
            self.events += self.conn.receive_data(data)

    def request(self, method: str, path: str, headers: dict | None = None, end: bool = True) -> int:
        stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream, [(":method", method), (":scheme", "http"), (":authority", self.host),
                                        (":path", path), *(headers or {}).items()], end_stream=end)
        self.sock.sendall(self.conn.data_to_send())
        return stream

    def status(self, stream: int) -> int | None:
        for event in self.events:
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                return int(dict(event.headers)[":status"])
        return None

    def reset(self, stream: int):
        return next((e.error_code for e in self.events if isinstance(e, h2.events.StreamReset) and e.stream_id == stream), None)

    def body(self, stream: int) -> bytes:
        return b"".join(e.data for e in self.events if isinstance(e, h2.events.DataReceived) and e.stream_id == stream)

    def ended(self, stream: int) -> bool:
        return any(isinstance(e, h2.events.StreamEnded) and e.stream_id == stream for e in self.events)

    def terminated(self):
        """The error code of the bridge's GOAWAY, if one came."""
        return next((e.error_code for e in self.events if isinstance(e, h2.events.ConnectionTerminated)), None)

    def close(self):
        self.sock.close()


def test_settings_bound_the_streams_and_connect_stays_on_http1(bridge):
    client = H2(bridge.port)
    try:
        client.pump(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in client.events))
        settings = next(e for e in client.events if isinstance(e, h2.events.RemoteSettingsChanged)).changed_settings
        limit = settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS].new_value
        assert limit == 32
        # No RFC 8441 (SETTINGS_ENABLE_CONNECT_PROTOCOL): a WebSocket is opened over HTTP/1.1.
        assert h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL not in settings
        # `limit` requests whose bodies never come hold their streams open; ending one frees its place.
        held = [client.request("POST", "/api/health", {"content-type": "application/json"}, end=False) for _ in range(limit)]
        client.pump(lambda: all(client.status(stream) == 405 for stream in held))
        client.conn.end_stream(held[0])
        client.sock.sendall(client.conn.data_to_send())
        after = client.request("GET", "/api/health")
        client.pump(lambda: client.ended(after))
        assert client.status(after) == 200 and json.loads(client.body(after)) == {"status": "ok"}
        # CONNECT (what an RFC 8441 WebSocket would send) is refused with a clear answer.
        connect = client.conn.get_next_available_stream_id()
        client.conn.send_headers(connect, [(":method", "CONNECT"), (":authority", client.host)], end_stream=False)
        client.sock.sendall(client.conn.data_to_send())
        client.pump(lambda: client.status(connect) is not None)
        client.pump(lambda: client.ended(connect) or client.reset(connect) is not None)
        assert client.status(connect) == 501 and json.loads(client.body(connect))["error"] == "websocket_needs_http1"
    finally:
        client.close()
    # A client that opens more streams than the SETTINGS allow loses the connection (NIOHTTP2: GOAWAY with
    # PROTOCOL_ERROR), not the bridge a place: the h2 package keeps to the limit itself, so it is told a larger one.
    greedy = H2(bridge.port)
    try:
        greedy.pump(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in greedy.events))
        held = [greedy.request("GET", "/api/health", end=False) for _ in range(limit)]
        greedy.conn.remote_settings._settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS].appendleft(1000)  # noqa: SLF001
        greedy.request("GET", "/api/health")
        greedy.pump(lambda: greedy.terminated() is not None)
        assert greedy.terminated() == ErrorCodes.PROTOCOL_ERROR
    finally:
        greedy.close()
    code, status, version, _ = curl("--http2-prior-knowledge", f"http://127.0.0.1:{bridge.port}/api/health")
    assert (status, version) == (200, "2")


def non_loopback_address() -> str | None:
    """An IPv4 address of this machine that is not loopback (the bridge binds it; the test connects from it)."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        address = line.split()[3].split("/")[0]
        if not address.startswith("127."):
            return address
    return None


def test_a_token_in_clear_from_another_machine_is_refused_on_h2c_and_judged_by_its_token_over_tls():
    address = non_loopback_address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    state = Path(tempfile.mkdtemp(prefix="oa-acp-h2-lan-"))
    log_path = state / "serve.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([BIN, "serve", "--discovery", "off", "--host", address, "--port", "0",
                                 "--state-dir", str(state / "state")], stdout=subprocess.DEVNULL, stderr=log)
    try:
        port = listening_port(proc, log=log_path)
        base = f"http://{address}:{port}"
        deadline = time.monotonic() + 15
        while curl("--http1.1", f"{base}/api/health")[1] != 200:
            assert time.monotonic() < deadline and proc.poll() is None, log_path.read_text(errors="replace")[-2000:]
            time.sleep(0.1)
        # Over h2c from a non-loopback address (the machine's own, so the peer is not loopback): refused before the
        # token is looked at, as on HTTP/1.1.
        code, status, version, body = curl("--http2-prior-knowledge", "-H", "Authorization: Bearer not-a-token",
                                           f"{base}/api/status")
        assert (status, version) == (403, "2") and json.loads(body)["error"] == "tls_required", body
        code, status, version, body = curl("--http2-prior-knowledge", "-X", "POST", "-H", "Content-Type: application/json",
                                           "--data", '{"pairing_token":"x","device_name":"y"}', f"{base}/api/auth/exchange")
        assert (status, version) == (403, "2"), body
        code, status, version, body = curl("--http1.1", "-H", "Authorization: Bearer not-a-token", f"{base}/api/status")
        assert (status, version) == (403, "1.1"), body
        # The same request over TLS (ALPN h2) is judged by its token: the stream's connection is TLS.
        code, status, version, body = curl("--http2", "-k", "-H", "Authorization: Bearer not-a-token",
                                           f"https://{address}:{port}/api/status")
        assert (status, version) == (401, "2"), body
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_an_sse_stream_whose_client_stops_reading_is_cut_off_and_ended():
    """The client reads the connection but never opens the stream's window again (no WINDOW_UPDATE): the bridge's
    writes to that stream stall, the hub cuts the connection off as it does on HTTP/1.1, and the stream ends."""
    served = Serve("--auth", "none", "--agent", f"{sys.executable} {FLOOD}", prefix="oa-acp-h2-flood-",
                   env={"FLOOD_COUNT": "20000", "FLOOD_PAD": "100"})
    client = None
    try:
        url = f"{served.base_url}/acp"
        with httpx.Client(timeout=15) as http:
            connection, session = open_session(http, url)
            headers = {"Acp-Connection-Id": connection}
            client = H2(served.port)
            sse = client.request("GET", "/acp", {"accept": "text/event-stream", "acp-connection-id": connection,
                                                  "acp-session-id": session})
            client.pump(lambda: client.status(sse) is not None)
            assert client.status(sse) == 200
            started = time.monotonic()
            assert http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
                "sessionId": session, "prompt": [{"type": "text", "text": "flood"}]}},
                headers={**headers, "Acp-Session-Id": session}).status_code == 202
            # The stream's window (65,535 bytes) fills and is not opened again: the hub cuts the connection off as
            # it does a WebSocket or an HTTP/1.1 stream that stops reading (10,000 updates behind, a write waiting 5 s).
            deadline = time.monotonic() + 90  # a bound for a loaded machine; about 6 s on an idle one
            while http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "_oa/ping", "params": {}},
                            headers=headers).status_code != 404:
                assert time.monotonic() < deadline, "the connection whose stream never read was not cut off"
                time.sleep(0.3)
            cut_off = time.monotonic() - started
            # The stream is ended either way: reset by StreamableHTTPStallHandler once it stayed unwritable for 20 s
            # (as an HTTP/1.1 connection is closed; on a loaded machine that can come before the hub's cut-off), or,
            # when the window opens again, ended by the bridge once what the writer had in hand went out.
            client.drain()
            if client.reset(sse) is None:
                client.conn.increment_flow_control_window(2**31 - 1 - 65535)
                client.conn.increment_flow_control_window(2**31 - 1 - 65535, stream_id=sse)
                client.sock.sendall(client.conn.data_to_send())
                client.pump(lambda: client.ended(sse) or client.reset(sse) is not None, timeout=30)
            assert client.ended(sse) or client.reset(sse) == ErrorCodes.CANCEL, client.events[-5:]
            print(f"h2 stream that stopped reading: cut off after {cut_off:.1f} s")
    finally:
        if client is not None:
            client.close()
        log = served.stop()
    assert "disconnecting it" in log, log[-3000:]


def test_a_connection_refused_at_admission_gets_its_503_over_http1_even_when_it_offers_h2():
    """A connection the bridge has no place for is answered `503` and closed; TLS offers it only ALPN `http/1.1`
    (an answer in HTTP/1.1 to a client that chose `h2` would be garbage to it), so curl --http2 reads the 503."""
    served = Serve("--max-pending-per-address", "1", prefix="oa-acp-h2-busy-")
    holder = None
    try:
        # One HTTP/2 connection holds the address's only place for as long as it is open (once the bridge has
        # given back the place of the health check that saw it start: on a busy machine that may take a moment).
        deadline = time.monotonic() + 10
        while True:
            holder = H2(served.port)
            try:
                holder.pump(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in holder.events))
                break
            except AssertionError:
                holder.close()
                assert time.monotonic() < deadline, "no place for the holder"
                time.sleep(0.2)
        code, status, version, body = curl("--http2", "-k", f"https://127.0.0.1:{served.port}/api/health")
        assert (status, version) == (503, "1.1"), (code, status, version, body)
        assert json.loads(body)["error"] == "too_many_pending_connections"
        # The holder's streams are still served meanwhile.
        stream = holder.request("GET", "/api/health")
        holder.pump(lambda: holder.ended(stream))
        assert holder.status(stream) == 200
    finally:
        if holder is not None:
            holder.close()
        served.stop()
