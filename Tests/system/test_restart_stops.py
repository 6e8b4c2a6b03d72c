"""`serve` stops within 2 s of SIGTERM in the states the chaos run found it slow in (issue 25 item 1, findings F5 and
F5b): while it restarts an agent that was killed (the restarted agent is slow to start: a phone's reattach waits for
it), and while a connection that has sent nothing is open (Chromium keeps a spare one; raw TCP and TLS).

Real peers: `oa-bridge serve` on loopback (`--auth none`) with the official ACP Python SDK agent
`agents/restart_agent.py` behind a wrapper that sleeps before it starts once a marker file exists; a phone is a
`websockets` client speaking ACP v1; the idle connections are plain sockets (and Python's `ssl`).

The issue asks for 2 s; the bound here is STOP_BOUND_S for a debug build on a loaded 2-core CI machine, and the
measured times are printed (`pytest -s`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import websockets

from loopback import Serve

AGENT = Path(__file__).resolve().parent / "agents" / "restart_agent.py"
STOP_BOUND_S = 2.5

# Execs the SDK agent, after sleeping 60 s when the marker exists (an agent that takes long to start again).
SLOW_START = """
import os, sys, time
if os.path.exists(sys.argv[1]):
    open(sys.argv[1] + ".pid", "w").write(str(os.getpid()))
    time.sleep(60)
os.execv(sys.executable, [sys.executable, sys.argv[2]])
"""


def _stop_time(serve: Serve) -> float:
    started = time.monotonic()
    serve.proc.send_signal(signal.SIGTERM)
    try:
        serve.proc.wait(STOP_BOUND_S + 20)
    except subprocess.TimeoutExpired:
        serve.proc.kill()
        serve.proc.wait(10)
        raise AssertionError(f"serve ignored SIGTERM for {STOP_BOUND_S + 20} s:\n{serve.log_path.read_text()[-3000:]}")
    took = time.monotonic() - started
    print(f"serve stopped {took:.2f} s after SIGTERM")
    assert took <= STOP_BOUND_S, f"serve took {took:.2f} s to stop after SIGTERM:\n{serve.log_path.read_text()[-3000:]}"
    return took


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (any of its threads may have started them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def test_sigterm_while_a_killed_agent_restarts_stops_within_2_s():
    root = Path(tempfile.mkdtemp(prefix="oa-stops-")).resolve()
    work = root / "work"
    work.mkdir()
    marker = root / "slow"
    wrapper = root / "slow_start.py"
    wrapper.write_text(SLOW_START)
    serve = Serve("--auth", "none", "--agent", f"{sys.executable} {wrapper} {marker} {AGENT}", prefix="oa-stops-serve-",
                  working_directory=work, env={"RESTART_AGENT_DIR": str(root / "agent")})
    try:
        async def scenario():
            async with websockets.connect(serve.ws_url, open_timeout=10) as ws:
                async def call(rid, method, params, timeout=30):
                    await ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
                    deadline = time.monotonic() + timeout
                    while time.monotonic() < deadline:
                        message = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
                        if message.get("id") == rid:
                            return message
                    raise AssertionError(f"no answer to {method}")
                assert "result" in await call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
                created = await call(2, "session/new", {"cwd": str(work), "mcpServers": []})
                session = created["result"]["sessionId"]
                agents = _children(serve.proc.pid)
                assert agents, "no agent process under serve"
                marker.write_text("")
                for pid in agents:
                    os.kill(pid, signal.SIGKILL)
                # The phone comes back to its session: the bridge restarts the agent, which takes its time.
                while json.loads(await asyncio.wait_for(ws.recv(), 10)).get("method") != "_oa/agent_exited":
                    pass
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "_oa/session/resume",
                                          "params": {"sessionId": session, "lastSeq": 0}}))
                deadline = time.monotonic() + 15
                while not _children(serve.proc.pid):
                    assert time.monotonic() < deadline, "the bridge did not start the agent again"
                    await asyncio.sleep(0.05)
                await asyncio.sleep(1.0)
                await asyncio.get_running_loop().run_in_executor(None, _stop_time, serve)

        asyncio.run(asyncio.wait_for(scenario(), 90))
        assert "the agent exited" in serve.log_path.read_text()
    finally:
        if serve.proc.poll() is None:
            serve.proc.kill()
            serve.proc.wait(10)
        # The slow agent must not outlive the test (nor serve: that it did not is checked by the lifecycle tests).
        try:
            os.kill(int(Path(str(marker) + ".pid").read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def _idle_connection(port: int, tls: bool) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    return sock


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_sigterm_with_an_idle_connection_stops_within_2_s(tls):
    serve = Serve("--auth", "none", prefix="oa-stops-idle-")
    sock = _idle_connection(serve.port, tls=tls)
    try:
        time.sleep(0.5)
        _stop_time(serve)
    finally:
        sock.close()
        serve.stop()


def test_sigterm_with_an_idle_keep_alive_connection_after_a_request_stops_within_2_s():
    serve = Serve("--auth", "none", prefix="oa-stops-keepalive-")
    sock = _idle_connection(serve.port, tls=False)
    try:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"200" in sock.recv(4096)
        time.sleep(0.5)
        _stop_time(serve)
    finally:
        sock.close()
        serve.stop()
