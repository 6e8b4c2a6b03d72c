"""Copy-the-token theft from the phone web app (issue 30): the access and refresh tokens read out of localStorage, used
from another client (Python on loopback) with no proof, as Bearer, or with a proof by another key (pyca/cryptography),
are refused with RFC 9449's errors; the phone itself goes on with the same tokens (nothing the thief did revoked them).
Debian's Chromium against a real `oa-bridge serve` (TLS, `--dpop optional`, the default); the same theft from WebKit's
storage is in test_webapp_dpop_webkit.py."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import ec

from dpop_client_support import make_proof, request
from test_webapp_dpop import answered, open_from_qr, send, tokens


def assert_stolen_tokens_refused(bridge, stolen: dict) -> None:
    """The thief's side, whichever browser the tokens were copied out of: the access token with no proof, as Bearer,
    or with a proof by another key; the refresh token with no proof or a proof by another key; each refused with
    RFC 9449's error."""
    assert stolen["type"] == "DPoP"
    me = bridge.origin + "/api/me"
    thief = ec.generate_private_key(ec.SECP256R1())
    status, headers, body = request("GET", me, {"Authorization": "Bearer " + stolen["access"]})
    assert status == 401 and headers.get("www-authenticate", "").startswith("DPoP"), (status, headers, body)
    status, headers, _ = request("GET", me, {"Authorization": "DPoP " + stolen["access"]})
    assert status == 401 and headers.get("dpop-nonce"), status
    nonce = headers["dpop-nonce"]
    status, headers, body = request("GET", me, {"Authorization": "DPoP " + stolen["access"],
                                                "DPoP": make_proof(thief, "GET", me, stolen["access"], nonce)})
    assert status == 401 and 'error="invalid_dpop_proof"' in headers.get("www-authenticate", ""), (status, headers, body)
    refresh = bridge.origin + "/api/auth/refresh"
    status, _, body = request("POST", refresh, {}, {"refresh_token": stolen["refresh"]})
    assert status in (400, 401) and body.get("error") == "invalid_dpop_proof", (status, body)
    status, _, body = request("POST", refresh, {"DPoP": make_proof(thief, "POST", refresh, None, nonce)},
                              {"refresh_token": stolen["refresh"]})
    assert status in (400, 401) and body.get("error") == "invalid_dpop_proof", (status, body)


def test_tokens_copied_out_of_local_storage_are_refused_from_another_client(bridge, phone):
    open_from_qr(phone, bridge)
    assert_stolen_tokens_refused(bridge, tokens(phone))
    # The phone itself goes on with the same tokens: nothing the thief did revoked them.
    phone.page.reload()
    phone.wait_ready()
    send(phone, "still mine")
    answered(phone, "still mine")
    assert [d.get("revokedAt") for d in bridge.devices(all_devices=True)] == [None]
