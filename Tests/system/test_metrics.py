"""GET /metrics (issue 6): Prometheus text on loopback with connections, messages, relay latency,
refused upgrades and sessions; refused from any other address is covered by the lab."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from loopback import listening_port, wait_healthy

websockets = pytest.importorskip("websockets")
REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))


@pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")
def test_metrics_count_what_happened():
    proc = subprocess.Popen([BIN, "serve", "--discovery", "off", "--host", "127.0.0.1", "--port", "0",
                             "--state-dir", tempfile.mkdtemp(prefix="oa-metrics-"), "--log-level", "error"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port = listening_port(proc)  # the kernel's pick: no free port guessed by bind-and-close
        base = f"http://127.0.0.1:{port}"
        wait_healthy(port, proc)
        # One refused upgrade (no token), then one paired client doing a prompt.
        with pytest.raises(Exception):
            asyncio.run(websockets.connect(f"ws://127.0.0.1:{port}/").__aenter__())
        info = json.loads(urllib.request.urlopen(base + "/api/pair/info").read())
        exchange = urllib.request.Request(base + "/api/auth/exchange", method="POST",
                                          data=json.dumps({"pairing_token": info["token"]}).encode(),
                                          headers={"Content-Type": "application/json"})
        token = json.loads(urllib.request.urlopen(exchange).read())["access_token"]

        async def prompt():
            async with websockets.connect(f"ws://127.0.0.1:{port}/", additional_headers={"Authorization": f"Bearer {token}"}) as ws:
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}))
                await ws.recv()
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ".", "mcpServers": []}}))
                session = json.loads(await ws.recv())["result"]["sessionId"]
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "count me"}]}}))
                while True:
                    message = json.loads(await ws.recv())
                    if message.get("method") == "session/request_permission":
                        await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "cancelled"}}}))
                    if message.get("id") == 3:
                        return
        asyncio.run(prompt())
        text = urllib.request.urlopen(base + "/metrics").read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        assert values.get("oa_bridge_connections_total", 0) >= 1, text
        assert values.get("oa_bridge_upgrade_refusals_total", 0) >= 1, text
        assert values.get("oa_bridge_messages_in_total", 0) >= 3, text
        assert values.get("oa_bridge_messages_out_total", 0) >= 3, text
        assert any(name.startswith("oa_bridge_relay_latency_seconds_count") and v >= 2 for name, v in values.items()), text
        assert "oa_bridge_sessions" in text
        assert token not in text
    finally:
        proc.terminate()
        proc.wait(timeout=15)
