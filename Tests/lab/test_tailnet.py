"""The desktop's Tailscale identity (issue 5), with a fake `tailscale` command (never a real
tailnet): `serve` publishes the MagicDNS name in TXT (`tailnet=`) and in the pairing payload's
fallbacks, and `doctor` reports it."""

from __future__ import annotations

import json
import time

from lab_support import fake_tailscale

STATUS = {"BackendState": "Running", "Self": {"DNSName": "desk.tail-lab.ts.net.", "TailscaleIPs": ["100.64.0.1", "fd7a:115c:a1e0::1"]}}


def test_tailnet_name_in_txt_payload_and_doctor(lab, desk, phone, bridge_bin):
    env = fake_tailscale(desk, STATUS)
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk"], env=env, label="serve-tailnet")
    try:
        deadline = time.time() + 15
        service = None
        while time.time() < deadline and service is None:
            found = phone.run([bridge_bin, "discover", "--json", "--timeout", "3"], timeout=15)
            for line in found.stdout.splitlines():
                event = json.loads(line)
                if event.get("event") == "added" and event.get("name") == "Desk":
                    service = event
        assert service is not None, serve.describe()
        assert service["txt"].get("tailnet") == "desk.tail-lab.ts.net", service["txt"]

        pair = desk.run([bridge_bin, "pair", "--json"], timeout=10)
        payload = json.loads(pair.stdout)
        assert payload["fallbacks"][:2] == ["desk.tail-lab.ts.net", "100.64.0.1"], payload

        doctor = desk.run([bridge_bin, "doctor", "--json"], timeout=30, env=env)
        checks = {check["name"]: check for check in json.loads(doctor.stdout)}
        assert checks["Tailscale"]["status"] == "ok" and "desk.tail-lab.ts.net" in checks["Tailscale"]["detail"], checks["Tailscale"]
        assert "Tailscale fallback" in serve.stderr()
    finally:
        serve.stop()
