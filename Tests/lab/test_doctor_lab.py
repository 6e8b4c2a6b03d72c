"""`doctor` findings (issue 17 item 4), in the LAN lab.

Each test breaks one thing on a lab host and checks doctor names it with its fix:
1. an interface without the MULTICAST flag (`ip link set dev eth0 multicast off`);
2. IPv6 disabled on the interface (sysctl);
3. a bridge listening on loopback only (`serve --host 127.0.0.1`);
4. a bridge that mDNS shows but that does not answer: nothing listens on its port, or its address has no ARP
   neighbour (the service was announced for an address that is not on this link, as a router's reflector does);
5. the self-check: a short-lived test service published through the daemon and browsed on the same host; it fails
   when the daemon is stopped;
6. doctor by role (issue 29 item 6): a phone host where no bridge runs gets the client's checks (the bridge it can
   find, reach, and whose saved pin and token hold; a revoked token, and a desk whose identity was rotated, named
   with "pair again"), none of the desk's and no error code; a desk whose nftables drops 9099 from the LAN has the rule named, and the phone's advice for the
   timeout starts with the firewall; a healthy desk reaches its port from its LAN address and exits 0.
Every host setting changed is restored in a finally block (hosts are shared across lab files); waits are bounded.
"""

from __future__ import annotations

import json
import re

import pytest

from lab_support import SERVICE_TYPE, wait_http, wait_resolved


def show(cp) -> str:
    return f"exit {cp.returncode}\n--- stdout:\n{cp.stdout}\n--- stderr:\n{cp.stderr}"


def doctor(host, bridge_bin: str, *extra: str) -> tuple[list[dict], object]:
    cp = host.run([bridge_bin, "doctor", "--json", *extra], timeout=90)
    start = cp.stdout.find("[")
    assert start >= 0, "doctor printed no JSON\n" + show(cp)
    return json.loads(cp.stdout[start:]), cp


def named(checks: list[dict], prefix: str) -> list[dict]:
    return [c for c in checks if c["name"].startswith(prefix)]


def test_interface_without_multicast(lab, extra_host, bridge_bin):
    host = extra_host("nomcast")
    try:
        host.run(["ip", "link", "set", "dev", "eth0", "multicast", "off"], timeout=5, check=True)
        checks, cp = doctor(host, bridge_bin)
        found = [c for c in named(checks, "multicast") if c["status"] != "ok" and "eth0" in c["detail"]]
        assert found, "no multicast finding naming eth0\n" + show(cp)
        assert "ip link set dev eth0 multicast on" in (found[0].get("fix") or ""), found[0]
    finally:
        host.run(["ip", "link", "set", "dev", "eth0", "multicast", "on"], timeout=5)


def test_ipv6_disabled(lab, extra_host, bridge_bin):
    host = extra_host("nosix")
    try:
        host.run(["sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1"], timeout=5, check=True)
        checks, cp = doctor(host, bridge_bin)
        found = [c for c in named(checks, "IPv6") if c["status"] != "ok"]
        assert found, "no IPv6 finding\n" + show(cp)
        assert "eth0" in found[0]["detail"], found[0]
        assert "disable_ipv6=0" in (found[0].get("fix") or ""), found[0]
    finally:
        host.run(["sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=0"], timeout=5)
        # Addresses given with nodad come back only if re-added; the lab's global address is static.
        host.run(["ip", "-6", "addr", "add", f"{host.ipv6}/64", "dev", "eth0", "nodad"], timeout=5)


def test_ipv6_enabled_is_ok(lab, desk, bridge_bin):
    checks, cp = doctor(desk, bridge_bin)
    found = named(checks, "IPv6")
    assert found and all(c["status"] == "ok" for c in found), show(cp)


def test_bridge_listening_on_loopback_only(lab, desk, bridge_bin):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Loopdesk", "--host", "127.0.0.1"], label="serve-loopback-only")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        checks, cp = doctor(desk, bridge_bin)
        found = [c for c in named(checks, "listening") if c["status"] != "ok"]
        assert found, "no finding about a loopback-only listener\n" + show(cp)
        assert "127.0.0.1" in found[0]["detail"], found[0]
        assert "--host" in (found[0].get("fix") or ""), found[0]
    finally:
        serve.stop()


