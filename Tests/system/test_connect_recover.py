"""`oa-bridge connect` recovers and finds its bridge (issue 25.4), against a real `oa-bridge serve` on loopback with the
demo agent (it streams the prompt back word by word, 20 ms apart):

- a bridge restart mid-prompt: the bridge forgot the session (it does not keep sessions across restarts yet), so
  `connect` says so and opens a new session instead of looping on "Unknown session (-32002)";
- a bridge that stays away: the retries are bounded and end with a clear error;
- saved credentials are found by the bridge's identity (its certificate pin): plain `connect` uses the last bridge,
  `connect ADDRESS` works with an address it was never reached by, and `connect NAME` with mDNS finding nothing uses
  the saved addresses.

mDNS: the client only browses through the local avahi-daemon, if any; nothing is announced and no daemon is started."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from loopback import Serve

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

WORDS = " ".join(f"w{i}" for i in range(300))  # about 6 s of streaming


class Bridge(Serve):
    """`oa-bridge serve` on a loopback port (picked on its first start) with a state directory kept across restarts;
    the client's state beside it."""

    def __init__(self, *extra: str):
        base = Path(tempfile.mkdtemp(prefix="oa-connect-recover-")).resolve()
        super().__init__(*extra, base=base, working_directory=base)

    def client_env(self) -> dict:
        return {**os.environ, "XDG_STATE_HOME": str(self.base / "client"), "HOME": str(self.base)}


