"""The Streamable HTTP profile of ACP's remote-transport RFD at `/acp` (issue 28 items 1 and 5), driven by the official
Python SDK's own client (`acp.http.create_http_stream`, agent-client-protocol 0.12.1 with its `http` extra), and by
httpx for what the SDK never sends (bad input, `Last-Event-ID`).

The agent is the SDK's scripted agent (agents/acp_script_agent.py): `permission` asks a permission and reports the
option, `wait` runs until `session/cancel`. The bridge runs with tokens (the default); each client is a paired device
and sends `Authorization: Bearer`.

Covered: initialize, session/new, a prompt with a permission (allowed, then rejected), a cancelled prompt, the session
loaded from a second connection (which sees the first one's prompts and answers), resumed from a third; a WebSocket
client and a Streamable HTTP client on one session, each seeing the other's prompts and answers; SSE resumption by
`Last-Event-ID` (per stream on the connection's stream, by the bridge's `seq` on a session's, from another connection
too); DELETE; the status of each bad request (missing or unknown connection, another device's connection,
wrong content type, a batch, a session of another connection, a session-scoped POST without `Acp-Session-Id`, an
`Accept` without `text/event-stream`); an SSE client that never reads is cut off and its connection closed."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from loopback import BIN, REPO, Serve

httpx = pytest.importorskip("httpx")
websockets = pytest.importorskip("websockets")
acp = pytest.importorskip("acp")
from acp import PROTOCOL_VERSION, connect_to_agent, text_block  # noqa: E402
from acp.http import create_http_stream  # noqa: E402
from acp.ws import create_websocket_stream  # noqa: E402
from acp.schema import AllowedOutcome, ClientCapabilities, Implementation, RequestPermissionResponse  # noqa: E402

AGENT = Path(__file__).resolve().parent / "agents" / "acp_script_agent.py"
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")


class HTTPBridge(Serve):
    """`serve` (tokens on) with the scripted SDK agent, its workspace apart from its state directory."""

    def __init__(self, *extra: str, env: dict | None = None):
        root = Path(tempfile.mkdtemp(prefix="oa-acp-http-")).resolve()
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        super().__init__("--agent", f"{sys.executable} {AGENT}", *extra, prefix="oa-acp-http-serve-",
                         working_directory=self.workspace, env=env)
        self.url = f"{self.base_url}/acp"

    def pair(self, name: str) -> str:
        """Pairs a device over loopback; returns its access token."""
        with urllib.request.urlopen(f"{self.base_url}/api/pair/info", timeout=5) as answer:
            payload = json.load(answer)
        request = urllib.request.Request(
            f"{self.base_url}/api/auth/exchange", method="POST",
            data=json.dumps({"pairing_token": payload["token"], "device_name": name}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.load(answer)["access_token"]


@pytest.fixture(scope="module")
def bridge(module_serve_factory):
    return module_serve_factory(kind=HTTPBridge)


class SDKClient:
    """An ACP client for the SDK: answers permissions with `choose`, keeps every update."""

    def __init__(self, choose: str = "yes"):
        self.choose = choose
        self.updates: list = []
        self.asked: list[str] = []

    def on_connect(self, conn):
        pass

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append(tool_call.tool_call_id)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.choose))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update)

    def texts(self, kind: str) -> list[str]:
        return [u.content.text for u in self.updates
                if getattr(u, "session_update", None) == kind and getattr(u.content, "text", None) is not None]


async def sdk_connection(url: str, token: str, client: SDKClient, **httpx_options):
    """An SDK connection over Streamable HTTP, initialized."""
    http = httpx.AsyncClient(timeout=httpx.Timeout(None), **httpx_options) if httpx_options else None
    transport = create_http_stream(url, client=http, headers={"Authorization": f"Bearer {token}"})
    conn = connect_to_agent(client, transport, use_unstable_protocol=True)
    init = await asyncio.wait_for(conn.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="sdk-http", title="SDK over Streamable HTTP", version="1.0")), 30)
    return conn, transport, init, http


async def whole_flow(url: str, token: str, cwd: str, **httpx_options) -> dict:
    """initialize, new, a permission allowed then rejected, a cancelled prompt; then load and resume elsewhere."""
    first = SDKClient("yes")
    conn, transport, init, http = await sdk_connection(url, token, first, **httpx_options)
    try:
        session = (await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), 30)).session_id
        allowed = await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("permission please")]), 30)
        first.choose = "no"
        rejected = await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("permission again")]), 30)
        waiting = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("wait for it")]))
        await asyncio.sleep(1.0)
        assert not waiting.done(), "the waiting prompt ended before its cancel"
        await conn.cancel(session_id=session)
        cancelled = await asyncio.wait_for(waiting, 30)
        # A second connection (another SDK client of the same device) loads the session.
        second = SDKClient()
        conn2, transport2, _, http2 = await sdk_connection(url, token, second, **httpx_options)
        try:
            await asyncio.wait_for(conn2.load_session(cwd=cwd, session_id=session, mcp_servers=[]), 30)
            loaded_user = second.texts("user_message_chunk")
            loaded_agent = second.texts("agent_message_chunk")
        finally:
            await transport2.close()
            if http2 is not None:
                await http2.aclose()
        # A third resumes it and runs a turn on it.
        third = SDKClient()
        conn3, transport3, _, http3 = await sdk_connection(url, token, third, **httpx_options)
        try:
            await asyncio.wait_for(conn3.resume_session(session_id=session, cwd=cwd), 30)
            resumed = await asyncio.wait_for(conn3.prompt(session_id=session, prompt=[text_block("after resume")]), 30)
            resumed_text = third.texts("agent_message_chunk")
        finally:
            await transport3.close()
            if http3 is not None:
                await http3.aclose()
    finally:
        await transport.close()
        if http is not None:
            await http.aclose()
    return {
        "protocolVersion": init.protocol_version, "allowed": allowed.stop_reason, "rejected": rejected.stop_reason,
        "cancelled": cancelled.stop_reason, "asked": first.asked, "text": first.texts("agent_message_chunk"),
        "loaded_user": loaded_user, "loaded_agent": loaded_agent, "resumed": resumed.stop_reason,
        "resumed_text": resumed_text,
    }


def check_whole_flow(result: dict) -> None:
    assert result["protocolVersion"] == PROTOCOL_VERSION
    assert result["allowed"] == "end_turn" and result["rejected"] == "end_turn"
    assert result["asked"] == ["call-1", "call-1"]
    assert "permission: yes" in result["text"] and "permission: no" in result["text"], result["text"]
    assert result["cancelled"] == "cancelled"
    # The loading connection sees the first one's questions (the bridge's record) and the agent's answers.
    assert result["loaded_user"] == ["permission please", "permission again", "wait for it"], result["loaded_user"]
    assert "permission: yes" in result["loaded_agent"] and "permission: no" in result["loaded_agent"]
    assert result["resumed"] == "end_turn"
    assert "heard: after resume" in result["resumed_text"], result["resumed_text"]


def test_the_sdk_http_client_runs_the_whole_flow_at_acp(bridge):
    token = bridge.pair("sdk-http")
    check_whole_flow(asyncio.run(asyncio.wait_for(whole_flow(bridge.url, token, str(bridge.workspace)), 120)))


def test_a_websocket_client_and_an_http_client_on_one_session_see_each_others_prompts_and_answers(bridge):
    """Both are the SDK's own clients: `acp.ws.create_websocket_stream` and `acp.http.create_http_stream`."""
    token = bridge.pair("mixed")
    cwd = str(bridge.workspace)

    async def until(check, what: str, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"not seen within {timeout} s: {what}"
            await asyncio.sleep(0.05)

    async def scenario():
        http_client = SDKClient()
        conn, transport, _, _ = await sdk_connection(bridge.url, token, http_client)
        ws_client = SDKClient()
        ws_transport = await create_websocket_stream(f"ws://127.0.0.1:{bridge.port}/acp",
                                                     headers={"Authorization": f"Bearer {token}"})
        try:
            ws_conn = connect_to_agent(ws_client, ws_transport, use_unstable_protocol=True)
            await asyncio.wait_for(ws_conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="sdk-ws", title="SDK over WebSocket", version="1.0")), 30)
            session = (await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), 30)).session_id
            await asyncio.wait_for(ws_conn.load_session(cwd=cwd, session_id=session, mcp_servers=[]), 30)
            # The HTTP client prompts: the WebSocket client sees the question and the answer.
            answer = await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("from http")]), 30)
            assert answer.stop_reason == "end_turn"
            await until(lambda: "heard: from http" in ws_client.texts("agent_message_chunk"), "the answer on the WebSocket")
            # The WebSocket client prompts: the HTTP client sees the question and the answer.
            done = await asyncio.wait_for(ws_conn.prompt(session_id=session, prompt=[text_block("from ws")]), 30)
            assert done.stop_reason == "end_turn"
            await until(lambda: "heard: from ws" in http_client.texts("agent_message_chunk"), "the answer over HTTP")
            return ws_client, http_client
        finally:
            await ws_transport.close()
            await transport.close()

    ws_client, http_client = asyncio.run(asyncio.wait_for(scenario(), 90))
    assert "from http" in ws_client.texts("user_message_chunk"), ws_client.updates
    assert "heard: from http" in ws_client.texts("agent_message_chunk")
    assert "from ws" in http_client.texts("user_message_chunk"), http_client.updates
    assert "heard: from ws" in http_client.texts("agent_message_chunk")


