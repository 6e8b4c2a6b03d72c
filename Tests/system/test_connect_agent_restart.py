"""`connect` keeps waiting when its link ends while its prompt waits for a restarting agent (issue 25 item 4, finding
F8 of the chaos run): the agent was killed, the prompt that followed made the bridge start it again and load the
session (slowly: the agent takes seconds to start), and the bridge restarted meanwhile (SIGTERM, or SIGKILL as a link
that dies would). `connect` used to exit with
"the connection closed"; now it reconnects, attaches to the session again and sends the prompt once, bounded by its
retries.

Real peers: `oa-bridge serve` on loopback (`--auth none`) with the official ACP Python SDK agent
`agents/restart_agent.py` behind a wrapper that sleeps before it starts while a marker file exists; `oa-bridge
connect` in interactive mode on a pipe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from loopback import Serve
from test_connect_recover import Client
from test_restart_stops import SLOW_START, _children

AGENT = Path(__file__).resolve().parent / "agents" / "restart_agent.py"


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_connect_keeps_waiting_when_the_bridge_restarts_while_its_prompt_waits_for_the_agent(how):
    root = Path(tempfile.mkdtemp(prefix="oa-connect-agent-restart-")).resolve()
    work = root / "work"
    work.mkdir()
    state = root / "state"
    marker = root / "slow"
    wrapper = root / "slow_start.py"
    wrapper.write_text(SLOW_START)
    agent_state = root / "agent"
    arguments = ("--auth", "none", "--agent", f"{sys.executable} {wrapper} {marker} {AGENT}")
    env = {"RESTART_AGENT_DIR": str(agent_state)}
    serve = Serve(*arguments, prefix="oa-connect-agent-restart-serve-", working_directory=work, state=state, env=env)
    port = serve.port
    client_env = {**os.environ, "XDG_STATE_HOME": str(root / "client"), "HOME": str(root)}
    client = Client([f"127.0.0.1:{port}", "--browse-time", "0.2", "--keepalive", "1", "--cwd", str(work)],
                    client_env, stdin=subprocess.PIPE)
    try:
        client.proc.stdin.write("one\n")
        client.proc.stdin.flush()
        assert client.wait_for(lambda: "heard: one" in client.stdout(), 30), client.stderr()
        agents = _children(serve.proc.pid)
        assert agents
        marker.write_text("")
        for pid in agents:
            os.kill(pid, signal.SIGKILL)
        _wait(lambda: "the agent exited" in serve.log_path.read_text(), 10, "agent exit in serve's log")
        client.proc.stdin.write("two\n")
        client.proc.stdin.flush()
        # The prompt waits while the bridge starts the agent again (slowly) to load the session.
        _wait(lambda: serve.log_path.read_text().count("agent process started") >= 2, 15, "second agent start")
        time.sleep(1.0)
        assert client.proc.poll() is None, client.stderr()
        serve.proc.send_signal(how)
        serve.proc.wait(20)
        marker.unlink()
        serve = Serve(*arguments, "--port", str(port), prefix="oa-connect-agent-restart-serve-", working_directory=work,
                      state=state, env=env)
        assert client.wait_for(lambda: "heard: two" in client.stdout(), 60), \
            f"--- stdout:\n{client.stdout()[-2000:]}\n--- stderr:\n{client.stderr()[-3000:]}"
        assert client.proc.poll() is None, client.stderr()
        client.proc.stdin.close()
        assert client.finish(30) == 0, client.stderr()
        prompts = [json.loads(line) for line in (agent_state / "requests.jsonl").read_text().splitlines()]
        texts = [p["text"] for p in prompts if p["method"] == "session/prompt"]
        # Each prompt ran once; the session went on (loaded again, not replaced).
        assert texts == ["one", "two"], texts
        sessions = {p["session"] for p in prompts if p["method"] == "session/prompt"}
        assert len(sessions) == 1, prompts
        assert "is gone" not in client.stderr()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait(10)
        serve.stop()
        try:
            os.kill(int(Path(str(marker) + ".pid").read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
