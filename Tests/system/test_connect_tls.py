"""Pinned TLS to IP literals (issue 25.5), against a real `oa-bridge serve` on loopback: a client that holds the
bridge's pin checks the pin, never a host name, so an address the certificate does not name works as well as one it
does. The certificate names 127.0.0.1 and ::1 (and the LAN addresses, never a link-local one): 127.0.0.2 stands in
here for `fe80::…%eth0`, which Tests/lab/test_connect.py covers between network namespaces. Before the fix every
such address failed with `failedToValidateHostname … <none>` and the advice to check the network."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import tempfile
import urllib.request
from pathlib import Path

import pytest

from loopback import Serve
from tls_support import peer_pin, unverified_context

REPO = Path(__file__).resolve().parent.parent.parent
BIN = os.environ.get("OA_BRIDGE_BIN", str(REPO / ".build/debug/oa-bridge"))
pytestmark = pytest.mark.skipif(not Path(BIN).exists(), reason=f"no oa-bridge binary at {BIN}")


class Bridge(Serve):
    """`oa-bridge serve` with token auth (the default) listening on `host` only, discovery off."""

    def __init__(self, host: str):
        base = Path(tempfile.mkdtemp(prefix="oa-connect-tls-")).resolve()
        super().__init__(host=host, base=base, working_directory=base)

    def pair(self) -> tuple[str, str]:
        """Pairs over https:// (as a phone does); returns (access token, pin of the QR payload)."""
        with urllib.request.urlopen(f"http://{self.authority}/api/pair/info", timeout=5) as answer:
            payload = json.load(answer)
        request = urllib.request.Request(
            f"https://{self.authority}/api/auth/exchange", method="POST",
            data=json.dumps({"pairing_token": payload["token"], "device_name": "connect-tls"}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5, context=unverified_context()) as answer:
            tokens = json.load(answer)
        return tokens["access_token"], payload["pin"]


def names_in_certificate(host: str, port: int) -> str:
    """The certificate's subject alternative names as openssl prints them."""
    der = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((host, port)))
    text = subprocess.run(["openssl", "x509", "-inform", "der", "-noout", "-ext", "subjectAltName"],
                          input=der, capture_output=True, check=True).stdout.decode()
    return text


def run_connect(bridge: Bridge, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, "connect", bridge.authority, "--browse-time", "0.2", *arguments],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "XDG_STATE_HOME": str(bridge.base / "client"), "HOME": str(bridge.base)})


@pytest.mark.parametrize("host", ["127.0.0.2", "::1"])
def test_a_pinned_connect_to_an_ip_literal_checks_the_pin_not_a_name(host):
    bridge = Bridge(host)
    try:
        token, pin = bridge.pair()
        if host == "127.0.0.2":
            assert "127.0.0.2" not in names_in_certificate(host, bridge.port), "the test needs an address the certificate does not name"
        done = run_connect(bridge, "--pin", pin, "--token", token, "--prompt", "pinned by address")
        assert done.returncode == 0, done.stderr
        assert "You said: pinned by address" in done.stdout, done.stdout
        assert f"connected to wss://{bridge.authority}/" in done.stderr.replace("%25", "%"), done.stderr
        assert peer_pin(host, bridge.port)[0] == pin
    finally:
        bridge.stop()


def test_another_key_is_a_certificate_problem_never_check_the_network():
    bridge = Bridge("127.0.0.2")
    try:
        token, _ = bridge.pair()
        wrong = "sha256/" + "A" * 43 + "="
        done = run_connect(bridge, "--pin", wrong, "--token", token, "--prompt", "never sent", "--retries", "0")
        assert done.returncode != 0, done.stdout
        assert "same network" not in done.stderr and "check the network" not in done.stderr.lower(), done.stderr
        assert "identity changed" in done.stderr or "certificate" in done.stderr, done.stderr
    finally:
        bridge.stop()
