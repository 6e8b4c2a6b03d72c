"""Pairing across the lab (issue 4): the desktop serves with tokens (the default); a phone that is
not the desktop cannot see the pairing pages or open the WebSocket without a token, pairs with the
QR payload, prompts, and loses access when the desktop revokes it."""

from __future__ import annotations

import json

import pytest

import lab as labmod
from lab_support import build_dir, snapshot, wait_http


def _request(host: labmod.Host, url: str, method: str = "GET", token: str | None = None) -> tuple[int, str]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    # https:// here is about auth, not the certificate: the pin check has its own tests (test_tls.py).
    code = (
        "import ssl, urllib.request, urllib.error\n"
        "context = ssl._create_unverified_context()\n"
        f"req = urllib.request.Request('{url}', method='{method}', data=b'{{}}' if '{method}' == 'POST' else None,"
        f" headers={headers!r})\n"
        "try:\n    r = urllib.request.urlopen(req, timeout=3, context=context); print(r.status); print(r.read().decode())\n"
        "except urllib.error.HTTPError as e:\n    print(e.code); print(e.read().decode())\n"
    )
    r = host.run(["python3", "-c", code], timeout=10)
    assert r.returncode == 0, r.stderr
    status, _, body = r.stdout.partition("\n")
    return int(status.strip()), body


def _status(host: labmod.Host, url: str, method: str = "GET", token: str | None = None) -> int:
    return _request(host, url, method, token)[0]


def _ws_upgrade_status(host: labmod.Host, ip: str, token: str | None = None) -> int:
    """Sends a WebSocket upgrade request (http.client) and returns the answer's HTTP status."""
    headers = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
               "Sec-WebSocket-Version": "13"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    code = (
        "import http.client\n"
        f"connection = http.client.HTTPConnection('{ip}', 9099, timeout=3)\n"
        f"connection.request('GET', '/', headers={headers!r})\n"
        "print(connection.getresponse().status)\n"
    )
    r = host.run(["python3", "-c", code], timeout=10)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