# --- httpx by hand: what the SDK never sends -------------------------------------------------------------------


def initialize(client: httpx.Client, url: str, token: str) -> str:
    answer = client.post(url, headers={"Authorization": f"Bearer {token}"},
                         json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                               "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["protocolVersion"] == 1
    return answer.headers["Acp-Connection-Id"]


def open_session(client: httpx.Client, url: str, token: str = "unused") -> tuple[str, str]:
    """`initialize` and `session/new` (answered on the connection's stream): the connection's and the session's ids."""
    connection = initialize(client, url, token)
    headers = {"Acp-Connection-Id": connection}
    accepted = client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                      "params": {"cwd": ".", "mcpServers": []}}, headers=headers)
    assert accepted.status_code == 202, accepted.text
    with client.stream("GET", url, headers={**headers, "Accept": "text/event-stream"}) as stream:
        return connection, read_events(stream, 1)[0][1]["result"]["sessionId"]


def read_events(response, count: int, timeout: float = 15) -> list[tuple[int, dict]]:
    """Reads `count` SSE events (id, data) from a streaming httpx response."""
    events, current_id, data = [], None, []
    deadline = time.monotonic() + timeout
    for line in response.iter_lines():
        if line.startswith("id:"):
            current_id = int(line[3:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            events.append((current_id, json.loads("\n".join(data))))
            data = []
            if len(events) == count:
                return events
        assert time.monotonic() < deadline, f"only {len(events)} events within {timeout} s"
    return events


def test_bad_requests_get_the_rfd_statuses(bridge):
    token = bridge.pair("bad-input")
    other = bridge.pair("another-device")
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=15) as client:
        connection = initialize(client, bridge.url, token)
        post = lambda body, **headers: client.post(bridge.url, content=json.dumps(body), headers={
            "Content-Type": "application/json", **auth, **headers})
        ping = {"jsonrpc": "2.0", "id": 1, "method": "_oa/ping", "params": {}}

        assert post(ping).status_code == 400 and post(ping).json()["error"] == "missing_connection_id"
        unknown = post(ping, **{"Acp-Connection-Id": "0" * 32})
        assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_connection"
        assert post(ping, **{"Acp-Connection-Id": connection}).status_code == 202
        # Another paired device that learned the id is refused: a connection belongs to the device that opened it.
        stolen = client.post(bridge.url, content=json.dumps(ping), headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {other}", "Acp-Connection-Id": connection})
        assert stolen.status_code == 403 and stolen.json()["error"] == "connection_of_another_device"
        stolen_stream = client.get(bridge.url, headers={"Authorization": f"Bearer {other}", "Acp-Connection-Id": connection,
                                                        "Accept": "text/event-stream"})
        assert stolen_stream.status_code == 403
        assert client.delete(bridge.url, headers={"Authorization": f"Bearer {other}", "Acp-Connection-Id": connection}).status_code == 403
        # No token at all: 401, as the upgrade.
        assert client.post(bridge.url, json=ping, headers={"Acp-Connection-Id": connection}).status_code == 401

        wrong_type = client.post(bridge.url, content=json.dumps(ping), headers={
            "Content-Type": "text/plain", "Acp-Connection-Id": connection, **auth})
        assert wrong_type.status_code == 415 and wrong_type.json()["error"] == "unsupported_media_type"
        batch = post([ping, ping], **{"Acp-Connection-Id": connection})
        assert batch.status_code == 501 and batch.json()["error"] == "batch_not_supported"
        garbage = client.post(bridge.url, content=b"{not json", headers={
            "Content-Type": "application/json", "Acp-Connection-Id": connection, **auth})
        assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700
        prompt = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                  "params": {"sessionId": "s-nobody", "prompt": [{"type": "text", "text": "hi"}]}}
        no_session = post(prompt, **{"Acp-Connection-Id": connection})
        assert no_session.status_code == 400 and no_session.json()["error"] == "missing_session_id"
        foreign = post(prompt, **{"Acp-Connection-Id": connection, "Acp-Session-Id": "s-nobody"})
        assert foreign.status_code == 404 and foreign.json()["error"] == "unknown_session"
        stream_of_foreign = client.get(bridge.url, headers={**auth, "Acp-Connection-Id": connection,
                                                            "Acp-Session-Id": "s-nobody", "Accept": "text/event-stream"})
        assert stream_of_foreign.status_code == 404 and stream_of_foreign.json()["error"] == "unknown_session"
        not_sse = client.get(bridge.url, headers={**auth, "Acp-Connection-Id": connection, "Accept": "application/json"})
        assert not_sse.status_code == 406

        # A session of another device's connection is not this connection's.
        other_connection = initialize(client, bridge.url, other)
        created = client.post(bridge.url, json={"jsonrpc": "2.0", "id": 5, "method": "session/new",
                                                "params": {"cwd": str(bridge.workspace), "mcpServers": []}},
                              headers={"Authorization": f"Bearer {other}", "Acp-Connection-Id": other_connection})
        assert created.status_code == 202
        with client.stream("GET", bridge.url, headers={"Authorization": f"Bearer {other}", "Acp-Connection-Id": other_connection,
                                                       "Accept": "text/event-stream"}) as stream:
            events = read_events(stream, 2)
        session = next(data["result"]["sessionId"] for _, data in events if data.get("id") == 5)
        theirs = client.get(bridge.url, headers={**auth, "Acp-Connection-Id": connection, "Acp-Session-Id": session,
                                                 "Accept": "text/event-stream"})
        assert theirs.status_code == 404 and theirs.json()["error"] == "unknown_session"

        # DELETE ends the connection: it is unknown afterwards.
        assert client.delete(bridge.url, headers={**auth, "Acp-Connection-Id": connection}).status_code == 202
        assert post(ping, **{"Acp-Connection-Id": connection}).status_code == 404
        assert client.delete(bridge.url, headers={**auth, "Acp-Connection-Id": connection}).status_code == 404


def test_a_stream_resumes_after_its_last_event_id(bridge):
    token = bridge.pair("resume")
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=15) as client:
        connection = initialize(client, bridge.url, token)
        headers = {**auth, "Acp-Connection-Id": connection}
        for rid in range(1, 4):
            assert client.post(bridge.url, json={"jsonrpc": "2.0", "id": rid, "method": "_oa/ping", "params": {}},
                               headers=headers).status_code == 202
        with client.stream("GET", bridge.url, headers={**headers, "Accept": "text/event-stream"}) as stream:
            first = read_events(stream, 2)
        assert [data["id"] for _, data in first] == [1, 2]
        # Two more answers while no stream is open; then the stream comes back after the last event it saw.
        for rid in range(4, 6):
            client.post(bridge.url, json={"jsonrpc": "2.0", "id": rid, "method": "_oa/ping", "params": {}}, headers=headers)
        last_seen = first[-1][0]
        with client.stream("GET", bridge.url, headers={**headers, "Accept": "text/event-stream",
                                                       "Last-Event-ID": str(last_seen)}) as stream:
            rest = read_events(stream, 3)
        assert [data["id"] for _, data in rest] == [3, 4, 5], "every answer once, in order, none lost or repeated"
        assert [number for number, _ in rest] == [last_seen + 1, last_seen + 2, last_seen + 3]
        # An answer sent while the stream was being dropped (written into a closed socket, perhaps) is not lost
        # either: the next reader asks after the last event it saw.
        client.post(bridge.url, json={"jsonrpc": "2.0", "id": 6, "method": "_oa/ping", "params": {}}, headers=headers)
        with client.stream("GET", bridge.url, headers={**headers, "Accept": "text/event-stream",
                                                       "Last-Event-ID": str(rest[-1][0])}) as stream:
            assert [data["id"] for _, data in read_events(stream, 1)] == [6]
        # Without Last-Event-ID a reader gets what comes next, nothing older again.
        with client.stream("GET", bridge.url, headers={**headers, "Accept": "text/event-stream"}) as stream:
            client.post(bridge.url, json={"jsonrpc": "2.0", "id": 7, "method": "_oa/ping", "params": {}}, headers=headers)
            assert [data["id"] for _, data in read_events(stream, 1)] == [7]
        client.delete(bridge.url, headers=headers)


