"""DPoP (RFC 9449) as the client tests see it: read and verify a client's proof with pyca/cryptography (the other side
of the client's WebCrypto or jwt-kit), make a proof with a key of our own (a thief's), and send HTTPS requests to the
bridge on loopback. Used by Tests/web/test_webapp_dpop*.py and Tests/system/test_dpop_client*.py."""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import time
import urllib.error
import urllib.request
import uuid

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def thumbprint(jwk: dict) -> str:
    """RFC 7638: SHA-256 of the required members in order, no whitespace."""
    canonical = json.dumps({"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]}, separators=(",", ":"))
    return b64url(hashlib.sha256(canonical.encode()).digest())


def ath(token: str) -> str:
    return b64url(hashlib.sha256(token.encode()).digest())


def verify_proof(proof: str, method: str, url: str, access_token: str | None = None, slack: float = 90) -> tuple[dict, dict]:
    """Checks `proof` as RFC 9449 §4.3 says (signature with its own jwk, typ, alg, htm, htu, iat, jti, ath); returns
    (header, claims). Raises AssertionError naming the first check that fails."""
    parts = proof.split(".")
    assert len(parts) == 3, "not a compact JWS"
    header = json.loads(unb64url(parts[0]))
    claims = json.loads(unb64url(parts[1]))
    assert header.get("typ") == "dpop+jwt", header
    assert header.get("alg") == "ES256", header
    jwk = header.get("jwk") or {}
    assert jwk.get("kty") == "EC" and jwk.get("crv") == "P-256" and "d" not in jwk, jwk
    key = ec.EllipticCurvePublicNumbers(int.from_bytes(unb64url(jwk["x"]), "big"), int.from_bytes(unb64url(jwk["y"]), "big"),
                                        ec.SECP256R1()).public_key()
    raw = unb64url(parts[2])
    assert len(raw) == 64, "an ES256 signature is r||s, 64 bytes"
    signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.verify(signature, (parts[0] + "." + parts[1]).encode(), ec.ECDSA(hashes.SHA256()))
    assert claims.get("htm") == method, (claims.get("htm"), method)
    assert claims.get("htu") == url, (claims.get("htu"), url)
    assert abs(claims.get("iat", 0) - time.time()) < slack, claims.get("iat")
    assert isinstance(claims.get("jti"), str) and 1 <= len(claims["jti"]) <= 128, claims.get("jti")
    if access_token is None:
        assert "ath" not in claims, "a proof without an access token has no ath"
    else:
        assert claims.get("ath") == ath(access_token), "ath is not the SHA-256 of the access token"
    return header, claims


def make_proof(key: ec.EllipticCurvePrivateKey, method: str, url: str, access_token: str | None = None,
               nonce: str | None = None) -> str:
    """A proof signed by `key` (a thief's own key, for the theft tests)."""
    numbers = key.public_key().public_numbers()
    jwk = {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}
    claims = {"htm": method, "htu": url, "iat": int(time.time()), "jti": str(uuid.uuid4())}
    if access_token:
        claims["ath"] = ath(access_token)
    if nonce:
        claims["nonce"] = nonce
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def unverified_context() -> ssl.SSLContext:
    """The bridge's self-signed certificate on loopback: the tests are about tokens, not the certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def request(method: str, url: str, headers: dict | None = None, body: dict | None = None) -> tuple[int, dict, dict]:
    """One request; returns (status, headers with lower-case names, JSON body or {})."""
    data = json.dumps(body).encode() if body is not None else None
    sent = dict(headers or {})
    if data is not None:
        sent["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(req, timeout=10, context=unverified_context() if url.startswith("https:") else None) as answer:
            status, fields, raw = answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        status, fields, raw = error.code, error.headers, error.read()
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        parsed = {}
    return status, {k.lower(): v for k, v in fields.items()}, parsed if isinstance(parsed, dict) else {}
