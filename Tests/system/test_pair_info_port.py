"""`serve --port 0` names the port it listens on in the pairing payload (the QR code, `/api/pair/info`).

The payload was built before the server bound its port, so with `--port 0` (the system's choice) the QR code told a
phone to connect to port 0. Real peer: `oa-bridge serve` on loopback with token auth, read with urllib."""

from __future__ import annotations

import json
import urllib.request

from loopback import Serve


def test_the_pairing_payload_names_the_port_the_system_chose():
    serve = Serve(prefix="oa-pair-port-")  # --port 0
    try:
        assert serve.port != 0
        with urllib.request.urlopen(f"{serve.base_url}/api/pair/info", timeout=10) as answer:
            info = json.load(answer)
        assert info["ws"].endswith(f":{serve.port}/"), info
        assert info["http"].endswith(f":{serve.port}"), info
        assert f"{serve.port}" in info["url"], info["url"]
        assert ":0/" not in info["ws"] and not info["http"].endswith(":0"), info
    finally:
        serve.stop()
