"""Issue 30, the bridge's side: tokens bound to a device's key (DPoP, RFC 9449), attacked with copied tokens.

Runs `oa-bridge serve` on loopback (no discovery, the demo agent, a fresh state directory) and pairs a device the way
a DPoP client does: a nonce from `GET /api/pair/hello`, then `POST /api/auth/exchange` with a `DPoP` proof. The
proofs are made here with pyca/cryptography (P-256, ES256; no JWT library), so the bridge is checked against an
implementation that shares no code with it.

The thief holds the device's tokens (as copied from the web app's storage or the client's state directory; the
SQLite database holds only their hashes and the key's public thumbprint, checked first) but not its private key:

- the access token with no proof, as Bearer, with another key's proof, with a replayed proof (same `jti`), with a
  proof for another method or URL, with an old `iat`, with a nonce the bridge did not issue: all 401 with RFC 9449's
  error in `WWW-Authenticate` and the JSON body, `DPoP-Nonce` on every answer;
- the same on the WebSocket upgrade (headers, or a browser's `?token=&dpop=`) and on `/acp` over HTTP;
- the refresh token with no proof or another key's: 400 `invalid_dpop_proof`, and it rotated nothing (the device's
  own refresh still works and stays bound);
- a revoked family stays revoked, proof or not;
- a device paired before (unbound) keeps working as Bearer under `--dpop optional` and is refused under `required`.

Every loop is bounded; all traffic stays on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from loopback import BIN, Serve

websockets = pytest.importorskip("websockets")
ec = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature  # noqa: E402

pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")

INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class DeviceKey:
    """A device's P-256 key and the RFC 9449 proofs it signs."""

    def __init__(self) -> None:
        self.private = ec.generate_private_key(ec.SECP256R1())
        numbers = self.private.public_key().public_numbers()
        self.jwk = {"crv": "P-256", "kty": "EC", "x": b64u(numbers.x.to_bytes(32, "big")),
                    "y": b64u(numbers.y.to_bytes(32, "big"))}

    @property
    def thumbprint(self) -> str:
        """RFC 7638: SHA-256 of the required members in lexicographic order, no whitespace."""
        canonical = json.dumps(self.jwk, sort_keys=True, separators=(",", ":")).encode()
        return b64u(hashlib.sha256(canonical).digest())

    def proof(self, htm: str, htu: str, token: str | None = None, nonce: str | None = None,
              iat: int | None = None, jti: str | None = None) -> str:
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk}
        claims = {"jti": jti or str(uuid.uuid4()), "htm": htm, "htu": htu, "iat": int(time.time()) if iat is None else iat}
        if token is not None:
            claims["ath"] = b64u(hashlib.sha256(token.encode()).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        signing_input = b64u(json.dumps(header).encode()) + "." + b64u(json.dumps(claims).encode())
        r, s = decode_dss_signature(self.private.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def http(method: str, url: str, body: dict | None = None, headers: dict | None = None,
         timeout: float = 5.0) -> tuple[int, dict, dict]:
    """(status, JSON body, headers with lower-case names)."""
    fields = {"Content-Type": "application/json", **(headers or {})}
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(url, data=data, method=method, headers=fields)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}"), {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}"), {k.lower(): v for k, v in error.headers.items()}