def test_bridge_listening_on_every_address_is_ok(lab, desk, bridge_bin):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Alldesk"], label="serve-all-addresses")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        checks, cp = doctor(desk, bridge_bin)
        found = named(checks, "listening")
        assert found and all(c["status"] == "ok" for c in found), show(cp)
    finally:
        serve.stop()


def test_service_announced_but_nothing_answers(lab, desk, phone, bridge_bin):
    # Announced by avahi-publish on the desk, port 9011 where nothing listens: TCP refused.
    pub = desk.spawn(["avahi-publish", "-s", "Deafdesk", SERVICE_TYPE, "9011"], label="avahi-publish-deaf")
    try:
        wait_resolved(phone, "Deafdesk", timeout=10, guard=pub)
        checks, cp = doctor(phone, bridge_bin)
        found = [c for c in named(checks, "reach Deafdesk") if c["status"] != "ok"]
        assert found, "no reachability finding for Deafdesk\n" + show(cp)
        assert desk.ipv4 in found[0]["detail"] and "9011" in found[0]["detail"], found[0]
        assert found[0].get("fix"), found[0]
    finally:
        pub.stop()


def test_service_reflected_for_an_address_with_no_neighbour(lab, desk, phone, bridge_bin):
    # What a router's mDNS reflector does: a service whose address is not on this link. ARP gets no answer.
    ghost_ip = "198.18.0.250"
    addr = desk.spawn(["avahi-publish", "-a", "-R", "ghost.local", ghost_ip], label="avahi-publish-ghost-addr")
    pub = desk.spawn(["avahi-publish", "-s", "-H", "ghost.local", "Ghostdesk", SERVICE_TYPE, "9099"],
                     label="avahi-publish-ghost")
    try:
        wait_resolved(phone, "Ghostdesk", timeout=10, guard=pub)
        checks, cp = doctor(phone, bridge_bin)
        found = [c for c in named(checks, "reach Ghostdesk") if c["status"] != "ok"]
        assert found, "no reachability finding for Ghostdesk\n" + show(cp)
        assert ghost_ip in found[0]["detail"], found[0]
        assert "neighbour" in found[0]["detail"], found[0]
        assert "reflect" in found[0]["detail"] or "reflect" in (found[0].get("fix") or ""), found[0]
    finally:
        pub.stop()
        addr.stop()


def test_self_check_publishes_and_browses_through_the_daemon(lab, desk, bridge_bin):
    checks, cp = doctor(desk, bridge_bin)
    found = named(checks, "self-check")
    assert found, "no self-check row\n" + show(cp)
    assert found[0]["status"] == "ok", found[0]
    assert "published" in found[0]["detail"], found[0]


def test_self_check_fails_without_the_daemon(lab, extra_host, bridge_bin):
    host = extra_host("nodaemon")
    try:
        host.stop_avahi()
        checks, cp = doctor(host, bridge_bin)
        found = named(checks, "self-check")
        assert found and found[0]["status"] == "fail", show(cp)
        assert found[0].get("fix"), found[0]
    finally:
        host.start_avahi()


# --- doctor by role (issue 29 item 6) ----------------------------------------------------------------------------

DESK_ROWS = ("port ", "listening addresses", "reach from the LAN", "packet filter", "token store", "tls identity",
             "terminal confinement", "our service visible", "firewall")


def text_of(checks: list[dict]) -> str:
    return "\n".join(f"{c['status']} {c['name']}: {c['detail']} fix: {c.get('fix') or ''}" for c in checks)


def assert_no_raw_codes(checks: list[dict], cp) -> None:
    text = text_of(checks) + cp.stderr
    assert "NSURLErrorDomain" not in text and "Error Domain" not in text, show(cp)
    assert not re.search(r"error -?\d{2,}", text), "a raw error code\n" + show(cp)


