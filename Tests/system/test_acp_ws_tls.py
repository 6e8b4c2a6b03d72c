"""The official ACP Python SDK's WebSocket client (`acp.ws`'s transport, `connect_to_agent`) at the bridge's `/acp` over
TLS, the bridge's default (issue 28 item 5): the certificate is checked against the pin of the pairing payload (SHA-256
of its SubjectPublicKeyInfo, computed here with openssl), never against a host name or a CA. With the built-in demo
agent (it streams the prompt back, then asks a permission for a tool call):

initialize, session/new, a prompt with a permission granted, one rejected, session/cancel of a running prompt,
session/load from a second connection (it sees the questions and the answers), and session/resume from a third after the
second's last update (it gets only what came after)."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from loopback import Serve
from tls_support import check_pin, unverified_context

pytest.importorskip("acp")
websockets_client = pytest.importorskip("websockets.asyncio.client")
from acp import PROTOCOL_VERSION, connect_to_agent, text_block  # noqa: E402
from acp.schema import (AllowedOutcome, ClientCapabilities, Implementation,  # noqa: E402
                        RequestPermissionResponse)
from acp.ws.client import _WebSocketTransport  # noqa: E402  (the SDK's own transport over a connection we check)

LONG = " ".join(f"w{i}" for i in range(200))


class Phone:
    """An SDK client: records updates, answers permissions with `answer`."""

    def __init__(self, answer: str = "allow_once"):
        self.answer = answer
        self.updates: list[tuple[str, object]] = []
        self.asked = 0

    def on_connect(self, conn) -> None:
        pass

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked += 1
        chosen = next(o for o in options if o.kind == self.answer)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append((session_id, update))

    def text(self, sid: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for s, u in self.updates
                       if s == sid and u.session_update == kind and getattr(u.content, "text", None) is not None)


@pytest.fixture
def bridge():
    serve = Serve(prefix="oa-acp-ws-tls-")
    try:
        with urllib.request.urlopen(f"{serve.base_url}/api/pair/info", timeout=5) as answer:
            payload = json.load(answer)
        exchange = urllib.request.Request(
            f"https://127.0.0.1:{serve.port}/api/auth/exchange", method="POST",
            data=json.dumps({"pairing_token": payload["token"], "device_name": "sdk-acp-ws"}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(exchange, timeout=5, context=unverified_context()) as answer:
            token = json.load(answer)["access_token"]
        yield serve, token, payload["pin"]
    finally:
        serve.stop()


async def open_phone(serve, token: str, pin: str, phone: Phone):
    """`wss://127.0.0.1:PORT/acp` with the token; the peer's key must carry the pin before anything is sent."""
    ws = await websockets_client.connect(f"wss://127.0.0.1:{serve.port}/acp", ssl=unverified_context(),
                                         server_hostname="", additional_headers={"Authorization": f"Bearer {token}"})
    check_pin(ws, pin)
    transport = _WebSocketTransport(ws)
    conn = connect_to_agent(phone, transport)
    init = await asyncio.wait_for(conn.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="sdk-phone", title="SDK phone", version="1.0")), 20)
    return conn, transport, init


def test_the_sdk_ws_client_at_acp_over_pinned_tls_runs_every_session_call(bridge):
    serve, token, pin = bridge

    async def scenario():
        first = Phone()
        conn, transport, init = await open_phone(serve, token, pin, first)
        assert init.protocol_version == 1 and init.agent_info.name == "oa-bridge-demo-agent"
        cwd = init.field_meta["workingDirectory"]
        sid = (await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), 20)).session_id

        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("first question")]), 20)
        assert done.stop_reason == "end_turn" and first.asked == 1
        assert first.text(sid).startswith("You said: first question (The time is ")

        first.answer = "reject_once"
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("second question")]), 20)
        assert done.stop_reason == "end_turn" and first.asked == 2
        tool_updates = [u for s, u in first.updates if s == sid and u.session_update == "tool_call_update"]
        assert tool_updates[-1].status == "failed"

        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(LONG)]))
        for _ in range(200):
            if "w5 " in first.text(sid):
                break
            await asyncio.sleep(0.05)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(running, 20)).stop_reason == "cancelled"
        assert "w199" not in first.text(sid)

        # A second connection loads the session: the questions (the bridge's records) and the answers.
        second = Phone()
        conn2, transport2, _ = await open_phone(serve, token, pin, second)
        loaded = await asyncio.wait_for(conn2.load_session(cwd=cwd, session_id=sid, mcp_servers=[]), 20)
        last = loaded.field_meta["lastSeq"]
        assert "first question" in second.text(sid, "user_message_chunk")
        assert "second question" in second.text(sid, "user_message_chunk")
        assert "You said: first question" in second.text(sid)

        first.answer = "allow_once"
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("third question")]), 20)
        assert done.stop_reason == "end_turn"
        assert "You said: third question" in second.text(sid), "an attached connection sees the other's prompt"

        # A third resumes after the second's load: only what came after.
        third = Phone()
        conn3, transport3, _ = await open_phone(serve, token, pin, third)
        resumed = await asyncio.wait_for(conn3.resume_session(session_id=sid, cwd=cwd, lastSeq=last), 20)
        assert resumed.field_meta["replayed"] > 0
        assert "third question" in third.text(sid, "user_message_chunk")
        assert "first question" not in third.text(sid, "user_message_chunk")
        assert third.text(sid).startswith("You said: third question")

        for t in (transport, transport2, transport3):
            await t.close()

    asyncio.run(asyncio.wait_for(scenario(), 90))
