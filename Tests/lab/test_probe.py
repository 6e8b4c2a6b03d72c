"""Probes on a default bridge (issue 17 item 1), in the LAN lab.

The desk runs `oa-bridge serve` as a new user would: token auth, default host. Then
1. `discover --probe --json` on the phone reports every advertised address as `needs_pairing` (the bridge is there and
   wants a token), with the best outcome in the summary, not "nothing answers";
2. `doctor --json` on the desk reports the running bridge and its auth mode (token) without a token.
Every wait is bounded.
"""

from __future__ import annotations

import json

from lab_support import wait_http, wait_resolved


def show(cp) -> str:
    return f"exit {cp.returncode}\n--- stdout:\n{cp.stdout}\n--- stderr:\n{cp.stderr}"


def start_default_serve(desk, bridge_bin: str, label: str):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk"], label=label)
    wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
    return serve


def test_discover_probe_on_a_token_bridge_says_needs_pairing_for_every_address(lab, desk, phone, bridge_bin):
    serve = start_default_serve(desk, bridge_bin, "serve-probe-token")
    try:
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        cp = phone.run([bridge_bin, "discover", "--probe", "--json", "--timeout", "6"], timeout=60)
        records = [json.loads(line) for line in cp.stdout.splitlines() if line.strip().startswith("{")]
        desks = [r for r in records if r.get("name") == "Desk" and isinstance(r.get("probe"), dict)]
        assert desks, "no probed Desk record\n" + show(cp)
        probe = desks[-1]["probe"]
        assert probe.get("outcome") == "needs_pairing", json.dumps(probe, indent=1) + "\n" + show(cp)
        probes = probe.get("probes") or []
        addresses = {p["address"] for p in probes}
        # Every advertised address was tried: IPv4 and IPv6 (the bridge listens dual-stack by default).
        assert desk.ipv4 in addresses, json.dumps(probes, indent=1)
        assert any(":" in a for a in addresses), json.dumps(probes, indent=1)
        for p in probes:
            assert set(p) >= {"address", "url", "outcome", "ms"}, p
            assert p["outcome"] == "needs_pairing", json.dumps(probes, indent=1)
            assert "nothing answers" not in (p.get("error") or ""), p
    finally:
        serve.stop()


def test_doctor_on_the_desk_reports_the_running_bridge_and_its_auth_mode(lab, desk, bridge_bin):
    serve = start_default_serve(desk, bridge_bin, "serve-probe-doctor")
    try:
        cp = desk.run([bridge_bin, "doctor", "--json"], timeout=60)
        text = cp.stdout
        assert "port 9099" in text, show(cp)
        assert "auth: token" in text, show(cp)
        assert "nothing answers" not in text, show(cp)
    finally:
        serve.stop()
