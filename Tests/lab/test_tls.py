"""TLS across the lab (issue 11): a phone on the LAN talks to the desk's bridge over TLS with the key pinned through
the QR payload; a capture on the switch holds no token and no prompt; plaintext from the LAN is refused before any
token is looked at (the same pairing token then works over TLS); loopback plaintext still works; --allow-plaintext
opts out. The pin is checked with curl --pinnedpubkey and with openssl, never with the bridge's own code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import lab as labmod
from lab_support import wait_http

# Runs on the phone with this interpreter (websockets): initialize, session/new, a prompt with a marker and the
# permission round trip over wss:// (or ws://), the certificate checked against the pin by openssl.
PHONE_CLIENT = r'''
import base64, hashlib, json, ssl, subprocess, sys
from websockets.sync.client import connect

url, token, pin, marker, cwd = sys.argv[1:6]

def pin_of(der):
    pem = ssl.DER_cert_to_PEM_cert(der).encode()
    public = subprocess.run(["openssl", "x509", "-pubkey", "-noout"], input=pem, capture_output=True, check=True).stdout
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public, capture_output=True, check=True).stdout
    return "sha256/" + base64.b64encode(hashlib.sha256(spki).digest()).decode()

kwargs = {"additional_headers": {"Authorization": "Bearer " + token}, "open_timeout": 10}
if url.startswith("wss://"):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    kwargs["ssl"] = context
result = {"permissions": 0, "answer": ""}
with connect(url, **kwargs) as ws:
    if url.startswith("wss://"):
        result["pin"] = pin_of(ws.socket.getpeercert(binary_form=True))
        if result["pin"] != pin:
            print(json.dumps(result)); sys.exit(4)
    ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialize", "id": "1", "params": {"protocol_version": "0.2.2",
        "client_capabilities": {}, "client_info": {"name": "lab-tls", "title": "lab", "version": "0"}}}))
    result["initialize"] = "result" in json.loads(ws.recv(timeout=10))
    ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd}}))
    created = json.loads(ws.recv(timeout=10))
    session = created.get("result", {}).get("session_id")
    if session is None:
        result["error"] = created; print(json.dumps(result)); sys.exit(5)
    ws.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"session_id": session, "prompt": [{"type": "text", "text": marker}]}}))
    for _ in range(500):
        message = json.loads(ws.recv(timeout=15))
        if message.get("method") == "session/request_permission":
            result["permissions"] += 1
            option = message["params"]["options"][0]["option_id"]
            ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "selected", "option_id": option}}}))
        elif message.get("method") == "session/update":
            content = message["params"].get("update", {}).get("content", {})
            if isinstance(content, dict):
                result["answer"] += content.get("text", "")
        elif message.get("id") == 3:
            result["stop_reason"] = message.get("result", {}).get("stop_reason")
            break
print(json.dumps(result))
'''


def _curl(host: labmod.Host, url: str, *args: str, pin: str | None = None, body: dict | None = None,
          token: str | None = None) -> tuple[int, int, str]:
    """curl inside `host`: (exit status, HTTP status, body). With `pin`, https checked by --pinnedpubkey only."""
    argv = ["curl", "-sS", "--max-time", "8", "-o", "-", "-w", "\n%{http_code}", *args]
    if pin is not None:
        argv += ["-k", "--pinnedpubkey", "sha256//" + pin.removeprefix("sha256/")]
    if body is not None:
        argv += ["-H", "Content-Type: application/json", "--data", json.dumps(body)]
    if token is not None:
        argv += ["-H", f"Authorization: Bearer {token}"]
    r = host.run(argv + [url], timeout=15)
    text, _, status = r.stdout.rpartition("\n")
    return r.returncode, int(status or 0), text


def _upgrade_status(host: labmod.Host, ip: str, token: str) -> int:
    headers = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
               "Sec-WebSocket-Version": "13", "Authorization": f"Bearer {token}"}
    code = ("import http.client\n"
            f"c = http.client.HTTPConnection('{ip}', 9099, timeout=5)\n"
            f"c.request('GET', '/', headers={headers!r})\n"
            "print(c.getresponse().status)\n")
    r = host.run([sys.executable, "-c", code], timeout=10)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


def _serve(desk: labmod.Host, bridge_bin: str, *extra: str) -> tuple[labmod.Proc, dict]:
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", "--working-directory", str(desk.dir), *extra],
                       label="serve-tls")
    wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
    r = desk.run(["curl", "-sS", "--max-time", "5", "http://127.0.0.1:9099/api/pair/info"], timeout=10)
    assert r.returncode == 0, r.stderr
    return serve, json.loads(r.stdout)


def _phone_client(phone: labmod.Host, url: str, token: str, pin: str, marker: str, cwd: str) -> dict:
    script = phone.dir / "tls_phone_client.py"
    script.write_text(PHONE_CLIENT)
    r = phone.run([sys.executable, str(script), url, token, pin, marker, cwd], timeout=60)
    assert r.stdout.strip(), f"phone client printed nothing (exit {r.returncode}): {r.stderr[-2000:]}"
    return {"exit": r.returncode, **json.loads(r.stdout.strip().splitlines()[-1])}


def test_lan_traffic_is_encrypted_pinned_and_plaintext_secrets_are_refused(lab, desk, phone, bridge_bin):
    serve, payload = _serve(desk, bridge_bin)
    switch = lab.switches["sw0"]
    capture_file = lab.dir / f"tls-capture-{os.getpid()}.pcap"
    capture = subprocess.Popen(["ip", "netns", "exec", switch.netns, "tcpdump", "-i", "br0", "-U", "-s", "0", "-w",
                                str(capture_file), "tcp", "port", "9099"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)  # tcpdump attaches
        pin, pairing = payload["pin"], payload["token"]
        assert payload["ws"] == f"wss://{desk.ipv4}:9099/" and payload["http"] == f"https://{desk.ipv4}:9099", payload
        base_tls, base_clear = f"https://{desk.ipv4}:9099", f"http://{desk.ipv4}:9099"

        # The pin: curl with the right one passes, with a wrong one fails (exit 90), from another host.
        rc, status, body = _curl(phone, base_tls + "/api/health", pin=pin)
        if rc == 28:
            # Seen twice in whole-suite runs, never alone: say what the desk had on 9099, then try once more.
            print("[tls] first pinned curl timed out; desk sockets:\n" + desk.run(["ss", "-tanp"], timeout=10).stdout)
            rc, status, body = _curl(phone, base_tls + "/api/health", "-v", pin=pin)
        assert (rc, status) == (0, 200), (rc, status, body)
        rc, _, _ = _curl(phone, base_tls + "/api/health", pin="sha256/" + "A" * 43 + "=")
        assert rc == 90, rc

        # Plaintext from the LAN: the exchange is refused before the token is looked at ...
        rc, status, body = _curl(phone, base_clear + "/api/auth/exchange", body={"pairing_token": pairing, "device_name": "clear"})
        assert status == 403 and json.loads(body)["error"] == "tls_required", (status, body)
        # ... so the same pairing token then works over TLS.
        rc, status, body = _curl(phone, base_tls + "/api/auth/exchange", pin=pin, body={"pairing_token": pairing, "device_name": "Phone"})
        assert status == 200, (rc, status, body)
        tokens = json.loads(body)
        access, refresh = tokens["access_token"], tokens["refresh_token"]
        # A token in clear: /api and the WebSocket upgrade are refused too; over TLS /api/status answers.
        rc, status, body = _curl(phone, base_clear + "/api/status", token=access)
        assert status == 403 and json.loads(body)["error"] == "tls_required", (status, body)
        assert _upgrade_status(phone, desk.ipv4, access) == 403
        rc, status, body = _curl(phone, base_tls + "/api/status", pin=pin, token=access)
        assert status == 200, (status, body)
        # Refresh over TLS.
        rc, status, body = _curl(phone, base_tls + "/api/auth/refresh", pin=pin, body={"refresh_token": refresh})
        assert status == 200, (rc, status, body)
        access = json.loads(body)["access_token"]

        # A prompt with a unique marker and a permission round trip over wss://.
        marker = "tls-marker-" + uuid.uuid4().hex
        result = _phone_client(phone, f"wss://{desk.ipv4}:9099/", access, pin, marker, str(desk.dir))
        assert result["exit"] == 0 and result.get("stop_reason") == "end_turn", result
        assert marker in result["answer"] and result["permissions"] >= 1, result
        assert result["pin"] == pin

        # Loopback plaintext still works: the seed dialect over ws:// on the desk itself.
        local = _phone_client(desk, "ws://127.0.0.1:9099/", access, pin, "local " + marker, str(desk.dir))
        assert local["exit"] == 0 and local["initialize"] and local.get("stop_reason") == "end_turn", local
    finally:
        time.sleep(1.0)
        capture.terminate()
        try:
            capture.wait(timeout=10)
        except subprocess.TimeoutExpired:
            capture.kill()
        serve.stop()
    data = capture_file.read_bytes()
    packets = subprocess.run(["tcpdump", "-nn", "-r", str(capture_file)], capture_output=True, text=True, timeout=30).stdout
    assert len(packets.splitlines()) > 50, f"the capture is (nearly) empty: {packets[:2000]}"
    # The plaintext attempts above are in it on purpose: they hold the pairing token (refused, not consumed) and the
    # first access token sent in clear. Nothing that went over TLS may show: not the refreshed access token, not the
    # refresh token, not the marker.
    assert marker.encode() not in data, "the prompt crossed the LAN in clear"
    assert refresh.encode() not in data, "the refresh token crossed the LAN in clear"
    assert access.encode() not in data, "the refreshed access token crossed the LAN in clear"
    assert b"oa_r_" not in data, "a refresh token crossed the LAN in clear"
    log = serve.stderr()
    assert "oa_p_" not in log and "oa_s_" not in log and "oa_r_" not in log, "a token reached the log"


def test_encrypted_exchange_capture_holds_no_token(lab, desk, phone, bridge_bin):
    """Only TLS on the wire (no plaintext attempt at all): the capture holds no `oa_` at all, and is not empty."""
    serve, payload = _serve(desk, bridge_bin)
    switch = lab.switches["sw0"]
    capture_file = lab.dir / f"tls-only-{os.getpid()}.pcap"
    capture = subprocess.Popen(["ip", "netns", "exec", switch.netns, "tcpdump", "-i", "br0", "-U", "-s", "0", "-w",
                                str(capture_file), "tcp", "port", "9099"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    marker = "tls-only-" + uuid.uuid4().hex
    try:
        time.sleep(1.0)
        pin = payload["pin"]
        base = f"https://{desk.ipv4}:9099"
        rc, status, body = _curl(phone, base + "/api/auth/exchange", pin=pin, body={"pairing_token": payload["token"], "device_name": "Phone"})
        assert status == 200, (rc, status, body)
        tokens = json.loads(body)
        rc, status, body = _curl(phone, base + "/api/auth/refresh", pin=pin, body={"refresh_token": tokens["refresh_token"]})
        assert status == 200, (rc, status, body)
        access = json.loads(body)["access_token"]
        result = _phone_client(phone, f"wss://{desk.ipv4}:9099/", access, pin, marker, str(desk.dir))
        assert result["exit"] == 0 and marker in result["answer"] and result["permissions"] >= 1, result
    finally:
        time.sleep(1.0)
        capture.terminate()
        try:
            capture.wait(timeout=10)
        except subprocess.TimeoutExpired:
            capture.kill()
        serve.stop()
    data = capture_file.read_bytes()
    packets = subprocess.run(["tcpdump", "-nn", "-r", str(capture_file)], capture_output=True, text=True, timeout=30).stdout
    assert len(packets.splitlines()) > 30, f"the capture is (nearly) empty: {packets[:2000]}"
    assert b"oa_" not in data, "a token crossed the LAN in clear"
    assert marker.encode() not in data, "the prompt crossed the LAN in clear"


def test_allow_plaintext_accepts_the_lan_in_clear(lab, desk, phone, bridge_bin):
    serve, payload = _serve(desk, bridge_bin, "--allow-plaintext")
    try:
        assert "PLAINTEXT ALLOWED" in serve.stderr()
        base = f"http://{desk.ipv4}:9099"
        rc, status, body = _curl(phone, base + "/api/auth/exchange", body={"pairing_token": payload["token"], "device_name": "Old app"})
        assert status == 200, (rc, status, body)
        access = json.loads(body)["access_token"]
        marker = "clear-" + uuid.uuid4().hex
        result = _phone_client(phone, f"ws://{desk.ipv4}:9099/", access, payload["pin"], marker, str(desk.dir))
        assert result["exit"] == 0 and marker in result["answer"], result
    finally:
        serve.stop()


def _metric(desk: labmod.Host, name: str) -> float:
    """A counter of the bridge on the desk (/metrics answers on loopback), 0 when it was never incremented."""
    r = desk.run(["curl", "-sS", "--max-time", "5", "http://127.0.0.1:9099/metrics"], timeout=10)
    assert r.returncode == 0, r.stderr
    values = [float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith(name)]
    return sum(values)


def test_a_phone_that_pinned_bridge_a_refuses_bridge_b_on_the_same_address(lab, desk, phone, bridge_bin):
    """Item 8: the phone pairs with bridge A (pin kept with its tokens); A stops and bridge B, another identity (its
    own state directory), answers on A's address and name. connect refuses B with the identity-changed error, says how
    to pair again, and sends B no token (B's log has no upgrade at all, its refusal counter stays 0)."""
    state_a, state_b = desk.dir / "tls-bridge-a", desk.dir / "tls-bridge-b"
    credentials = phone.dir / "tls-pinned-a.json"
    serve_b = None
    serve_a, payload = _serve(desk, bridge_bin, "--state-dir", str(state_a))
    try:
        pin_a = payload["pin"]
        paired = phone.run([bridge_bin, "connect", f"{desk.ipv4}:9099", "--pair", json.dumps(payload), "--credentials",
                            str(credentials), "--prompt", "hello A", "--browse-time", "0.5"], timeout=60)
        assert paired.returncode == 0, paired.stderr
        assert "You said: hello A" in paired.stdout, paired.stdout
        assert json.loads(credentials.read_text())["pin"] == pin_a
        # The saved credentials alone carry the phone to A again (the pin is what is checked below, not the token).
        again = phone.run([bridge_bin, "connect", f"{desk.ipv4}:9099", "--credentials", str(credentials), "--prompt",
                           "A again", "--browse-time", "0.5"], timeout=60)
        assert again.returncode == 0 and "You said: A again" in again.stdout, again.stderr
        serve_a.stop()
        serve_a = None

        serve_b, payload_b = _serve(desk, bridge_bin, "--state-dir", str(state_b))
        assert payload_b["pin"] != pin_a, "bridge B must have another identity"
        refused = phone.run([bridge_bin, "connect", f"{desk.ipv4}:9099", "--credentials", str(credentials), "--prompt",
                             "must not arrive", "--browse-time", "0.5"], timeout=60)
        assert refused.returncode == 1, (refused.returncode, refused.stdout, refused.stderr)
        assert "identity changed" in refused.stderr and "pair again" in refused.stderr, refused.stderr
        assert payload_b["pin"] in refused.stderr and pin_a in refused.stderr, refused.stderr
        assert "must not arrive" not in refused.stdout
        # No token reached B: it saw no WebSocket upgrade (none refused, none accepted) and nothing was paired there.
        assert _metric(desk, "oa_bridge_upgrade_refusals_total") == 0
        assert _metric(desk, "oa_bridge_connections_total") == 0
        log_b = serve_b.stderr()
        assert "WebSocket upgrade refused" not in log_b, log_b[-3000:]
        # The stored pin is still A's: refusing B did not replace it (no silent trust on first use).
        assert json.loads(credentials.read_text())["pin"] == pin_a
    finally:
        if serve_a is not None:
            serve_a.stop()
        if serve_b is not None:
            serve_b.stop()
        # The phone host outlives this test: later tests must not find A's tokens and pin.
        credentials.unlink(missing_ok=True)


def test_connect_through_mdns_with_tls_is_quick(lab, desk, phone, bridge_bin):
    """Item 9: from the phone host, `connect NAME` finds the desk over mDNS and opens wss:// held to the stored pin
    (browse, TCP, TLS handshake, initialize), timed by connect itself. Prints the figures (BENCHMARKS.md takes them
    from `scripts/bench --sections tlslab` on a release build); asserts only a generous bound, this being a debug
    build on a shared machine."""
    credentials = phone.dir / "tls-mdns-timing.json"
    serve, payload = _serve(desk, bridge_bin, "--state-dir", str(desk.dir / "tls-mdns-timing"))
    try:
        paired = phone.run([bridge_bin, "connect", "--pair", json.dumps(payload), "--credentials", str(credentials),
                            "--prompt", "x"], timeout=60)
        assert paired.returncode == 0, paired.stderr
        times, urls = [], []
        for _ in range(3):
            r = phone.run([bridge_bin, "connect", "Desk", "--credentials", str(credentials), "--prompt", "x"], timeout=60)
            assert r.returncode == 0, r.stderr
            line = next(l for l in r.stderr.splitlines() if l.startswith("connected to "))
            # "connected to wss://198.18.0.2:9099/ via mdns in 27 ms (Demo Agent)"
            words = line.split()
            urls.append((words[2], words[4]))
            times.append(float(line.split(" in ", 1)[1].split()[0]))
        print(f"[tls] connect Desk through mDNS over wss:// (browse, TCP, TLS, initialize): {times} ms via {urls}")
        assert all(url.startswith(f"wss://{desk.ipv4}:9099") and source == "mdns" for url, source in urls), urls
        assert min(times) < 1000, times
    finally:
        serve.stop()
        credentials.unlink(missing_ok=True)
