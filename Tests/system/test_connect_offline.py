"""Issue 25 item 3 for `oa-bridge connect`: a prompt typed while the link is dead is kept and sent exactly once after the
link is back (with `_meta.oa.idempotencyKey`, the same on every retry), or shown as not sent with a clear line; the
session's earlier answers are not shown again when it resumes.

Against a real `oa-bridge serve` (demo agent, paired over TLS with its pin) reached through a TCP relay on loopback
that the test cuts and holds off (see test_acp_stdio.Relay)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from loopback import BIN
from test_acp_stdio import Desk, Relay

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")
AGENT = Path(__file__).resolve().parent / "agents" / "acp_script_agent.py"


class Interactive:
    """`connect ADDRESS` reading prompts from a pipe; stdout and stderr read as they come."""

    def __init__(self, desk: Desk, address: str, *extra: str):
        self.proc = subprocess.Popen([BIN, "connect", address, "--browse-time", "0", "--keepalive", "1", *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=desk.env())
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._drain, args=(stream, into), daemon=True).start()

    @staticmethod
    def _drain(stream, into: list[str]) -> None:
        for chunk in iter(lambda: stream.read(1), ""):
            into.append(chunk)

    @property
    def stdout(self) -> str:
        return "".join(self.out)

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_for(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()

    def finish(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def desk(serve_factory):
    return serve_factory(kind=Desk)


def test_a_prompt_typed_while_the_link_is_dead_is_sent_once_when_it_is_back(desk):
    relay = Relay(desk.serve.port)
    client = Interactive(desk, f"127.0.0.1:{relay.port}")
    try:
        assert client.wait_for(lambda: "type a prompt" in client.stderr, 30), client.stderr
        client.type("first words")
        assert client.wait_for(lambda: "[stop] end_turn" in client.stderr, 30), client.stderr
        relay.refuse(True)
        relay.cut()
        # The keepalive (1 s) sees the dead link within 2 s; the prompt is typed after that, while the bridge is away.
        time.sleep(3.5)
        client.type("typed offline")
        time.sleep(2.0)
        assert "You said: typed offline" not in client.stdout
        relay.refuse(False)
        assert client.wait_for(lambda: client.stderr.count("[stop] end_turn") == 2, 60), client.stderr
        out = client.stdout
        assert out.count("You said: typed offline") == 1, out
        # The resume asked for what came after the last update shown: the first answer is not shown again.
        assert out.count("You said: first words") == 1, out
        assert "sending it now" in client.stderr, client.stderr
    finally:
        client.finish()
        relay.close()


def test_a_prompt_that_cannot_be_sent_says_so_and_the_next_one_tries_again(desk):
    relay = Relay(desk.serve.port)
    client = Interactive(desk, f"127.0.0.1:{relay.port}", "--retries", "2")
    try:
        assert client.wait_for(lambda: "type a prompt" in client.stderr, 30), client.stderr
        relay.refuse(True)
        relay.cut()
        time.sleep(3.5)
        client.type("lost words")
        assert client.wait_for(lambda: "[not sent:" in client.stderr, 60), client.stderr
        assert client.proc.poll() is None, "connect ended instead of waiting for the next prompt"
        relay.refuse(False)
        client.type("next words")
        assert client.wait_for(lambda: "You said: next words" in client.stdout, 60), client.stderr
        assert "You said: lost words" not in client.stdout
    finally:
        client.finish()
        relay.close()


def test_a_prompt_after_the_agent_died_goes_on_instead_of_ending_connect():
    """The agent exits (`kill -9` in the chaos run; here the scripted agent's `die`): the prompt it was running gets the
    bridge's error, shown as a line, and the next prompt follows its session (loaded again in the restarted agent, or a
    new session, said so) instead of ending `connect` with "Unknown session"."""
    workspace = Path(tempfile.mkdtemp(prefix="oa-connect-agent-dies-")).resolve()
    desk = Desk("--agent", f"{sys.executable} {AGENT}", working_directory=workspace)
    client = Interactive(desk, desk.name)
    try:
        assert client.wait_for(lambda: "type a prompt" in client.stderr, 30), client.stderr
        client.type("before")
        assert client.wait_for(lambda: "heard: before" in client.stdout, 30), client.stderr
        client.type("die")
        assert client.wait_for(lambda: "[error]" in client.stderr, 30), client.stderr
        client.type("after the agent came back")
        assert client.wait_for(lambda: "heard: after the agent came back" in client.stdout, 30), client.stderr
        assert client.proc.poll() is None, client.stderr
        # The bridge kept the session's numbering through the restart: its replay of what connect showed is not shown
        # again (the chaos run saw connect print a session's whole history again after an agent restart).
        assert client.stdout.count("heard: before") == 1, client.stdout
    finally:
        client.finish()
        desk.stop()