def test_phone_pairs_prompts_and_is_revoked(lab, desk, phone, bridge_bin):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk"], label="serve-token")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)

        # The pairing surfaces answer on the desktop's loopback only.
        assert _status(desk, "http://127.0.0.1:9099/api/pair/info") == 200
        for path in ("/pair", "/api/pair/info", "/api/pair/qr"):
            assert _status(phone, f"http://{desk.ipv4}:9099{path}") == 403, path
        assert _status(phone, f"http://{desk.ipv4}:9099/api/pair/refresh", method="POST") == 403
        # No token: no WebSocket, 401. A token in clear from the LAN is refused before it is looked at (TLS by default).
        assert _ws_upgrade_status(phone, desk.ipv4) == 401
        assert _ws_upgrade_status(phone, desk.ipv4, token="oa_s_made_up") == 403
        # /api/status needs the Bearer header, and says why not; health does not.
        status, body = _request(phone, f"http://{desk.ipv4}:9099/api/status")
        assert status == 401 and "error" in json.loads(body), body
        status, body = _request(phone, f"http://{desk.ipv4}:9099/api/status", token="oa_s_made_up")
        assert status == 403 and json.loads(body)["error"] == "tls_required" and "oa_s_made_up" not in body, body
        status, body = _request(phone, f"https://{desk.ipv4}:9099/api/status", token="oa_s_made_up")
        assert status == 401 and "oa_s_made_up" not in body, body
        assert _status(phone, f"http://{desk.ipv4}:9099/api/health") == 200

        # The QR payload, as the desktop user sees it; never in TXT.
        pair = desk.run([bridge_bin, "pair", "--json"], timeout=10)
        assert pair.returncode == 0, pair.stderr
        payload = json.loads(pair.stdout)
        assert payload["token"].startswith("oa_p_")
        assert payload["name"] == "Desk"
        assert payload["ws"].startswith(f"wss://{desk.ipv4}:9099") and payload["http"].startswith("https://"), payload
        assert payload["pin"].startswith("sha256/"), payload

        paired = phone.run([bridge_bin, "connect", "--pair", pair.stdout.strip(), "--prompt", "hello paired"], timeout=30)
        assert paired.returncode == 0, paired.stderr
        assert "You said: hello paired" in paired.stdout
        assert "paired with Desk" in paired.stderr

        # The pairing code works once.
        again = phone.run([bridge_bin, "connect", "--pair", pair.stdout.strip(), "--prompt", "x",
                           "--credentials", "/tmp/other-credentials.json"], timeout=30)
        assert again.returncode != 0
        assert "pairing" in again.stderr.lower() or "used" in again.stderr.lower(), again.stderr

        # The saved access token is bound to the phone's key (DPoP, issue 30): copied out of the phone's files and
        # sent as Bearer it opens nothing, and the refusal says why.
        import glob
        saved_files = glob.glob(str(phone.dir) + "/**/client/Desk.json", recursive=True)
        assert saved_files, "connect --pair saved no credentials"
        access = json.load(open(saved_files[0]))["tokens"]["access_token"]
        status, body = _request(phone, f"https://{desk.ipv4}:9099/api/status", token=access)
        assert status == 401 and json.loads(body)["error"] == "invalid_token" and "bound to a key" in body, body
        # The pin from the QR code is kept with the tokens, so later runs hold the desk to it.
        assert json.load(open(saved_files[0]))["pin"] == payload["pin"]

        # Saved credentials carry the phone on the next run.
        saved = phone.run([bridge_bin, "connect", "Desk", "--prompt", "with saved tokens"], timeout=30)
        assert saved.returncode == 0, saved.stderr
        assert "You said: with saved tokens" in saved.stdout

        devices = desk.run([bridge_bin, "devices", "list", "--json"], timeout=10)
        listed = json.loads(devices.stdout)
        assert len(listed) == 1 and listed[0]["lastAddress"] == phone.ipv4, devices.stdout

        revoke = desk.run([bridge_bin, "devices", "revoke", "--all"], timeout=10)
        assert revoke.returncode == 0 and "revoked 1" in revoke.stdout
        refused = phone.run([bridge_bin, "connect", "Desk", "--prompt", "after revocation"], timeout=30)
        assert refused.returncode != 0
        assert "refused the token" in refused.stderr, refused.stderr
        status, body = _request(phone, f"https://{desk.ipv4}:9099/api/status", token=access)
        assert status == 403 and "revoked" in body, body
    finally:
        serve.stop()
        # The phone host outlives this test: later tests must not find this desk's tokens and pin.
        import glob, os
        for saved in glob.glob(str(phone.dir) + "/**/client/Desk.json", recursive=True):
            os.unlink(saved)
        log = serve.stderr()
        assert "oa_p_" not in log and "oa_s_" not in log and "oa_r_" not in log, "a token reached the log"


def test_phone_client_example_discovers_pairs_and_prompts(lab, desk, phone, bridge_bin):
    """Examples/PhoneClient, the program a phone developer copies, does what it says on the phone host: finds the
    desk over mDNS, pairs with the QR payload, keeps its tokens in a 0600 file, prompts and prints the answer; run
    again with `-`, it connects on the saved tokens alone."""
    example = build_dir() / "PhoneClient"
    if not example.is_file():
        pytest.skip(f"no PhoneClient binary at {example} (swift build --product PhoneClient)")
    snap = snapshot(lab, example)
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk"], label="serve-token")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        pair = desk.run([bridge_bin, "pair", "--json"], timeout=10)
        assert pair.returncode == 0, pair.stderr
        first = phone.run([str(snap), pair.stdout.strip(), "hello from the example"], timeout=60)
        assert first.returncode == 0, f"{first.stdout}\n{first.stderr}"
        assert "paired with Desk" in first.stdout, first.stdout
        # Over TLS, held to the pin from the QR payload (kept with the tokens for the second run).
        assert "connected to wss://" in first.stdout, first.stdout
        assert "You said: hello from the example" in first.stdout and "[end_turn]" in first.stdout, first.stdout
        tokens = phone.dir / "phone-client-tokens.json"
        assert tokens.is_file() and (tokens.stat().st_mode & 0o777) == 0o600, "tokens not kept in a 0600 file"

        again = phone.run([str(snap), "-", "second run"], timeout=60)
        assert again.returncode == 0, f"{again.stdout}\n{again.stderr}"
        assert "You said: second run" in again.stdout and "paired with" not in again.stdout, again.stdout
    finally:
        serve.stop()
        snap.unlink(missing_ok=True)
