"""`oa-bridge connect`'s side of DPoP (issue 30, RFC 9449) against a real `oa-bridge serve` (TLS on loopback, token
auth, `--dpop optional`, the default) with the demo agent: pairing makes a P-256 key in `<client state>/dpop/`
(file 0600, directory 0700) and binds the tokens to it (token_type DPoP); the exchange, every refresh and every
upgrade carry proofs, retried with the bridge's nonce; `connect` keeps working across a refresh and a bridge restart
(the restarted bridge has new nonces: the upgrade is refused once with use_dpop_nonce and tried again). Theft: the
access token and refresh token copied out of the credentials file are refused without the key. Without its key file
`connect` says to pair again."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dpop_client_support import request
from loopback import Serve

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

WORDS = " ".join(f"w{i}" for i in range(200))  # about 4 s of the demo agent's streaming


class Bridge(Serve):
    """`oa-bridge serve` on a loopback port (picked on its first start) with a state directory kept across restarts;
    the client's state apart."""

    def __init__(self, *extra: str):
        base = Path(tempfile.mkdtemp(prefix="oa-dpop-client-")).resolve()
        super().__init__(*extra, base=base, working_directory=base)

    @property
    def client_state(self) -> Path:
        return self.base / "client-state"

    def connect(self, *arguments: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([BIN, "connect", *arguments, "--browse-time", "0", "--state-dir", str(self.client_state)],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "HOME": str(self.base)})

    def payload(self) -> dict:
        """The QR payload, pointed at loopback (where this bridge listens)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/pair/info", timeout=5) as answer:
            payload = json.load(answer)
        payload["ws"] = f"wss://127.0.0.1:{self.port}/"
        payload["http"] = f"https://127.0.0.1:{self.port}"
        payload.pop("url", None)
        return payload


def credentials(bridge: Bridge) -> tuple[Path, dict]:
    directory = bridge.client_state / "client"
    files = [f for f in directory.glob("*.json") if f.name != "bridges.json"]
    assert len(files) == 1, list(directory.iterdir())
    return files[0], json.loads(files[0].read_text())


@pytest.fixture
def bridge():
    started = Bridge()
    yield started
    started.stop()


def test_connect_pairs_bound_and_keeps_working_across_a_refresh_and_a_restart(bridge):
    paired = bridge.connect("--pair", json.dumps(bridge.payload()), "--prompt", "first")
    assert paired.returncode == 0, paired.stderr
    assert "You said: first" in paired.stdout
    # The key: <client state>/dpop/pin-<first 8 bytes of the pin>.key, 0600 in a 0700 directory, named in the
    # credentials, which say the tokens are bound.
    file, kept = credentials(bridge)
    assert kept["tokens"]["token_type"] == "DPoP", kept["tokens"]["token_type"]
    key = file.parent / kept["dpopKey"]
    assert key.parent.name == "dpop" and key.name.startswith("pin-") and key.suffix == ".key", key
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert "PRIVATE KEY" in key.read_text()

    # A refresh (the access token made due): with a proof of the same key, still bound, and the prompt answered.
    kept["tokens"]["access_token_expires_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    file.write_text(json.dumps(kept))
    refreshed = bridge.connect("--prompt", "after the refresh")
    assert refreshed.returncode == 0, refreshed.stderr
    assert "You said: after the refresh" in refreshed.stdout
    _, now = credentials(bridge)
    assert now["tokens"]["access_token"] != kept["tokens"]["access_token"] and now["tokens"]["token_type"] == "DPoP"
    assert now["dpopKey"] == kept["dpopKey"]

    # A restart mid-prompt: the reconnect's upgrade meets new nonces, is told use_dpop_nonce, and is tried again.
    client = subprocess.Popen(
        [BIN, "connect", "--browse-time", "0", "--keepalive", "1", "--state-dir", str(bridge.client_state)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HOME": str(bridge.base)})
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, into=into: into.extend(iter(lambda: s.read(1), "")), daemon=True)
               for s, into in ((client.stdout, out), (client.stderr, err))]
    for reader in readers:
        reader.start()

    def wait_for(predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and client.poll() is None:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()

    try:
        client.stdin.write(WORDS + "\n")
        client.stdin.flush()
        assert wait_for(lambda: "w20 " in "".join(out), 20), "".join(err)[-3000:]
        bridge.stop()
        bridge.start()
        client.stdin.write("after the restart\n")
        client.stdin.flush()
        assert wait_for(lambda: "You said: after the restart" in "".join(out), 45), "".join(err)[-3000:]
        client.stdin.close()
        assert client.wait(30) == 0, "".join(err)[-3000:]
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(10)
    log = (bridge.base / "serve.log").read_text(errors="replace")
    assert "use_dpop_nonce" in log, "the restarted bridge never asked for its nonce: was a proof sent at all?"


def test_tokens_copied_out_of_the_credentials_file_are_refused_without_the_key(bridge):
    payload = bridge.payload()
    paired = bridge.connect("--pair", json.dumps(payload), "--prompt", "mine")
    assert paired.returncode == 0, paired.stderr
    file, kept = credentials(bridge)
    key = file.parent / kept["dpopKey"]
    # The spent code again: refused, and the key of the pairing this client has is left as it was (no new key
    # replaced it before the bridge answered; before, the refused pairing cost the good one its key).
    before = key.read_bytes()
    spent = bridge.connect("--pair", json.dumps(payload), "--prompt", "again")
    assert spent.returncode != 0
    assert key.read_bytes() == before and sorted(p.name for p in key.parent.iterdir()) == [key.name]
    still = bridge.connect("--prompt", "still paired")
    assert still.returncode == 0 and "You said: still paired" in still.stdout, still.stderr[-2000:]
    tokens = kept["tokens"]
    origin = f"https://127.0.0.1:{bridge.port}"
    status, headers, _ = request("GET", origin + "/api/me", {"Authorization": "Bearer " + tokens["access_token"]})
    assert status == 401 and headers.get("www-authenticate", "").startswith("DPoP"), (status, headers)
    status, _, _ = request("GET", origin + "/api/me", {"Authorization": "DPoP " + tokens["access_token"]})
    assert status == 401
    status, _, body = request("POST", origin + "/api/auth/refresh", {}, {"refresh_token": tokens["refresh_token"]})
    assert status in (400, 401) and body.get("error") == "invalid_dpop_proof", (status, body)
    # Copied elsewhere without the key file: connect says to pair again, and never sends the token as Bearer.
    (file.parent / kept["dpopKey"]).unlink()
    lost = bridge.connect("--prompt", "without the key")
    assert lost.returncode != 0
    assert "pair again" in lost.stderr.lower() and "does not exist" in lost.stderr, lost.stderr[-2000:]


def test_connect_stdio_relays_over_a_bound_token(bridge):
    """`connect --stdio` (an editor's agent) reaches the bridge with the bound token: its upgrade carries a proof (a
    Bearer token would be refused, invalid_token)."""
    paired = bridge.connect("--pair", json.dumps(bridge.payload()), "--prompt", "paired")
    assert paired.returncode == 0, paired.stderr
    assert credentials(bridge)[1]["tokens"]["token_type"] == "DPoP"
    writing = threading.Lock()
    relay = subprocess.Popen([BIN, "connect", "--stdio", "--browse-time", "0", "--state-dir", str(bridge.client_state)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "HOME": str(bridge.base)})
    answers: dict[int, dict] = {}
    texts: list[str] = []

    def read() -> None:
        for line in relay.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "id" in message and ("result" in message or "error" in message):
                answers[message["id"]] = message
            if message.get("method") == "session/request_permission":  # the demo agent asks first: allow
                options = message["params"]["options"]
                chosen = next(o for o in options if o["kind"].startswith("allow"))
                with writing:
                    relay.stdin.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}}) + "\n")
                    relay.stdin.flush()
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "agent_message_chunk":
                texts.append((update.get("content") or {}).get("text", ""))

    threading.Thread(target=read, daemon=True).start()

    def call(rid: int, method: str, params: dict, timeout: float = 20) -> dict:
        with writing:
            relay.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
            relay.stdin.flush()
        deadline = time.monotonic() + timeout
        while rid not in answers and time.monotonic() < deadline and relay.poll() is None:
            time.sleep(0.05)
        assert rid in answers, relay.stderr.read() if relay.poll() is not None else f"no answer to {method}"
        assert "result" in answers[rid], answers[rid]
        return answers[rid]["result"]

    try:
        call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = call(2, "session/new", {"cwd": str(bridge.base), "mcpServers": []})["sessionId"]
        result = call(3, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "over stdio"}]})
        assert result.get("stopReason") == "end_turn", result
        assert "over stdio" in "".join(texts), texts
    finally:
        relay.stdin.close()
        try:
            relay.wait(15)
        except subprocess.TimeoutExpired:
            relay.kill()
            relay.wait(10)
    log = (bridge.base / "serve.log").read_text(errors="replace")
    assert "invalid_token" not in log, "a bound token went out as Bearer"
