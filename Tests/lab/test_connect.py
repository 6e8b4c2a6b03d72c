"""Issue 5 in the LAN lab: `oa-bridge connect` and `oa-bridge doctor` where a phone really is.

1. Same LAN: `connect Desk` wins through mDNS; the time to "connected" once the phone's daemon knows the
   service is recorded (target 0.3 s; asserted only against a generous bound so the test is not flaky).
2. Another subnet (routed guest network, no multicast path): `discover` finds nothing, the manual address wins.
3. A stand-in tailnet (a veth pair desk <-> phone with CGNAT addresses and `desk.tail-lab.ts.net` in the phone's
   own /etc/hosts, only inside the lab) with the phone's LAN link cut: mDNS finds nothing, the Tailscale name wins.
4. `doctor` on the desk with a bridge running (all ok, a fake `tailscale` command shows the tailnet name; never a
   real tailnet), and on a host whose avahi-daemon is stopped (exit 2, the avahi-daemon line fails with a fix).
5. Resume: the phone's link is cut during a streaming prompt; every update arrives exactly once, in order.
6. Link-local IPv6 over TLS (issue 25.5): a pinned `connect` to `fe80::…%eth0` (the certificate names no link-local
   address), then the same address with nothing named (the saved bridge found by the pin it presents), a wrong pin.

The desk serves with --auth none for the lab's networks (pairing has its own tests in test_pairing.py).
Every wait is bounded.
"""

from __future__ import annotations

import json
import re
import time

from lab_support import fake_tailscale, wait_http, wait_resolved, wait_service_gone

OPEN = ["--auth", "none", "--allow-network", "198.18.0.0/15", "--allow-network", "100.64.0.0/30"]
TAILNET_NAME = "desk.tail-lab.ts.net"
TAILNET_DESK, TAILNET_PHONE = "100.64.0.1", "100.64.0.2"
TAILSCALE_STATUS = {"BackendState": "Running",
                    "Self": {"DNSName": TAILNET_NAME + ".", "TailscaleIPs": [TAILNET_DESK]}}
MDNS_KNOWN_TARGET_MS = 300   # what issue 5 aims at (reported, not asserted)
MDNS_KNOWN_BOUND_MS = 2000   # what is asserted

# "  mdns      ws://198.18.0.2:9099/  started +0 ms, took 9 ms: won"
ATTEMPT_RE = re.compile(r"^\s+(mdns|manual|tailscale)\s+(\S+)\s+started \+(\d+) ms, took (-|\d+ ms): (.+)$")
# "connected to ws://198.18.0.2:9099/ via mdns in 23 ms (oa-bridge demo agent)"
CONNECTED_RE = re.compile(r"^connected to (\S+) via (\w+) in (\d+) ms \((.*)\)$")


# -- helpers ------------------------------------------------------------------------------------------------------

def attempts(stderr: str) -> list[dict]:
    """The attempt lines `connect` prints: source, url, started (ms), took, outcome."""
    out = []
    for line in stderr.splitlines():
        m = ATTEMPT_RE.match(line)
        if m:
            out.append({"source": m.group(1), "url": m.group(2), "started_ms": int(m.group(3)),
                        "took": m.group(4), "outcome": m.group(5)})
    return out


def connected(stderr: str) -> dict:
    for line in stderr.splitlines():
        m = CONNECTED_RE.match(line)
        if m:
            return {"url": m.group(1), "via": m.group(2), "ms": int(m.group(3)), "agent": m.group(4), "line": line}
    raise AssertionError(f"no 'connected to … via … in … ms' line in stderr:\n{stderr}")


def show(cp) -> str:
    return f"exit {cp.returncode}\n--- stdout:\n{cp.stdout}\n--- stderr:\n{cp.stderr}"


def start_serve(desk, bridge_bin: str, label: str, env: dict | None = None):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", *OPEN], label=label, env=env)
    wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
    return serve


