"""Hostile input against a real `oa-bridge serve` on loopback (issue 6): random and mutated
JSON-RPC frames, binary and oversized frames, raw HTTP garbage, a slowloris upgrade, a client that
never reads, and a flood of connections. Throughout, a well-behaved "witness" client keeps
prompting; the bridge must not crash or hang, must answer every bad frame with an error, must keep
its memory bounded, and the witness must never notice. Everything is bounded in count and time."""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import socket
import time
import urllib.request
from pathlib import Path

import pytest

from loopback import Serve

websockets = pytest.importorskip("websockets")

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
SEED = int(os.environ.get("OA_FUZZ_SEED", "1337"))
FRAMES = int(os.environ.get("OA_FUZZ_FRAMES", "800"))

SEED_INIT = {"jsonrpc": "2.0", "method": "initialize", "id": "1",
             "params": {"protocol_version": "0.2.2", "client_capabilities": {},
                        "client_info": {"name": "fuzz", "title": "fuzz", "version": "0"}}}
VALID = [
    SEED_INIT,
    {"jsonrpc": "2.0", "method": "session/new", "id": 2, "params": {"cwd": "."}},
    {"jsonrpc": "2.0", "method": "session/prompt", "id": 3, "params": {"session_id": "x", "prompt": [{"type": "text", "text": "hi"}]}},
    {"jsonrpc": "2.0", "method": "session/cancel", "params": {"session_id": "x"}},
    [{"jsonrpc": "2.0", "method": "nope", "id": 9}, {"jsonrpc": "2.0"}],
]


def mutate(rng: random.Random) -> str | bytes:
    """A random frame: garbage, a mutated valid message, deep nesting, odd types, odd ids."""
    kind = rng.randrange(9)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))      # binary garbage
    if kind == 1:
        return "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(0, 300)))
    if kind == 2:
        depth = rng.randrange(1, 3000)
        return "[" * depth + "]" * rng.choice([depth, depth - 1, 0])                 # deep nesting, unbalanced
    text = json.dumps(rng.choice(VALID))
    if kind == 3:                                                                    # byte flips
        chars = list(text)
        for _ in range(rng.randrange(1, 6)):
            chars[rng.randrange(len(chars))] = chr(rng.randrange(32, 127))
        return "".join(chars)
    if kind == 4:                                                                    # truncation
        return text[: rng.randrange(len(text))]
    if kind == 5:                                                                    # odd values
        message = json.loads(text) if not text.startswith("[") else {"jsonrpc": "2.0", "method": "x", "id": 1}
        key = rng.choice(["id", "method", "params", "jsonrpc"])
        message[key] = rng.choice([None, True, 1.5e308, -0.0, [], {}, "", "x" * 10_000, 2**63, [[[]]]])
        return json.dumps(message)
    if kind == 6:
        return json.dumps([rng.choice(VALID) for _ in range(rng.randrange(0, 50))])  # batches (maybe empty)
    if kind == 7:
        return text.replace('"2.0"', rng.choice(['"1.0"', '2.0', 'null', '"2.00"']))
    return "\ufeff" + text + rng.choice(["", "\x00", "}", " trailing"])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Bridge(Serve):
    def __init__(self):
        super().__init__("--auth", "none", "--log-level", "error", "--max-frame-size", "65536", prefix="oa-hostile-")

    @property
    def url(self) -> str:
        return self.ws_url

    def alive(self) -> bool:
        return self.proc.poll() is None


async def witness(url: str, stop: asyncio.Event, results: list[float]) -> None:
    """Prompts again and again; every turn must end with end_turn, quickly."""
    async with websockets.connect(url, max_size=2**22) as ws:
        await ws.send(json.dumps(SEED_INIT))
        assert "result" in json.loads(await asyncio.wait_for(ws.recv(), 10))
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "."}}))
        session = json.loads(await asyncio.wait_for(ws.recv(), 10))["result"]["session_id"]
        n = 10
        while not stop.is_set():
            n += 1
            start = time.monotonic()
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": "session/prompt",
                                      "params": {"session_id": session, "prompt": [{"type": "text", "text": f"turn {n}"}]}}))
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 15))
                if message.get("method") == "session/request_permission":
                    await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                              "result": {"outcome": {"outcome": "selected", "option_id": message["params"]["options"][0]["option_id"]}}}))
                elif message.get("id") == n:
                    assert message["result"]["stop_reason"] == "end_turn", message
                    break
            results.append(time.monotonic() - start)


def expects_no_answer(frame: str | bytes) -> bool:
    """JSON-RPC answers nothing to a notification or a batch of notifications (after initialize)."""
    if isinstance(frame, bytes):
        return False
    try:
        value = json.loads(frame)
    except (ValueError, RecursionError):
        return False
    entries = value if isinstance(value, list) else [value]
    return bool(entries) and all(isinstance(e, dict) and "id" not in e and isinstance(e.get("method"), str)
                                 and e.get("jsonrpc") == "2.0" for e in entries)


async def fuzzer(url: str, rng: random.Random, frames: int, answers: list[int], silent: list[str]) -> None:
    sent = 0
    while sent < frames:
        try:
            async with websockets.connect(url, max_size=2**22) as ws:
                if rng.random() < 0.5:
                    await ws.send(json.dumps(SEED_INIT))
                    await asyncio.wait_for(ws.recv(), 10)
                for _ in range(rng.randrange(1, 60)):
                    frame = mutate(rng)
                    sent += 1
                    await ws.send(frame)
                    try:
                        answer = await asyncio.wait_for(ws.recv(), 0.5 if expects_no_answer(frame) else 10)
                    except asyncio.TimeoutError:
                        if not expects_no_answer(frame):
                            silent.append(repr(frame)[:200])  # every other frame must be answered
                        continue
                    parsed = json.loads(answer)
                    entries = parsed if isinstance(parsed, list) else [parsed]
                    answers.append(sum(1 for e in entries if "error" in e))
        except (websockets.ConnectionClosed, json.JSONDecodeError):
            continue  # the bridge may close a connection after a fatal frame (1009); a new one follows


