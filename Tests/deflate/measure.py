"""Bytes on the wire and the bridge's CPU per update for a recorded agent answer, with and without permessage-deflate
(issue 32 goal 5); run by `scripts/bench --sections deflate` and, for its byte counts only, by test_deflate_wire.py.

A phone on a raw socket (so every byte the bridge sends is counted: frame headers included) offers what Chromium offers
(`permessage-deflate; client_max_window_bits`) or nothing, opens a session on `serve --agent replay_agent.py`
(fast_agent_answer.jsonl: 258 updates per answer), and sends prompts one after another; an answer's bytes are those
received from the prompt until its response. The bridge's CPU is its process's user+system time over the answers
(/proc/PID/stat), per update. Memory per compressed connection: RSS of the bridge with N connections that each got an
answer, with compression minus without (the compressor held), and again after its idle release (2-4 s): glibc keeps
what was freed for the next allocations instead of returning it, so the second figure shows RSS, not what is in use.
Idle memory: two batches of N connections that only initialize (its answer compressed) and go quiet past the release.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "system"))
from loopback import Serve, upgrade_request  # noqa: E402

AGENT = f"{sys.executable} {HERE / 'replay_agent.py'}"
UPDATES_PER_ANSWER = sum(1 for line in (HERE / "fast_agent_answer.jsonl").read_text().splitlines() if line) - 1
CHROMIUM_OFFER = "permessage-deflate; client_max_window_bits"


class Phone:
    """One WebSocket client on a raw socket, counting the bytes it receives."""

    def __init__(self, port: int, offer: str | None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        request = upgrade_request(f"127.0.0.1:{port}")
        if offer:
            request = request.replace(b"\r\n\r\n", f"\r\nSec-WebSocket-Extensions: {offer}\r\n\r\n".encode(), 1)
        self.sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(4096)
        head, _, self.buffer = head.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head[:200]
        self.extensions = [line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                           if line.lower().startswith(b"sec-websocket-extensions:")]
        self.inflater = zlib.decompressobj(-15)
        self.received = 0
        self.next_id = 0

    def frame(self) -> tuple[int, bool, bytes]:
        def need(n: int) -> bytes:
            while len(self.buffer) < n:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.received += len(chunk)
                self.buffer += chunk
            taken, self.buffer = self.buffer[:n], self.buffer[n:]
            return taken
        b0, b1 = need(2)
        length = b1 & 0x7F
        if length == 126:
            length = struct.unpack("!H", need(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", need(8))[0]
        payload = need(length)
        compressed = bool(b0 & 0x40)
        if compressed:
            payload = self.inflater.decompress(payload + b"\x00\x00\xff\xff")
        return b0 & 0x0F, compressed, payload

    def call(self, method: str, params: dict) -> tuple[dict, int, int]:
        """Sends a request; returns its response, the bytes received until it, and how many messages came compressed."""
        self.next_id += 1
        rid = self.next_id
        before = self.received - len(self.buffer)
        self.sock.sendall(masked_frame(1, json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()))
        compressed = 0
        while True:
            opcode, was_compressed, payload = self.frame()
            compressed += was_compressed
            if opcode != 1:
                continue
            message = json.loads(payload)
            if message.get("id") == rid and "method" not in message:
                return message, self.received - len(self.buffer) - before, compressed

    def open_session(self) -> str:
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        answer, _, _ = self.call("session/new", {"cwd": str(Path.cwd()), "mcpServers": []})
        return answer["result"]["sessionId"]

    def close(self) -> None:
        self.sock.close()


def masked_frame(opcode: int, payload: bytes) -> bytes:
    """A client's frame (RFC 6455 §5.2), masked, any length."""
    key = os.urandom(4)
    length = len(payload)
    head = bytes([0x80 | opcode])
    if length < 126:
        head += bytes([0x80 | length])
    elif length < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", length)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", length)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def answer_bytes(serve: Serve, offer: str | None, answers: int) -> dict:
    """Bytes per answer and the bridge's CPU per update over `answers` answers on one connection."""
    phone = Phone(serve.port, offer)
    try:
        session = phone.open_session()
        sizes, compressed = [], 0
        cpu = cpu_seconds(serve.proc.pid)
        started = time.monotonic()
        for _ in range(answers):
            answer, size, packed = phone.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "again"}]})
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            sizes.append(size)
            compressed += packed
        cpu = cpu_seconds(serve.proc.pid) - cpu
        elapsed = time.monotonic() - started
        return {"extensions": phone.extensions, "bytes_per_answer": sorted(sizes)[len(sizes) // 2], "first_answer": sizes[0],
                "compressed_messages": compressed, "cpu_us_per_update": cpu / (answers * UPDATES_PER_ANSWER) * 1e6,
                "seconds": elapsed}
    finally:
        phone.close()


def memory(serve_compressed: Serve, serve_plain: Serve, connections: int, settle: float) -> dict:
    """RSS growth per connection that got one answer, each bridge with `connections` of them."""
    result = {}
    for name, serve, offer in (("compressed", serve_compressed, CHROMIUM_OFFER), ("plain", serve_plain, None)):
        base = rss_kib(serve.proc.pid)
        phones = []
        for _ in range(connections):
            phone = Phone(serve.port, offer)
            session = phone.open_session()
            phone.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
            phones.append(phone)
        time.sleep(1)
        result[f"{name}_kib_per_connection"] = (rss_kib(serve.proc.pid) - base) / connections
        if name == "compressed":
            time.sleep(settle)  # the compressor's idle release
            result["compressed_idle_kib_per_connection"] = (rss_kib(serve.proc.pid) - base) / connections
        for phone in phones:
            phone.close()
    return result


def idle_memory(serve_compressed: Serve, serve_plain: Serve, connections: int, settle: float) -> dict:
    """RSS growth per idle connection (initialized, then quiet past the compressor's release), each bridge first warmed
    by a batch of as many that came and went: freed compressors stay in glibc's free lists, so a second compressed
    batch costs what a plain one does only if the first batch's compressors were released and their memory reused."""
    result = {}
    for name, serve, offer in (("compressed", serve_compressed, CHROMIUM_OFFER), ("plain", serve_plain, None)):
        growth = []
        for _ in range(2):
            base = rss_kib(serve.proc.pid)
            phones = []
            for _ in range(connections):
                phone = Phone(serve.port, offer)
                phone.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
                phones.append(phone)
            time.sleep(settle)
            growth.append((rss_kib(serve.proc.pid) - base) / connections)
        result[f"{name}_idle_kib_per_connection_first_batch"] = growth[0]
        result[f"{name}_idle_kib_per_connection_second_batch"] = growth[1]
    return result


def main() -> None:
    answers = int(os.environ.get("DEFLATE_ANSWERS", "20"))
    connections = int(os.environ.get("DEFLATE_CONNECTIONS", "200"))
    on = Serve("--auth", "none", "--log-level", "error", "--agent", AGENT, "--max-connections", "4096",
               "--max-pending-per-address", "4096", prefix="oa-deflate-on-")
    off = Serve("--auth", "none", "--log-level", "error", "--agent", AGENT, "--no-compression", "--max-connections", "4096",
                "--max-pending-per-address", "4096", prefix="oa-deflate-off-")
    try:
        results = {
            "updates_per_answer": UPDATES_PER_ANSWER,
            "compressed": answer_bytes(on, CHROMIUM_OFFER, answers),
            "declined_by_flag": answer_bytes(off, CHROMIUM_OFFER, answers),
            "not_offered": answer_bytes(on, None, answers),
        }
        results["ratio"] = results["not_offered"]["bytes_per_answer"] / results["compressed"]["bytes_per_answer"]
        if connections:
            results["memory"] = memory(on, off, connections, settle=float(os.environ.get("DEFLATE_SETTLE", "6")))
            results["idle_memory"] = idle_memory(on, off, connections, settle=float(os.environ.get("DEFLATE_SETTLE", "6")))
    finally:
        on.stop()
        off.stop()
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