# -- 1. same LAN: mDNS ---------------------------------------------------------------------------------------------

def test_same_lan_connects_through_mdns(lab, desk, phone, bridge_bin, timings):
    serve = start_serve(desk, bridge_bin, "serve-connect-lan")
    try:
        # The phone's daemon knows the service (resolved over IPv4): from here on the target is 0.3 s.
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        runs = []
        for i in range(3):
            t0 = time.monotonic()
            r = phone.run([bridge_bin, "connect", "Desk", "--prompt", "hi", "--yes"], timeout=30)
            wall_ms = (time.monotonic() - t0) * 1000
            assert r.returncode == 0, show(r)
            assert "You said: hi" in r.stdout, show(r)
            assert "(The time is" in r.stdout, f"--yes should have approved the demo tool call\n{show(r)}"
            tried = attempts(r.stderr)
            won = [a for a in tried if a["outcome"] == "won"]
            assert len(won) == 1 and won[0]["source"] == "mdns", f"expected one winner, through mdns: {tried}\n{show(r)}"
            assert won[0]["url"] in (f"ws://{desk.ipv4}:9099/", f"ws://[{desk.ipv6}]:9099/"), won[0]
            assert tried[0]["source"] == "mdns", f"mdns candidates come first: {tried}"
            c = connected(r.stderr)
            assert c["via"] == "mdns" and c["url"] == won[0]["url"], c
            runs.append((c["ms"], wall_ms, c["line"]))
            timings.record("connect_mdns_service_known", c["ms"], run=i + 1, process_wall_ms=round(wall_ms),
                           target_ms=MDNS_KNOWN_TARGET_MS)
        for ms, wall, line in runs:
            print(f"\n[connect lan] {line}  (process wall {wall:.0f} ms)")
        best = min(ms for ms, _, _ in runs)
        print(f"[connect lan] start→connected with the service known: {[ms for ms, _, _ in runs]} ms "
              f"(target < {MDNS_KNOWN_TARGET_MS} ms: {'met' if best < MDNS_KNOWN_TARGET_MS else 'NOT met'} by the best run)")
        assert all(ms < MDNS_KNOWN_BOUND_MS for ms, _, _ in runs), f"connect took too long: {runs}"
    finally:
        serve.stop()


# -- 2. another subnet: the manual address ----------------------------------------------------------------------------

def test_guest_subnet_discovers_nothing_but_manual_address_works(lab, desk, phone, bridge_bin, timings):
    if "router" not in lab.hosts:
        lab.add_router("router", ("sw0", "sw1"))
    guest = lab.add_host("guestphone", switch="sw1")
    serve = start_serve(desk, bridge_bin, "serve-connect-guest")
    try:
        # Control: the service is on the LAN's wire, so "nothing" on the guest network is the router's doing.
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        found = guest.run([bridge_bin, "discover", "--timeout", "3"], timeout=15)
        assert found.returncode == 1, f"mDNS should not cross the router (exit 1 = nothing found)\n{show(found)}"
        assert "Desk" not in found.stdout, show(found)

        t0 = time.monotonic()
        r = guest.run([bridge_bin, "connect", f"{desk.ipv4}:9099", "--prompt", "hi"], timeout=30)
        wall_ms = (time.monotonic() - t0) * 1000
        assert r.returncode == 0, show(r)
        assert "You said: hi" in r.stdout, show(r)
        tried = attempts(r.stderr)
        assert [a["source"] for a in tried] == ["manual"], f"an address is tried as given, without browsing: {tried}"
        assert tried[0]["outcome"] == "won" and tried[0]["url"] == f"ws://{desk.ipv4}:9099/", tried
        c = connected(r.stderr)
        assert c["via"] == "manual", c
        timings.record("connect_manual_guest_subnet", c["ms"], process_wall_ms=round(wall_ms))
        print(f"\n[connect guest] {c['line']}")
    finally:
        serve.stop()
        lab.remove_host("guestphone")


