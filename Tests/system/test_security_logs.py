"""Issue 27 item 10: a client cannot forge lines in the bridge's text log.

A `session/cancel` for a session id with a newline (and other control characters) in it makes the bridge log a
notice that quotes the id; in the text log (the default format) that id must stay on its line, its control
characters escaped, so no line the client wrote appears as a line of the log. All traffic stays on loopback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from loopback import BIN, Serve

websockets = pytest.importorskip("websockets")

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

FORGED = "2026-11-26T00:00:00+0000 critical oa-bridge : [BridgeServer] FORGED-LINE agent=pwned"
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


async def send_forgeries(url: str) -> None:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps(INIT))
        json.loads(await asyncio.wait_for(ws.recv(), 10))
        for session in [f"s1\n{FORGED}", f"s2\r\n{FORGED}", f"s3\x1b[2J\x0b{FORGED}", f"s4\u2028{FORGED}"]:
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}))
        # A request after them: once it is answered, the notices above were logged.
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": "end", "method": "session/list", "params": {}}))
        while json.loads(await asyncio.wait_for(ws.recv(), 10)).get("id") != "end":
            pass


def test_a_session_id_with_a_newline_does_not_forge_a_log_line(tmp_path):
    bridge = Serve("--auth", "none", "--log-level", "info", prefix="oa-sec-logs-")
    try:
        asyncio.run(send_forgeries(bridge.ws_url))
    finally:
        log = bridge.stop()
    lines = log.splitlines()
    assert any("session/cancel refused" in line for line in lines), log[-3000:]
    forged = [line for line in lines if line.startswith("2026-11-26T00:00:00+0000") or line.lstrip().startswith("FORGED")]
    assert not forged, f"forged log lines: {forged}"
    refused = [line for line in lines if "session/cancel refused" in line]
    assert len(refused) == 4, refused
    assert all("FORGED-LINE" in line for line in refused), "each id stays on its own line, escaped"
    assert any("\\n" in line for line in refused) and not any("\x1b" in line or "\u2028" in line for line in refused), refused
