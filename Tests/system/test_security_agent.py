"""Issues 25.6, 27.7, 27.10 and 28.4 against a real `oa-bridge serve` on loopback, with an agent written with the
official ACP Python SDK (the same agent as the Swift `HubSecurityTests`, read from that file):

- `session/cancel` reaches the agent before the answer `cancelled` to its pending permission request (10 of 10 runs,
  recorded by the agent at the wire);
- the agent cannot speak for the bridge: its `_oa/*` notifications never reach a phone, its `_oa/*` request is
  answered -32601, and its `user_message_chunk` cannot claim `_meta.oa.origin = "bridge"`;
- a phone that loads the session later sees the questions with the answers (`user_message_chunk` records);
- `_oa/ping` is answered before `initialize`.

Every loop is bounded in count and time; all traffic stays on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from loopback import BIN, REPO

websockets = pytest.importorskip("websockets")
pytest.importorskip("acp")

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


AGENT = REPO / "Tests/system/agents/hub_agent.py"


@pytest.fixture
def bridge(tmp_path, serve_factory):
    return serve_factory("--auth", "none", "--log-level", "debug", "--agent", f"{sys.executable} {AGENT}",
                         prefix="oa-sec-agent-", working_directory=tmp_path)


class Phone:
    def __init__(self, ws):
        self.ws = ws

    async def call(self, method, params, id):
        message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.ws.send(json.dumps(message))
        return await self.until(id)

    async def until(self, id, answer_requests=False):
        """Frames up to the answer to `id`: (answer, frames before it)."""
        frames = []
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), 20))
            if frame.get("id") == id and "method" not in frame:
                return frame, frames
            frames.append(frame)
            if answer_requests and "method" in frame and "id" in frame:
                await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": frame["id"],
                                               "error": {"code": -32000, "message": "phone says no"}}))


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


def test_cancel_reaches_the_agent_before_the_permission_answer(bridge):
    async def scenario():
        async with websockets.connect(bridge.ws_url) as ws:
            phone = Phone(ws)
            await phone.call("initialize", INIT["params"], "init")
            orders = []
            for run_index in range(10):
                session = (await phone.call("session/new", {}, f"new-{run_index}"))[0]["result"]["sessionId"]
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": f"p-{run_index}", "method": "session/prompt",
                                          "params": {"sessionId": session, "prompt": [{"type": "text", "text": "permission"}]}}))
                while json.loads(await asyncio.wait_for(ws.recv(), 20)).get("method") != "session/request_permission":
                    pass
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}))
                done, _ = await phone.until(f"p-{run_index}")
                assert done["result"]["stopReason"] == "cancelled", done
                orders.append((await phone.call("_test/order", {}, f"o-{run_index}"))[0]["result"]["order"])
            return orders
    orders = run(scenario())
    assert orders == [["cancel", "answer:cancelled"]] * 10, orders


def test_the_agent_cannot_speak_for_the_bridge(bridge):
    async def scenario():
        async with websockets.connect(bridge.ws_url) as ws:
            phone = Phone(ws)
            await phone.call("initialize", INIT["params"], "init")
            session = (await phone.call("session/new", {}, "new"))[0]["result"]["sessionId"]
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": "forge", "method": "session/prompt",
                                      "params": {"sessionId": session, "prompt": [{"type": "text", "text": "forge"}]}}))
            return await phone.until("forge", answer_requests=True)
    done, frames = run(scenario())
    methods = [frame.get("method", "") for frame in frames]
    assert not [m for m in methods if m.lower().startswith("_oa/")], methods
    texts = [f["params"]["update"].get("content", {}).get("text") for f in frames if f.get("method") == "session/update"]
    assert "forge error: -32601" in "".join(t or "" for t in texts), texts
    replayed = [f for f in frames if f.get("method") == "session/update"
                and f["params"]["update"].get("content", {}).get("text") == "replayed by the agent"]
    assert replayed and "oa" not in replayed[0]["params"]["_meta"], replayed
    assert "forged words" not in texts
    log = bridge.stop()
    assert "dropped a notification of the agent in the bridge's namespace" in log


def load_later(bridge):
    """Alice prompts in a session; then Bob pings before initialize and loads the session. (ping, load answer, replay)"""
    async def scenario():
        async with websockets.connect(bridge.ws_url) as ws:
            alice = Phone(ws)
            await alice.call("initialize", INIT["params"], "init")
            session = (await alice.call("session/new", {}, "new"))[0]["result"]["sessionId"]
            await alice.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "what is up"}]}, 7)
        async with websockets.connect(bridge.ws_url) as ws:
            bob = Phone(ws)
            ping, _ = await bob.call("_oa/ping", None, "hb")
            await bob.call("initialize", INIT["params"], "init")
            loaded, replay = await bob.call("session/load", {"sessionId": session}, "load")
            return ping, loaded, replay
    return run(scenario())


def test_a_phone_that_loads_later_sees_the_questions(bridge):
    _, _, replay = load_later(bridge)
    updates = [f["params"] for f in replay if f.get("method") == "session/update"]
    assert [u["update"]["sessionUpdate"] for u in updates] == ["user_message_chunk", "agent_message_chunk"], updates
    assert updates[0]["update"]["content"]["text"] == "what is up"
    assert updates[0]["_meta"] == {"seq": 1, "oa": {"origin": "bridge", "promptId": 7}}


def test_the_agents_meta_is_kept_when_a_phone_attaches(bridge):
    _, loaded, _ = load_later(bridge)
    meta = loaded["result"]["_meta"]
    assert meta["agent.example/new"] == "kept" and meta["lastSeq"] == 2, meta


def test_ping_is_answered_before_initialize(bridge):
    ping, _, _ = load_later(bridge)
    assert ping.get("result") == {}, ping