def slowloris(port: int, seconds: float) -> int:
    """Sends an upgrade request one byte at a time; returns how many bytes went out."""
    request = (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n").encode()
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=2) for _ in range(50)]
    sent, deadline = 0, time.monotonic() + seconds
    try:
        for byte in request:
            if time.monotonic() > deadline:
                break
            for s in sockets:
                try:
                    s.send(bytes([byte]))
                    sent += 1
                except OSError:
                    pass
            time.sleep(0.05)
    finally:
        for s in sockets:
            s.close()
    return sent


def http_garbage(port: int, rng: random.Random, count: int) -> int:
    answered = 0
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            method = rng.choice(["GET", "POST", "PUT", "DELETE", "BREW", "G\x00T", "OPTIONS"])
            path = rng.choice(["/", "/api/status", "/api/pair/info", "/../../etc/passwd", "/%00", "/" + "a" * 5000, "/?token=oa_s_x"])
            headers = rng.choice(["", "Content-Length: 99999999\r\n", "Content-Length: -1\r\n", "Transfer-Encoding: chunked\r\n",
                                  "X: " + "y" * 20_000 + "\r\n", "Upgrade: websocket\r\nConnection: Upgrade\r\n"])
            s.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode("latin-1"))
            try:
                if s.recv(64):
                    answered += 1
            except OSError:
                pass
    return answered


async def never_reader(url: str, seconds: float) -> int:
    """Starts prompts that stream updates, and never reads them."""
    sent = 0
    async with websockets.connect(url, max_queue=1, max_size=2**22) as ws:
        await ws.send(json.dumps(SEED_INIT))
        await asyncio.wait_for(ws.recv(), 10)
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "."}}))
        session = None
        while session is None:
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            session = message.get("result", {}).get("session_id")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                await asyncio.wait_for(ws.send(json.dumps({"jsonrpc": "2.0", "id": 100 + sent, "method": "session/prompt",
                    "params": {"session_id": session, "prompt": [{"type": "text", "text": "never read"}]}})), 1)
                sent += 1
            except (asyncio.TimeoutError, websockets.ConnectionClosed):
                break
            await asyncio.sleep(0.01)
    return sent


@pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")
def test_hostile_clients_do_not_hurt_the_bridge_or_a_witness():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    bridge = Bridge()
    try:
        baseline = rss_kb(bridge.proc.pid)

        async def scenario():
            stop = asyncio.Event()
            turns: list[float] = []
            answers: list[int] = []
            silent: list[str] = []
            witness_task = asyncio.create_task(witness(bridge.url, stop, turns))
            loop = asyncio.get_running_loop()
            fuzzers = [fuzzer(bridge.url, random.Random(SEED + i), FRAMES // 4, answers, silent) for i in range(4)]
            slow = loop.run_in_executor(None, slowloris, bridge.port, 8.0)
            garbage = loop.run_in_executor(None, http_garbage, bridge.port, random.Random(SEED), 40)
            reader = never_reader(bridge.url, 5.0)
            results = await asyncio.wait_for(asyncio.gather(*fuzzers, slow, garbage, reader), 120)
            # Flood: many connections at once; the witness must still get through.
            flood = []
            for _ in range(600):
                try:
                    flood.append(socket.create_connection(("127.0.0.1", bridge.port), timeout=2))
                except OSError:
                    break
            await asyncio.sleep(2)
            for s in flood:
                s.close()
            await asyncio.sleep(1)
            stop.set()
            await asyncio.wait_for(witness_task, 30)
            return turns, answers, results, len(flood), silent

        turns, answers, results, flooded, silent = asyncio.run(scenario())
        assert not silent, f"frames answered with silence: {silent[:5]}"
        assert bridge.alive(), "the bridge died under hostile input"
        assert len(answers) >= FRAMES * 0.5, f"only {len(answers)} of {FRAMES} fuzz frames were answered"
        assert sum(1 for a in answers if a > 0) >= len(answers) * 0.5, "most garbage should have been answered with errors"
        assert len(turns) >= 3, f"the witness finished only {len(turns)} turns while the bridge was under attack"
        assert max(turns) < 10, f"a witness turn took {max(turns):.1f} s"
        assert results[-3] > 0 and results[-2] > 0, "slowloris / HTTP garbage did not run"
        peak = rss_kb(bridge.proc.pid)
        assert peak - baseline < 300_000, f"RSS grew by {(peak - baseline) // 1024} MiB under attack"
        # Still answering a fresh client after all that.
        with urllib.request.urlopen(f"http://127.0.0.1:{bridge.port}/api/health", timeout=5) as response:
            assert response.status == 200
        print(f"\n[hostile] {len(answers)} fuzz frames answered, witness turns {len(turns)} "
              f"(max {max(turns) * 1000:.0f} ms), never-reader sent {results[-1]}, flood {flooded} sockets, "
              f"RSS {baseline // 1024} -> {peak // 1024} MiB")
    finally:
        log = bridge.stop()
        assert "Fatal error" not in log and "fatalError" not in log, log[-3000:]