class Bridge(Serve):
    """`oa-bridge serve` with token auth and `--dpop MODE` on a loopback port."""

    def __init__(self, mode: str = "optional", state: Path | None = None) -> None:
        super().__init__("--log-level", "info", "--dpop", mode, prefix="oa-dpop-", state=state)

    def nonce(self) -> str:
        status, _, headers = http("GET", self.base_url + "/api/pair/hello")
        assert status == 200 and headers.get("dpop-nonce"), headers
        return headers["dpop-nonce"]

    def pair(self, key: DeviceKey | None) -> dict:
        status, info, _ = http("POST", self.base_url + "/api/pair/refresh", {})
        assert status == 200, info
        headers = {}
        if key is not None:
            headers["DPoP"] = key.proof("POST", self.base_url + "/api/auth/exchange", nonce=self.nonce())
        status, tokens, answer = http("POST", self.base_url + "/api/auth/exchange",
                                      {"pairing_token": info["token"], "device_name": "phone"}, headers)
        assert status == 200, tokens
        assert answer.get("dpop-nonce"), "the exchange's answer carries a nonce"
        return tokens

    def status(self, token: str, key: DeviceKey | None, scheme: str = "DPoP", **proof) -> tuple[int, dict, dict]:
        headers = {"Authorization": f"{scheme} {token}"}
        if key is not None:
            proof.setdefault("nonce", self.nonce())
            htm = proof.pop("htm", "GET")
            htu = proof.pop("htu", self.base_url + "/api/status")
            headers["DPoP"] = key.proof(htm, htu, token=proof.pop("ath_of", token), **proof)
        return http("GET", self.base_url + "/api/status", headers=headers)

    def refresh(self, refresh_token: str, key: DeviceKey | None) -> tuple[int, dict, dict]:
        headers = {}
        if key is not None:
            headers["DPoP"] = key.proof("POST", self.base_url + "/api/auth/refresh", nonce=self.nonce())
        return http("POST", self.base_url + "/api/auth/refresh", {"refresh_token": refresh_token}, headers)


@pytest.fixture
def bridge(serve_factory):
    return serve_factory(kind=Bridge)


def refused(answer: tuple[int, dict, dict], status: int, error: str) -> None:
    code, body, headers = answer
    assert code == status, (code, body)
    assert body.get("error") == error, body
    assert body.get("message") or body.get("error_description"), body
    assert headers.get("dpop-nonce"), "every /api answer carries DPoP-Nonce"
    if status == 401:
        assert headers.get("www-authenticate", "").startswith(f'DPoP error="{error}"'), headers


def test_a_copied_access_token_is_useless_without_the_key(bridge: Bridge) -> None:
    device, thief = DeviceKey(), DeviceKey()
    tokens = bridge.pair(device)
    assert tokens["token_type"] == "DPoP"
    access = tokens["access_token"]

    # What SQLite holds: the key's public thumbprint on the family, and hashes, not the tokens.
    with sqlite3.connect(bridge.state / "pairing.sqlite") as db:
        rows = db.execute("SELECT kind, hex(hash), dpop_jkt FROM token WHERE kind != 'pairing'").fetchall()
    assert {row[2] for row in rows} == {device.thumbprint}
    assert all(access not in row[1] for row in rows)
    hashed = rows[0][1].lower()
    status, body, _ = bridge.status(hashed, None, scheme="Bearer")
    assert status == 401 and body["error"] == "invalid_token", body

    assert bridge.status(access, device)[0] == 200
    # A route that checks the token itself behind the /api group's check (GET /api/me) takes the one proof.
    me = bridge.base_url + "/api/me"
    status, body, _ = http("GET", me, headers={"Authorization": f"DPoP {access}",
                                               "DPoP": device.proof("GET", me, token=access, nonce=bridge.nonce())})
    assert status == 200 and body["device_id"] == tokens["device_id"], body
    refused(bridge.status(access, None), 401, "invalid_dpop_proof")
    refused(bridge.status(access, device, scheme="Bearer"), 401, "invalid_token")
    refused(bridge.status(access, thief), 401, "invalid_dpop_proof")
    nonce = bridge.nonce()
    captured = device.proof("GET", bridge.base_url + "/api/status", token=access, nonce=nonce)
    headers = {"Authorization": f"DPoP {access}", "DPoP": captured}
    assert http("GET", bridge.base_url + "/api/status", headers=headers)[0] == 200
    refused(http("GET", bridge.base_url + "/api/status", headers=headers), 401, "invalid_dpop_proof")
    refused(bridge.status(access, device, htm="POST"), 401, "invalid_dpop_proof")
    refused(bridge.status(access, device, htu=bridge.base_url + "/api/me"), 401, "invalid_dpop_proof")
    refused(bridge.status(access, device, htu=f"http://evil.example:{bridge.port}/api/status"), 401, "invalid_dpop_proof")
    refused(bridge.status(access, device, iat=int(time.time()) - 600), 401, "invalid_dpop_proof")
    stale = bridge.status(access, device, nonce=b64u(b"\0" * 18))
    refused(stale, 401, "use_dpop_nonce")
    # The answer's nonce is the one to retry with, and the retry passes.
    assert bridge.status(access, device, nonce=stale[2]["dpop-nonce"])[0] == 200
    # A proof whose ath hashes another token (a proof made for the device's earlier token).
    refused(bridge.status(access, device, ath_of="oa_s_" + "A" * 43), 401, "invalid_dpop_proof")

    log = bridge.stop()
    assert "DPoP proof refused" in log
    assert access not in log and captured not in log and tokens["refresh_token"] not in log


