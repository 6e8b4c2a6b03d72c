"""A burst of session/update notifications (an agent printing 30,000 updates of 200 bytes as fast as it can) through
`oa-bridge serve` on loopback to three clients on one session that read, more slowly than the bridge relays, and to a
fourth that never reads. Two of the readers lag far behind on purpose. The readers must get every update, once and in order, and stay connected: the bridge may cut
off only a client that stopped reading (a write to it waited 5 s for the peer while 10,000 frames waited), never one
that merely lags. The one that stopped reading is cut off, once, and nobody else is.

Bounded: one burst of 30,000 lines, every wait under a deadline, loopback only."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from loopback import listening_port, masked_frame, upgrade_request, wait_healthy

websockets = pytest.importorskip("websockets")
REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
UPDATES = 30_000
PAD = 200  # bytes of text per update (6 MB in all)
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}


def small_buffer_socket(port: int) -> socket.socket:
    """A connected socket with a small receive buffer, so a lagging reader's backlog stays in the bridge (where the
    rule applies), not in the kernel."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.connect(("127.0.0.1", port))
    return s


def never_reading_client(port: int, session: str) -> socket.socket:
    """A WebSocket client on a raw socket with a small receive buffer: it upgrades, initializes, attaches to the
    session and then reads nothing more."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(upgrade_request(f"127.0.0.1:{port}"))
    assert b" 101 " in s.recv(4096).split(b"\r\n")[0]

    def send(message: dict) -> None:
        s.sendall(masked_frame(0x1, json.dumps(message).encode()))

    send(INIT)
    send({"jsonrpc": "2.0", "id": 2, "method": "session/load",
          "params": {"sessionId": session, "cwd": ".", "mcpServers": []}})
    # Reads (5 s socket timeout) until session/load is answered: attached to the session. From here on nothing is read.
    buffer = b""
    while not any(message.get("id") == 2 for message in server_messages(buffer)):
        chunk = s.recv(4096)
        assert chunk, "the bridge closed the never-reading client before answering session/load"
        buffer += chunk
    return s


def server_messages(data: bytes) -> list[dict]:
    """The complete unmasked text frames in `data` (what a server sends), parsed as JSON."""
    messages, index = [], 0
    while index + 2 <= len(data):
        length, start = data[index + 1] & 0x7F, index + 2
        if length == 126:
            length, start = int.from_bytes(data[index + 2:index + 4], "big"), index + 4
        elif length == 127:
            length, start = int.from_bytes(data[index + 2:index + 10], "big"), index + 10
        if start + length > len(data):
            break
        if data[index] & 0x0F == 0x1:
            messages.append(json.loads(data[start:start + length]))
        index = start + length
    return messages


async def reader(ws, name: str, prompt_id: int | None, lag: bool = False) -> dict:
    """Reads until it has every update and, for the prompting client, the prompt's answer. A lagging reader pauses
    50 ms every 100 updates (at most 2,000 a second, slower than the bridge relays): it falls well over 10,000 updates
    behind during the burst, but keeps reading."""
    seqs: list[int] = []
    answered = prompt_id is None
    # The bridge's record of the prompt (a user_message_chunk, issue 28 item 4) is update 1; the agent's follow it.
    while len(seqs) < UPDATES + 1 or not answered:
        message = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if message.get("method") == "session/update":
            seqs.append(message["params"]["_meta"]["seq"])
            if lag and len(seqs) % 100 == 0:
                await asyncio.sleep(0.05)
        elif prompt_id is not None and message.get("id") == prompt_id:
            assert message.get("result", {}).get("stopReason") == "end_turn", f"{name}: {message}"
            answered = True
    return {"name": name, "seqs": seqs}


@pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")
def test_lagging_readers_get_every_update_and_only_a_client_that_stopped_reading_is_cut_off():
    agent = f"{sys.executable} {REPO / 'bench' / 'flood_agent.py'}"
    proc = subprocess.Popen([BIN, "serve", "--discovery", "off", "--auth", "none", "--host", "127.0.0.1", "--port", "0",
                             "--state-dir", tempfile.mkdtemp(prefix="oa-backpressure-"), "--agent", agent],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, FLOOD_COUNT=str(UPDATES), FLOOD_PAD=str(PAD)))
    stuck = None
    try:
        port = listening_port(proc)  # the kernel's pick: no free port guessed by bind-and-close
        wait_healthy(port, proc)
        url = f"ws://127.0.0.1:{port}/"

        async def scenario():
            nonlocal stuck
            async with websockets.connect(url, max_size=2**22) as a, \
                    websockets.connect(url, max_size=2**22, sock=small_buffer_socket(port)) as b, \
                    websockets.connect(url, max_size=2**22, sock=small_buffer_socket(port)) as c:
                for ws in (a, b, c):
                    await ws.send(json.dumps(INIT))
                    await asyncio.wait_for(ws.recv(), 15)
                await a.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ".", "mcpServers": []}}))
                session = json.loads(await asyncio.wait_for(a.recv(), 15))["result"]["sessionId"]
                for ws in (b, c):
                    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/load",
                                              "params": {"sessionId": session, "cwd": ".", "mcpServers": []}}))
                    assert "result" in json.loads(await asyncio.wait_for(ws.recv(), 15))
                stuck = await asyncio.to_thread(never_reading_client, port, session)
                await a.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                                         "params": {"sessionId": session, "prompt": [{"type": "text", "text": "flood"}]}}))
                return await asyncio.wait_for(asyncio.gather(reader(a, "a", 3), reader(b, "b", None, lag=True),
                                                         reader(c, "c", None, lag=True)), 120)

        results = asyncio.run(scenario())
        for result in results:
            assert result["seqs"] == list(range(1, UPDATES + 2)), \
                f"client {result['name']} got {len(result['seqs'])} updates, not 1…{UPDATES + 1} once each in order"
        # The client that stopped reading is cut off (its socket sees the end) within a few seconds.
        assert stuck is not None
        stuck.setblocking(False)
        deadline = time.time() + 20
        ended = False
        while time.time() < deadline and not ended:
            try:
                ended = stuck.recv(1 << 20) == b""
            except BlockingIOError:
                time.sleep(0.05)
            except OSError:
                ended = True
        assert ended, "the client that never read was not disconnected"
    finally:
        if stuck is not None:
            stuck.close()
        proc.terminate()
        log = proc.communicate(timeout=20)[1]
    cut = log.count("disconnecting it")
    assert cut == 1, f"{cut} clients were cut off; only the one that never read should be:\n{log[-3000:]}"
