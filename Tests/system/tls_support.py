"""TLS helpers shared by the TLS system and lab tests: the pin of a DER certificate (by openssl, independently of
the bridge), an ssl context that checks a pin instead of a CA, and a bridge started with a state directory."""

from __future__ import annotations

import base64
import hashlib
import socket
import ssl
import subprocess


def pin_of_der(der: bytes) -> str:
    """`sha256/` + base64 of SHA-256 over the DER SubjectPublicKeyInfo, computed with the openssl command line."""
    pem = ssl.DER_cert_to_PEM_cert(der)
    public = subprocess.run(["openssl", "x509", "-pubkey", "-noout"], input=pem.encode(), capture_output=True, check=True).stdout
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public, capture_output=True, check=True).stdout
    return "sha256/" + base64.b64encode(hashlib.sha256(spki).digest()).decode()


def unverified_context(minimum: ssl.TLSVersion | None = None, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    """A client context that accepts any certificate: the caller checks the pin after the handshake."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if minimum is not None:
        context.minimum_version = minimum
    if maximum is not None:
        context.maximum_version = maximum
    return context


def peer_pin(host: str, port: int, timeout: float = 5.0, **versions) -> tuple[str, str]:
    """Handshakes with host:port; returns (pin of the certificate the server presented, negotiated TLS version)."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        with unverified_context(**versions).wrap_socket(raw, server_hostname=None) as tls:
            der = tls.getpeercert(binary_form=True)
            return pin_of_der(der), tls.version()


def check_pin(websocket, expected: str) -> None:
    """Fails unless the websockets connection's peer certificate carries `expected`."""
    ssl_object = websocket.transport.get_extra_info("ssl_object")
    assert ssl_object is not None, "not a TLS connection"
    actual = pin_of_der(ssl_object.getpeercert(binary_form=True))
    assert actual == expected, f"pin mismatch: {actual} != {expected}"