def test_the_upgrade_and_acp_need_the_proof_too(bridge: Bridge) -> None:
    device, thief = DeviceKey(), DeviceKey()
    access = bridge.pair(device)["access_token"]

    async def upgrade(url: str, headers: dict) -> tuple[bool, int | None, dict]:
        try:
            async with websockets.connect(url, additional_headers=headers, open_timeout=10) as ws:
                await ws.send(json.dumps(INIT))
                answer = json.loads(await asyncio.wait_for(ws.recv(), 15))
                return "result" in answer, None, {}
        except websockets.InvalidStatus as refusal:
            response = refusal.response
            return False, response.status_code, {k.lower(): v for k, v in response.headers.raw_items()}

    root = bridge.base_url + "/"
    native = {"Authorization": f"DPoP {access}", "DPoP": device.proof("GET", root, token=access, nonce=bridge.nonce())}
    assert asyncio.run(upgrade(bridge.ws_url, native))[0]
    proof = device.proof("GET", root, token=access, nonce=bridge.nonce())
    assert asyncio.run(upgrade(f"{bridge.ws_url}?token={access}&dpop={proof}", {}))[0], "a browser's query works"
    assert not asyncio.run(upgrade(f"{bridge.ws_url}?token={access}&dpop={proof}", {}))[0], "and only once"
    for headers in ({"Authorization": f"DPoP {access}"},
                    {"Authorization": f"Bearer {access}"},
                    {"Authorization": f"DPoP {access}", "DPoP": thief.proof("GET", root, token=access, nonce=bridge.nonce())},
                    {"Authorization": f"DPoP {access}", "DPoP": device.proof("GET", bridge.base_url + "/acp", token=access, nonce=bridge.nonce())},
                    {"Authorization": f"DPoP {access}", "DPoP": device.proof("GET", root, token=access, nonce="stale")}):
        ok, status, answer = asyncio.run(upgrade(bridge.ws_url, headers))
        assert not ok and status == 401, (status, answer)
        assert answer.get("dpop-nonce") and answer.get("www-authenticate", "").startswith("DPoP "), answer

    acp = bridge.base_url + "/acp"
    body = INIT
    fields = {"Authorization": f"DPoP {access}", "Accept": "application/json, text/event-stream"}
    status, _, _ = http("POST", acp, body, {**fields, "DPoP": device.proof("POST", acp, token=access, nonce=bridge.nonce())})
    assert status == 200
    status, answer, headers = http("POST", acp, body, fields)
    assert status == 401 and answer["error"] == "invalid_dpop_proof" and headers.get("dpop-nonce"), (status, answer)
    status, answer, _ = http("POST", acp, body, {**fields, "DPoP": thief.proof("POST", acp, token=access, nonce=bridge.nonce())})
    assert status == 401 and answer["error"] == "invalid_dpop_proof", (status, answer)