def read_labelled(lines, until, timeout: float = 20) -> list[tuple[str, dict]]:
    """Reads SSE events (id as sent, data) from `lines` (a streaming httpx response's `iter_lines()`, read on by
    later calls) until `until(data)` holds for one."""
    events, current_id, data = [], None, []
    deadline = time.monotonic() + timeout
    for line in lines:
        if line.startswith("id:"):
            current_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            message = json.loads("\n".join(data))
            events.append((current_id, message))
            data, current_id = [], None
            if until(message):
                return events
        assert time.monotonic() < deadline, f"not there within {timeout} s: {events}"
    raise AssertionError(f"the stream ended: {events}")


def seq_of(message: dict) -> int | None:
    return message["params"]["_meta"]["seq"] if message.get("method") == "session/update" else None


def test_a_session_stream_is_numbered_by_seq_and_resumes_from_a_phones_last_seq(bridge):
    """TEAM.md's wire format for issue 28: on a session's stream an update's event id is its `seq`, and a GET with
    `Last-Event-ID: N` gets exactly the updates with seq > N, also on a new connection (a phone coming from its
    WebSocket with the last seq it saw) and when the stream no longer holds N."""
    token = bridge.pair("seq-resume")
    auth = {"Authorization": f"Bearer {token}"}
    sse = {"Accept": "text/event-stream"}
    prompt = lambda rid, session, text: {"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
                                         "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}
    with httpx.Client(timeout=15) as client:
        first = {**auth, "Acp-Connection-Id": initialize(client, bridge.url, token)}
        assert client.post(bridge.url, headers=first, json={"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {
            "cwd": str(bridge.workspace), "mcpServers": []}}).status_code == 202
        with client.stream("GET", bridge.url, headers={**first, **sse}) as stream:
            opened = read_labelled(stream.iter_lines(), lambda m: m.get("id") == 1)
        session = opened[-1][1]["result"]["sessionId"]
        scoped = {**first, "Acp-Session-Id": session}
        with client.stream("GET", bridge.url, headers={**scoped, **sse}) as stream:
            for rid, text in ((2, "one"), (3, "two")):
                assert client.post(bridge.url, headers=scoped, json=prompt(rid, session, text)).status_code == 202
            events = read_labelled(stream.iter_lines(), lambda m: m.get("id") == 3)
        updates = [(label, seq_of(m)) for label, m in events if seq_of(m) is not None]
        assert updates and all(label == str(seq) for label, seq in updates), events
        seqs = [seq for _, seq in updates]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
        # Any other message is `S.k`: the k-th after the update S.
        answers = [(label, m["id"]) for label, m in events if "id" in m]
        assert answers and all(label.count(".") == 1 for label, _ in answers), answers

        # A phone that saw the updates up to seq N on its WebSocket comes over with a new connection.
        last_seen = seqs[1]
        phone = {**auth, "Acp-Connection-Id": initialize(client, bridge.url, token)}
        assert client.post(bridge.url, headers=phone, json={"jsonrpc": "2.0", "id": 10, "method": "session/resume", "params": {
            "sessionId": session, "cwd": str(bridge.workspace)}}).status_code == 202
        with client.stream("GET", bridge.url, headers={**phone, **sse}) as stream:
            resumed = read_labelled(stream.iter_lines(), lambda m: m.get("id") == 10)
        assert "result" in resumed[-1][1], resumed
        with client.stream("GET", bridge.url, headers={**phone, **sse, "Acp-Session-Id": session,
                                                       "Last-Event-ID": str(last_seen)}) as stream:
            lines = stream.iter_lines()
            missed = read_labelled(lines, lambda m: seq_of(m) == seqs[-1])
            # Then live: the first connection's next prompt.
            assert client.post(bridge.url, headers=scoped, json=prompt(4, session, "three")).status_code == 202
            live = read_labelled(lines, lambda m: m.get("method") == "session/update"
                                 and "three" in json.dumps(m["params"]["update"]) and "heard" in json.dumps(m["params"]["update"]))
        got = [(label, seq_of(m)) for label, m in missed + live]
        assert all(seq is not None for _, seq in got), f"only updates, exactly those after {last_seen}: {got}"
        assert [seq for _, seq in got] == list(range(last_seen + 1, last_seen + 1 + len(got))), got
        assert [seq for _, seq in got][:len(seqs) - 2] == seqs[2:], (got, seqs)
        assert all(label == str(seq) for label, seq in got), got

        # The first connection's stream asked from seq 0, which it never held: every update of the session, in order.
        with client.stream("GET", bridge.url, headers={**scoped, **sse, "Last-Event-ID": "0"}) as stream:
            replayed = read_labelled(stream.iter_lines(), lambda m: seq_of(m) == got[-1][1])
        replayed_seqs = [seq_of(m) for _, m in replayed if seq_of(m) is not None]
        assert replayed_seqs == list(range(1, got[-1][1] + 1)), replayed_seqs

        # Ids that are neither: 400.
        bad = client.get(bridge.url, headers={**scoped, **sse, "Last-Event-ID": "seven"})
        assert bad.status_code == 400 and bad.json()["error"] == "invalid_last_event_id", bad.text
        bad = client.get(bridge.url, headers={**first, **sse, "Last-Event-ID": "3.1"})
        assert bad.status_code == 400 and bad.json()["error"] == "invalid_last_event_id", bad.text
        for headers in (first, phone):
            client.delete(bridge.url, headers=headers)