# -- 3. a tailnet while the LAN is cut -----------------------------------------------------------------------------------

def test_tailscale_name_wins_when_the_lan_is_cut(lab, desk, phone, bridge_bin, timings):
    lab.add_link(desk, phone, f"{TAILNET_DESK}/30", f"{TAILNET_PHONE}/30", a_dev="tsdesk0", b_dev="tsphone0")
    phone.override_file("/etc/hosts", f"127.0.0.1 localhost\n{TAILNET_DESK} {TAILNET_NAME}\n")
    # The bridge accepts only host names it knows as its own: a (fake) tailscale tells it its MagicDNS name.
    serve = start_serve(desk, bridge_bin, "serve-connect-tailnet", env=fake_tailscale(desk, TAILSCALE_STATUS))
    try:
        wait_resolved(phone, "Desk", timeout=10, guard=serve)  # the LAN path works until it is cut
        resolved = phone.run(["getent", "hosts", TAILNET_NAME], timeout=5)
        assert resolved.stdout.split()[:1] == [TAILNET_DESK], f"the phone's hosts file:\n{show(resolved)}"
        phone.link_down()
        left = wait_service_gone(phone, timeout=5)
        assert not left, f"the phone's avahi still lists {left} with its LAN link down"

        t0 = time.monotonic()
        r = phone.run([bridge_bin, "connect", "Desk", "--tailscale", TAILNET_NAME, "--prompt", "hi"], timeout=30)
        wall_ms = (time.monotonic() - t0) * 1000
        assert r.returncode == 0, show(r)
        assert "You said: hi" in r.stdout, show(r)
        tried = attempts(r.stderr)
        assert not [a for a in tried if a["source"] == "mdns"], f"mDNS should have found nothing: {tried}"
        won = [a for a in tried if a["outcome"] == "won"]
        assert len(won) == 1 and won[0]["source"] == "tailscale", tried
        assert won[0]["url"] == f"ws://{TAILNET_NAME}:9099/", won[0]
        c = connected(r.stderr)
        assert c["via"] == "tailscale", c
        timings.record("connect_tailscale_lan_cut", c["ms"], process_wall_ms=round(wall_ms))
        print(f"\n[connect tailnet] {c['line']} (includes the mDNS window)")
    finally:
        serve.stop()
        phone.link_up()
        phone.restore_file("/etc/hosts")
        lab.del_link(desk, "tsdesk0")


# -- 4. doctor ---------------------------------------------------------------------------------------------------------

def test_doctor_on_a_healthy_desk_shows_the_tailnet_name(lab, desk, bridge_bin):
    path = fake_tailscale(desk, TAILSCALE_STATUS)
    serve = start_serve(desk, bridge_bin, "serve-connect-doctor")
    try:
        wait_resolved(desk, "Desk", timeout=10, guard=serve)
        r = desk.run([bridge_bin, "doctor", "--json"], timeout=30, env=path)
        checks = {c["name"]: c for c in json.loads(r.stdout)} if r.stdout.strip().startswith("[") else {}
        assert r.returncode == 0, f"{show(r)}\nnot ok: {[c for c in checks.values() if c['status'] != 'ok']}"
        for name in ("D-Bus system bus", "avahi-daemon", "our service visible", "port 9099", "Tailscale"):
            assert name in checks and checks[name]["status"] == "ok", f"{name}: {checks.get(name)}\n{show(r)}"
        assert "'Desk'" in checks["our service visible"]["detail"] and "9099" in checks["our service visible"]["detail"], \
            checks["our service visible"]
        # doctor asks its own bridge without a token (loopback /api/health, then /api/status for the auth mode).
        assert "the bridge answers on" in checks["port 9099"]["detail"], checks["port 9099"]
        assert "auth: " in checks["port 9099"]["detail"], checks["port 9099"]
        assert TAILNET_NAME in checks["Tailscale"]["detail"] and TAILNET_DESK in checks["Tailscale"]["detail"], \
            checks["Tailscale"]
        text = desk.run([bridge_bin, "doctor"], timeout=30, env=path)
        assert text.returncode == 0, show(text)
        print("\n[doctor desk]\n" + text.stdout.rstrip())
    finally:
        serve.stop()


