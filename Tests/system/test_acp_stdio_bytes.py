"""`oa-bridge connect --stdio` passes every message on as its bytes came (issue 28 item 3: it "relays every message both
ways unchanged"): object keys out of order, numbers written `1.50`, `1e3` and `2.50E+1`, spacing. The editor is this
test, on the relay's stdin and stdout; the bridge is a WebSocket server of the test's own on loopback, which records
the frames it gets and sends frames written by hand (a real bridge writes its own JSON, so only a stand-in can send
such frames). The one change the relay makes is a prompt's `_meta.oa.idempotencyKey`, added as one member at the front
of `params` when the editor sent none.

Before, the relay parsed every message and wrote it again: keys sorted, spacing gone."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from loopback import BIN

websockets = pytest.importorskip("websockets")

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

# What the editor sends, as it writes it.
EDITOR_INIT = ('{"params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false}},"zeta":1.50,'
               '"alpha":1e3},"method":"initialize","id":0,"jsonrpc":"2.0"}')
EDITOR_NEW = '{"params":{"mcpServers":[],"cwd":"/tmp","z":2.50E+1},"id":1,"method":"session/new","jsonrpc":"2.0"}'
EDITOR_NOTE = '{ "params": {"b": 1.50, "a": 1e3}, "method": "_x/note", "jsonrpc": "2.0" }'
EDITOR_PROMPT = ('{"params":{"sessionId":"s-1","prompt":[{"type":"text","text":"hi"}],"z":1.50},'
                 '"method":"session/prompt","id":2,"jsonrpc":"2.0"}')
EDITOR_ANSWER = '{"result":{"outcome":{"outcome":"cancelled"},"z":1.50},"id":"r1","jsonrpc":"2.0"}'

# What the bridge sends, as it writes it.
BRIDGE_INIT = ('{"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"zeta":1.50,"alpha":1e3},'
               '"id":0,"jsonrpc":"2.0"}')
BRIDGE_NEW = '{"result":{"sessionId":"s-1","n":1e3,"b":{"y":1,"x":2}},"jsonrpc":"2.0","id":1}'
BRIDGE_UPDATE = ('{"params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},'
                 '"sessionId":"s-1","_meta":{"seq":1,"w":1.50}},"method":"session/update","jsonrpc":"2.0"}')
BRIDGE_ASK = ('{"params":{"sessionId":"s-1","toolCall":{"toolCallId":"t"},"options":[]},"id":"r1",'
              '"method":"session/request_permission","jsonrpc":"2.0"}')
BRIDGE_DONE = '{"result":{"stopReason":"end_turn","x":1e3},"id":2,"jsonrpc":"2.0"}'


class StandInBridge:
    """A WebSocket server on loopback: records every frame; answers initialize, session/new and the prompt by hand."""

    def __init__(self):
        self.frames: "queue.Queue[str]" = queue.Queue()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        threading.Thread(target=self._run, daemon=True).start()
        assert self.ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def handler(ws):
            async for frame in ws:
                self.frames.put(frame)
                method = json.loads(frame).get("method")
                if method == "initialize":
                    await ws.send(BRIDGE_INIT)
                elif method == "session/new":
                    await ws.send(BRIDGE_NEW)
                elif method == "session/prompt" and json.loads(frame)["id"] == 2:
                    await ws.send(BRIDGE_UPDATE)
                    await ws.send(BRIDGE_ASK)
                elif method == "session/prompt":
                    await ws.send('{"result":{"stopReason":"end_turn"},"id":%d,"jsonrpc":"2.0"}' % json.loads(frame)["id"])
                elif frame.startswith('{"result":{"outcome"'):
                    await ws.send(BRIDGE_DONE)

        async def main():
            server = await websockets.serve(handler, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            self.ready.set()
            await asyncio.Future()

        self.loop.run_until_complete(main())

    def next_frame(self, timeout: float = 20) -> str:
        return self.frames.get(timeout=timeout)


class Editor:
    """`connect --stdio` with its stdin and stdout in the test's hands."""

    def __init__(self, port: int):
        self.home = Path(tempfile.mkdtemp(prefix="oa-stdio-bytes-"))
        self.stderr = open(self.home / "stderr.log", "w")
        self.process = subprocess.Popen(
            [BIN, "connect", "--stdio", f"ws://127.0.0.1:{port}", "--browse-time", "0", "--retries", "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1,
            env={**os.environ, "XDG_STATE_HOME": str(self.home), "HOME": str(self.home)})
        self.lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def next_line(self, timeout: float = 20) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing on stdout within {timeout} s; stderr:\n{(self.home / 'stderr.log').read_text()}")

    def stop(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.stderr.close()


def test_connect_stdio_relays_every_message_byte_for_byte_both_ways():
    bridge = StandInBridge()
    editor = Editor(bridge.port)
    try:
        started = time.monotonic()
        editor.send(EDITOR_INIT)
        assert bridge.next_frame() == EDITOR_INIT, "the editor's initialize, as it wrote it"
        assert editor.next_line() == BRIDGE_INIT, "the bridge's answer, as it wrote it"

        editor.send(EDITOR_NEW)
        assert bridge.next_frame() == EDITOR_NEW
        assert editor.next_line() == BRIDGE_NEW

        editor.send(EDITOR_NOTE)
        assert bridge.next_frame() == EDITOR_NOTE, "spacing kept too"

        editor.send(EDITOR_PROMPT)
        prompt = bridge.next_frame()
        key = json.loads(prompt)["params"]["_meta"]["oa"]["idempotencyKey"]
        assert key.startswith("connect-")
        assert prompt == EDITOR_PROMPT.replace('"params":{', '"params":{"_meta":{"oa":{"idempotencyKey":"%s"}},' % key, 1), \
            "the prompt as the editor wrote it, its idempotency key added as one member"
        assert editor.next_line() == BRIDGE_UPDATE
        assert editor.next_line() == BRIDGE_ASK

        editor.send(EDITOR_ANSWER)
        assert bridge.next_frame() == EDITOR_ANSWER, "the editor's answer to the agent's request, as it wrote it"
        assert editor.next_line() == BRIDGE_DONE

        # A prompt with a `_meta` of its own: the key joins it, its other members stay as written.
        with_meta = ('{"params":{"_meta":{"x":1.50,"a":[1e3]},"sessionId":"s-1","prompt":[]},'
                     '"method":"session/prompt","id":3,"jsonrpc":"2.0"}')
        editor.send(with_meta)
        prompt = bridge.next_frame()
        key = json.loads(prompt)["params"]["_meta"]["oa"]["idempotencyKey"]
        assert prompt == with_meta.replace('"_meta":{', '"_meta":{"oa":{"idempotencyKey":"%s"},' % key, 1), prompt
        assert json.loads(editor.next_line())["id"] == 3
        # One with its own key: passed on exactly as it came.
        keyed = ('{"params":{"sessionId":"s-1","_meta":{"oa":{"idempotencyKey":"mine-1","z":2}},"prompt":[]},'
                 '"id":4,"method":"session/prompt","jsonrpc":"2.0"}')
        editor.send(keyed)
        assert bridge.next_frame() == keyed
        assert json.loads(editor.next_line())["id"] == 4
        assert time.monotonic() - started < 30
    finally:
        editor.stop()
