"""Issue 29 item 9, the small frictions a new user met, each against the binary: no usage after a runtime error, one
line per `devices approve`/`revoke` (no log line repeating it), `approve` on an active device says so, a `devices`
table that does not cut names. (`GET /` is in test_pairing_qr.py; the demo agent's Quiet mode in AgentTests.)"""

from __future__ import annotations

import json
import subprocess
import urllib.request

from loopback import BIN, Serve, held_closed_port


def run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *arguments], capture_output=True, text=True, timeout=30)


def test_usage_follows_only_a_usage_error():
    """`pair` against a port where nothing listens is a runtime error: `Error: …` and no usage (fails on the old code,
    which printed the usage after it). A mistake in the command line still gets the usage, with exit status 2."""
    holder = held_closed_port()  # held, never listening: a connection to it is refused
    try:
        failed = run("pair", "--port", str(holder.getsockname()[1]))
    finally:
        holder.close()
    assert failed.returncode != 0
    assert failed.stderr.startswith("Error: ") and "oa-bridge serve" in failed.stderr, failed.stderr
    assert "Usage:" not in failed.stderr, failed.stderr
    wrong = run("pair", "--no-such-flag")
    assert wrong.returncode == 2 and "Usage: oa-bridge pair" in wrong.stderr, wrong.stderr


def test_devices_approve_and_revoke_say_it_once_and_approve_knows_an_active_device():
    """A pending device with a long name: the table shows all of it (the old one cut names at 20 columns); `approve`
    prints one line and no log line saying the same on stderr (the old code printed both); a second `approve` says the
    device is already active (the old one claimed to approve it again); `revoke` prints one line too."""
    bridge = Serve("--require-approval")
    try:
        info = json.load(urllib.request.urlopen(bridge.base_url + "/api/pair/info", timeout=10))
        name = "Safari on iPhone (iOS 17.2) in the kitchen"
        request = urllib.request.Request(
            bridge.base_url + "/api/auth/exchange", method="POST", headers={"Content-Type": "application/json"},
            data=json.dumps({"pairing_token": info["token"], "device_name": name}).encode())
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 202
            device = json.loads(response.read())["device_id"]
        state = ["--state-dir", str(bridge.state)]

        table = run("devices", *state)
        assert table.returncode == 0, table.stderr
        header, row = table.stdout.splitlines()[:2]
        assert name in row and row.startswith(device[:8]), table.stdout
        assert header.index("STATE") == row.index("pending"), table.stdout

        approved = run("devices", "approve", device[:8], *state)
        assert approved.returncode == 0, approved.stderr
        assert approved.stdout.splitlines() == [f"approved {name} ({device}); the phone receives its tokens on its next try"]
        assert "approved" not in approved.stderr, approved.stderr

        again = run("devices", "approve", device[:8], *state)
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip() == f"{name} ({device}) is already active: nothing to approve", again.stdout

        revoked = run("devices", "revoke", device[:8], *state)
        assert revoked.returncode == 0, revoked.stderr
        assert revoked.stdout.splitlines() == [f"revoked {name} ({device})"]
        assert "revoked" not in revoked.stderr, revoked.stderr
    finally:
        bridge.stop()