def test_doctor_with_avahi_stopped_fails_with_a_fix(lab, extra_host, bridge_bin):
    host = extra_host("noavahi")
    host.stop_avahi()
    assert not host.avahi_running(), host.logs()
    t0 = time.monotonic()
    r = host.run([bridge_bin, "doctor"], timeout=30)
    took = time.monotonic() - t0
    assert r.returncode == 2, show(r)
    lines = r.stdout.splitlines()
    idx = next((i for i, line in enumerate(lines) if re.match(r"^fail\s+avahi-daemon\s", line)), None)
    assert idx is not None, f"no 'fail  avahi-daemon' line\n{show(r)}"
    assert idx + 1 < len(lines) and "fix:" in lines[idx + 1] and "avahi-daemon" in lines[idx + 1], \
        f"the avahi-daemon line needs a fix under it\n{show(r)}"
    assert re.search(r"^ok\s+D-Bus system bus\s", r.stdout, re.M), f"D-Bus still runs on this host\n{show(r)}"
    print(f"\n[doctor avahi stopped] exit 2 in {took:.1f} s\n" + r.stdout.rstrip())


# -- 5. resume across a cut link ---------------------------------------------------------------------------------------

def test_resume_after_the_phones_link_is_cut_mid_prompt(lab, desk, phone, bridge_bin, timings):
    serve = start_serve(desk, bridge_bin, "serve-connect-resume")
    try:
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        n = 200
        words = " ".join(f"w{i}" for i in range(n))  # one chunk per word, 20 ms apart: about 4 s of streaming
        client = phone.spawn([bridge_bin, "connect", "Desk", "--json", "--keepalive", "1", "--yes", "--prompt", words],
                             label="connect-resume")
        def past_30(line: str) -> bool:
            m = re.search(r'"seq":(\d+)', line)
            return m is not None and int(m.group(1)) >= 30
        assert client.wait_for_line(past_30, timeout=15, guard=[serve]), client.describe()
        cut = time.monotonic()
        phone.link_down()
        time.sleep(3)
        phone.link_up()
        rc = client.wait(45)
        assert rc == 0, client.describe()
        updates = [json.loads(line) for line in client.stdout().splitlines()
                   if line.startswith("{") and '"sessionUpdate"' in line]
        seqs = [u["seq"] for u in updates]
        assert seqs == list(range(1, len(seqs) + 1)), f"updates missing, repeated or out of order: {seqs}"
        text = "".join(u.get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk")
        expected = "You said: " + words
        assert text.startswith(expected + " (The time is"), f"…{text[-300:]}"
        err = client.stderr()
        m = re.search(r"\[reconnected; resuming after update (\d+)\]", err)
        assert m, f"the cut was not noticed (no reconnect):\n{err[-2000:]}"
        assert 30 <= int(m.group(1)) < len(seqs), f"resumed after {m.group(1)} of {len(seqs)}: the cut was not mid-prompt"
        assert "[stop] end_turn" in err, err[-2000:]
        timings.record("resume_total_after_cut", (time.monotonic() - cut) * 1000, updates=len(seqs),
                       resumed_after=int(m.group(1)), cut_s=3)
        print(f"\n[resume] {len(seqs)} updates exactly once, in order; resumed after update {m.group(1)}")
    finally:
        serve.stop()


# -- 6. link-local IPv6 over TLS with the pin (issue 25.5) --------------------------------------------------------------

def link_local(host) -> str:
    cp = host.run(["ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "link"], timeout=5)
    m = re.search(r"inet6 (fe80::[0-9a-f:]+)/64", cp.stdout)
    assert m, f"no link-local address on {host.name} eth0:\n{cp.stdout}{cp.stderr}"
    return m.group(1)


def test_link_local_ipv6_over_tls_checks_the_pin_not_a_name(lab, desk, phone, bridge_bin):
    """The desk serves as a new user would (token auth, TLS). Its certificate names no link-local address (they need
    a zone): before the fix a pinned `connect` and `discover --probe` to `fe80::…%eth0` failed with
    `failedToValidateHostname … <none>` and the advice to check the network."""
    # A token store of its own: the device this test pairs must not show up in later tests' `devices` lists.
    serve = desk.spawn([bridge_bin, "serve", "--name", "Desk", "--state-dir", str(desk.dir / "serve-fe80-state")],
                       label="serve-connect-fe80")
    state = str(phone.dir / "connect-fe80-state")
    env = {"XDG_STATE_HOME": state}  # this test's client state only: later tests on the phone host never see it
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        pair = desk.run([bridge_bin, "pair", "--json"], timeout=10)
        assert pair.returncode == 0, show(pair)
        payload = json.loads(pair.stdout)
        paired = phone.run([bridge_bin, "connect", "--pair", pair.stdout.strip(), "--browse-time", "0.5",
                            "--prompt", "paired over IPv4"], timeout=40, env=env)
        assert paired.returncode == 0, show(paired)
        credentials = f"{state}/oa-bridge/client/Desk.json"
        ll = link_local(desk)

        # Pinned, with the credentials named: the pin decides, not the certificate's names.
        r = phone.run([bridge_bin, "connect", f"[{ll}%eth0]:9099", "--pin", payload["pin"], "--credentials", credentials,
                       "--prompt", "over link-local"], timeout=40, env=env)
        assert r.returncode == 0, show(r)
        assert "You said: over link-local" in r.stdout, show(r)
        c = connected(r.stderr)
        assert c["url"] == f"wss://[{ll}%25eth0]:9099/", c
        assert "failedToValidateHostname" not in r.stderr

        # Nothing named: the saved bridge is found by the pin the address presents.
        r = phone.run([bridge_bin, "connect", f"[{ll}%eth0]:9099", "--prompt", "found by pin"], timeout=40, env=env)
        assert r.returncode == 0, show(r)
        assert "You said: found by pin" in r.stdout, show(r)

        # A wrong pin is a certificate problem, never "check the network".
        wrong = "sha256/" + "A" * 43 + "="
        r = phone.run([bridge_bin, "connect", f"[{ll}%eth0]:9099", "--pin", wrong, "--credentials", credentials,
                       "--prompt", "never"], timeout=40, env=env)
        assert r.returncode != 0, show(r)
        assert "same network" not in r.stderr and "identity changed" in r.stderr, show(r)

        # The probe of the link-local address sees the bridge (it wants a token), not a TLS or network failure.
        wait_resolved(phone, "Desk", timeout=10, guard=serve)
        cp = phone.run([bridge_bin, "discover", "--probe", "--json", "--timeout", "6"], timeout=60)
        records = [json.loads(line) for line in cp.stdout.splitlines() if line.strip().startswith("{")]
        probes = [p for r in records if r.get("name") == "Desk" and isinstance(r.get("probe"), dict)
                  for p in (r["probe"].get("probes") or [])]
        linklocal = [p for p in probes if p["address"].lower().startswith("fe80")]
        for p in linklocal:
            assert p["outcome"] == "needs_pairing", json.dumps(linklocal, indent=1)
        print(f"\n[fe80 over TLS] connect pinned and by saved pin ok; {len(linklocal)} link-local probe(s): "
              f"{[p['outcome'] for p in linklocal]}")
    finally:
        serve.stop()
        phone.run(["rm", "-rf", state], timeout=10)