FLOOD = Path(REPO) / "bench" / "flood_agent.py"


def server_side_established(server_port: int, client_port: int) -> bool:
    """Whether the bridge's end of the TCP connection to `client_port` is still ESTABLISHED (`ss`, iproute2)."""
    out = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{server_port} and dport = :{client_port} )"],
                         capture_output=True, text=True, check=True).stdout
    return bool(out.strip())


def test_an_sse_client_that_never_reads_is_cut_off_and_closed():
    served = Serve("--auth", "none", "--agent", f"{sys.executable} {FLOOD}", prefix="oa-acp-http-flood-",
                   env={"FLOOD_COUNT": "60000", "FLOOD_PAD": "100"})
    stuck = None
    try:
        url = f"{served.base_url}/acp"
        with httpx.Client(timeout=15) as client:
            connection, session = open_session(client, url)
            headers = {"Acp-Connection-Id": connection}
            # The session's stream, opened on a socket with a small receive buffer that is never read.
            stuck = socket.create_connection(("127.0.0.1", served.port))
            stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stuck.sendall((f"GET /acp HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nAccept: text/event-stream\r\n"
                           f"Acp-Connection-Id: {connection}\r\nAcp-Session-Id: {session}\r\n\r\n").encode())
            time.sleep(0.5)
            assert client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
                "sessionId": session, "prompt": [{"type": "text", "text": "flood"}]}},
                headers={**headers, "Acp-Session-Id": session}).status_code == 202
            # Bounded: the hub cuts the connection off (its rules for a client that stopped reading), the stream's
            # socket is closed, and the connection id is unknown afterwards.
            deadline = time.time() + 90
            gone = False
            while time.time() < deadline and not gone:
                gone = client.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "_oa/ping", "params": {}},
                                   headers=headers).status_code == 404
                time.sleep(0.5)
            assert gone, "the connection whose stream never read was not cut off"
        # The bridge closes the stream's socket (its side leaves ESTABLISHED; the peer sees the end only once it
        # reads the megabytes still in flight, which a client that never reads never does).
        ended = False
        while time.time() < deadline + 30 and not ended:
            ended = not server_side_established(served.port, stuck.getsockname()[1])
            time.sleep(0.5)
        assert ended, "the stream's socket was not closed"
    finally:
        if stuck is not None:
            stuck.close()
        log = served.stop()
    assert "disconnecting it" in log, log[-3000:]
