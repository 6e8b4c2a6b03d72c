"""fs/* confinement against a hostile stdio agent (issue 16, items 1-3 and the NUL finding), on loopback.

The agent (agents/hostile_fs_agent.py) runs behind `oa-bridge serve --auth none`; a WebSocket client sends it a
prompt whose text is the attack script, and the agent reports what the bridge answered. Every loop is bounded in count
and time. Each test fails on the code before the fix: the dangling link wrote outside, the race read and wrote outside,
and the 20,000-level write froze every client and ignored SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from loopback import BIN, Serve

websockets = pytest.importorskip("websockets")

AGENT = Path(__file__).resolve().parent / "agents" / "hostile_fs_agent.py"
RACE_ITERATIONS = int(os.environ.get("OA_FS_RACE_ITERATIONS", "2000"))
RACE_SECONDS = float(os.environ.get("OA_FS_RACE_SECONDS", "60"))
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")


class Bridge(Serve):
    """`serve --auth none` with the hostile agent, working in `<dir>/workspace`; `<dir>/outside` is beside it."""

    def __init__(self):
        root = Path(tempfile.mkdtemp(prefix="oa-security-fs-")).resolve()
        self.workspace = root / "workspace"
        self.outside = root / "outside"
        self.workspace.mkdir()
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text("OUTSIDE secret")
        super().__init__("--auth", "none", "--agent", f"{sys.executable} {AGENT}",
                         prefix="oa-security-fs-serve-", working_directory=self.workspace)

    def outside_entries(self) -> list[str]:
        return sorted(os.listdir(self.outside))


@pytest.fixture
def bridge(serve_factory):
    return serve_factory(kind=Bridge)


async def open_session(ws) -> str:
    await ws.send(json.dumps(INIT))
    assert "result" in json.loads(await asyncio.wait_for(ws.recv(), 15))
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"mcpServers": []}}))
    answer = json.loads(await asyncio.wait_for(ws.recv(), 30))
    return answer["result"]["sessionId"]


async def run_script(ws, session: str, script: dict, timeout: float) -> dict:
    """Prompts the agent with `script`; returns its report (the JSON text of its one update)."""
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                              "params": {"sessionId": session, "prompt": [{"type": "text", "text": json.dumps(script)}]}}))
    report = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        if message.get("method") == "session/update":
            report = json.loads(message["params"]["update"]["content"]["text"])
        elif message.get("id") == 3:
            assert message.get("result", {}).get("stopReason") == "end_turn", message
            return report
    raise AssertionError(f"the prompt did not end within {timeout} s")


def script_result(bridge: Bridge, script: dict, timeout: float = 60) -> dict:
    async def scenario():
        async with websockets.connect(bridge.ws_url, max_size=2**24) as ws:
            session = await open_session(ws)
            return await run_script(ws, session, script, timeout)
    return asyncio.run(scenario())


def test_a_write_through_a_dangling_symlink_is_refused_and_creates_nothing_outside(bridge):
    target = bridge.outside / "created.txt"
    (bridge.workspace / "dangle").symlink_to(target)
    (bridge.workspace / "dangle-rel").symlink_to("../outside/created-rel.txt")
    for name in ["dangle", "dangle-rel"]:
        report = script_result(bridge, {"op": "write", "path": str(bridge.workspace / name), "content": "escaped"})
        assert "error" in report["answer"], report
        assert report["answer"]["error"]["code"] == -32602, report
    assert bridge.outside_entries() == ["secret.txt"]
    assert os.readlink(bridge.workspace / "dangle") == str(target)


def test_a_nul_in_a_path_is_refused_not_cut(bridge):
    (bridge.workspace / "a").write_text("a")
    for op in ["read", "write"]:
        report = script_result(bridge, {"op": op, "path": "a\u0000.txt", "content": "cut"})
        assert report["answer"].get("error", {}).get("code") == -32602, report
        assert "NUL" in report["answer"]["error"]["message"], report
    assert (bridge.workspace / "a").read_text() == "a"


def test_a_directory_swapped_for_a_symlink_during_thousands_of_reads_and_writes_never_reaches_outside(bridge):
    d = bridge.workspace / "d"
    d.mkdir()
    (d / "secret.txt").write_text("inside secret")
    started = time.monotonic()
    report = script_result(bridge, {"op": "race", "dir": str(d), "outside": str(bridge.outside),
                                    "iterations": RACE_ITERATIONS, "seconds": RACE_SECONDS}, timeout=RACE_SECONDS + 60)
    elapsed = time.monotonic() - started
    print(f"race: {report} in {elapsed:.1f} s")
    assert report["iterations"] >= min(RACE_ITERATIONS, 200), report
    assert report["insideReads"] > 0, f"the race never read the real directory: {report}"
    assert report["outsideReads"] == 0, f"reads through the swapped directory reached outside: {report}"
    assert bridge.outside_entries() == ["secret.txt"], f"writes landed outside: {bridge.outside_entries()}"
    assert (bridge.outside / "secret.txt").read_text() == "OUTSIDE secret"


def test_a_20000_level_write_neither_stalls_other_clients_nor_delays_sigterm(bridge):
    deep = "/".join(["d"] * 20_000) + "/f.txt"

    async def scenario():
        async with websockets.connect(bridge.ws_url, max_size=2**24) as attacker, \
                websockets.connect(bridge.ws_url, max_size=2**24) as witness:
            session = await open_session(attacker)
            await witness.send(json.dumps(INIT))
            assert "result" in json.loads(await asyncio.wait_for(witness.recv(), 15))
            attack = asyncio.create_task(run_script(attacker, session, {"op": "write", "path": deep, "content": "x"}, 30))
            # The witness asks the bridge itself (an unknown session is answered by the hub, not the agent), for 4 s.
            worst = 0.0
            for i in range(40):
                sent = time.monotonic()
                await witness.send(json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "session/prompt",
                                               "params": {"sessionId": "nobody", "prompt": []}}))
                try:
                    answer = json.loads(await asyncio.wait_for(witness.recv(), 1.0))
                except asyncio.TimeoutError:
                    attack.cancel()
                    raise AssertionError(f"the witness got no answer within 1 s (request {i}) while the fs call ran")
                worst = max(worst, time.monotonic() - sent)
                assert answer.get("id") == 100 + i and "error" in answer, answer
                await asyncio.sleep(0.1)
            report = await asyncio.wait_for(attack, 30)
            return worst, report

    worst, report = asyncio.run(scenario())
    print(f"witness worst latency {worst * 1000:.0f} ms; fs answer {report['answer']}")
    assert report["answer"].get("error", {}).get("code") == -32602, report
    assert not (bridge.workspace / "d").exists()

    # SIGTERM while the agent is idle ends the bridge within a few seconds.
    sent = time.monotonic()
    bridge.proc.send_signal(signal.SIGTERM)
    try:
        bridge.proc.wait(8)
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGTERM did not stop the bridge within 8 s")
    print(f"SIGTERM to exit: {time.monotonic() - sent:.2f} s")