def test_phone_host_checks_the_client_side(lab, desk, extra_host, bridge_bin):
    handset = extra_host("handset")
    serve = desk.spawn([bridge_bin, "serve", "--name", "Roledesk"], label="serve-roledesk")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        wait_resolved(handset, "Roledesk", timeout=10, guard=serve)

        # Before pairing: the bridge is found and reached; nothing of a desk is checked here, nothing is wrong.
        checks, cp = doctor(handset, bridge_bin)
        assert "start the bridge" not in text_of(checks) and "TLS identity" not in text_of(checks), show(cp)
        assert_no_raw_codes(checks, cp)
        assert not [c for c in checks if c["name"].startswith(DESK_ROWS)], "desk rows on the phone\n" + show(cp)
        assert checks[0]["name"] == "role" and checks[0]["detail"].startswith("client"), show(cp)
        found = named(checks, "bridges on the network")
        assert found and found[0]["status"] == "ok" and "Roledesk" in found[0]["detail"], show(cp)
        reach = named(checks, "reach Roledesk")
        assert reach and reach[0]["status"] == "ok", show(cp)
        assert cp.returncode == 0, "a phone with nothing wrong exits 0\n" + show(cp)

        # Paired: the saved bridge is reached, presents its saved pin, and takes the saved token.
        pair = desk.run([bridge_bin, "pair", "--json"], timeout=10)
        assert pair.returncode == 0, pair.stderr
        pin = json.loads(pair.stdout)["pin"]
        paired = handset.run([bridge_bin, "connect", "--pair", pair.stdout.strip(), "--prompt", "hello"], timeout=30)
        assert paired.returncode == 0, paired.stderr
        checks, cp = doctor(handset, bridge_bin)
        saved = named(checks, "saved bridge Roledesk")
        assert saved and saved[0]["status"] == "ok", show(cp)
        assert pin in saved[0]["detail"] and "token is accepted" in saved[0]["detail"], saved[0]
        assert cp.returncode == 0, show(cp)

        # Revoked on the desk: the token is refused, and the fix is to pair again.
        revoke = desk.run([bridge_bin, "devices", "revoke", "--all"], timeout=10)
        assert revoke.returncode == 0, revoke.stderr
        checks, cp = doctor(handset, bridge_bin)
        saved = named(checks, "saved bridge Roledesk")
        assert saved and saved[0]["status"] == "fail", show(cp)
        assert "no longer accepts this device's token" in saved[0]["detail"], saved[0]
        assert "pair again" in (saved[0].get("fix") or ""), saved[0]
        assert_no_raw_codes(checks, cp)
        assert cp.returncode == 2, show(cp)
    finally:
        serve.stop()


NFT_TABLE = "oalab_doctor"


@pytest.mark.parametrize("match", ['iifname "eth0"', "ip saddr 198.18.0.0/24"], ids=["by-interface", "by-address"])
def test_desk_names_the_rule_dropping_its_port_from_the_lan(lab, phone, extra_host, bridge_bin, match):
    firedesk = extra_host("firedesk")
    serve = firedesk.spawn([bridge_bin, "serve", "--name", "Firedesk"], label="serve-firedesk")
    try:
        wait_http(firedesk, "http://127.0.0.1:9099/api/health", guard=serve)
        # The rule lives in the lab host's own network namespace only, and goes with the host.
        for command in (["add", "table", "inet", NFT_TABLE],
                        ["add", "chain", "inet", NFT_TABLE, "input", "{ type filter hook input priority 0; policy accept; }"],
                        ["add", "rule", "inet", NFT_TABLE, "input", *match.split(), "tcp", "dport", "9099", "drop"]):
            firedesk.run(["nft", *command], timeout=5, check=True)

        checks, cp = doctor(firedesk, bridge_bin)
        assert cp.returncode == 2, "a rule that keeps phones out is a failure\n" + show(cp)
        rule_text = f"{match} tcp dport 9099 drop"
        lan = named(checks, "reach from the LAN")
        assert lan and lan[0]["status"] == "fail", show(cp)
        assert rule_text in lan[0]["detail"], lan[0]
        assert f"nft insert rule inet {NFT_TABLE} input tcp dport 9099 accept" in (lan[0].get("fix") or ""), lan[0]
        if match.startswith("ip saddr"):
            # Dropped by address: the probe from the desk's own LAN address times out too.
            assert f"{firedesk.ipv4}:9099 did not answer in time" in lan[0]["detail"], lan[0]
        rows = named(checks, "packet filter")
        assert rows and rows[0]["status"] == "fail" and rule_text in rows[0]["detail"], show(cp)
        assert f"table inet {NFT_TABLE}, chain input" in rows[0]["detail"], rows[0]
        assert checks[0]["name"] == "role" and checks[0]["detail"].startswith("desk"), show(cp)

        if not match.startswith("iifname"):
            return  # the address rule drops IPv4 only: the phone would reach the desk over IPv6
        # From the phone the desk is announced but times out: the firewall comes first, a stopped bridge last.
        wait_resolved(phone, "Firedesk", timeout=10, guard=serve)
        checks, cp = doctor(phone, bridge_bin, "--role", "client")
        reach = named(checks, "reach Firedesk")
        assert reach and reach[0]["status"] == "warn", show(cp)
        assert "did not answer in time" in reach[0]["detail"], reach[0]
        fix = reach[0].get("fix") or ""
        assert fix.startswith("1) a firewall on"), reach[0]
        assert fix.index("firewall") < fix.index("not running"), reach[0]
    finally:
        firedesk.run(["nft", "delete", "table", "inet", NFT_TABLE], timeout=5)
        serve.stop()


