"""The phone web app's side of DPoP (issue 30, RFC 9449) in Debian's Chromium against a real `oa-bridge serve` (TLS,
loopback, `--dpop optional`, the default): pairing makes a non-extractable P-256 key in IndexedDB (db oa-bridge-dpop)
and binds the tokens to it; the exchange, the refresh, the WebSocket upgrade (`&dpop=`) and `/api` calls carry proofs
that pyca/cryptography verifies (signature with the proof's own jwk, htm, htu, iat, jti, ath, the bridge's nonce);
the app keeps working across a refresh and a bridge restart (new nonces); the Streamable HTTP fallback sends a proof
with each request. Theft from localStorage is in test_webapp_dpop_theft.py, the migration of a device paired unbound
in test_webapp_dpop_migration.py, WebKit in test_webapp_dpop_webkit.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from dpop_client_support import thumbprint, unb64url, verify_proof
from web_support import Bridge, loopback_url, qr_url, wait_until


def open_from_qr(phone, bridge) -> None:
    phone.page.goto(loopback_url(qr_url(bridge), bridge), wait_until="commit")
    phone.wait_ready()


def send(phone, text: str) -> None:
    phone.page.get_by_label("Message").fill(text)
    phone.page.get_by_role("button", name="Send").click()


RESTART_AGENT = Path(__file__).resolve().parent.parent / "system" / "agents" / "restart_agent.py"


def answered(phone, text: str, timeout: float = 15) -> None:
    """The demo agent's "You said: <text>", or the restart agent's "heard: <text>"."""
    wait_until(lambda: phone.page.evaluate(
        "t => [...document.querySelectorAll('#transcript [data-role=agent]')].some(n => n.textContent.endsWith(t))",
        ": " + text), timeout, f"the answer to {text!r}")


def tokens(phone) -> dict:
    return phone.page.evaluate("JSON.parse(localStorage.getItem('oa-bridge.auth')).tokens")


def restart(bridge: Bridge, extra: list[str] | None = None) -> None:
    """SIGTERM, then `serve` again on the same port and state (with `extra` arguments instead of the --dpop given)."""
    arguments = list(bridge.extra)
    if extra is not None:
        if "--dpop" in arguments:
            at = arguments.index("--dpop")
            del arguments[at:at + 2]
        arguments += extra
    bridge.restart(arguments)


class Recorder:
    """Every request the phone's pages send (method, URL, headers) and every WebSocket URL they open."""

    def __init__(self, phone):
        self.requests: list[tuple[str, str, dict]] = []
        self.sockets: list[str] = []
        phone.context.on("request", lambda r: self.requests.append((r.method, r.url, dict(r.headers))))
        phone.page.on("websocket", lambda ws: self.sockets.append(ws.url))

    def to(self, path: str) -> list[tuple[str, str, dict]]:
        return [r for r in self.requests if r[1].split("?")[0].endswith(path)]


KEY_CHECK = """async () => {
  const db = await new Promise((ok, no) => { const r = indexedDB.open('oa-bridge-dpop'); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  const stored = await new Promise((ok, no) => { const r = db.transaction('keys').objectStore('keys').get(location.origin); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  db.close();
  if (!stored) return { found: false };
  const refused = [];
  for (const format of ['pkcs8', 'jwk']) {
    try { await crypto.subtle.exportKey(format, stored.privateKey); } catch (e) { refused.push(format + ':' + e.name); }
  }
  const pub = await crypto.subtle.exportKey('jwk', stored.publicKey);
  return { found: true, extractable: stored.privateKey.extractable, algorithm: stored.privateKey.algorithm,
           usages: stored.privateKey.usages, refused, jwk: { kty: pub.kty, crv: pub.crv, x: pub.x, y: pub.y } };
}"""