class Client:
    """A `connect` process whose stdout and stderr are read as they come."""

    def __init__(self, arguments: list[str], env: dict, stdin=subprocess.DEVNULL):
        self.proc = subprocess.Popen([BIN, "connect", *arguments], stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.out: list[str] = []
        self.err: list[str] = []
        self.threads = [threading.Thread(target=self._drain, args=(self.proc.stdout, self.out), daemon=True),
                        threading.Thread(target=self._drain, args=(self.proc.stderr, self.err), daemon=True)]
        for thread in self.threads:
            thread.start()

    @staticmethod
    def _drain(stream, into: list[str]) -> None:
        while True:
            chunk = stream.read(1)
            if not chunk:
                return
            into.append(chunk)

    def stdout(self) -> str:
        return "".join(self.out)

    def stderr(self) -> str:
        return "".join(self.err)

    def wait_for(self, predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            if self.proc.poll() is not None:
                return predicate()
            time.sleep(0.05)
        return False

    def finish(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"connect did not end within {timeout} s\n--- stderr:\n{self.stderr()[-3000:]}")
        finally:
            for thread in self.threads:
                thread.join(5)


def restart_outcome(err: str) -> str:
    """What `connect` said of the prompt a bridge restart cut: the bridge kept the session (issue 25 item 2) and said the
    prompt's outcome is unknown (the prompt is not run again: its idempotency key), or it forgot the session and
    `connect` opened a new one."""
    if "no longer knows session" in err and "A new session" in err:
        return "new session"
    if "restarted while this prompt ran" in err:
        return "kept session"
    if "asking it how the prompt ended" in err and "[stop] cancelled" in err:
        return "cancelled"  # the bridge kept the session and the prompt's outcome: cancelled by its shutdown
    return ""


def test_a_restart_mid_prompt_opens_a_new_session_and_says_so_instead_of_looping():
    bridge = Bridge("--auth", "none")
    try:
        client = Client([f"127.0.0.1:{bridge.port}", "--browse-time", "0.2", "--keepalive", "1", "--prompt", WORDS],
                        bridge.client_env())
        assert client.wait_for(lambda: "w20 " in client.stdout(), 20), client.stderr()
        bridge.stop()
        bridge.start()
        status = client.finish(90)
        err = client.stderr()
        outcome = restart_outcome(err)
        assert outcome, err[-3000:]
        assert status != 0 or outcome == "cancelled", "the answer was lost: that is not a success"
        assert client.stdout().endswith("\n"), "the error must not glue onto the answer's last line"
        reconnects = [line for line in err.splitlines() if line.startswith("[reconnecting ")]
        assert 1 <= len(reconnects) <= 10, err[-3000:]
        assert err.count("Unknown session") <= 1, f"the unknown session was retried:\n{err[-3000:]}"
    finally:
        bridge.stop()


def test_interactive_connect_goes_on_in_a_new_session_after_a_restart():
    bridge = Bridge("--auth", "none")
    try:
        client = Client([f"127.0.0.1:{bridge.port}", "--browse-time", "0.2", "--keepalive", "1"], bridge.client_env(),
                        stdin=subprocess.PIPE)
        client.proc.stdin.write(WORDS + "\n")
        client.proc.stdin.flush()
        assert client.wait_for(lambda: "w20 " in client.stdout(), 20), client.stderr()
        bridge.stop()
        bridge.start()
        assert client.wait_for(lambda: "Continuing in a new session" in client.stderr()
                               or restart_outcome(client.stderr()), 60), client.stderr()[-3000:]
        client.proc.stdin.write("after the restart\n")
        client.proc.stdin.flush()
        assert client.wait_for(lambda: "You said: after the restart" in client.stdout(), 30), client.stderr()[-3000:]
        client.proc.stdin.close()
        assert client.finish(30) == 0, client.stderr()[-3000:]
    finally:
        bridge.stop()


def test_a_bridge_that_stays_away_ends_in_a_clear_error_after_bounded_retries():
    bridge = Bridge("--auth", "none")
    try:
        client = Client([f"127.0.0.1:{bridge.port}", "--browse-time", "0.2", "--keepalive", "1", "--retries", "3",
                         "--prompt", WORDS], bridge.client_env())
        assert client.wait_for(lambda: "w20 " in client.stdout(), 20), client.stderr()
        bridge.stop()
        started = time.monotonic()
        status = client.finish(60)
        err = client.stderr()
        assert status != 0
        assert "gave up reconnecting after 3 attempts" in err, err[-3000:]
        reconnects = [line for line in err.splitlines() if line.startswith("[reconnecting ")]
        assert len(reconnects) == 3, err[-3000:]
        for line in reconnects:  # one line per attempt, each address once
            urls = re.findall(r"wss?://\S+?/", line)
            assert len(urls) == len(set(urls)), line
        assert time.monotonic() - started < 45
    finally:
        bridge.stop()


def pair_payload(bridge: Bridge) -> dict:
    """The QR payload, with the desk's LAN address replaced by loopback (where this bridge listens)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{bridge.port}/api/pair/info", timeout=5) as answer:
        payload = json.load(answer)
    payload["ws"] = f"wss://127.0.0.1:{bridge.port}/"
    payload["http"] = f"https://127.0.0.1:{bridge.port}"
    payload.pop("url", None)
    return payload


def run(bridge: Bridge, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, "connect", *arguments, "--browse-time", "0.5"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, env=bridge.client_env())


def test_saved_credentials_are_found_by_the_bridges_identity_whatever_was_typed():
    bridge = Bridge()  # token auth, TLS
    try:
        payload = pair_payload(bridge)
        paired = run(bridge, "--pair", json.dumps(payload), "--prompt", "first")
        assert paired.returncode == 0, paired.stderr
        saved = bridge.base / "client" / "oa-bridge" / "client" / "bridges.json"
        assert saved.exists() and (saved.stat().st_mode & 0o777) == 0o600, list(saved.parent.iterdir())
        assert payload["pin"] in saved.read_text()

        plain = run(bridge, "--prompt", "plain")
        assert plain.returncode == 0, f"plain connect should use the last bridge:\n{plain.stderr}"
        assert "You said: plain" in plain.stdout

        # An address it was never reached by: found by the pin it presents.
        other = run(bridge, f"localhost:{bridge.port}", "--prompt", "by another address")
        assert other.returncode == 0, other.stderr
        assert "You said: by another address" in other.stdout

        # By name, with mDNS finding nothing here: the saved addresses.
        named = run(bridge, payload["name"], "--prompt", "by name")
        assert named.returncode == 0, named.stderr
        assert "You said: by name" in named.stdout
        assert re.search(rf"connected to wss://(localhost|127\.0\.0\.1):{bridge.port}/ via manual", named.stderr), named.stderr
    finally:
        bridge.stop()