def test_healthy_desk_reaches_its_port_from_the_lan(lab, desk, bridge_bin):
    serve = desk.spawn([bridge_bin, "serve", "--name", "Welldesk"], label="serve-welldesk")
    try:
        wait_http(desk, "http://127.0.0.1:9099/api/health", guard=serve)
        wait_resolved(desk, "Welldesk", timeout=10, guard=serve)
        checks, cp = doctor(desk, bridge_bin)
        lan = named(checks, "reach from the LAN")
        assert lan and lan[0]["status"] == "ok" and f"{desk.ipv4}:9099" in lan[0]["detail"], show(cp)
        rows = named(checks, "packet filter")
        assert rows and rows[0]["status"] == "ok" and "no rule drops tcp port 9099" in rows[0]["detail"], show(cp)
        assert not named(checks, "saved bridge"), show(cp)
        bad = [c for c in checks if c["status"] != "ok"]
        assert not bad and cp.returncode == 0, "a healthy desk exits 0\n" + show(cp)
        assert checks[0]["name"] == "role" and checks[0]["detail"].startswith("desk") and "answers" in checks[0]["detail"], show(cp)
    finally:
        serve.stop()


def test_client_names_a_desk_whose_identity_changed(lab, extra_host, bridge_bin):
    # A desk of its own: rotating its identity must not touch the desk other tests pair with.
    rotdesk = extra_host("rotdesk")
    handset = extra_host("handset2")
    serve = rotdesk.spawn([bridge_bin, "serve", "--name", "Rotdesk"], label="serve-rotdesk")
    try:
        wait_http(rotdesk, "http://127.0.0.1:9099/api/health", guard=serve)
        pair = rotdesk.run([bridge_bin, "pair", "--json"], timeout=10)
        assert pair.returncode == 0, pair.stderr
        old_pin = json.loads(pair.stdout)["pin"]
        paired = handset.run([bridge_bin, "connect", "--pair", pair.stdout.strip(), "--prompt", "hello"], timeout=30)
        assert paired.returncode == 0, paired.stderr
        serve.stop()

        rotate = rotdesk.run([bridge_bin, "identity", "rotate"], timeout=10)
        assert rotate.returncode == 0, rotate.stderr
        new_pin = re.search(r"new pin:\s+(\S+)", rotate.stdout).group(1)
        serve = rotdesk.spawn([bridge_bin, "serve", "--name", "Rotdesk"], label="serve-rotdesk-rotated")
        wait_http(rotdesk, "http://127.0.0.1:9099/api/health", guard=serve)
        wait_resolved(handset, "Rotdesk", timeout=10, guard=serve)

        checks, cp = doctor(handset, bridge_bin)
        saved = named(checks, "saved bridge Rotdesk")
        assert saved and saved[0]["status"] == "fail", "a saved pin the desk no longer presents is a failure\n" + show(cp)
        assert new_pin in saved[0]["detail"] and old_pin in saved[0]["detail"], saved[0]
        assert "identity changed" in saved[0]["detail"], saved[0]
        assert "pair again" in (saved[0].get("fix") or ""), saved[0]
        assert_no_raw_codes(checks, cp)
        assert cp.returncode == 2, show(cp)
    finally:
        serve.stop()