@pytest.fixture
def loading_bridge(bridge_factory, tmp_path, monkeypatch):
    """A bridge whose agent loads its sessions (Tests/system/agents/restart_agent.py), so that a conversation goes on
    after the bridge restarts."""
    monkeypatch.setenv("RESTART_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("RESTART_AGENT_LOAD", "1")
    return lambda extra=(): bridge_factory(["--agent", f"{sys.executable} {RESTART_AGENT}", *extra])


def test_pairing_binds_a_non_extractable_key_and_every_use_carries_a_proof(loading_bridge, phone):
    bridge = loading_bridge()
    seen = Recorder(phone)
    open_from_qr(phone, bridge)
    origin = bridge.origin
    # The key: in IndexedDB, P-256, for signing only, and WebCrypto refuses to export it in any format.
    key = phone.page.evaluate(KEY_CHECK)
    assert key["found"] and key["extractable"] is False, key
    assert key["algorithm"] == {"name": "ECDSA", "namedCurve": "P-256"} and key["usages"] == ["sign"], key
    assert [r.split(":")[0] for r in key["refused"]] == ["pkcs8", "jwk"], key["refused"]
    bound = thumbprint(key["jwk"])
    # The exchange: a proof without ath (retried once with the bridge's nonce); the tokens come back bound.
    exchanges = seen.to("/api/auth/exchange")
    assert exchanges and all("dpop" in h for _, _, h in exchanges), exchanges
    for method, _, headers in exchanges:
        header, _ = verify_proof(headers["dpop"], "POST", origin + "/api/auth/exchange")
        assert thumbprint(header["jwk"]) == bound
    _, last = verify_proof(exchanges[-1][2]["dpop"], "POST", origin + "/api/auth/exchange")
    assert last.get("nonce"), "the exchange that succeeded carries the bridge's nonce"
    held = tokens(phone)
    assert held["type"] == "DPoP", held.get("type")
    # The upgrade: ?token=…&dpop=<proof for GET https://127.0.0.1:port/ with ath and the nonce>.
    query = parse_qs(urlsplit(seen.sockets[-1]).query)
    header, claims = verify_proof(query["dpop"][0], "GET", origin + "/", access_token=query["token"][0])
    assert thumbprint(header["jwk"]) == bound and claims.get("nonce")
    send(phone, "bound hello")
    answered(phone, "bound hello")

    # A refresh (the access token made due, as a short lifetime would): a proof by the same key; still bound.
    phone.page.evaluate("""() => { const s = JSON.parse(localStorage.getItem('oa-bridge.auth'));
                                   s.tokens.accessExp = Date.now(); localStorage.setItem('oa-bridge.auth', JSON.stringify(s)); }""")
    phone.page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    wait_until(lambda: tokens(phone)["refresh"] != held["refresh"], 10, "the refreshed tokens")
    refreshes = seen.to("/api/auth/refresh")
    header, _ = verify_proof(refreshes[-1][2]["dpop"], "POST", origin + "/api/auth/refresh")
    assert thumbprint(header["jwk"]) == bound and tokens(phone)["type"] == "DPoP"
    # The bridge restarts: new nonces. The app reconnects with the refreshed token and a fresh nonce, and goes on
    # (over a WebSocket, or over /acp when its WebSocket failed twice while the bridge was away).
    sockets_before, requests_before = len(seen.sockets), len(seen.requests)
    restart(bridge)
    phone.wait_ready(timeout=30_000)
    send(phone, "after the restart")
    answered(phone, "after the restart")
    access = tokens(phone)["access"]
    for url in seen.sockets[sockets_before:]:
        query = parse_qs(urlsplit(url).query)
        assert query["token"][0] == access
        verify_proof(query["dpop"][0], "GET", origin + "/", access_token=access)
    over_http = [r for r in seen.requests[requests_before:] if urlsplit(r[1]).path == "/acp"]
    for method, _, headers in over_http:
        assert headers.get("authorization") == "DPoP " + access
        verify_proof(headers["dpop"], method, origin + "/acp", access_token=access)
    assert len(seen.sockets) > sockets_before or over_http
    # Unpair: POST /api/logout or _oa/logout on the live link; either way the family is revoked.
    assert [d.get("revokedAt") for d in bridge.devices(all_devices=True)] == [None]
    assert not phone.errors and not phone.dialogs


def test_the_streamable_http_fallback_sends_a_proof_with_each_request(bridge, phone):
    seen = Recorder(phone)
    # WebSockets never open here (as test_webapp_fallback.py makes them fail): the app falls back to /acp.
    phone.page.route_web_socket("**/*", lambda socket: socket.close(code=1008, reason="refused by the test"))
    open_from_qr(phone, bridge)
    send(phone, "over http")
    answered(phone, "over http")
    acp = seen.to("/acp")
    assert acp, "no request to /acp"
    access = tokens(phone)["access"]
    for method, _, headers in acp:
        assert headers.get("authorization") == "DPoP " + access, (method, headers.get("authorization"))
        verify_proof(headers["dpop"], method, bridge.origin + "/acp", access_token=access)
    jtis = [json.loads(unb64url(h["dpop"].split(".")[1]))["jti"] for _, _, h in acp]
    assert len(set(jtis)) == len(jtis), "a proof was used twice"