def test_a_copied_refresh_token_rotates_nothing_and_revocation_holds(bridge: Bridge) -> None:
    device, thief = DeviceKey(), DeviceKey()
    tokens = bridge.pair(device)
    refresh = tokens["refresh_token"]
    refused(bridge.refresh(refresh, None), 400, "invalid_dpop_proof")
    refused(bridge.refresh(refresh, thief), 400, "invalid_dpop_proof")
    status, renewed, _ = bridge.refresh(refresh, device)
    assert status == 200 and renewed["token_type"] == "DPoP", renewed
    assert bridge.status(renewed["access_token"], device)[0] == 200
    assert bridge.status(renewed["access_token"], thief)[0] == 401

    listed = subprocess.run([BIN, "devices", "list", "--state-dir", str(bridge.state)],
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0 and "bound" in listed.stdout, listed.stdout
    revoked = subprocess.run([BIN, "devices", "revoke", renewed["device_id"], "--state-dir", str(bridge.state)],
                             capture_output=True, text=True, timeout=30)
    assert revoked.returncode == 0, revoked.stderr
    assert bridge.status(renewed["access_token"], device)[0] == 403
    assert bridge.refresh(renewed["refresh_token"], device)[0] == 403


def test_a_rotated_refresh_token_sent_again_without_the_key_revokes_the_family(bridge: Bridge) -> None:
    """Reuse detection before the binding check: the thief's copy of a refresh token the device has since rotated,
    sent with no proof or another key's, is theft whatever the proof, and the whole family goes."""
    for thief in (None, DeviceKey()):
        device = DeviceKey()
        tokens = bridge.pair(device)
        status, renewed, _ = bridge.refresh(tokens["refresh_token"], device)
        assert status == 200, renewed
        refused(bridge.refresh(tokens["refresh_token"], thief), 403, "refresh_token_reused")
        assert bridge.status(renewed["access_token"], device)[0] == 403
        refused(bridge.refresh(renewed["refresh_token"], device), 403, "token_revoked")


def test_an_unbound_device_works_under_optional_and_is_refused_under_required() -> None:
    first = Bridge("optional")
    try:
        old = first.pair(None)
        assert old["token_type"] == "Bearer"
        status, _, _ = http("GET", first.base_url + "/api/status", headers={"Authorization": f"Bearer {old['access_token']}"})
        assert status == 200
        status, old, _ = first.refresh(old["refresh_token"], None)
        assert status == 200 and old["token_type"] == "Bearer", old
    finally:
        first.stop()
    second = Bridge("required", state=first.state)
    try:
        status, answer, headers = http("GET", second.base_url + "/api/status",
                                       headers={"Authorization": f"Bearer {old['access_token']}"})
        assert status == 401 and answer["error"] == "invalid_dpop_proof" and "pair it again" in answer["message"], answer
        status, info, _ = http("POST", second.base_url + "/api/pair/refresh", {})
        refused(http("POST", second.base_url + "/api/auth/exchange", {"pairing_token": info["token"]}), 400, "invalid_dpop_proof")
        device = DeviceKey()
        assert second.pair(device)["token_type"] == "DPoP"
        doctor = subprocess.run([BIN, "devices", "list", "--state-dir", str(second.state)],
                                capture_output=True, text=True, timeout=30)
        assert "unbound" in doctor.stdout, doctor.stdout
    finally:
        second.stop()


def test_the_setting_comes_from_flag_environment_or_file_and_bad_values_are_named(tmp_path: Path) -> None:
    environment = {**os.environ, "OA_BRIDGE_DPOP": "required", "OA_BRIDGE_CONFIG": str(tmp_path / "none.yaml")}
    shown = subprocess.run([BIN, "config", "show"], capture_output=True, text=True, timeout=30, env=environment)
    assert any(line.split()[:3] == ["dpop", "required", "OA_BRIDGE_DPOP"] for line in shown.stdout.splitlines()), shown.stdout
    (tmp_path / "config.yaml").write_text("dpop: off\n")
    environment = {**environment, "OA_BRIDGE_CONFIG": str(tmp_path / "config.yaml")}
    del environment["OA_BRIDGE_DPOP"]
    shown = subprocess.run([BIN, "config", "show"], capture_output=True, text=True, timeout=30, env=environment)
    assert any(line.split()[:2] == ["dpop", "off"] for line in shown.stdout.splitlines()), shown.stdout
    bad = subprocess.run([BIN, "serve", "--dpop", "sometimes", "--state-dir", str(tmp_path / "state")],
                         capture_output=True, text=True, timeout=30, env=environment)
    assert bad.returncode != 0 and "required" in bad.stderr and "optional" in bad.stderr, bad.stderr
